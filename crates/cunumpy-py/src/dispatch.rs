//! The hot path of `cunumpy.kernels.Kernel`: `KernelDispatcher`, its base class.
//!
//! A `Kernel` that dispatches by backend and has a CUDA version registers that `CudaKernel`
//! here (`_enable_fast_path`). A call with no keyword but `n_threads`, while the backend is
//! CuPy and no kernel profile collects, then goes straight to the CUDA launch in Rust; every
//! other call (the host path, fallbacks, keywords, profiles) goes to `Kernel._call_slow`.

use crate::fused_call::profiling;
use crate::kernel::KernelLauncher;
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

#[pyclass(subclass, module = "cunumpy._core", name = "KernelDispatcher")]
pub struct KernelDispatcher {
    fast: OnceLock<FastPath>,
}

impl KernelDispatcher {
    /// The CUDA kernel to launch now, or None when the call must take the Python path.
    fn fast_target<'py>(
        &self,
        py: Python<'py>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Option<Target<'py>>> {
        let Some(fast) = self.fast.get() else {
            return Ok(None);
        };
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
        if n_threads.is_none() && !cuda.borrow().infers_n_threads() {
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
        KernelDispatcher {
            fast: OnceLock::new(),
        }
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
        let target = slf.borrow().fast_target(py, kwargs)?;
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
