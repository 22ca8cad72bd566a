//! Python face of the emulated CUDA device (`cunumpy_runtime::emulated`): for
//! `cunumpy.kernel_testing` and for the fake CuPy, where `CudaKernel.__call__` runs a kernel
//! through `run` here.
//!
//! Arguments go through the same flatten, checks and `ArgPlan` packing as a driver launch;
//! the emulator takes that very buffer. Pointer arguments are host addresses here (NumPy or
//! fake-CuPy arrays), and their byte lengths become the emulator's bounds, so an access outside
//! an argument is reported with the kernel, the parameter and the index.

use crate::arrays::{self, Object};
use crate::errors;
use crate::kernel_config::Config;
use cunumpy_core::args::LaunchBuffer;
use cunumpy_core::launch::LaunchShape;
use cunumpy_core::signature::ParamKind;
use cunumpy_emu::{EmuLibrary, LaunchOptions};
use cunumpy_runtime::{device, emulated};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The kernel's emulation library (built with the GIL released on first use); whether it
/// came from the disk cache.
pub(crate) fn library_for(py: Python<'_>, config: &Config) -> PyResult<(Arc<EmuLibrary>, bool)> {
    py.detach(|| config.kernel.emulation_library())
        .map_err(|e| {
            let err = errors::emu_error(py, e);
            let _ = err
                .value(py)
                .setattr("options", config.kernel.source().options.clone());
            err
        })
}

/// Whether a `kernel_testing.emulated_launches()` block is open: `CudaKernel` launches then go
/// to the Python method `_emulated_launch` (NumPy arrays stand for device memory there).
static EMULATED_LAUNCHES: AtomicBool = AtomicBool::new(false);

pub(crate) fn emulated_launches_active() -> bool {
    EMULATED_LAUNCHES.load(Ordering::Relaxed)
}

/// The byte length of each pointer argument (None for anything else), for the bounds checks.
fn pointer_extents(config: &Config, flat: &[Bound<'_, PyAny>]) -> PyResult<Vec<Option<usize>>> {
    let mut out = Vec::with_capacity(flat.len());
    for (i, obj) in flat.iter().enumerate() {
        let pointer = match &config.plan {
            Some(plan) => matches!(plan.kind(i), Some(ParamKind::Pointer { .. })),
            None => true,
        };
        let extent = if pointer {
            match arrays::read_object(obj, true)? {
                Object::Device(info) => info.dtype.ok().and_then(|d| {
                    info.shape.iter().try_fold(d.itemsize(), |n, &s| {
                        n.checked_mul(usize::try_from(s).ok()?)
                    })
                }),
                _ => None,
            }
        } else {
            None
        };
        out.push(extent);
    }
    Ok(out)
}

/// What an emulated launch of `config` with these arguments runs: its library (built on
/// first use) and options (bounds from the arguments' byte lengths). Checks the shape against
/// the device's limits and the argument count against the compiled kernel.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prepare(
    py: Python<'_>,
    config: &Config,
    flat: &[Bound<'_, PyAny>],
    shape: &LaunchShape,
    shared: u32,
    shuffle_seed: Option<u64>,
    bounds: bool,
) -> PyResult<(Arc<EmuLibrary>, LaunchOptions)> {
    let name = config.name();
    emulated::validate(name, shape, shared).map_err(|e| errors::launch_error(py, e))?;
    let (lib, _) = library_for(py, config)?;
    if lib.param_count() != flat.len() {
        return Err(errors::raise(
            py,
            "KernelArgumentTypeError",
            format!(
                "{}() takes {} arguments, got {}",
                name,
                lib.param_count(),
                flat.len()
            ),
        ));
    }
    let bounds = py.detach(|| emulated::use_checked_build(&lib, bounds, shuffle_seed));
    let options = LaunchOptions {
        bounds: if bounds {
            Some(pointer_extents(config, flat)?)
        } else {
            None
        },
        shuffle_seed,
        ..LaunchOptions::default()
    };
    Ok((lib, options))
}

/// Runs a packed launch in the emulator with the GIL released.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    py: Python<'_>,
    config: &Config,
    flat: &[Bound<'_, PyAny>],
    mut buffer: LaunchBuffer,
    shape: LaunchShape,
    shared: u32,
    shuffle_seed: Option<u64>,
    bounds: bool,
) -> PyResult<()> {
    let name = config.name();
    let (lib, options) = prepare(py, config, flat, &shape, shared, shuffle_seed, bounds)?;
    let result = py.detach(move || {
        // SAFETY: the buffer was packed by the kernel's ArgPlan (or, unchecked, as the caller
        // asked) and holds one value per parameter of the compiled kernel (counted above).
        // Pointer values are host addresses of live NumPy or fake-CuPy arrays that the caller
        // keeps alive (`flat` holds them) for the launch; accesses outside their byte lengths
        // are caught when `bounds` is on.
        unsafe { emulated::run(name, &lib, buffer.params(), &shape, shared, &options) }
    });
    result.map_err(|e| errors::runtime_error(py, name, e))
}

/// The host C++ compiler emulation uses, or None when there is none.
#[pyfunction]
fn _emulation_compiler(py: Python<'_>) -> Option<String> {
    py.detach(emulated::compiler)
        .ok()
        .map(|c| c.program().to_string())
}

/// The emulation disk cache directory, or None when it is disabled.
#[pyfunction]
fn _emulation_cache_dir() -> Option<PathBuf> {
    emulated::cache_dir()
}

/// Turns the emulated device on or off (called when the fake CuPy is installed).
#[pyfunction]
fn _set_fake_backend(active: bool) {
    device::set_emulated(active);
}

#[pyfunction]
fn _fake_backend_active() -> bool {
    device::emulated()
}

/// Routes `CudaKernel` launches to `_emulated_launch` (set by `emulated_launches()`).
#[pyfunction]
fn _set_emulated_launches(active: bool) {
    EMULATED_LAUNCHES.store(active, Ordering::Relaxed);
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_emulation_compiler, m)?)?;
    m.add_function(wrap_pyfunction!(_emulation_cache_dir, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fake_backend, m)?)?;
    m.add_function(wrap_pyfunction!(_fake_backend_active, m)?)?;
    m.add_function(wrap_pyfunction!(_set_emulated_launches, m)?)?;
    Ok(())
}
