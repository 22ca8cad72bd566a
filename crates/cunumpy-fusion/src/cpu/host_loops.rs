//! The build service of compiled CPU loops: the C++ that `hostgen` writes for a program is
//! built by the host C++ compiler (cunumpy-emu's compiler discovery and disk cache) on a
//! background thread, and the CPU executor uses the loaded function once it is there. Until
//! then, without a compiler, or when a build fails, the interpreter runs the program; both
//! give the same bits, so a call never depends on which one ran.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use cunumpy_emu::{default_cache_dir, EmuCompiler, HostLibrary};

/// `cn_elementwise(start, len, leaves, dsts, streaming)`.
/// Returns nonzero when a gathered index was out of range.
pub(crate) type ElementwiseFn =
    unsafe extern "C" fn(i64, i64, *const *const c_void, *const *mut c_void, c_int) -> c_int;
/// `cn_rows(row0, nrows, cols, leaves, row_strides, dsts, streaming)`.
pub(crate) type RowsFn = unsafe extern "C" fn(
    i64,
    i64,
    i64,
    *const *const c_void,
    *const i64,
    *const *mut c_void,
    c_int,
) -> c_int;
/// `cn_rowred(m0, m1, k, leaves, results)`.
pub(crate) type RowReduceFn =
    unsafe extern "C" fn(i64, i64, i64, *const *const c_void, *const *mut c_void);
/// `cn_reduce(q0, chunk, k, n_chunks, leaves, partials)`.
pub(crate) type ReduceFn =
    unsafe extern "C" fn(i64, i64, i64, i64, *const *const c_void, *mut c_void);

/// When fused CPU calls use compiled loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostLoopMode {
    /// Never: the interpreter runs every program.
    Off,
    /// Build on a background thread the first time a large enough program runs; the
    /// interpreter runs it until the build is loaded (the default).
    Background,
    /// Build before the first large enough run returns (tests, benchmarks).
    Sync,
}

/// Programs over fewer points than this run interpreted without starting a build. One
/// interpreter block: below it the call's fixed cost dominates either way, while from 4096
/// points a compiled loop already takes 0.5-0.7x the interpreter's time (`sum((a-b)**2)` and
/// the four-array chain on the 2-core build machine). A build costs one compiler run, once per
/// machine: the library is cached on disk.
const DEFAULT_MIN_POINTS: usize = 4096;
const MODE_UNSET: u8 = u8::MAX;

static MODE: AtomicU8 = AtomicU8::new(MODE_UNSET);
static MIN_POINTS: AtomicUsize = AtomicUsize::new(DEFAULT_MIN_POINTS);
/// Runs of compiled loops in this process.
static RUNS: AtomicU64 = AtomicU64::new(0);

/// Counts one run of a compiled loop.
pub(crate) fn count_run() {
    RUNS.fetch_add(1, Ordering::Relaxed);
}

fn encode(m: HostLoopMode) -> u8 {
    match m {
        HostLoopMode::Off => 0,
        HostLoopMode::Background => 1,
        HostLoopMode::Sync => 2,
    }
}

fn decode(v: u8) -> HostLoopMode {
    match v {
        0 => HostLoopMode::Off,
        2 => HostLoopMode::Sync,
        _ => HostLoopMode::Background,
    }
}

/// The mode named by `CUNUMPY_HOST_LOOPS` (read by `cunumpy_core::config`).
fn mode_from_env() -> HostLoopMode {
    match cunumpy_core::config::host_loops() {
        cunumpy_core::config::HostLoops::Off => HostLoopMode::Off,
        cunumpy_core::config::HostLoops::Sync => HostLoopMode::Sync,
        cunumpy_core::config::HostLoops::Background => HostLoopMode::Background,
    }
}

fn mode() -> HostLoopMode {
    let v = MODE.load(Ordering::Relaxed);
    if v != MODE_UNSET {
        return decode(v);
    }
    let m = mode_from_env();
    let _ = MODE.compare_exchange(MODE_UNSET, encode(m), Ordering::Relaxed, Ordering::Relaxed);
    decode(MODE.load(Ordering::Relaxed))
}

