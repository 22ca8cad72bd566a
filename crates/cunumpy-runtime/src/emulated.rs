//! The emulated CUDA device: CUDA C compiled as host C++ by `cunumpy-emu` and run on the CPU
//! (for `cunumpy.kernel_testing` and the fake CuPy).
//!
//! It enforces the limits of an H100/H200-class GPU, so a launch that a GPU refuses is refused
//! here too. Emulation libraries are kept in one process-wide table (equal builds share one
//! loaded library) over the disk cache.

use cunumpy_core::launch::{self, DeviceLimits, KernelLimits, LaunchShape};
use cunumpy_core::sync::lock;
use cunumpy_emu::LaunchOptions;
use cunumpy_emu::{default_cache_dir, CacheOutcome, EmuCompiler, EmuError, EmuLibrary};
use std::collections::HashMap;
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The limits the emulated device enforces (those of an H100/H200-class GPU).
pub const LIMITS: DeviceLimits = DeviceLimits {
    max_block: [1024, 1024, 64],
    max_grid: [i32::MAX as u32, 65535, 65535],
    max_threads_per_block: 1024,
    shared_per_block: 48 * 1024,
    shared_per_block_optin: 227 * 1024,
};

/// What an emulated kernel allows (the device's own limits; no static shared memory is
/// counted against them).
pub const KERNEL_LIMITS: KernelLimits = KernelLimits {
    max_threads_per_block: 1024,
    static_shared: 0,
};

/// The emulated device's SM count: `CUNUMPY_EMULATED_SM_COUNT` (read at each call, so that
/// what depends on a device's size, fused launch grids, can be tried for other GPUs without
/// one), else an H200's 132.
pub fn sm_count() -> Result<u32, crate::RuntimeError> {
    cunumpy_core::config::emulated_sm_count().map_err(|text| {
        crate::RuntimeError::Setting(format!(
            "{}: expected a positive integer (the emulated device's SM count), got {text:?}",
            cunumpy_core::config::EMULATED_SM_COUNT
        ))
    })
}

/// What an emulated launch checks, and in which order its threads run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Checks {
    /// Run each block's threads in an order drawn from this seed.
    pub shuffle_seed: Option<u64>,
    /// Check accesses through pointer parameters against the arguments' byte lengths.
    pub bounds: bool,
    /// Report two threads writing one element with nothing ordering them.
    pub detect_races: bool,
}

/// The thread order and race detection of `CudaKernel` launches on the emulated device (set
/// by `kernel_testing.shuffled_threads()` / `assert_kernels_agree(shuffle_seed=)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchOrder {
    pub shuffle_seed: Option<u64>,
    pub detect_races: bool,
}

static LAUNCH_ORDER: Mutex<LaunchOrder> = Mutex::new(LaunchOrder {
    shuffle_seed: None,
    detect_races: true,
});

/// The current thread order and race detection of emulated `CudaKernel` launches.
pub fn launch_order() -> LaunchOrder {
    *lock(&LAUNCH_ORDER)
}

/// Sets the thread order and race detection of emulated `CudaKernel` launches; returns the
/// previous setting.
pub fn set_launch_order(order: LaunchOrder) -> LaunchOrder {
    std::mem::replace(&mut *lock(&LAUNCH_ORDER), order)
}

/// The checks of a `CudaKernel` launch on the emulated device: bounds always, the thread
/// order and race detection as set ([`set_launch_order`]).
pub fn kernel_checks() -> Checks {
    let order = launch_order();
    Checks {
        shuffle_seed: order.shuffle_seed,
        bounds: true,
        detect_races: order.detect_races,
    }
}

/// What identifies a build: equal keys share one loaded library in this process.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LibraryKey {
    /// The CUDA C source.
    pub source: String,
    /// The kernel's name expression.
    pub expression: String,
    /// The user's compile options.
    pub options: Vec<String>,
    /// Folders searched for `#include`s.
    pub include_dirs: Vec<PathBuf>,
    compiler: Option<String>,
    cache_dir: Option<PathBuf>,
}

impl LibraryKey {
    /// The key of kernel `expression` of `source`, built with the current compiler and cache.
    pub fn new(
        source: String,
        expression: String,
        options: Vec<String>,
        include_dirs: Vec<PathBuf>,
    ) -> Self {
        LibraryKey {
            source,
            expression,
            options,
            include_dirs,
            compiler: cunumpy_core::config::cxx(),
            cache_dir: default_cache_dir(),
        }
    }
}

