//! Vectorcall (PEP 590) for the classes whose calls are the hot path: `KernelLauncher`
//! (`CudaKernel`), `KernelDispatcher` (`Kernel`) and `FusedDispatcher` (`FusedFunction`).
//!
//! PyO3 implements `__call__` through `tp_call`: for `kernel(x, 1, n_threads=1)` the interpreter
//! first builds a tuple of the positional arguments and a dict of the keywords, and PyO3 then
//! parses both. Through vectorcall the interpreter passes its own argument array and a tuple of
//! keyword names. PyO3 0.30 cannot declare it for a class (PyO3 issue 4252), and the stable ABI
//! names the pieces only from Python 3.12, so it is installed once the class exists: every
//! instance stores its vectorcall function in a field ([`VectorcallSlot`]), and the type gets
//! that field's offset (`tp_vectorcall_offset`) and the `Py_TPFLAGS_HAVE_VECTORCALL` flag.
//!
//! The type object is opaque in the limited API. The two fields are written only after the
//! layout has been checked against what the stable ABI reports for the same type (basic and
//! item size, flags, and the dealloc, repr and call slots, each read at its CPython offset);
//! if a check fails nothing is written and calls keep using `tp_call`. A vectorcall function
//! passes every call its fast path does not take to the type's `tp_call` unchanged, so both
//! protocols behave the same.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};
use std::ffi::{c_ulong, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// CPython's `vectorcallfunc`.
pub(crate) type VectorcallFn = unsafe extern "C" fn(
    *mut ffi::PyObject,
    *const *mut ffi::PyObject,
    usize,
    *mut ffi::PyObject,
) -> *mut ffi::PyObject;

/// The instance field CPython reads the vectorcall function from (at `tp_vectorcall_offset`).
/// Set when the object is created and never changed.
#[repr(transparent)]
pub(crate) struct VectorcallSlot(Option<VectorcallFn>);

impl VectorcallSlot {
    pub(crate) fn new(function: VectorcallFn) -> Self {
        VectorcallSlot(Some(function))
    }
}

/// `PY_VECTORCALL_ARGUMENTS_OFFSET`: a flag in the argument count, not part of it.
const ARGUMENTS_OFFSET: usize = 1 << (usize::BITS - 1);
/// `Py_TPFLAGS_HAVE_VECTORCALL` (stable ABI from 3.12; the same bit since 3.8).
const HAVE_VECTORCALL: c_ulong = 1 << 11;
const HEAPTYPE: c_ulong = 1 << 9;

/// Byte offsets of `PyTypeObject` fields in every CPython 3.10-3.14 build with a 64-bit
/// `Py_ssize_t` and the ordinary object header (the builds an abi3 wheel loads into).
mod type_offsets {
    pub const BASICSIZE: usize = 32;
    pub const ITEMSIZE: usize = 40;
    pub const DEALLOC: usize = 48;
    pub const VECTORCALL_OFFSET: usize = 56;
    pub const REPR: usize = 88;
    pub const CALL: usize = 128;
    pub const FLAGS: usize = 168;
}

/// One call's arguments as the interpreter passed them: the positional ones, then the values
/// of the keywords named in `kwnames`.
pub(crate) struct VectorArgs<'a, 'py> {
    py: Python<'py>,
    values: &'a [*mut ffi::PyObject],
    n_positional: usize,
    kwnames: Option<Borrowed<'a, 'py, PyTuple>>,
}

impl<'a, 'py> VectorArgs<'a, 'py> {
    pub(crate) fn len(&self) -> usize {
        self.n_positional
    }

    /// Positional argument `i` (< `len()`).
    pub(crate) fn get(&self, i: usize) -> Borrowed<'a, 'py, PyAny> {
        // SAFETY: the interpreter passes non-null borrowed references that stay alive for the
        // whole call; `i` indexes into the slice, so the bounds are checked.
        unsafe { Borrowed::from_ptr(self.py, self.values[i]) }
    }

    /// The value of the only keyword when it is `name`: `Some(None)` when there is no keyword,
    /// `None` when there are others.
    pub(crate) fn only_keyword(
        &self,
        name: &Bound<'py, PyString>,
    ) -> Option<Option<Borrowed<'a, 'py, PyAny>>> {
        let Some(names) = &self.kwnames else {
            return Some(None);
        };
        if names.len() != 1 {
            return None;
        }
        let given = names.get_borrowed_item(0).ok()?;
        // keyword names in code objects are interned, so identity is the common match
        let same = given.as_ptr() == name.as_ptr()
            || given
                .cast::<PyString>()
                .is_ok_and(|g| g.to_str().ok() == name.to_str().ok());
        same.then(|| {
            // SAFETY: as in `get`; the keyword's value follows the positional arguments.
            Some(unsafe { Borrowed::from_ptr(self.py, self.values[self.n_positional]) })
        })
    }

    /// The value of the only keyword when it is `name` and an exact int that fits `i64`.
    pub(crate) fn only_int_keyword(
        &self,
        name: &Bound<'py, PyString>,
    ) -> Option<(Borrowed<'a, 'py, PyAny>, i64)> {
        let value = self.only_keyword(name)??;
        if !value.is_exact_instance_of::<pyo3::types::PyInt>() {
            return None;
        }
        let n = value.extract::<i64>().ok()?;
        Some((value, n))
    }

    fn positional_tuple(&self) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(self.py, (0..self.n_positional).map(|i| self.get(i)))
    }

    fn keyword_dict(&self) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(names) = &self.kwnames else {
            return Ok(None);
        };
        let dict = PyDict::new(self.py);
        for (i, name) in names.iter().enumerate() {
            // SAFETY: as in `get`; there is one value per keyword name.
            let value = unsafe { Borrowed::from_ptr(self.py, self.values[self.n_positional + i]) };
            dict.set_item(name, value)?;
        }
        Ok(Some(dict))
    }
}

