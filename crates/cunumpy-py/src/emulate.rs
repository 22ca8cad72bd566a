//! CUDA kernels run on the CPU by `cunumpy-emu`: for `cunumpy.kernel_testing` and for the
//! emulated device backend (the fake CuPy), where `CudaKernel.__call__` lands here.
//!
//! Arguments go through the same flatten, checks and `ArgPlan` packing as a driver launch;
//! the emulator takes that very buffer. Pointer arguments are host addresses here (NumPy or
//! fake-CuPy arrays), and their byte lengths become the emulator's bounds, so an access outside
//! an argument is reported with the kernel, the parameter and the index.

use crate::arrays::{self, Object};
use crate::errors;
use crate::kernel::{flatten, Config, KernelLauncher};
use cunumpy_core::args::LaunchBuffer;
use cunumpy_core::launch::{self, DeviceLimits, KernelLimits, LaunchShape};
use cunumpy_core::ledger::Ledger;
use cunumpy_core::signature::ParamKind;
use cunumpy_emu::LaunchOptions;
use cunumpy_emu::{default_cache_dir, CacheOutcome, EmuCompiler, EmuError, EmuLibrary};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Whether the fake CuPy is installed, so that `CudaKernel` launches are emulated.
static FAKE_BACKEND: AtomicBool = AtomicBool::new(false);

/// The limits the emulated device enforces (those of an H100/H200-class GPU), so a launch
/// that a GPU refuses is refused here too.
const FAKE_DEVICE: DeviceLimits = DeviceLimits {
    max_block: [1024, 1024, 64],
    max_grid: [i32::MAX as u32, 65535, 65535],
    max_threads_per_block: 1024,
    shared_per_block: 48 * 1024,
    shared_per_block_optin: 227 * 1024,
};
const FAKE_KERNEL: KernelLimits = KernelLimits {
    max_threads_per_block: 1024,
    static_shared: 0,
};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn fake_backend_active() -> bool {
    FAKE_BACKEND.load(Ordering::Relaxed)
}

/// Whether a `kernel_testing.emulated_launches()` block is open: `CudaKernel` launches then go
/// to the Python method `_emulated_launch` (NumPy arrays stand for device memory there).
static EMULATED_LAUNCHES: AtomicBool = AtomicBool::new(false);

pub(crate) fn emulated_launches_active() -> bool {
    EMULATED_LAUNCHES.load(Ordering::Relaxed)
}

/// What identifies a build: equal keys share one loaded library in this process.
#[derive(Clone, PartialEq, Eq, Hash)]
struct LibraryKey {
    source: String,
    expression: String,
    options: Vec<String>,
    include_dirs: Vec<PathBuf>,
    compiler: Option<String>,
    cache_dir: Option<PathBuf>,
}

static LIBRARIES: Mutex<Option<HashMap<LibraryKey, Arc<EmuLibrary>>>> = Mutex::new(None);
static COMPILER: Mutex<Option<(Option<String>, EmuCompiler)>> = Mutex::new(None);

/// The host compiler (`$CXX`, else the first of `c++`, `g++`, `clang++`), detected again when
/// `$CXX` changes.
fn compiler() -> Result<EmuCompiler, EmuError> {
    let cxx = std::env::var("CXX").ok();
    let mut known = lock(&COMPILER);
    if let Some((for_cxx, c)) = known.as_ref() {
        if *for_cxx == cxx {
            return Ok(c.clone());
        }
    }
    let c = EmuCompiler::detect()?;
    *known = Some((cxx, c.clone()));
    Ok(c)
}

fn include_dirs(config: &Config) -> Vec<PathBuf> {
    let mut dirs = config.include_dirs.clone();
    if !dirs.contains(&config.shipped_dir) {
        dirs.push(config.shipped_dir.clone());
    }
    dirs
}

/// The kernel's emulation library: from this process's table, else compiled (or found in the
/// disk cache) with the GIL released. Returns whether it came from the disk cache.
fn library_for(py: Python<'_>, config: &Config) -> PyResult<(Arc<EmuLibrary>, bool)> {
    let key = LibraryKey {
        source: config.source.clone(),
        expression: config.expression.clone(),
        options: config.options.clone(),
        include_dirs: include_dirs(config),
        compiler: std::env::var("CXX").ok(),
        cache_dir: default_cache_dir(),
    };
    library_for_key(py, key)
}

/// The emulation library of kernel `kernel` of a generated, self-contained module `source`
/// (no options, no include directories), e.g. one launch of a fusion plan: from this
/// process's table, else compiled (or found in the disk cache) with the GIL released.
pub(crate) fn library_for_source(
    py: Python<'_>,
    source: &str,
    kernel: &str,
) -> PyResult<(Arc<EmuLibrary>, bool)> {
    let key = LibraryKey {
        source: source.to_string(),
        expression: kernel.to_string(),
        options: Vec::new(),
        include_dirs: Vec::new(),
        compiler: std::env::var("CXX").ok(),
        cache_dir: default_cache_dir(),
    };
    library_for_key(py, key)
}