/// Sets when compiled loops are used, and the fewest points of a program that starts a build.
pub fn set_host_loops(mode: HostLoopMode, min_points: usize) {
    MODE.store(encode(mode), Ordering::Relaxed);
    MIN_POINTS.store(min_points, Ordering::Relaxed);
}

/// The current mode and minimum number of points.
pub fn host_loop_settings() -> (HostLoopMode, usize) {
    (mode(), MIN_POINTS.load(Ordering::Relaxed))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LoopKind {
    Elementwise,
    Rows,
    Reduce,
    RowReduce,
}

/// A loaded loop function (valid while its library, held by the registry for the life of the
/// process, is loaded).
#[derive(Clone, Copy)]
pub(crate) enum LoopFn {
    Elementwise(ElementwiseFn),
    Rows(RowsFn),
    Reduce(ReduceFn),
    RowReduce(RowReduceFn),
}

struct Compiled {
    _lib: HostLibrary,
    f: LoopFn,
}

/// One generated source and its build.
pub(crate) struct LoopEntry {
    source: String,
    kind: LoopKind,
    started: AtomicBool,
    state: OnceLock<Result<Compiled, String>>,
}

/// Every source built or being built in this process (one entry per distinct source).
fn registry() -> &'static Mutex<HashMap<String, Arc<LoopEntry>>> {
    static R: OnceLock<Mutex<HashMap<String, Arc<LoopEntry>>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(HashMap::new()))
}

fn lock_registry() -> std::sync::MutexGuard<'static, HashMap<String, Arc<LoopEntry>>> {
    registry()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn entry_for(source: String, kind: LoopKind) -> Arc<LoopEntry> {
    let mut map = lock_registry();
    map.entry(source.clone())
        .or_insert_with(|| {
            Arc::new(LoopEntry {
                source,
                kind,
                started: AtomicBool::new(false),
                state: OnceLock::new(),
            })
        })
        .clone()
}

fn compiler() -> Result<&'static EmuCompiler, String> {
    static C: OnceLock<Result<EmuCompiler, String>> = OnceLock::new();
    C.get_or_init(|| EmuCompiler::detect().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(Clone::clone)
}

/// Flags of every build: IEEE semantics as the interpreter has them (no contraction into FMA,
/// wrapping signed integers), vectorised for the machine's SIMD width (`omp simd` pragmas
/// honoured, without the OpenMP runtime).
fn flags() -> Vec<String> {
    let mut f: Vec<String> = [
        "-std=c++17",
        "-O3",
        "-fno-strict-aliasing",
        "-fno-math-errno",
        "-ffp-contract=off",
        "-fwrapv",
        "-fopenmp-simd",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        f.push("-mavx2".into());
    }
    f
}

/// At most this many builds run at once (each is a compiler process); the other build threads
/// wait their turn.
fn max_concurrent_builds() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get().div_ceil(2))
        .unwrap_or(1)
}

/// A build slot, held while the compiler runs.
struct BuildSlot;

fn build_slots() -> &'static (Mutex<usize>, std::sync::Condvar) {
    static S: OnceLock<(Mutex<usize>, std::sync::Condvar)> = OnceLock::new();
    S.get_or_init(|| (Mutex::new(0), std::sync::Condvar::new()))
}