/// The positional arguments of a call, however they arrived.
pub(crate) enum ArgList<'a, 'py> {
    Tuple(&'a Bound<'py, PyTuple>),
    Vector(&'a VectorArgs<'a, 'py>),
}

impl<'a, 'py> ArgList<'a, 'py> {
    pub(crate) fn len(&self) -> usize {
        match self {
            ArgList::Tuple(t) => t.len(),
            ArgList::Vector(v) => v.len(),
        }
    }

    /// Positional argument `i`, None past the end.
    pub(crate) fn get(&self, i: usize) -> Option<Borrowed<'_, 'py, PyAny>> {
        match self {
            ArgList::Tuple(t) => t.get_borrowed_item(i).ok(),
            ArgList::Vector(v) => (i < v.len()).then(|| v.get(i)),
        }
    }

    pub(crate) fn to_list(&self) -> PyResult<Bound<'py, PyList>> {
        match self {
            ArgList::Tuple(t) => PyList::new(t.py(), t.iter()),
            ArgList::Vector(v) => PyList::new(v.py, (0..v.len()).map(|i| v.get(i))),
        }
    }
}

/// A class's fast path: the call's result, or None to hand the call to `tp_call`.
pub(crate) type FastPath =
    for<'a, 'py> fn(&Bound<'py, PyAny>, &VectorArgs<'a, 'py>) -> PyResult<Option<Py<PyAny>>>;

/// Defines `$entry`, CPython's vectorcall entry point for the class `$class`, running the fast
/// path `$fast` through [`dispatch`]. Only instances of `$class` (or of its subclasses) store
/// `$entry`, so `$fast` may treat the callable as one.
macro_rules! vectorcall_entry {
    ($entry:ident, $class:literal, $fast:path) => {
        #[doc = concat!("CPython's entry point for calls of a `", $class, "` (see vectorcall.rs).")]
        unsafe extern "C" fn $entry(
            callable: *mut pyo3::ffi::PyObject,
            args: *const *mut pyo3::ffi::PyObject,
            nargsf: usize,
            kwnames: *mut pyo3::ffi::PyObject,
        ) -> *mut pyo3::ffi::PyObject {
            // SAFETY: CPython calls this as a vectorcallfunc, with an instance of the class as
            // `callable`.
            unsafe { $crate::vectorcall::dispatch(callable, args, nargsf, kwnames, $fast) }
        }
    };
}
pub(crate) use vectorcall_entry;

/// The body of every vectorcall function: runs `fast`, or `tp_call` when it declines; no
/// panic crosses into the interpreter.
///
/// # Safety
/// The arguments are those CPython passes a `vectorcallfunc`, on a thread attached to the
/// interpreter.
pub(crate) unsafe fn dispatch(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
    fast: FastPath,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls a vectorcall function with the thread attached.
    let py = unsafe { Python::assume_attached() };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `callable` is the object being called, alive for the call.
        let callable = unsafe { Borrowed::from_ptr(py, callable) };
        let kwnames = (!kwnames.is_null()).then(|| {
            // SAFETY: a non-null `kwnames` is a tuple of str, alive for the call.
            unsafe { Borrowed::from_ptr(py, kwnames).cast_unchecked::<PyTuple>() }
        });
        let n_positional = nargsf & !ARGUMENTS_OFFSET;
        let n_values = n_positional + kwnames.as_ref().map_or(0, |k| k.len());
        let values: &[*mut ffi::PyObject] = if n_values == 0 || args.is_null() {
            &[]
        } else {
            // SAFETY: CPython passes `n_positional` arguments followed by one value per
            // keyword name, contiguous at `args`.
            unsafe { std::slice::from_raw_parts(args, n_values) }
        };
        let call = VectorArgs {
            py,
            values,
            n_positional,
            kwnames,
        };
        match fast(&callable, &call) {
            Ok(Some(result)) => result.into_ptr(),
            Ok(None) => call_through_tp_call(&callable, &call).unwrap_or_else(|e| {
                e.restore(py);
                std::ptr::null_mut()
            }),
            Err(e) => {
                e.restore(py);
                std::ptr::null_mut()
            }
        }
    }));
    outcome.unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        crate::errors::raise(
            py,
            "InternalError",
            format!("internal error in cunumpy's call path: {what}"),
        )
        .restore(py);
        std::ptr::null_mut()
    })
}