fn library_for_key(py: Python<'_>, key: LibraryKey) -> PyResult<(Arc<EmuLibrary>, bool)> {
    if let Some(lib) = lock(&LIBRARIES).as_ref().and_then(|m| m.get(&key)) {
        return Ok((lib.clone(), lib.cache_outcome() == CacheOutcome::DiskHit));
    }
    let built = py.detach(|| {
        let cxx = compiler()?;
        if let Some(dir) = &key.cache_dir {
            std::fs::create_dir_all(dir).map_err(|e| EmuError::Io {
                context: format!("creating the emulation cache {}", dir.display()),
                message: e.to_string(),
            })?;
        }
        cxx.compile(
            &key.source,
            &key.expression,
            &key.options,
            &key.include_dirs,
            key.cache_dir.as_deref(),
        )
    });
    let lib = Arc::new(built.map_err(|e| {
        let err = errors::emu_error(py, e);
        let _ = err.value(py).setattr("options", key.options.clone());
        err
    })?);
    let hit = lib.cache_outcome() == CacheOutcome::DiskHit;
    let mut table = lock(&LIBRARIES);
    let lib = table
        .get_or_insert_with(HashMap::new)
        .entry(key)
        .or_insert(lib);
    Ok((lib.clone(), hit))
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

/// Runs a packed launch in the emulator with the GIL released.
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    config: &Config,
    flat: &[Bound<'_, PyAny>],
    mut buffer: LaunchBuffer,
    shape: LaunchShape,
    shared: u32,
    shuffle_seed: Option<u64>,
    bounds: bool,
) -> PyResult<()> {
    launch::validate(&config.name, &shape, shared, &FAKE_DEVICE, &FAKE_KERNEL)
        .map_err(|e| errors::launch_error(py, e))?;
    let (lib, _) = library_for(py, config)?;
    if lib.param_count() != flat.len() {
        return Err(errors::raise(
            py,
            "KernelArgumentTypeError",
            format!(
                "{}() takes {} arguments, got {}",
                config.name,
                lib.param_count(),
                flat.len()
            ),
        ));
    }
    // The checked build wraps pointer parameters in accessor types; a kernel that hands them to
    // a template deducing `T*` does not compile that way, and then runs unchecked (a shuffle
    // seed needs the checked build, so its error is raised by the launch).
    let bounds = bounds
        && (shuffle_seed.is_some()
            || !matches!(
                py.detach(|| lib.prepare_checked()),
                Err(EmuError::Compile { .. })
            ));
    let options = LaunchOptions {
        bounds: if bounds {
            Some(pointer_extents(config, flat)?)
        } else {
            None
        },
        shuffle_seed,
        ..LaunchOptions::default()
    };
    let result = py.detach(move || {
        // SAFETY: the buffer was packed by the kernel's ArgPlan (or, unchecked, as the caller
        // asked) and holds one value per parameter of the compiled kernel (counted above).
        // Pointer values are host addresses of live NumPy or fake-CuPy arrays that the caller
        // keeps alive (`flat` holds them) for the launch; accesses outside their byte lengths
        // are caught when `bounds` is on.
        unsafe {
            lib.launch(
                buffer.params(),
                shape.grid,
                shape.block,
                shared as usize,
                &options,
            )
        }
    });
    result.map_err(|e| errors::emu_error(py, e))
}

/// Validates a launch shape against the emulated device's limits.
pub(crate) fn validate_fake_launch(
    py: Python<'_>,
    name: &str,
    shape: &LaunchShape,
    shared: u32,
) -> PyResult<()> {
    launch::validate(name, shape, shared, &FAKE_DEVICE, &FAKE_KERNEL)
        .map_err(|e| errors::launch_error(py, e))
}

/// `CudaKernel.__call__` on the fake CuPy backend: device 0, checked bounds, recorded in the
/// ledger like a launch, then the optional NaN/inf scan.
pub(crate) fn launch_on_fake_backend(
    slf: &Bound<'_, KernelLauncher>,
    flat: &[Bound<'_, PyAny>],
    shape: LaunchShape,
    shared: u32,
) -> PyResult<()> {
    let py = slf.py();
    let this = slf.borrow();
    let config = this.config()?;
    let buffer = this.pack(py, config, flat, 0)?;
    if shape.is_empty() {
        return Ok(());
    }
    run(py, config, flat, buffer, shape, shared, None, true)?;
    if Ledger::global().is_recording() {
        KernelLauncher::record_launch(py, &config.name, &shape);
    }
    if this.check_finite_enabled() {
        drop(this);
        slf.call_method1(
            intern!(py, "_check_finite_outputs"),
            (PyList::new(py, flat)?,),
        )?;
    }
    Ok(())
}

/// `CudaKernel.is_compiled` on the fake CuPy backend: whether this process has loaded the
/// kernel's emulation library.
pub(crate) fn is_compiled_on_fake_backend(config: &Config) -> bool {
    let Some(table) = lock(&LIBRARIES)
        .as_ref()
        .map(|m| m.keys().cloned().collect::<Vec<_>>())
    else {
        return false;
    };
    table.iter().any(|k| {
        k.source == config.source
            && k.expression == config.expression
            && k.options == config.options
    })
}

/// `CudaKernel.compile()` on the fake CuPy backend: builds the emulation library; True when
/// it came from the disk cache.
pub(crate) fn compile_on_fake_backend(py: Python<'_>, config: &Config) -> PyResult<bool> {
    Ok(library_for(py, config)?.1)
}

/// Runs `launcher` in the emulator: the arguments are checked and packed as for a launch
/// (pointer arguments must be arrays with host addresses behind their device interface).
#[pyfunction]
#[pyo3(signature = (launcher, *args, n_threads=None, grid=None, block=None, shared_mem=0, shuffle_seed=None, bounds=true))]
#[allow(clippy::too_many_arguments)]
fn _emulate_launch(
    launcher: &Bound<'_, KernelLauncher>,
    args: &Bound<'_, PyTuple>,
    n_threads: Option<&Bound<'_, PyAny>>,
    grid: Option<&Bound<'_, PyAny>>,
    block: Option<&Bound<'_, PyAny>>,
    shared_mem: i64,
    shuffle_seed: Option<u64>,
    bounds: bool,
) -> PyResult<()> {
    let py = launcher.py();
    let this = launcher.borrow();
    let config = this.config()?;
    let flat = flatten(args)?;
    let (shape, shared) = this.call_shape(py, &flat, args, n_threads, grid, block, shared_mem)?;
    let buffer = this.pack(py, config, &flat, 0)?;
    if shape.is_empty() {
        return Ok(());
    }
    run(
        py,
        config,
        &flat,
        buffer,
        shape,
        shared,
        shuffle_seed,
        bounds,
    )
}

/// Compiles `launcher` for emulation (or finds it in the cache); returns what was built.
#[pyfunction]
fn _compile_for_emulation<'py>(
    launcher: &Bound<'py, KernelLauncher>,
) -> PyResult<Bound<'py, PyDict>> {
    let py = launcher.py();
    let this = launcher.borrow();
    let config = this.config()?;
    let (lib, from_cache) = library_for(py, config)?;
    let out = PyDict::new(py);
    out.set_item("kernel", lib.kernel())?;
    out.set_item("library", lib.library_path())?;
    out.set_item("from_cache", from_cache)?;
    out.set_item("uses_fibers", lib.uses_fibers())?;
    out.set_item("param_count", lib.param_count())?;
    out.set_item("param_names", lib.param_names().to_vec())?;
    out.set_item("cache_dir", default_cache_dir())?;
    Ok(out)
}

