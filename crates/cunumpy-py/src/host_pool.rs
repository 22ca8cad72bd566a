//! Python face of the host memory pool: the process-wide `HostPool` that large results of
//! fused CPU calls are allocated from (`docs/kernel-fusion.md`, "Memory of fused results on
//! the CPU").
//!
//! A pooled result is a NumPy array over a `PooledHostBuffer`, which owns the pool's buffer
//! and exposes it through `__array_interface__`; `numpy.asarray` makes the array (no copy)
//! with the owner as its `base`. When the last array viewing the memory dies, the owner dies
//! and the buffer goes back to the pool.

use crate::errors;
use cunumpy_core::host_pool::{parse_limit, HostBuffer, HostPool, DEFAULT_LIMIT, LIMIT_ENV};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

/// Results smaller than this (1 MiB) come from `numpy.empty`: small allocations are cheap
/// for malloc, and making an array over a pooled buffer costs a microsecond or two.
pub(crate) const POOL_MIN_BYTES: usize = 1 << 20;

/// The process-wide pool; its limit comes from `CUNUMPY_HOST_POOL_LIMIT` (bytes) when set.
fn pool(py: Python<'_>) -> PyResult<&'static HostPool> {
    static POOL: PyOnceLock<HostPool> = PyOnceLock::new();
    POOL.get_or_try_init(py, || {
        let limit = match cunumpy_core::config::host_pool_limit() {
            None => DEFAULT_LIMIT,
            Some(value) => match value.into_string() {
                Ok(value) => parse_limit(&value).map_err(errors::host_pool_error)?,
                Err(value) => {
                    return Err(errors::raise_here(
                        "InvalidArgumentError",
                        format!(
                        "{LIMIT_ENV}={value:?} is not a size in bytes (expected a non-negative \
                         integer)"
                    ),
                    ))
                }
            },
        };
        Ok(HostPool::with_limit(limit))
    })
}

struct NumpyFns {
    empty: Py<PyAny>,
    asarray: Py<PyAny>,
    dtype: Py<PyAny>,
}

fn numpy_fns(py: Python<'_>) -> PyResult<&NumpyFns> {
    static FNS: PyOnceLock<NumpyFns> = PyOnceLock::new();
    FNS.get_or_try_init(py, || {
        let np = py.import("numpy")?;
        Ok(NumpyFns {
            empty: np.getattr("empty")?.unbind(),
            asarray: np.getattr("asarray")?.unbind(),
            dtype: np.getattr("dtype")?.unbind(),
        })
    })
}

/// The memory of one pooled array: owns a buffer of the host memory pool and shows it to
/// NumPy through `__array_interface__`. The buffer returns to the pool when this dies.
#[pyclass(module = "cunumpy._core", name = "PooledHostBuffer", frozen)]
pub struct PooledHostBuffer {
    buffer: HostBuffer,
    shape: Py<PyTuple>,
    typestr: Py<PyAny>,
}

#[pymethods]
impl PooledHostBuffer {
    /// NumPy's array interface (version 3): C-contiguous, writable.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item(intern!(py, "version"), 3)?;
        d.set_item(intern!(py, "shape"), self.shape.bind(py))?;
        d.set_item(intern!(py, "typestr"), self.typestr.bind(py))?;
        d.set_item(intern!(py, "data"), (self.buffer.addr(), false))?;
        d.set_item(intern!(py, "strides"), py.None())?;
        Ok(d)
    }

    /// The bytes the array uses.
    #[getter]
    fn nbytes(&self) -> usize {
        self.buffer.len()
    }

    /// The bytes the pool's buffer has (its size class).
    #[getter]
    fn capacity(&self) -> usize {
        self.buffer.capacity()
    }

    fn __repr__(&self) -> String {
        format!(
            "PooledHostBuffer(addr=0x{:x}, nbytes={}, capacity={})",
            self.buffer.addr(),
            self.buffer.len(),
            self.buffer.capacity()
        )
    }
}