/// The call as `tp_call` takes it (the path PyO3 generated from `__call__`).
fn call_through_tp_call(
    callable: &Bound<'_, PyAny>,
    call: &VectorArgs<'_, '_>,
) -> PyResult<*mut ffi::PyObject> {
    let tuple = call.positional_tuple()?;
    let dict = call.keyword_dict()?;
    let ty = callable.get_type();
    // SAFETY: the type is alive (the callable holds it); Py_tp_call is a valid slot id.
    let slot = unsafe { ffi::PyType_GetSlot(ty.as_ptr().cast(), ffi::Py_tp_call) };
    if slot.is_null() {
        return Err(crate::errors::raise(
            callable.py(),
            "InternalError",
            "internal: the launcher's type has no call slot".into(),
        ));
    }
    // SAFETY: the Py_tp_call slot holds a `ternaryfunc`.
    let tp_call: ffi::ternaryfunc =
        unsafe { std::mem::transmute::<*mut c_void, ffi::ternaryfunc>(slot) };
    let dict_ptr = dict.as_ref().map_or(std::ptr::null_mut(), |d| d.as_ptr());
    // SAFETY: the three objects are alive for the call; tp_call returns a new reference, or
    // null with an exception set, which is what the caller of a vectorcall expects too.
    Ok(unsafe { tp_call(callable.as_ptr(), tuple.as_ptr(), dict_ptr) })
}