impl BuildSlot {
    fn acquire() -> BuildSlot {
        let (count, freed) = build_slots();
        let mut n = count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *n >= max_concurrent_builds() {
            n = freed
                .wait(n)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *n += 1;
        BuildSlot
    }
}

impl Drop for BuildSlot {
    fn drop(&mut self) {
        let (count, freed) = build_slots();
        let mut n = count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *n = n.saturating_sub(1);
        freed.notify_one();
    }
}

fn build(entry: &LoopEntry) {
    let _slot = BuildSlot::acquire();
    let result = (|| -> Result<Compiled, String> {
        let cache = default_cache_dir();
        let lib = compiler()?
            .build_library(
                &entry.source,
                &flags(),
                cache.as_deref(),
                "a fused CPU loop",
            )
            .map_err(|e| e.to_string())?;
        // SAFETY: `hostgen` defines these symbols with exactly these C signatures, and the
        // functions are used only while `lib` (kept beside them in `Compiled`) is loaded.
        let f = unsafe {
            match entry.kind {
                LoopKind::Elementwise => LoopFn::Elementwise(
                    lib.function::<ElementwiseFn>("cn_elementwise")
                        .map_err(|e| e.to_string())?,
                ),
                LoopKind::Rows => LoopFn::Rows(
                    lib.function::<RowsFn>("cn_rows")
                        .map_err(|e| e.to_string())?,
                ),
                LoopKind::RowReduce => LoopFn::RowReduce(
                    lib.function::<RowReduceFn>("cn_rowred")
                        .map_err(|e| e.to_string())?,
                ),
                LoopKind::Reduce => LoopFn::Reduce(
                    lib.function::<ReduceFn>("cn_reduce")
                        .map_err(|e| e.to_string())?,
                ),
            }
        };
        Ok(Compiled { _lib: lib, f })
    })();
    let _ = entry.state.set(result);
}

/// Whether a run over `points` points would use a compiled loop (mode on, large enough):
/// checked first, so small runs pay nothing for compiled loops.
pub(crate) fn wanted(points: usize) -> bool {
    mode() != HostLoopMode::Off && points >= MIN_POINTS.load(Ordering::Relaxed)
}

/// A kernel program's compiled loop, looked up once per plan (None inside: the program cannot
/// be compiled).
#[derive(Clone, Default)]
pub(crate) struct LoopSlot(OnceLock<Option<Arc<LoopEntry>>>);

impl std::fmt::Debug for LoopSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.0.get() {
            None => "not looked up",
            Some(None) => "not compilable",
            Some(Some(e)) => match e.state.get() {
                None => "building",
                Some(Ok(_)) => "ready",
                Some(Err(_)) => "failed",
            },
        };
        write!(f, "LoopSlot({state})")
    }
}

impl LoopSlot {
    /// The loaded function for a run over `points` points, when it is ready. On the first
    /// large enough run this starts its build (`source` gives the C++ and its kind, or None
    /// when the program cannot be compiled); None while the build runs, after it failed, for
    /// small runs, and with compiled loops off.
    pub(crate) fn function(
        &self,
        points: usize,
        source: impl FnOnce() -> Option<(String, LoopKind)>,
    ) -> Option<LoopFn> {
        let mode = mode();
        if !wanted(points) {
            return None;
        }
        let entry = self
            .0
            .get_or_init(|| source().map(|(s, k)| entry_for(s, k)))
            .as_ref()?;
        if let Some(r) = entry.state.get() {
            return r.as_ref().ok().map(|c| c.f);
        }
        if !entry.started.swap(true, Ordering::AcqRel) {
            if mode == HostLoopMode::Sync {
                build(entry);
            } else {
                let e = Arc::clone(entry);
                let spawned = std::thread::Builder::new()
                    .name("cunumpy-host-loop".into())
                    .spawn(move || build(&e));
                if let Err(err) = spawned {
                    let _ = entry
                        .state
                        .set(Err(format!("could not start a build thread: {err}")));
                }
            }
        }
        entry.state.get()?.as_ref().ok().map(|c| c.f)
    }
}

/// The compiled loops of this process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostLoopStatus {
    /// Loaded and in use.
    pub ready: usize,
    /// Being built.
    pub building: usize,
    /// Builds that failed, with the compiler's or loader's message (the interpreter runs
    /// those programs).
    pub failed: Vec<String>,
    /// Kernel runs that went through a compiled loop.
    pub runs: u64,
}

/// The state of every compiled loop of this process.
pub fn host_loop_status() -> HostLoopStatus {
    let map = lock_registry();
    let mut s = HostLoopStatus {
        runs: RUNS.load(Ordering::Relaxed),
        ..HostLoopStatus::default()
    };
    for e in map.values() {
        match e.state.get() {
            Some(Ok(_)) => s.ready += 1,
            Some(Err(msg)) => s.failed.push(msg.clone()),
            None if e.started.load(Ordering::Acquire) => s.building += 1,
            None => {}
        }
    }
    s
}

/// Waits until no build is running, at most `timeout`; whether none is.
pub fn wait_for_host_loops(timeout: Duration) -> bool {
    let t0 = Instant::now();
    loop {
        if host_loop_status().building == 0 {
            return true;
        }
        if t0.elapsed() >= timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
