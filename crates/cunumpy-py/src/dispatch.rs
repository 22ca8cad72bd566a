//! The hot path of `cunumpy.kernels.Kernel`: `KernelDispatcher`, its base class.
//!
//! A `Kernel` that dispatches by backend and has a CUDA version registers that `CudaKernel`
//! here (`_enable_fast_path`). A call with no keyword but `n_threads`, while the backend is
//! CuPy and no kernel profile collects, then goes straight to the CUDA launch in Rust; every
//! other call (the host path, fallbacks, keywords, profiles) goes to `Kernel._call_slow`.

use crate::fused_call::profiling;
use crate::kernel::KernelLauncher;
use crate::vectorcall::{ArgList, VectorArgs, VectorcallSlot};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use std::sync::OnceLock;

/// The CUDA kernel of a fast call and its `n_threads` keyword, if given.
type Target<'py> = (Bound<'py, KernelLauncher>, Option<Bound<'py, PyAny>>);

struct FastPath {
    cuda: Py<KernelLauncher>,
    /// `cunumpy._backend._state`: its "backend" entry is the current backend's name.
    backend_state: Py<PyDict>,
}

#[pyclass(subclass, frozen, module = "cunumpy._core", name = "KernelDispatcher")]
pub struct KernelDispatcher {
    /// Read by CPython on every call (see vectorcall.rs).
    vectorcall: VectorcallSlot,
    fast: OnceLock<FastPath>,
}

impl KernelDispatcher {
    fn unconfigured() -> Self {
        KernelDispatcher {
            vectorcall: VectorcallSlot::new(dispatcher_vectorcall),
            fast: OnceLock::new(),
        }
    }

    /// Gives the class vectorcall (see vectorcall.rs); false when it keeps `tp_call`.
    pub(crate) fn register_vectorcall(py: Python<'_>) -> PyResult<bool> {
        crate::vectorcall::register_class(Bound::new(py, Self::unconfigured())?, |s| &s.vectorcall)
    }

    /// The CUDA kernel to launch now, or None when the call must take the Python path.
    fn fast_target<'py>(
        &self,
        py: Python<'py>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Option<Target<'py>>> {
        let n_threads = match kwargs {
            Some(k) if !k.is_empty() => {
                if k.len() != 1 {
                    return Ok(None);
                }
                match k.get_item(intern!(py, "n_threads"))? {
                    Some(n) if !n.is_none() => Some(n),
                    _ => return Ok(None),
                }
            }
            _ => None,
        };
        self.fast_target_with(py, n_threads)
    }

    /// As `fast_target`, with the call's `n_threads` keyword (None when not given).
    fn fast_target_with<'py>(
        &self,
        py: Python<'py>,
        n_threads: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Target<'py>>> {
        let Some(fast) = self.fast.get() else {
            return Ok(None);
        };
        let on_cupy = match fast
            .backend_state
            .bind(py)
            .get_item(intern!(py, "backend"))?
        {
            Some(name) => name
                .cast::<PyString>()
                .is_ok_and(|s| s.to_str().is_ok_and(|s| s == "cupy")),
            None => false,
        };
        if !on_cupy || profiling(py)? {
            return Ok(None);
        }
        let cuda = fast.cuda.bind(py).clone();
        if n_threads.is_none() && !cuda.get().infers_n_threads() {
            return Ok(None); // the Python path raises the missing-n_threads error
        }
        Ok(Some((cuda, n_threads)))
    }
}

#[pymethods]
impl KernelDispatcher {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        Self::unconfigured()
    }

    /// Calls through the fast path when it applies (see the module comment), else
    /// `self._call_slow(*args, **kwargs)`.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let target = slf.get().fast_target(py, kwargs)?;
        if let Some((cuda, n_threads)) = target {
            KernelLauncher::launch(&cuda, args, n_threads.as_ref(), None, None, 0, None)?;
            return Ok(py.None());
        }
        slf.call_method(intern!(py, "_call_slow"), args, kwargs)
            .map(Bound::unbind)
    }

    /// Launches `cuda` directly for calls on the CuPy backend (set once, at construction).
    fn _enable_fast_path(
        &self,
        cuda: Bound<'_, KernelLauncher>,
        backend_state: Bound<'_, PyDict>,
    ) -> bool {
        self.fast
            .set(FastPath {
                cuda: cuda.unbind(),
                backend_state: backend_state.unbind(),
            })
            .is_ok()
    }
}

/// The vectorcall fast path of a `Kernel` call: on the CuPy backend, a repeat of its CUDA
/// kernel's last plain call launches without a tuple or dict being built; every other call
/// goes to `__call__` (`tp_call`).
fn dispatcher_fast_call(
    callable: &Bound<'_, PyAny>,
    call: &VectorArgs<'_, '_>,
) -> PyResult<Option<Py<PyAny>>> {
    let py = callable.py();
    // SAFETY: this function is reached only through `dispatcher_vectorcall`, which only
    // instances of KernelDispatcher (or of its subclasses) store.
    let slf = unsafe { callable.cast_unchecked::<KernelDispatcher>() };
    let Some((n, count)) = call.only_int_keyword(intern!(py, "n_threads")) else {
        return Ok(None);
    };
    let target = slf.get().fast_target_with(py, Some(n.to_owned()))?;
    let Some((cuda, _)) = target else {
        return Ok(None);
    };
    if KernelLauncher::repeat_launch(&cuda, &ArgList::Vector(call), count)? {
        return Ok(Some(py.None()));
    }
    Ok(None)
}

crate::vectorcall::vectorcall_entry!(
    dispatcher_vectorcall,
    "KernelDispatcher",
    dispatcher_fast_call
);