/// The host C++ compiler emulation uses, or None when there is none.
#[pyfunction]
fn _emulation_compiler(py: Python<'_>) -> Option<String> {
    py.detach(compiler).ok().map(|c| c.program().to_string())
}

/// The emulation disk cache directory, or None when it is disabled.
#[pyfunction]
fn _emulation_cache_dir() -> Option<PathBuf> {
    default_cache_dir()
}

/// Turns the emulated device backend on or off (called when the fake CuPy is installed).
#[pyfunction]
fn _set_fake_backend(active: bool) {
    FAKE_BACKEND.store(active, Ordering::Relaxed);
}

#[pyfunction]
fn _fake_backend_active() -> bool {
    fake_backend_active()
}

/// Routes `CudaKernel` launches to `_emulated_launch` (set by `emulated_launches()`).
#[pyfunction]
fn _set_emulated_launches(active: bool) {
    EMULATED_LAUNCHES.store(active, Ordering::Relaxed);
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_emulate_launch, m)?)?;
    m.add_function(wrap_pyfunction!(_compile_for_emulation, m)?)?;
    m.add_function(wrap_pyfunction!(_emulation_compiler, m)?)?;
    m.add_function(wrap_pyfunction!(_emulation_cache_dir, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fake_backend, m)?)?;
    m.add_function(wrap_pyfunction!(_fake_backend_active, m)?)?;
    m.add_function(wrap_pyfunction!(_set_emulated_launches, m)?)?;
    Ok(())
}
