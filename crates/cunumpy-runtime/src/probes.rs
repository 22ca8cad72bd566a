//! Benchmark probes: launch loops with nothing but the driver call, the floor any launch
//! path is measured against (`benches/launch_overhead.py`). Never used by a launch.

use cunumpy_core::launch::LaunchShape;
use cunumpy_cuda::{CudaError, Driver, Function, StreamHandle};
use std::ffi::c_void;
use std::time::{Duration, Instant};

/// Launches `function` `n_launches` times back to back, then waits for the stream. Returns
/// the wall time of the loop plus the wait.
///
/// # Safety
/// As for [`Function::launch`], for every one of the launches.
pub unsafe fn raw_launch_loop(
    function: &Function,
    shape: &LaunchShape,
    shared: u32,
    stream: StreamHandle,
    params: *mut *mut c_void,
    n_launches: u64,
) -> Result<Duration, CudaError> {
    let start = Instant::now();
    for _ in 0..n_launches {
        // SAFETY: the caller upholds `Function::launch`'s contract for every launch.
        unsafe { function.launch(shape, shared, stream, params) }?;
    }
    Driver::get()?.synchronize_stream(stream)?;
    Ok(start.elapsed())
}

/// Microseconds per iteration of `step`, run `n` times, then a wait for `stream` (whose
/// error `cuda` converts).
pub fn time_per_launch<E>(
    n: u64,
    stream: StreamHandle,
    step: &mut dyn FnMut() -> Result<(), E>,
    cuda: impl Fn(CudaError) -> E,
) -> Result<f64, E> {
    let start = Instant::now();
    for _ in 0..n {
        step()?;
    }
    Driver::get()
        .and_then(|d| d.synchronize_stream(stream))
        .map_err(cuda)?;
    Ok(start.elapsed().as_secs_f64() / n.max(1) as f64 * 1e6)
}