/// An uninitialised C-contiguous array of `shape` (a tuple) and `dtype` (a NumPy dtype) whose
/// data is `nbytes` bytes: over a pooled buffer from `POOL_MIN_BYTES` up, from `numpy.empty`
/// below (and for empty arrays).
pub(crate) fn pooled_empty<'py>(
    py: Python<'py>,
    shape: &Bound<'py, PyTuple>,
    dtype: &Bound<'py, PyAny>,
    nbytes: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let fns = numpy_fns(py)?;
    if nbytes < POOL_MIN_BYTES {
        return fns.empty.bind(py).call1((shape, dtype));
    }
    let buffer = pool(py)?.take(nbytes).map_err(errors::host_pool_error)?;
    let owner = Bound::new(
        py,
        PooledHostBuffer {
            buffer,
            shape: shape.clone().unbind(),
            typestr: dtype.getattr(intern!(py, "str"))?.unbind(),
        },
    )?;
    fns.asarray.bind(py).call1((owner,))
}

/// `numpy.empty(shape, dtype)` for the results of fused CPU calls: large ones (1 MiB and up)
/// come from the host memory pool.
#[pyfunction]
fn _host_empty<'py>(
    py: Python<'py>,
    shape: Vec<usize>,
    dtype: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let dtype = numpy_fns(py)?.dtype.bind(py).call1((dtype,))?;
    let itemsize: usize = dtype.getattr(intern!(py, "itemsize"))?.extract()?;
    let nbytes = shape
        .iter()
        .try_fold(itemsize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| {
            errors::raise_here(
                "InvalidArgumentError",
                format!("an array of shape {shape:?} and item size {itemsize} is too large"),
            )
        })?;
    let shape = PyTuple::new(py, &shape)?;
    pooled_empty(py, &shape, &dtype, nbytes)
}

/// The host memory pool that large results of fused CPU calls come from (one per process).
/// Names follow CuPy's `MemoryPool`; bytes are counted in the pool's 64 KiB size classes.
#[pyclass(module = "cunumpy._core", name = "HostMemoryPool", frozen)]
pub struct HostMemoryPool {
    pool: HostPool,
}

#[pymethods]
impl HostMemoryPool {
    /// Bytes in buffers in use (held by live arrays).
    fn used_bytes(&self) -> usize {
        self.pool.used_bytes()
    }

    /// Bytes in idle buffers kept for reuse.
    fn free_bytes(&self) -> usize {
        self.pool.free_bytes()
    }

    /// `used_bytes() + free_bytes()`.
    fn total_bytes(&self) -> usize {
        self.pool.total_bytes()
    }

    /// How many idle buffers are kept.
    fn n_free_blocks(&self) -> usize {
        self.pool.n_free_blocks()
    }

    /// Frees every idle buffer (memory held by live arrays is not affected).
    fn free_all_blocks(&self) {
        self.pool.free_all_blocks()
    }

    /// Sets the limit on idle bytes kept for reuse (0: keep nothing); idle buffers above it
    /// are freed, oldest first.
    fn set_limit(&self, size: i64) -> PyResult<()> {
        let limit = usize::try_from(size).map_err(|_| {
            errors::raise_here(
                "InvalidArgumentError",
                format!(
                    "host memory pool limit must be a non-negative number of bytes, got {size}"
                ),
            )
        })?;
        self.pool.set_limit(limit);
        Ok(())
    }

    /// The limit on idle bytes kept for reuse.
    fn get_limit(&self) -> usize {
        self.pool.get_limit()
    }

    fn __repr__(&self) -> String {
        format!(
            "HostMemoryPool(used_bytes={}, free_bytes={}, limit={})",
            self.pool.used_bytes(),
            self.pool.free_bytes(),
            self.pool.get_limit()
        )
    }
}

/// The process-wide host memory pool.
#[pyfunction]
fn host_memory_pool(py: Python<'_>) -> PyResult<HostMemoryPool> {
    Ok(HostMemoryPool {
        pool: pool(py)?.clone(),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PooledHostBuffer>()?;
    m.add_class::<HostMemoryPool>()?;
    m.add_function(wrap_pyfunction!(host_memory_pool, m)?)?;
    m.add_function(wrap_pyfunction!(_host_empty, m)?)?;
    m.add("HOST_POOL_MIN_BYTES", POOL_MIN_BYTES)?;
    Ok(())
}
