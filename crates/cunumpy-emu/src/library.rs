//! A loaded emulation library and the launch.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use cunumpy_core::sync::lock;

use crate::compiler::{build, BuildInputs, EmuCompiler, KernelInfo, Variant};
use crate::error::{EmuError, Fault};
pub use crate::loaded::CacheOutcome;
use crate::loaded::{LaunchConfig, Loaded, ABI};

impl EmuCompiler {
    /// Compiles `source` for emulation and loads the launcher of `expression` (a kernel name,
    /// or a template instance such as `scale<float>`).
    ///
    /// `options` are the kernel's compile options: `-D`, `-U`, `-I`, `-O`, `-f` (except NVRTC's
    /// `-fmad`/`-ftz`), `-g` and `-std=` ones reach the host compiler (`-ffp-contract=` replaces the default
    /// `-ffp-contract=off`); NVRTC-only options (`-arch`, `--use_fast_math`, ...) are ignored.
    /// `include_dirs` are searched for `#include`s, and the headers found there are part of the
    /// cache key. With `cache_dir`, the library is stored there (atomically, with an integrity
    /// hash) and reused by later compiles, in this process or another.
    pub fn compile(
        &self,
        source: &str,
        expression: &str,
        options: &[String],
        include_dirs: &[PathBuf],
        cache_dir: Option<&Path>,
    ) -> Result<EmuLibrary, EmuError> {
        let inputs = BuildInputs {
            compiler: self.clone(),
            source: source.to_string(),
            expression: expression.trim().to_string(),
            also: Vec::new(),
            slot: 0,
            options: options.to_vec(),
            include_dirs: include_dirs.to_vec(),
            cache_dir: cache_dir.map(Path::to_path_buf),
        };
        let (loaded, info) = build(&inputs, Variant::Plain)?;
        Ok(EmuLibrary::new(inputs, loaded, info))
    }

    /// Compiles `source` once for several of its kernels (`expressions`: one library file
    /// exporting a launcher for each, as the launches of a fused plan need) and returns one
    /// [`EmuLibrary`] per expression, in order. Only the bounds-checked build is compiled: a
    /// launch with `bounds` checks them, one without runs the same build with no range
    /// declared (nothing is checked, as in the plain build, only slower). Without a
    /// `cache_dir` (library files are not kept) each kernel is compiled on its own, as by
    /// [`EmuCompiler::compile`].
    pub fn compile_module(
        &self,
        source: &str,
        expressions: &[String],
        options: &[String],
        include_dirs: &[PathBuf],
        cache_dir: Option<&Path>,
    ) -> Result<Vec<EmuLibrary>, EmuError> {
        let Some((first, also)) = expressions.split_first() else {
            return Ok(Vec::new());
        };
        if cache_dir.is_none() || also.is_empty() {
            return expressions
                .iter()
                .map(|e| self.compile(source, e, options, include_dirs, cache_dir))
                .collect();
        }
        let inputs = BuildInputs {
            compiler: self.clone(),
            source: source.to_string(),
            expression: first.trim().to_string(),
            also: also.iter().map(|e| e.trim().to_string()).collect(),
            slot: 0,
            options: options.to_vec(),
            include_dirs: include_dirs.to_vec(),
            cache_dir: cache_dir.map(Path::to_path_buf),
        };
        let (plain, info) = build(&inputs, Variant::Checked)?;
        let outcome = plain.outcome;
        let mut first_plain = Some(plain);
        let mut out = Vec::with_capacity(expressions.len());
        for (slot, expr) in expressions.iter().enumerate() {
            let expr = expr.trim().to_string();
            // the other kernels' launchers: the same library, from the disk cache
            let at_slot = BuildInputs {
                slot,
                ..inputs.clone()
            };
            let loaded = match first_plain.take() {
                Some(l) => l,
                None => {
                    let (mut l, _) = build(&at_slot, Variant::Checked)?;
                    l.outcome = outcome;
                    l
                }
            };
            let checked_slot = build(&at_slot, Variant::Checked).map(|(mut l, _)| {
                l.outcome = outcome;
                l
            });
            let mut slot_info = info.clone();
            slot_info.param_names =
                crate::rewrite::rewrite(source, crate::rewrite::base_name(&expr), false)
                    .param_names;
            let slot_inputs = BuildInputs {
                expression: expr,
                also: Vec::new(),
                slot: 0,
                ..inputs.clone()
            };
            let lib = EmuLibrary::new(slot_inputs, loaded, slot_info);
            let _ = lib.checked.set(checked_slot);
            out.push(lib);
        }
        Ok(out)
    }
}

