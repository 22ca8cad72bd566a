//! CuPy's current stream, read as cheaply as CuPy allows.
//!
//! Every launch needs the handle of CuPy's current stream. Through Python that is
//! `cupy.cuda.get_current_stream().ptr` (a Stream object built or fetched, then an attribute
//! read: a sizeable share of a checked launch's overhead; `benches/launch_overhead.py` measures
//! it). CuPy's Cython
//! module `cupy_backends.cuda.stream` exports the C function behind it,
//! `intptr_t get_current_stream_ptr(void)`, in its `__pyx_capi__` table of capsules, each named
//! by its C signature; when that capsule is there with exactly that signature it is called
//! directly, otherwise the Python route is taken.
//!
//! `get_current_stream_ptr` first asks the CUDA runtime for the current device (about half of
//! its cost), then reads the thread's stream for that device. A launch already knows its device from the driver's current context, so when CuPy
//! also exports `intptr_t get_stream_ptr(int device_id)` the launch calls that instead.

use cunumpy_cuda::StreamHandle;
use pyo3::ffi::c_str;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyCapsule;

/// The C signature the capsule must carry for the function pointer to be called as one.
const SIGNATURE: &std::ffi::CStr = c_str!("intptr_t (void)");
/// The same for the stream of a given device.
const ON_DEVICE_SIGNATURE: &std::ffi::CStr = c_str!("intptr_t (int)");

type StreamPtrFn = unsafe extern "C" fn() -> isize;
type StreamOnDeviceFn = unsafe extern "C" fn(std::ffi::c_int) -> isize;

enum Source {
    /// CuPy's own C functions (see the module comment).
    Capsule {
        current: StreamPtrFn,
        on_device: Option<StreamOnDeviceFn>,
    },
    /// `cupy.cuda.get_current_stream`, read through `.ptr`.
    Python(Py<PyAny>),
}

static SOURCE: PyOnceLock<Source> = PyOnceLock::new();

/// The function pointer in CuPy's capsule `name`, when its C signature is `signature`.
fn capsule_pointer(
    capi: &Bound<'_, PyAny>,
    name: &str,
    signature: &std::ffi::CStr,
) -> Option<*mut std::ffi::c_void> {
    let capsule = capi.get_item(name).ok()?.cast_into::<PyCapsule>().ok()?;
    // PyCapsule_GetPointer fails unless the capsule's name is exactly `signature`.
    Some(capsule.pointer_checked(Some(signature)).ok()?.as_ptr())
}

fn capsule_functions(py: Python<'_>) -> Option<Source> {
    let capi = py
        .import("cupy_backends.cuda.stream")
        .ok()?
        .getattr("__pyx_capi__")
        .ok()?;
    let current = capsule_pointer(&capi, "get_current_stream_ptr", SIGNATURE)?;
    let on_device = capsule_pointer(&capi, "get_stream_ptr", ON_DEVICE_SIGNATURE);
    // SAFETY: Cython exports a module-level C function in `__pyx_capi__` as a capsule whose
    // pointer is the function's address and whose name is its C signature; each name was
    // checked to be the signature of the type transmuted to (intptr_t is isize and int is c_int
    // on every platform Rust and CuPy share). The module stays imported (it is in sys.modules,
    // held by CuPy), so the code they point at is never unloaded.
    unsafe {
        Some(Source::Capsule {
            current: std::mem::transmute::<*mut std::ffi::c_void, StreamPtrFn>(current),
            on_device: on_device
                .map(|p| std::mem::transmute::<*mut std::ffi::c_void, StreamOnDeviceFn>(p)),
        })
    }
}

fn source(py: Python<'_>) -> Option<&Source> {
    if let Some(found) = SOURCE.get(py) {
        return Some(found);
    }
    // Never imports CuPy: until someone has, there is no current stream but the default one.
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let cupy = modules.get_item("cupy").ok()?;
    let found = match capsule_functions(py) {
        Some(capsules) => capsules,
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
pub(crate) fn current_stream(py: Python<'_>) -> PyResult<StreamHandle> {
    match source(py) {
        Some(Source::Capsule { current, .. }) => {
            // SAFETY: `current` is CuPy's `get_current_stream_ptr` (see `capsule_functions`);
            // it reads CuPy's thread-local state and needs the GIL, which `py` proves is held.
            let ptr = unsafe { current() };
            handle_or_error(py, ptr)
        }
        Some(Source::Python(get)) => {
            let ptr: usize = get
                .bind(py)
                .call0()?
                .getattr(intern!(py, "ptr"))?
                .extract()?;
            // SAFETY: CuPy's current stream, a live stream (or a default stream) of the
            // current device while it is current.
            Ok(unsafe { StreamHandle::from_raw(ptr) })
        }
        None => Ok(StreamHandle::LEGACY_DEFAULT),
    }
}

/// CuPy's current stream handle on `device`, which must be the device of the calling thread's
/// current context (what CuPy itself would look up): the same value as `current_stream`.
pub(crate) fn stream_on_device(py: Python<'_>, device: i32) -> PyResult<StreamHandle> {
    match source(py) {
        Some(Source::Capsule {
            on_device: Some(on_device),
            ..
        }) => {
            // SAFETY: `on_device` is CuPy's `get_stream_ptr` (see `capsule_functions`); it
            // reads CuPy's thread-local state for `device` and needs the GIL, which `py` proves
            // is held.
            let ptr = unsafe { on_device(device) };
            handle_or_error(py, ptr)
        }
        _ => current_stream(py),
    }
}

/// A capsule function's result: Cython 3 reports an exception from such a function by setting
/// one and returning a sentinel.
fn handle_or_error(py: Python<'_>, ptr: isize) -> PyResult<StreamHandle> {
    if let Some(e) = PyErr::take(py) {
        return Err(e);
    }
    // SAFETY: CuPy's stream for the current device, a live stream (or a default stream) of
    // that device's context while CuPy keeps it current.
    Ok(unsafe { StreamHandle::from_raw(ptr as usize) })
}

/// Test probe: CuPy's current stream as a launch reads it, both ways — `(through
/// get_current_stream_ptr, through get_stream_ptr(current device))` — and whether the second
/// is CuPy's own per-device function (False: it fell back to the first).
#[pyfunction]
fn _cupy_stream_handles(py: Python<'_>) -> PyResult<(usize, usize, bool)> {
    let cuda = |e| crate::errors::cuda_error(py, "_cupy_stream_handles", e);
    let driver = cunumpy_cuda::Driver::get().map_err(cuda)?;
    let device = cunumpy_runtime::device::launch_device(driver).map_err(cuda)?;
    let per_device = matches!(
        source(py),
        Some(Source::Capsule {
            on_device: Some(_),
            ..
        })
    );
    Ok((
        current_stream(py)?.raw(),
        stream_on_device(py, device)?.raw(),
        per_device,
    ))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_cupy_stream_handles, m)?)
}
