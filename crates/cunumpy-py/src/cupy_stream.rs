//! CuPy's current stream, read as cheaply as CuPy allows.
//!
//! Every launch needs the handle of CuPy's current stream. Through Python that is
//! `cupy.cuda.get_current_stream().ptr` (a Stream object built or fetched, then an attribute
//! read: 0.15 µs on the H200's host, a sixth of a checked launch's overhead). CuPy's Cython
//! module `cupy_backends.cuda.stream` exports the C function behind it,
//! `intptr_t get_current_stream_ptr(void)`, in its `__pyx_capi__` table of capsules, each named
//! by its C signature; when that capsule is there with exactly that signature it is called
//! directly, otherwise the Python route is taken.

use pyo3::ffi::c_str;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyCapsule;

/// The C signature the capsule must carry for the function pointer to be called as one.
const SIGNATURE: &std::ffi::CStr = c_str!("intptr_t (void)");

type StreamPtrFn = unsafe extern "C" fn() -> isize;

enum Source {
    /// CuPy's own C function (see the module comment).
    Capsule(StreamPtrFn),
    /// `cupy.cuda.get_current_stream`, read through `.ptr`.
    Python(Py<PyAny>),
}

static SOURCE: PyOnceLock<Source> = PyOnceLock::new();

fn capsule_function(py: Python<'_>) -> Option<StreamPtrFn> {
    let capi = py
        .import("cupy_backends.cuda.stream")
        .ok()?
        .getattr("__pyx_capi__")
        .ok()?;
    let capsule = capi
        .get_item("get_current_stream_ptr")
        .ok()?
        .cast_into::<PyCapsule>()
        .ok()?;
    // PyCapsule_GetPointer fails unless the capsule's name is exactly SIGNATURE.
    let ptr = capsule.pointer_checked(Some(SIGNATURE)).ok()?;
    // SAFETY: Cython exports a module-level C function in `__pyx_capi__` as a capsule whose
    // pointer is the function's address and whose name is its C signature; the name was checked
    // to be `intptr_t (void)`, so the pointer is a function taking nothing and returning
    // intptr_t (isize on every platform Rust and CuPy share). The module stays imported (it is
    // in sys.modules, held by CuPy), so the code it points at is never unloaded.
    Some(unsafe { std::mem::transmute::<*mut std::ffi::c_void, StreamPtrFn>(ptr.as_ptr()) })
}

fn source(py: Python<'_>) -> Option<&Source> {
    if let Some(found) = SOURCE.get(py) {
        return Some(found);
    }
    // Never imports CuPy: until someone has, there is no current stream but the default one.
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let cupy = modules.get_item("cupy").ok()?;
    let found = match capsule_function(py) {
        Some(f) => Source::Capsule(f),
        None => Source::Python(
            cupy.getattr("cuda")
                .ok()?
                .getattr("get_current_stream")
                .ok()?
                .unbind(),
        ),
    };
    let _ = SOURCE.set(py, found);
    SOURCE.get(py)
}

/// CuPy's current stream handle (0, the legacy default stream, while CuPy is not imported).
pub(crate) fn current_stream(py: Python<'_>) -> PyResult<usize> {
    match source(py) {
        Some(Source::Capsule(f)) => {
            // SAFETY: `f` is CuPy's `get_current_stream_ptr` (see `capsule_function`); it reads
            // CuPy's thread-local state and needs the GIL, which `py` proves is held.
            let ptr = unsafe { f() };
            // Cython 3 propagates exceptions from such functions by setting one.
            if let Some(e) = PyErr::take(py) {
                return Err(e);
            }
            Ok(ptr as usize)
        }
        Some(Source::Python(get)) => get.bind(py).call0()?.getattr(intern!(py, "ptr"))?.extract(),
        None => Ok(0),
    }
}