/// Options of one emulated launch.
#[derive(Debug, Clone, Default)]
pub struct LaunchOptions {
    /// Run the threads of each block as fibers in an order drawn from this seed (per block),
    /// switching threads at random at every access through a pointer parameter as well as at
    /// barriers, so that a kernel with a race gives seed-dependent results. Uses the checked
    /// build (compiled on first use).
    pub shuffle_seed: Option<u64>,
    /// Byte length of the buffer behind each parameter, by parameter index (`None`: not
    /// checked; entries for non-pointer parameters are ignored). When set, the launch uses the
    /// checked build and an access outside a range fails with [`Fault::OutOfBounds`], naming
    /// the kernel, the parameter and the index.
    pub bounds: Option<Vec<Option<usize>>>,
    /// Host threads that run blocks at the same time (0 or 1: one, the caller's). Results of
    /// race-free kernels do not depend on it; the order of floating-point atomics does.
    pub workers: usize,
    /// Run as fibers even when the source shows no barrier or warp intrinsic.
    pub force_fibers: bool,
    /// Stack size of each fiber in bytes (0: 256 KiB). Stacks are reserved, not committed.
    pub stack_size: usize,
    /// Report a data race: two threads writing one element of a pointer parameter with no
    /// barrier (same block) or warp operation (same warp) between them, as an unsynchronised
    /// `a[i] += v` does ([`Fault::Race`], naming the kernel, the parameter, the index and both
    /// threads). Atomics are not writes here. Uses the checked build, like `bounds`.
    pub detect_races: bool,
    /// The values of the kernel's `__constant__` variables for this launch (those not set hold
    /// their initialisers). Launches of one library with constants run one at a time, each
    /// seeing its own kernel's values, as each CUDA module has its own constant memory.
    pub constants: Option<Arc<ConstantValues>>,
}

/// The values set into a kernel's `__constant__` variables (by name, their bytes): the
/// emulated device's constant memory of one kernel, copied into the library before each of
/// its launches.
#[derive(Debug, Default)]
pub struct ConstantValues {
    values: Mutex<BTreeMap<String, Vec<u8>>>,
}

impl ConstantValues {
    /// Sets variable `name` (its bytes are checked against the library's symbol at launch).
    pub fn set(&self, name: &str, bytes: Vec<u8>) {
        lock(&self.values).insert(name.to_string(), bytes);
    }

    /// The bytes set for `name`, if any.
    pub fn get(&self, name: &str) -> Option<Vec<u8>> {
        lock(&self.values).get(name).cloned()
    }

    /// Every value set, by name.
    pub fn all(&self) -> Vec<(String, Vec<u8>)> {
        lock(&self.values)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// A kernel compiled for the CPU, ready to launch.
///
/// It is `Send + Sync`: launches from several threads at once are allowed (each runs on its
/// own thread with its own `__shared__` storage), as on concurrent streams; like there, they
/// share the kernel's `__device__` globals.
pub struct EmuLibrary {
    inputs: BuildInputs,
    info: KernelInfo,
    plain: Loaded,
    checked: OnceLock<Result<Loaded, EmuError>>,
    reported: std::sync::atomic::AtomicBool,
    /// Held for a whole launch of a library with `__constant__` variables (their values are
    /// the launching kernel's).
    constant_memory: Mutex<()>,
}

impl std::fmt::Debug for EmuLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmuLibrary")
            .field("kernel", &self.inputs.expression)
            .field("path", &self.plain.path)
            .field("uses_sync", &self.info.uses_sync)
            .finish()
    }
}

impl EmuLibrary {
    pub(crate) fn new(inputs: BuildInputs, plain: Loaded, info: KernelInfo) -> EmuLibrary {
        EmuLibrary {
            inputs,
            info,
            plain,
            checked: OnceLock::new(),
            reported: std::sync::atomic::AtomicBool::new(false),
            constant_memory: Mutex::new(()),
        }
    }