/// The byte offset of `slot` inside `obj` (an instance of the class that owns the slot).
pub(crate) fn slot_offset(obj: &Bound<'_, PyAny>, slot: &VectorcallSlot) -> Option<isize> {
    let offset = (slot as *const VectorcallSlot as isize).checked_sub(obj.as_ptr() as isize)?;
    let basic: isize = obj
        .get_type()
        .getattr("__basicsize__")
        .ok()?
        .extract()
        .ok()?;
    let size = std::mem::size_of::<VectorcallSlot>() as isize;
    let aligned = offset % std::mem::align_of::<VectorcallSlot>() as isize == 0;
    (offset >= 16 && offset + size <= basic && aligned).then_some(offset)
}

/// Reads a `T` at byte `at` of the type object.
///
/// # Safety
/// `at` must be the offset of a `T` field of CPython's `PyTypeObject`.
unsafe fn read_field<T: Copy>(ty: &Bound<'_, PyType>, at: usize) -> T {
    // SAFETY: per the contract, an initialised `T` lies at that offset of the live type object.
    unsafe {
        ty.as_ptr()
            .cast::<u8>()
            .add(at)
            .cast::<T>()
            .read_unaligned()
    }
}

/// Whether the type object's fields sit where `type_offsets` says, checked against the
/// stable ABI's view of the same type.
fn layout_matches(ty: &Bound<'_, PyType>) -> PyResult<bool> {
    let py = ty.py();
    let sys = py.import("sys")?;
    let implementation: String = sys.getattr("implementation")?.getattr("name")?.extract()?;
    let version: (u32, u32) = sys
        .getattr("version_info")?
        .extract::<(u32, u32, u32, String, u32)>()
        .map(|v| (v.0, v.1))?;
    let gil_disabled = sys
        .getattr("_is_gil_enabled")
        .and_then(|f| f.call0())
        .and_then(|v| v.extract::<bool>())
        .is_ok_and(|enabled| !enabled);
    if implementation != "cpython"
        || !((3, 10)..(3, 15)).contains(&version)
        || gil_disabled
        || usize::BITS != 64
    {
        return Ok(false);
    }
    let raw = ty.as_ptr().cast::<ffi::PyTypeObject>();
    let basic: isize = ty.getattr("__basicsize__")?.extract()?;
    let item: isize = ty.getattr("__itemsize__")?.extract()?;
    // SAFETY: the type is alive; these are the stable ABI's accessors.
    let (flags, dealloc, repr, call) = unsafe {
        (
            ffi::PyType_GetFlags(raw),
            ffi::PyType_GetSlot(raw, ffi::Py_tp_dealloc),
            ffi::PyType_GetSlot(raw, ffi::Py_tp_repr),
            ffi::PyType_GetSlot(raw, ffi::Py_tp_call),
        )
    };
    // SAFETY: reads of the type object at the offsets being verified; each is within the
    // object (PyTypeObject is over 400 bytes in every version checked above) and of the
    // field's type if the layout is the expected one, and a plain integer read otherwise.
    let found = unsafe {
        (
            read_field::<isize>(ty, type_offsets::BASICSIZE),
            read_field::<isize>(ty, type_offsets::ITEMSIZE),
            read_field::<usize>(ty, type_offsets::DEALLOC),
            read_field::<usize>(ty, type_offsets::REPR),
            read_field::<usize>(ty, type_offsets::CALL),
            read_field::<c_ulong>(ty, type_offsets::FLAGS),
        )
    };
    Ok(flags & HEAPTYPE != 0
        && !call.is_null()
        && found
            == (
                basic,
                item,
                dealloc as usize,
                repr as usize,
                call as usize,
                flags,
            ))
}