static LIBRARIES: Mutex<Option<HashMap<LibraryKey, Arc<EmuLibrary>>>> = Mutex::new(None);
static COMPILER: Mutex<Option<(Option<String>, EmuCompiler)>> = Mutex::new(None);

/// The host compiler (`$CXX`, else the first of `c++`, `g++`, `clang++`), detected again when
/// `$CXX` changes.
pub fn compiler() -> Result<EmuCompiler, EmuError> {
    let cxx = cunumpy_core::config::cxx();
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

/// The emulation disk cache folder (None when it is turned off).
pub fn cache_dir() -> Option<PathBuf> {
    default_cache_dir()
}

/// The library of `key`: from this process's table, else compiled (or found in the disk
/// cache). Blocks for the compile: call it without holding any interpreter lock. Returns
/// whether it came from the disk cache.
pub fn library(key: LibraryKey) -> Result<(Arc<EmuLibrary>, bool), EmuError> {
    if let Some(lib) = lock(&LIBRARIES).as_ref().and_then(|m| m.get(&key)) {
        return Ok((lib.clone(), lib.cache_outcome() == CacheOutcome::DiskHit));
    }
    let start = std::time::Instant::now();
    let built = build(&key);
    crate::count_compile_time(start);
    let lib = Arc::new(built?);
    let hit = lib.cache_outcome() == CacheOutcome::DiskHit;
    let mut table = lock(&LIBRARIES);
    let lib = table
        .get_or_insert_with(HashMap::new)
        .entry(key)
        .or_insert(lib);
    Ok((lib.clone(), hit))
}

/// Compiles the library of `key` (or finds it in the disk cache).
fn build(key: &LibraryKey) -> Result<EmuLibrary, EmuError> {
    let cxx = compiler()?;
    // an unusable cache folder is replaced by a temporary one inside cunumpy-emu (with a
    // warning, `cunumpy_emu::take_cache_warnings`)
    cxx.compile(
        &key.source,
        &key.expression,
        &key.options,
        &key.include_dirs,
        key.cache_dir.as_deref(),
    )
}

/// The library of kernel `kernel` of a generated, self-contained module `source` (no
/// options, no include folders), e.g. one launch of a fused plan. Blocks like [`library`].
pub fn library_for_source(source: &str, kernel: &str) -> Result<(Arc<EmuLibrary>, bool), EmuError> {
    library(LibraryKey::new(
        source.to_string(),
        kernel.to_string(),
        Vec::new(),
        Vec::new(),
    ))
}

/// The libraries of several kernels of one generated module `source` (the launches of a fused
/// plan, `what` names it in the progress line): one library file for all of them, compiled
/// once (the bounds-checked build, which every launch of a plan uses), found in this
/// process's table or the disk cache otherwise. Each comes with whether it came from the disk cache. A build that
/// takes more than a second says so on stderr, once when it starts and once when it is done.
pub fn module_for_source(
    source: &str,
    kernels: &[String],
    what: &str,
) -> Result<Vec<(Arc<EmuLibrary>, bool)>, EmuError> {
    let keys: Vec<LibraryKey> = kernels
        .iter()
        .map(|k| LibraryKey::new(source.to_string(), k.clone(), Vec::new(), Vec::new()))
        .collect();
    {
        let table = lock(&LIBRARIES);
        let known: Option<Vec<_>> = keys
            .iter()
            .map(|k| table.as_ref().and_then(|m| m.get(k)).cloned())
            .collect();
        if let Some(libs) = known {
            return Ok(libs
                .into_iter()
                .map(|l| {
                    let hit = l.cache_outcome() == CacheOutcome::DiskHit;
                    (l, hit)
                })
                .collect());
        }
    }
    let cxx = compiler()?;
    let cache = keys.first().and_then(|k| k.cache_dir.clone());
    if let Some(dir) = &cache {
        std::fs::create_dir_all(dir).map_err(|e| EmuError::Io {
            context: format!("creating the emulation cache {}", dir.display()),
            message: e.to_string(),
        })?;
    }
    let libs = with_progress(what, || {
        cxx.compile_module(source, kernels, &[], &[], cache.as_deref())
    })?;
    let mut table = lock(&LIBRARIES);
    let map = table.get_or_insert_with(HashMap::new);
    Ok(keys
        .into_iter()
        .zip(libs)
        .map(|(key, lib)| {
            let hit = lib.cache_outcome() == CacheOutcome::DiskHit;
            let lib = map.entry(key).or_insert_with(|| Arc::new(lib)).clone();
            (lib, hit)
        })
        .collect())
}

/// Runs `build`; when it takes more than a second, writes a line to stderr then (naming
/// `what`) and another when it is done, so that a first call compiling for seconds is not
/// silent.
pub fn with_progress<T>(what: &str, build: impl FnOnce() -> T) -> T {
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    let started = Instant::now();
    let (done, wait) = mpsc::channel::<()>();
    let label = what.to_string();
    let watcher = std::thread::Builder::new()
        .name("cunumpy-emu-progress".into())
        .spawn(move || {
            if wait.recv_timeout(Duration::from_secs(1)).is_err() {
                eprintln!(
                    "cunumpy: compiling {label} for the emulated device (first use; cached after)..."
                );
                let _ = wait.recv();
                eprintln!(
                    "cunumpy: compiled {label} for the emulated device in {:.1} s",
                    started.elapsed().as_secs_f64()
                );
            }
        })
        .ok();
    let out = build();
    let _ = done.send(());
    if let Some(w) = watcher {
        let _ = w.join();
    }
    out
}

/// Whether this process has loaded a library built from `source`, `expression` and
/// `options` (with any compiler, cache or include folders).
pub fn is_loaded(source: &str, expression: &str, options: &[String]) -> bool {
    lock(&LIBRARIES).as_ref().is_some_and(|m| {
        m.keys()
            .any(|k| k.source == source && k.expression == expression && k.options == options)
    })
}

/// Whether a launch runs the bounds-checked build: asked for, and either a shuffle seed is
/// given (it needs that build, whose compile error the launch then reports) or the checked
/// build compiles (pointer parameters become accessor types, which a kernel handing them to a
/// template deducing `T*` does not accept). Blocks for that compile.
pub fn use_checked_build(lib: &EmuLibrary, bounds: bool, shuffle_seed: Option<u64>) -> bool {
    let start = std::time::Instant::now();
    let checked = bounds
        && (shuffle_seed.is_some()
            || !matches!(lib.prepare_checked(), Err(EmuError::Compile { .. })));
    crate::count_compile_time(start);
    checked
}

/// Validates `shape` and `shared` bytes of dynamic shared memory against the emulated
/// device's limits.
pub fn validate(name: &str, shape: &LaunchShape, shared: u32) -> Result<(), launch::LaunchError> {
    launch::validate(name, shape, shared, &LIMITS, &KERNEL_LIMITS)
}

/// Runs one launch of `lib` in the emulator: validated against the device's limits, then
/// run to completion on this thread (and the emulator's workers). Blocks: call it without
/// holding any interpreter lock.
///
/// # Safety
/// `params` holds one value per parameter of the compiled kernel, of its C type, alive for
/// the call; pointer values are host addresses of memory that stays alive and untouched by
/// others for the call, and large enough for every access the kernel makes unless
/// `options.bounds` gives each pointer parameter's byte length (then an access outside it is
/// reported instead of made).
pub unsafe fn run(
    name: &str,
    lib: &EmuLibrary,
    params: *mut *mut c_void,
    shape: &LaunchShape,
    shared: u32,
    options: &LaunchOptions,
) -> Result<(), crate::RuntimeError> {
    validate(name, shape, shared)?;
    // SAFETY: the caller upholds the contract above, which is `EmuLibrary::launch`'s.
    unsafe { lib.launch(params, shape.grid, shape.block, shared as usize, options) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_refuse_what_a_gpu_refuses() {
        let ok = LaunchShape {
            grid: [4, 1, 1],
            block: [256, 1, 1],
        };
        assert!(validate("k", &ok, 0).is_ok());
        let too_big = LaunchShape {
            grid: [1, 1, 1],
            block: [2048, 1, 1],
        };
        assert!(validate("k", &too_big, 0).is_err());
        assert!(validate("k", &ok, 300 * 1024).is_err());
    }
}