    /// The source's `__constant__` variables (at global scope): name and byte size, in source
    /// order.
    pub fn constants(&self) -> Vec<(String, usize)> {
        self.plain
            .constants
            .iter()
            .map(|c| (c.name.clone(), c.initial.len()))
            .collect()
    }

    /// The initial bytes (the initialiser's) of `__constant__` variable `name`.
    pub fn constant_initial(&self, name: &str) -> Option<&[u8]> {
        self.plain
            .constants
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.initial.as_slice())
    }

    /// The kernel expression this library launches.
    pub fn kernel(&self) -> &str {
        &self.inputs.expression
    }

    /// The number of kernel parameters (from the compiled kernel's type).
    pub fn param_count(&self) -> usize {
        self.plain.n_params as usize
    }

    /// The parameter names found in the source (empty when the kernel's declaration was not
    /// found, for example behind a macro).
    pub fn param_names(&self) -> &[String] {
        &self.info.param_names
    }

    /// Whether the source (or an included header) uses barriers or warp intrinsics, so that
    /// the threads of a block run as fibers.
    pub fn uses_fibers(&self) -> bool {
        self.info.uses_sync
    }

    /// Whether the plain build was compiled or found in the disk cache.
    pub fn cache_outcome(&self) -> CacheOutcome {
        self.plain.outcome
    }

    /// Seconds the host compiler ran for the plain build (0 when it came from the disk cache).
    pub fn compile_seconds(&self) -> f64 {
        self.info.compile_seconds
    }

    /// The compile time and cache folder of the plain build, the first time it is asked for
    /// after a compile (None on later calls and for disk-cache hits): what a caller reports
    /// once per build, however many kernels share the library.
    pub fn take_compile_report(&self) -> Option<(f64, Option<&Path>)> {
        let first = !self
            .reported
            .swap(true, std::sync::atomic::Ordering::Relaxed);
        (first && self.info.compile_seconds > 0.0)
            .then_some((self.info.compile_seconds, self.info.cached_in.as_deref()))
    }

    /// The folder the plain build is cached in (None when it is not on disk: no cache, or an
    /// unusable one).
    pub fn cached_in(&self) -> Option<&Path> {
        self.info.cached_in.as_deref()
    }

    /// The plain build's library file (gone already when no cache directory was given).
    pub fn library_path(&self) -> &Path {
        &self.plain.path
    }

    /// Builds the checked variant now (it is otherwise built by the first launch that needs
    /// it: one with `bounds` or `shuffle_seed`).
    pub fn prepare_checked(&self) -> Result<CacheOutcome, EmuError> {
        match self.checked_build() {
            Ok(l) => Ok(l.outcome),
            Err(e) => Err(e.clone()),
        }
    }

    fn checked_build(&self) -> &Result<Loaded, EmuError> {
        self.checked
            .get_or_init(|| build(&self.inputs, Variant::Checked).map(|(l, _)| l))
    }

    fn invalid(&self, message: impl Into<String>) -> EmuError {
        EmuError::InvalidLaunch {
            kernel: self.inputs.expression.clone(),
            message: message.into(),
        }
    }

    /// Launches the kernel on the CPU: `grid` blocks of `block` threads, with `shared_mem`
    /// bytes of dynamic shared memory per block. Returns when every thread has finished, or
    /// with the first fault ([`EmuError::Kernel`]); the process is never taken down by a
    /// fault the emulator can see (`__trap`, `assert`, a checked out-of-bounds access, a
    /// deadlock).
    ///
    /// # Safety
    /// `params` is the argument buffer `cuLaunchKernel` takes: an array of
    /// [`param_count`](Self::param_count) pointers, where `params[i]` points at the value of
    /// parameter `i` laid out as the C type of that parameter (a pointer parameter: at a `T*`
    /// holding a host address; a scalar: at the scalar; a struct by value: at its bytes). Every
    /// pointer the kernel dereferences must be valid host memory for what the kernel does with
    /// it, except accesses that fall outside the ranges declared in `options.bounds`, which are
    /// caught. No other thread may write that memory during the launch. A kernel that
    /// corrupts memory through an unchecked pointer, or overflows a fiber stack, crashes the
    /// process as it would on the host.
    pub unsafe fn launch(
        &self,
        params: *mut *mut c_void,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem: usize,
        options: &LaunchOptions,
    ) -> Result<(), EmuError> {
        if grid.contains(&0) || block.contains(&0) {
            return Err(self.invalid(format!(
                "grid {grid:?} and block {block:?} must have no zero dimension"
            )));
        }
        let threads: u64 = block.iter().map(|&b| u64::from(b)).product();
        if threads > 1024 {
            return Err(self.invalid(format!(
                "a block of {block:?} has {threads} threads; CUDA allows at most 1024"
            )));
        }
        if grid[1] > 65535 || grid[2] > 65535 || grid[0] > i32::MAX as u32 {
            return Err(self.invalid(format!("grid {grid:?} exceeds CUDA's limits")));
        }
        if params.is_null() && self.plain.n_params > 0 {
            return Err(self.invalid("params is null but the kernel has parameters"));
        }
        if let Some(b) = &options.bounds {
            if b.len() > self.plain.n_params as usize {
                return Err(self.invalid(format!(
                    "bounds for {} parameters, but the kernel has {}",
                    b.len(),
                    self.plain.n_params
                )));
            }
        }
        let loaded =
            if options.bounds.is_some() || options.shuffle_seed.is_some() || options.detect_races {
                match self.checked_build() {
                    Ok(l) => l,
                    Err(e) => return Err(e.clone()),
                }
            } else {
                &self.plain
            };
        let bounds: Vec<u64> = options
            .bounds
            .iter()
            .flatten()
            .map(|b| b.map_or(u64::MAX, |n| n as u64))
            .collect();
        let config = LaunchConfig {
            abi: ABI,
            bounds: if bounds.is_empty() {
                std::ptr::null()
            } else {
                bounds.as_ptr()
            },
            n_bounds: bounds.len(),
            seed: options.shuffle_seed.unwrap_or(0),
            shuffle: c_int::from(options.shuffle_seed.is_some()),
            force_fibers: c_int::from(options.force_fibers),
            workers: options.workers.min(1024) as c_uint,
            stack_size: options.stack_size,
            detect_races: c_int::from(options.detect_races),
        };
        let _constant_memory = if !loaded.constants.iter().any(|c| c.writable) {
            None
        } else {
            let guard = lock(&self.constant_memory);
            let values = options.constants.as_deref();
            for symbol in loaded.constants.iter().filter(|c| c.writable) {
                let set = values.and_then(|v| v.get(&symbol.name));
                let bytes = match &set {
                    Some(b) if b.len() == symbol.initial.len() => b.as_slice(),
                    Some(b) => {
                        return Err(self.invalid(format!(
                            "__constant__ '{}' has {} bytes, the value set has {}",
                            symbol.name,
                            symbol.initial.len(),
                            b.len()
                        )))
                    }
                    None => symbol.initial.as_slice(),
                };
                // SAFETY: `addr` is the address of this variable, `initial.len()` bytes long,
                // in the loaded library (open while `self` lives); `bytes` has that length. No
                // launch of this library runs meanwhile (`constant_memory` is held until this
                // launch returns), and only this launch's kernel reads it.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        symbol.addr as *mut u8,
                        bytes.len(),
                    );
                }
            }
            Some(guard)
        };
        let mut err = vec![0u8; 4096];
        // SAFETY: the caller upholds the contract on `params` (see `# Safety`); the grid, block
        // and config arrays live until the call returns, and `err` is writable for its length.
        // The launcher catches every C++ exception, so none unwinds into Rust.
        let code = unsafe {
            (loaded.launch)(
                params,
                grid.as_ptr(),
                block.as_ptr(),
                shared_mem,
                &config,
                err.as_mut_ptr().cast::<c_char>(),
                err.len(),
            )
        };
        if code == 0 {
            return Ok(());
        }
        let end = err.iter().position(|&b| b == 0).unwrap_or(err.len());
        let mut message = String::from_utf8_lossy(&err[..end]).into_owned();
        if message.is_empty() {
            message = format!("kernel '{}' failed (code {code})", self.inputs.expression);
        }
        if code == 6 && message.contains("ABI") {
            return Err(self.invalid(message));
        }
        Err(EmuError::Kernel {
            kernel: self.inputs.expression.clone(),
            fault: Fault::from_code(code),
            message,
        })
    }
}