/// Gives the type vectorcall through the instance field at `offset`; false (nothing written)
/// when the layout checks fail or the type already uses another offset.
pub(crate) fn install(ty: &Bound<'_, PyType>, offset: isize) -> PyResult<bool> {
    if !layout_matches(ty)? {
        return Ok(false);
    }
    // SAFETY: the layout was verified above.
    let current = unsafe { read_field::<isize>(ty, type_offsets::VECTORCALL_OFFSET) };
    if current != 0 && current != offset {
        return Ok(false);
    }
    let base = ty.as_ptr().cast::<u8>();
    // SAFETY: the layout was verified, so these are the `tp_vectorcall_offset` and `tp_flags`
    // fields of a heap type this module owns (or a Python subclass of one that does not
    // override `__call__`); every instance stores its function at `offset`. The GIL is held,
    // so no other thread reads the type while it changes, and PyType_Modified drops cached
    // lookups.
    unsafe {
        base.add(type_offsets::VECTORCALL_OFFSET)
            .cast::<isize>()
            .write_unaligned(offset);
        let flags = base.add(type_offsets::FLAGS).cast::<c_ulong>();
        flags.write_unaligned(flags.read_unaligned() | HAVE_VECTORCALL);
        ffi::PyType_Modified(ty.as_ptr().cast());
    }
    Ok(true)
}

/// Whether calls of instances of `ty` go through vectorcall.
pub(crate) fn enabled(ty: &Bound<'_, PyType>) -> bool {
    // SAFETY: the type is alive.
    let flags = unsafe { ffi::PyType_GetFlags(ty.as_ptr().cast()) };
    flags & HAVE_VECTORCALL != 0
}

/// The classes given vectorcall, with the offset of their slot (a Python subclass that does
/// not override `__call__` shares both).
static BASES: std::sync::Mutex<Vec<(Py<PyType>, isize)>> = std::sync::Mutex::new(Vec::new());

/// Installs vectorcall on class `T`, measuring where its slot lies in `sample` (a fresh
/// instance), and remembers the class for `_enable_vectorcall`. False when it could not be
/// installed (calls then use `tp_call`).
pub(crate) fn register_class<
    T: pyo3::PyClass<Frozen = pyo3::pyclass::boolean_struct::True> + Sync,
>(
    sample: Bound<'_, T>,
    slot: fn(&T) -> &VectorcallSlot,
) -> PyResult<bool> {
    let offset = slot_offset(sample.as_any(), slot(sample.get()));
    let Some(offset) = offset else {
        return Ok(false);
    };
    let ty = sample.as_any().get_type();
    if !install(&ty, offset)? {
        return Ok(false);
    }
    cunumpy_core::sync::lock(&BASES).push((ty.unbind(), offset));
    Ok(true)
}

/// Gives a Python subclass of a registered class vectorcall (from Python 3.12 a subclass
/// inherits it; before, it must be set on the subclass too). False when `cls` overrides
/// `__call__` or derives from no registered class.
#[pyfunction]
fn _enable_vectorcall(cls: &Bound<'_, PyType>) -> PyResult<bool> {
    let py = cls.py();
    let found = cunumpy_core::sync::lock(&BASES)
        .iter()
        .map(|(ty, offset)| (ty.clone_ref(py), *offset))
        .collect::<Vec<_>>();
    for (base, offset) in found {
        let base = base.into_bound(py);
        if !cls.is_subclass(&base)? {
            continue;
        }
        // SAFETY: both types are alive; Py_tp_call is a valid slot id.
        let (own, inherited) = unsafe {
            (
                ffi::PyType_GetSlot(cls.as_ptr().cast(), ffi::Py_tp_call),
                ffi::PyType_GetSlot(base.as_ptr().cast(), ffi::Py_tp_call),
            )
        };
        return if own == inherited {
            install(cls, offset)
        } else {
            Ok(false)
        };
    }
    Ok(false)
}

/// Whether calls of `cls`'s instances go through vectorcall (for tests and benchmarks).
#[pyfunction]
fn _vectorcall_enabled(cls: &Bound<'_, PyType>) -> bool {
    enabled(cls)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_enable_vectorcall, m)?)?;
    m.add_function(wrap_pyfunction!(_vectorcall_enabled, m)?)?;
    Ok(())
}
