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
use std::sync::Arc;

/// The kernel's emulation library (built with the GIL released on first use); whether it
/// came from the disk cache.
pub(crate) fn library_for(py: Python<'_>, config: &Config) -> PyResult<(Arc<EmuLibrary>, bool)> {
    let built = py.detach(|| config.kernel.emulation_library());
    after_build(
        py,
        config.name(),
        built.as_ref().ok().map(|(lib, _)| lib.as_ref()),
    )?;
    built.map_err(|e| {
        let err = errors::emu_error(py, e);
        let _ = err
            .value(py)
            .setattr("options", config.kernel.source().options.clone());
        err
    })
}

/// After an emulation build: the warnings about unusable cache folders (once per folder), and
/// one line on stderr when the host compiler ran longer than the slow-compile threshold.
pub(crate) fn after_build(py: Python<'_>, name: &str, lib: Option<&EmuLibrary>) -> PyResult<()> {
    for message in cunumpy_emu::take_cache_warnings() {
        errors::warn(py, "CacheFallbackWarning", &message)?;
    }
    let Some((seconds, cached_in)) = lib.and_then(EmuLibrary::take_compile_report) else {
        return Ok(());
    };
    if seconds >= cunumpy_core::config::emulation_slow_compile_seconds() {
        let cached = match cached_in {
            Some(dir) => format!("cached in {}; later runs load it", dir.display()),
            None => "not cached (no usable disk cache)".to_string(),
        };
        let line = format!(
            "cunumpy: compiling kernel '{name}' for the emulator took {seconds:.1} s ({cached})\n"
        );
        py.import("sys")?
            .getattr("stderr")?
            .call_method1("write", (line,))?;
    }
    Ok(())
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

/// What an emulated launch checks, and in which order its threads run.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Checks {
    /// Run each block's threads in an order drawn from this seed.
    pub shuffle_seed: Option<u64>,
    /// Check accesses through pointer parameters against the arrays' extents.
    pub bounds: bool,
    /// Report two threads writing one element with nothing ordering them.
    pub detect_races: bool,
}

/// The thread order and race detection of emulated-device launches (`CudaKernel` on the fake
/// CuPy), set by `kernel_testing.shuffled_threads()` / `assert_kernels_agree(shuffle_seed=)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaunchOrder {
    pub shuffle_seed: Option<u64>,
    pub detect_races: bool,
}

static LAUNCH_ORDER: std::sync::Mutex<LaunchOrder> = std::sync::Mutex::new(LaunchOrder {
    shuffle_seed: None,
    detect_races: true,
});

pub(crate) fn launch_order() -> LaunchOrder {
    *cunumpy_core::sync::lock(&LAUNCH_ORDER)
}

/// Sets the thread order and race detection of emulated-device launches; returns the previous
/// setting (seed, detect_races).
#[pyfunction]
#[pyo3(signature = (shuffle_seed, detect_races=true))]
fn _set_emulated_launch_order(
    shuffle_seed: Option<u64>,
    detect_races: bool,
) -> (Option<u64>, bool) {
    let mut order = cunumpy_core::sync::lock(&LAUNCH_ORDER);
    let before = (order.shuffle_seed, order.detect_races);
    *order = LaunchOrder {
        shuffle_seed,
        detect_races,
    };
    before
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
    checks: Checks,
) -> PyResult<(Arc<EmuLibrary>, LaunchOptions)> {
    let Checks {
        shuffle_seed,
        bounds,
        detect_races,
    } = checks;
    let name = config.name();
    emulated::validate(name, shape, shared)
        .map_err(|e| errors::kernel_launch_error(py, name, e))?;
    let (lib, _) = library_for(py, config)?;
    let with_defaults = config
        .plan
        .as_ref()
        .is_some_and(|p| p.len() == lib.param_count());
    if lib.param_count() != flat.len() && !(with_defaults && flat.len() < lib.param_count()) {
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
        detect_races: detect_races && bounds,
        constants: Some(config.kernel.constant_values().clone()),
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
    checks: Checks,
) -> PyResult<()> {
    let name = config.name();
    let (lib, options) = prepare(py, config, flat, &shape, shared, checks)?;
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
    device::set_emulated_launches(active);
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_emulation_compiler, m)?)?;
    m.add_function(wrap_pyfunction!(_emulation_cache_dir, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fake_backend, m)?)?;
    m.add_function(wrap_pyfunction!(_fake_backend_active, m)?)?;
    m.add_function(wrap_pyfunction!(_set_emulated_launches, m)?)?;
    m.add_function(wrap_pyfunction!(_set_emulated_launch_order, m)?)?;
    Ok(())
}
