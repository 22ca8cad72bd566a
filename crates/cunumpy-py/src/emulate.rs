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
use cunumpy_emu::EmuLibrary;
use cunumpy_runtime::kernel::EmulatedLaunch;
use cunumpy_runtime::{device, emulated, RuntimeError};
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

pub(crate) use cunumpy_runtime::emulated::Checks;

/// Sets the thread order and race detection of emulated-device launches; returns the previous
/// setting (seed, detect_races).
#[pyfunction]
#[pyo3(signature = (shuffle_seed, detect_races=true))]
fn _set_emulated_launch_order(
    shuffle_seed: Option<u64>,
    detect_races: bool,
) -> (Option<u64>, bool) {
    let before = emulated::set_launch_order(emulated::LaunchOrder {
        shuffle_seed,
        detect_races,
    });
    (before.shuffle_seed, before.detect_races)
}

/// An error of an emulated launch's preparation as its Python exception: a build error
/// carries the kernel's compile options, a shape error names the kernel.
fn prepare_error(py: Python<'_>, config: &Config, err: RuntimeError) -> PyErr {
    match err {
        RuntimeError::Emu(e) => {
            let err = errors::emu_error(py, e);
            let _ = err
                .value(py)
                .setattr("options", config.kernel.source().options.clone());
            err
        }
        RuntimeError::Launch(e) => errors::kernel_launch_error(py, config.name(), e),
        other => errors::runtime_error(py, config.name(), other),
    }
}

/// What an emulated launch of `config` with these arguments runs
/// (`cunumpy_runtime::Kernel::prepare_emulated`, with the GIL released): the arguments'
/// byte lengths are read here for the bounds checks.
pub(crate) fn prepare(
    py: Python<'_>,
    config: &Config,
    flat: &[Bound<'_, PyAny>],
    shape: &LaunchShape,
    shared: u32,
    checks: Checks,
) -> PyResult<EmulatedLaunch> {
    let extents = if checks.bounds {
        pointer_extents(config, flat)?
    } else {
        Vec::new()
    };
    let planned = config.plan.as_ref().map(|p| p.len());
    let given = flat.len();
    let kernel = &config.kernel;
    let prepared =
        py.detach(|| kernel.prepare_emulated(given, planned, extents, shape, shared, checks));
    // the cache warnings, and the slow-compile line of a build that happened
    after_build(
        py,
        config.name(),
        prepared.as_ref().ok().map(|p| p.library.as_ref()),
    )?;
    prepared.map_err(|e| prepare_error(py, config, e))
}

/// Runs a packed launch in the emulator with the GIL released (prepare, run, and the ledger
/// record when `record` asks: `cunumpy_runtime::EmulatedLaunch::run`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    py: Python<'_>,
    config: &Config,
    flat: &[Bound<'_, PyAny>],
    mut buffer: LaunchBuffer,
    shape: LaunchShape,
    shared: u32,
    checks: Checks,
    record: bool,
) -> PyResult<()> {
    let name = config.name();
    let launch = prepare(py, config, flat, &shape, shared, checks)?;
    let site = record.then(|| crate::ledger::call_site(py));
    let result = py.detach(move || {
        // SAFETY: the buffer was packed by the kernel's ArgPlan (or, unchecked, as the caller
        // asked) and holds one value per parameter of the compiled kernel (counted by
        // `prepare_emulated`). Pointer values are host addresses of live NumPy or fake-CuPy
        // arrays that the caller keeps alive (`flat` holds them) for the launch; accesses
        // outside their byte lengths are caught when `bounds` is on.
        unsafe { launch.run(name, buffer.params(), &shape, shared, site) }
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
