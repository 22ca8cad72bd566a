//! Benchmark probes of `KernelLauncher` (`benches/launch_overhead.py`): launches with fewer
//! and fewer of the launch path's steps, down to the bare driver call
//! (`cunumpy_runtime::probes`). Never used by a launch.

use crate::errors;
use cunumpy_core::args::LaunchBuffer;
use cunumpy_core::launch::LaunchShape;
use cunumpy_cuda::{Driver, StreamHandle};
use cunumpy_runtime::{probes, LoadedKernel};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// What a probe launches: a kernel loaded on `device`, a packed buffer, a shape and a count.
pub(crate) struct Probe<'a> {
    pub(crate) device: i32,
    pub(crate) loaded: &'a LoadedKernel,
    pub(crate) buffer: &'a mut LaunchBuffer,
    pub(crate) shape: &'a LaunchShape,
    pub(crate) n_launches: u64,
}

/// One launch with grid 1 and block 1 on the legacy stream, no checks at all.
///
/// # Safety
/// `buffer` was packed for `loaded`'s parameters from arguments still alive.
pub(crate) unsafe fn bare_launch(
    py: Python<'_>,
    name: &str,
    loaded: &LoadedKernel,
    buffer: &mut LaunchBuffer,
) -> PyResult<()> {
    let one = LaunchShape {
        grid: [1, 1, 1],
        block: [1, 1, 1],
    };
    // SAFETY: as the caller guarantees; cuLaunchKernel copies the values.
    unsafe { loaded.launch(&one, 0, StreamHandle::LEGACY_DEFAULT, buffer.params()) }
        .map_err(|e| errors::cuda_error(py, name, e))
}

/// `n_launches` launches in a tight Rust loop on CuPy's current stream, then one
/// synchronize; the seconds taken.
///
/// # Safety
/// `buffer` was packed for `loaded`'s parameters from arguments alive for the call.
pub(crate) unsafe fn raw_launch_loop(
    py: Python<'_>,
    name: &str,
    loaded: &LoadedKernel,
    buffer: &mut LaunchBuffer,
    shape: &LaunchShape,
    n_launches: u64,
) -> PyResult<f64> {
    let stream = crate::cupy_stream::current_stream(py)?;
    // SAFETY: as the caller guarantees, for every launch.
    let elapsed = unsafe {
        probes::raw_launch_loop(
            loaded.function(),
            shape,
            0,
            stream,
            buffer.params(),
            n_launches,
        )
    }
    .map_err(|e| errors::cuda_error(py, name, e))?;
    Ok(elapsed.as_secs_f64())
}

/// µs per launch of `n` launches in Rust loops, each loop adding one step of the repeat path
/// to the bare driver launch (`compare` is the last-call comparison), and the whole repeat
/// path without the Python call (`repeat`).
///
/// # Safety
/// `probe.buffer` was packed for `probe.loaded`'s parameters from arguments alive for the
/// call.
pub(crate) unsafe fn launch_breakdown(
    py: Python<'_>,
    name: &str,
    probe: Probe<'_>,
    compare: &mut dyn FnMut() -> bool,
    repeat: &mut dyn FnMut() -> PyResult<bool>,
) -> PyResult<Py<PyDict>> {
    let cuda = |e| errors::cuda_error(py, name, e);
    let driver = Driver::get().map_err(cuda)?;
    let stream = crate::cupy_stream::current_stream(py)?;
    let out = PyDict::new(py);
    let timed = |label: &str, step: &mut dyn FnMut() -> PyResult<()>| -> PyResult<()> {
        let us = probes::time_per_launch(probe.n_launches, stream, &mut || step(), cuda)?;
        out.set_item(label, us)
    };
    let (loaded, shape, device) = (probe.loaded, probe.shape, probe.device);
    let params = probe.buffer.params();
    let mut bare = || {
        // SAFETY: as the caller guarantees, launched on CuPy's current stream.
        unsafe { loaded.launch(shape, 0, stream, params) }.map_err(cuda)
    };
    timed("launch_us", &mut bare)?;
    timed("context_launch_us", &mut || {
        driver.current_context().map_err(cuda)?;
        bare()
    })?;
    timed("cupy_current_stream_launch_us", &mut || {
        crate::cupy_stream::current_stream(py)?;
        bare()
    })?;
    timed("stream_on_device_launch_us", &mut || {
        crate::cupy_stream::stream_on_device(py, device)?;
        bare()
    })?;
    timed("lock_compare_launch_us", &mut || {
        std::hint::black_box(compare());
        bare()
    })?;
    timed("repeat_path_us", &mut || {
        if repeat()? {
            Ok(())
        } else {
            Err(crate::errors::raise_here(
                "InvalidStateError",
                "_launch_breakdown: call the kernel with these arguments first".into(),
            ))
        }
    })?;
    Ok(out.unbind())
}
