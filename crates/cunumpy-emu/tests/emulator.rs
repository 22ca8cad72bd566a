//! Kernels run through the emulator with a host C++ compiler (g++ or `$CXX`).

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use cunumpy_emu::{CacheOutcome, EmuCompiler, EmuError, EmuLibrary, Fault, LaunchOptions};

fn compiler() -> &'static EmuCompiler {
    static C: OnceLock<EmuCompiler> = OnceLock::new();
    C.get_or_init(|| EmuCompiler::detect().expect("a host C++ compiler"))
}

fn compile(src: &str, expr: &str) -> EmuLibrary {
    compiler()
        .compile(src, expr, &[], &[], None)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A packed argument buffer as a driver launch takes it: `params[i]` points at parameter i.
#[derive(Default)]
#[allow(clippy::vec_box)] // boxed so that the slots keep their addresses while the Vec grows
struct Args {
    slots: Vec<Box<[u64; 4]>>,
    ptrs: Vec<*mut c_void>,
}

impl Args {
    fn val<T: Copy>(mut self, v: T) -> Self {
        assert!(std::mem::size_of::<T>() <= 32);
        let mut slot = Box::new([0u64; 4]);
        // SAFETY: the slot has 32 bytes, aligned to 8, and T fits (asserted above).
        unsafe { std::ptr::write(slot.as_mut_ptr().cast::<T>(), v) };
        self.slots.push(slot);
        let p = self
            .slots
            .last_mut()
            .map(|s| s.as_mut_ptr().cast::<c_void>());
        self.ptrs.push(p.expect("slot"));
        self
    }
    fn buf<T>(self, v: &mut [T]) -> Self {
        self.val(v.as_mut_ptr())
    }
    fn params(&mut self) -> *mut *mut c_void {
        self.ptrs.as_mut_ptr()
    }
}

fn run(
    lib: &EmuLibrary,
    args: &mut Args,
    grid: u32,
    block: u32,
    shared: usize,
    o: &LaunchOptions,
) -> Result<(), EmuError> {
    // SAFETY: every test packs one slot per kernel parameter with the parameter's C type, and
    // the buffers outlive the launch.
    unsafe { lib.launch(args.params(), [grid, 1, 1], [block, 1, 1], shared, o) }
}

const AXPY: &str = r#"
extern "C" __global__ void axpy(float a, const float* __restrict__ x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

#[test]
fn axpy_million_threads_matches_rust_and_is_timed() {
    let lib = compile(AXPY, "axpy");
    assert!(!lib.uses_fibers());
    assert_eq!(lib.param_names(), ["a", "x", "y", "n"]);
    assert_eq!(lib.param_count(), 4);
    let n = 1_000_000usize;
    let mut x: Vec<f32> = (0..n).map(|i| (i as f32).sin()).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i as f32 * 0.5).cos()).collect();
    let mut y = y0.clone();
    let a = 1.7f32;
    let mut args = Args::default().val(a).buf(&mut x).buf(&mut y).val(n as i32);
    let grid = n.div_ceil(256) as u32;
    run(&lib, &mut args, grid, 256, 0, &LaunchOptions::default()).expect("launch");
    let expected: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| a * x + y).collect();
    assert!(y
        .iter()
        .zip(&expected)
        .all(|(g, e)| g.to_bits() == e.to_bits()));

    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        run(&lib, &mut args, grid, 256, 0, &LaunchOptions::default()).expect("launch");
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "EMU-TIMING warm 1e6-thread axpy launch: {:.2} ms (best of 5)",
        best * 1e3
    );
    let t = Instant::now();
    let fibers = LaunchOptions {
        force_fibers: true,
        ..Default::default()
    };
    run(&lib, &mut args, grid, 256, 0, &fibers).expect("launch");
    println!(
        "EMU-TIMING 1e6-thread axpy as fibers: {:.2} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
}

const BLOCK_SUM: &str = r#"
__global__ void block_sum(const double* x, double* out, int n) {
    __shared__ double s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
"#;

fn tree_sum(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    let mut stride = s.len() / 2;
    while stride > 0 {
        for t in 0..stride {
            s[t] += s[t + stride];
        }
        stride /= 2;
    }
    s[0]
}

#[test]
fn block_reduction_with_shared_memory_and_barriers() {
    let lib = compile(BLOCK_SUM, "block_sum");
    assert!(lib.uses_fibers());
    let n = 256 * 40 - 17;
    let mut x: Vec<f64> = (0..n).map(|i| 1.0 / (1.0 + i as f64)).collect();
    let mut out = vec![0.0f64; 40];
    let mut args = Args::default().buf(&mut x).buf(&mut out).val(n as i32);
    run(&lib, &mut args, 40, 256, 0, &LaunchOptions::default()).expect("launch");
    for b in 0..40 {
        let mut chunk = vec![0.0; 256];
        for t in 0..256 {
            if b * 256 + t < n {
                chunk[t] = x[b * 256 + t];
            }
        }
        assert_eq!(out[b].to_bits(), tree_sum(&chunk).to_bits(), "block {b}");
    }
    // Blocks on two host threads: each has its own __shared__ array.
    let mut out2 = vec![0.0f64; 40];
    let mut args = Args::default().buf(&mut x).buf(&mut out2).val(n as i32);
    let two = LaunchOptions {
        workers: 2,
        ..Default::default()
    };
    run(&lib, &mut args, 40, 256, 0, &two).expect("launch");
    assert_eq!(out, out2);

    let n = 100_000usize;
    let mut x = vec![1.0f64; n];
    let mut out = vec![0.0f64; n.div_ceil(256)];
    let mut args = Args::default().buf(&mut x).buf(&mut out).val(n as i32);
    let t = Instant::now();
    run(
        &lib,
        &mut args,
        n.div_ceil(256) as u32,
        256,
        0,
        &LaunchOptions::default(),
    )
    .expect("launch");
    println!(
        "EMU-TIMING 1e5-thread block reduction (9 barriers per thread): {:.2} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(out[0], 256.0);
}

const WARP: &str = r#"
__device__ float warp_sum_down(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}
__global__ void warp_ops(const float* x, float* down, float* butterfly, unsigned* ballots,
                         int* lane_of_first, float* up) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32, warp = i / 32;
    float v = x[i];
    float d = warp_sum_down(v);
    if (lane == 0) down[warp] = d;
    float b = v;
    for (int m = 1; m < 32; m <<= 1) b += __shfl_xor_sync(0xffffffffu, b, m);
    butterfly[i] = b;
    unsigned bal = __ballot_sync(0xffffffffu, v > 0.5f);
    if (lane == 0) ballots[warp] = bal;
    lane_of_first[i] = __shfl_sync(0xffffffffu, lane, 0) + __any_sync(0xffffffffu, lane == 31) * 100
        + __all_sync(0xffffffffu, lane < 32) * 1000;
    up[i] = __shfl_up_sync(0xffffffffu, v, 3, 8);
}
"#;

#[test]
fn warp_shuffles_votes_and_widths() {
    let lib = compile(WARP, "warp_ops");
    let n = 128;
    let mut x: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 / 100.0).collect();
    let mut down = vec![0f32; n / 32];
    let mut bf = vec![0f32; n];
    let mut bal = vec![0u32; n / 32];
    let mut first = vec![0i32; n];
    let mut up = vec![0f32; n];
    let mut args = Args::default()
        .buf(&mut x)
        .buf(&mut down)
        .buf(&mut bf)
        .buf(&mut bal)
        .buf(&mut first)
        .buf(&mut up);
    run(&lib, &mut args, 2, 64, 0, &LaunchOptions::default()).expect("launch");
    for w in 0..n / 32 {
        let lanes = &x[w * 32..w * 32 + 32];
        // __shfl_down tree: lane 0 ends with the sum in this order.
        let mut v = lanes.to_vec();
        let mut o = 16;
        while o > 0 {
            let prev = v.clone();
            for l in 0..32 {
                if l + o < 32 {
                    v[l] = prev[l] + prev[l + o];
                }
            }
            o /= 2;
        }
        assert_eq!(down[w], v[0], "warp {w}");
        let mut b = lanes.to_vec();
        let mut m = 1;
        while m < 32 {
            let prev = b.clone();
            for l in 0..32 {
                b[l] = prev[l] + prev[l ^ m];
            }
            m <<= 1;
        }
        assert_eq!(&bf[w * 32..w * 32 + 32], &b[..]);
        let expected_ballot = lanes
            .iter()
            .enumerate()
            .fold(0u32, |acc, (l, &v)| acc | (u32::from(v > 0.5) << l));
        assert_eq!(bal[w], expected_ballot);
        for l in 0..32 {
            let i = w * 32 + l;
            assert_eq!(first[i], 1100);
            let src = if l % 8 < 3 { i } else { i - 3 };
            assert_eq!(up[i], x[src], "lane {l}");
        }
    }
}

#[test]
fn dynamic_shared_memory_reverses_each_block() {
    let src = r#"
    extern "C" __global__ void reverse(const int* in, int* out) {
        extern __shared__ int tile[];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        tile[threadIdx.x] = in[i];
        __syncthreads();
        out[i] = tile[blockDim.x - 1 - threadIdx.x];
    }"#;
    let lib = compile(src, "reverse");
    let mut input: Vec<i32> = (0..512).collect();
    let mut out = vec![0i32; 512];
    let mut args = Args::default().buf(&mut input).buf(&mut out);
    run(&lib, &mut args, 4, 128, 128 * 4, &LaunchOptions::default()).expect("launch");
    for b in 0..4 {
        for t in 0..128 {
            assert_eq!(out[b * 128 + t], input[b * 128 + 127 - t]);
        }
    }
}

#[test]
fn atomics_from_many_threads_are_exact() {
    let src = r#"
    __global__ void count(double* total, unsigned long long* hits, int* lo, unsigned* hi, float* f, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        atomicAdd(total, 1.0);
        atomicAdd(hits, 2ull);
        atomicMin(lo, -i);
        atomicMax(hi, (unsigned)i);
        atomicAdd(f, 0.5f);
    }"#;
    let lib = compile(src, "count");
    for workers in [1, 2] {
        let n: usize = 100_000;
        let (mut total, mut hits, mut lo, mut hi, mut f) = (
            vec![0.0f64],
            vec![0u64],
            vec![0i32],
            vec![0u32],
            vec![0.0f32],
        );
        let mut args = Args::default()
            .buf(&mut total)
            .buf(&mut hits)
            .buf(&mut lo)
            .buf(&mut hi)
            .buf(&mut f)
            .val(n as i32);
        let o = LaunchOptions {
            workers,
            ..Default::default()
        };
        run(&lib, &mut args, (n as u32).div_ceil(128), 128, 0, &o).expect("launch");
        assert_eq!(total[0], n as f64);
        assert_eq!(hits[0], 2 * n as u64);
        assert_eq!(lo[0], -(n as i32 - 1));
        assert_eq!(hi[0], n as u32 - 1);
        assert_eq!(f[0], 0.5 * n as f32);
    }
}

#[test]
fn template_kernel_with_device_helper_and_struct_argument() {
    let src = r#"
    #include <cuda_runtime.h>
    struct Affine { double scale; double shift; int n; };
    template <typename T>
    __device__ __forceinline__ T apply(T v, const Affine& p) { return static_cast<T>(v * p.scale + p.shift); }
    template <typename T>
    __global__ void transform(T* x, Affine p) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += blockDim.x * gridDim.x)
            x[i] = apply(x[i], p) + (T)rsqrt(4.0) + (T)max(1, 2) + (T)sinpi(0.5);
    }
    template __global__ void transform<float>(float*, Affine);
    "#;
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Affine {
        scale: f64,
        shift: f64,
        n: i32,
    }
    let lib = compile(src, "transform<double>");
    assert_eq!(lib.kernel(), "transform<double>");
    let n: usize = 1000;
    let mut x: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let p = Affine {
        scale: 2.0,
        shift: -1.0,
        n: n as i32,
    };
    let mut args = Args::default().buf(&mut x).val(p);
    run(&lib, &mut args, 3, 64, 0, &LaunchOptions::default()).expect("launch");
    for (i, v) in x.iter().enumerate() {
        assert_eq!(*v, (i as f64 * 2.0 - 1.0) + 0.5 + 2.0 + 1.0);
    }
}

#[test]
fn trap_and_assert_are_errors_and_the_process_survives() {
    let src = r#"
    #include <assert.h>
    __global__ void checks(int* x, int mode) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (mode == 1 && i == 37) { printf("bad value at %d\n", i); __trap(); }
        if (mode == 2) assert(i != 5);
        if (mode == 3) { if (threadIdx.x < 16) __syncthreads(); else __syncwarp(); }
        x[i] = i;
    }"#;
    let lib = compile(src, "checks");
    let mut x = vec![0i32; 64];
    let mut args = Args::default().buf(&mut x).val(1i32);
    let err = run(&lib, &mut args, 2, 32, 0, &LaunchOptions::default()).expect_err("trap");
    assert_eq!(err.fault(), Some(Fault::Trap));
    let msg = err.to_string();
    assert!(
        msg.contains("kernel 'checks'") && msg.contains("__trap()"),
        "{msg}"
    );
    assert!(msg.contains("thread (5,0,0) of block (1,0,0)"), "{msg}");
    assert!(msg.contains("bad value at 37"), "{msg}");

    let mut args = Args::default().buf(&mut x).val(2i32);
    let err = run(&lib, &mut args, 2, 32, 0, &LaunchOptions::default()).expect_err("assert");
    assert_eq!(err.fault(), Some(Fault::Assert), "{err}");
    assert!(err.to_string().contains("i != 5"), "{err}");

    let mut args = Args::default().buf(&mut x).val(3i32);
    let err = run(&lib, &mut args, 1, 32, 0, &LaunchOptions::default()).expect_err("deadlock");
    assert_eq!(err.fault(), Some(Fault::Deadlock), "{err}");
    assert!(
        err.to_string()
            .contains("16 thread(s) wait at __syncthreads()"),
        "{err}"
    );

    // The library still works after the faults.
    let mut args = Args::default().buf(&mut x).val(0i32);
    run(&lib, &mut args, 2, 32, 0, &LaunchOptions::default()).expect("launch");
    assert!(x.iter().enumerate().all(|(i, &v)| v == i as i32));
}

#[test]
fn out_of_bounds_write_is_reported_with_kernel_parameter_and_index() {
    let src = r#"
    extern "C" __global__ void shift(const float* src, float* dst, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) dst[i + 1] = src[i];   // writes dst[n]
    }"#;
    let lib = compile(src, "shift");
    let n = 100usize;
    let mut src_buf = vec![1.0f32; n];
    let mut dst = vec![0.0f32; n + 8]; // slack, so the unchecked run does not corrupt memory
    let bounds = LaunchOptions {
        bounds: Some(vec![Some(n * 4), Some(n * 4), None]),
        ..Default::default()
    };
    let mut args = Args::default()
        .buf(&mut src_buf)
        .buf(&mut dst)
        .val(n as i32);
    let err = run(&lib, &mut args, 1, 128, 0, &bounds).expect_err("out of bounds");
    assert_eq!(err.fault(), Some(Fault::OutOfBounds));
    let msg = err.to_string();
    assert!(msg.contains("kernel 'shift'"), "{msg}");
    assert!(msg.contains("parameter 1 'dst'"), "{msg}");
    assert!(msg.contains("element index 100"), "{msg}");
    // Without bounds the plain build runs (and writes into the slack).
    run(&lib, &mut args, 1, 128, 0, &LaunchOptions::default()).expect("unchecked");
    assert_eq!(dst[n], 1.0);
}

#[test]
fn checked_build_keeps_pointer_idioms_working() {
    let src = r#"
    template <class T> __device__ T twice(T v) { return v + v; }
    __device__ float first(const float* p) { return p[0]; }
    __global__ void idioms(const float* __restrict__ a, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n / 4) return;
        float4 q = reinterpret_cast<const float4*>(a)[i];   // stays checked
        const float* row = a + 4 * i;
        float* o = out;
        o[i] = twice(q.x + q.y + q.z + q.w) + first(row) + __ldg(a + 4 * i) + *(row + 1);
        if (a != nullptr && out) atomicAdd(out + n / 4, 1.0f);
    }"#;
    let lib = compile(src, "idioms");
    let n = 64usize;
    let mut a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut out = vec![0f32; n / 4 + 1];
    let opts = LaunchOptions {
        bounds: Some(vec![Some(n * 4), Some((n / 4 + 1) * 4)]),
        ..Default::default()
    };
    let mut args = Args::default().buf(&mut a).buf(&mut out).val(n as i32);
    run(&lib, &mut args, 1, 32, 0, &opts).expect("checked launch");
    for i in 0..n / 4 {
        let s: f32 = a[4 * i..4 * i + 4].iter().sum();
        assert_eq!(out[i], 2.0 * s + a[4 * i] + a[4 * i] + a[4 * i + 1]);
    }
    assert_eq!(out[n / 4], (n / 4) as f32);
    // The float4 view is checked against the same buffer.
    let short = LaunchOptions {
        bounds: Some(vec![Some(n * 4 - 4), None]),
        ..Default::default()
    };
    let err = run(&lib, &mut args, 1, 32, 0, &short).expect_err("float4 past the end");
    assert!(err.to_string().contains("parameter 0 'a'"), "{err}");
}

#[test]
fn shipped_header_bounds_checks_trap_recoverably() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("cunumpy")).expect("mkdir");
    std::fs::write(
        dir.path().join("cunumpy/view.cuh"),
        r#"#pragma once
        template <class T> struct View { T* data; long n;
          __device__ T& operator[](long i) const {
        #ifdef CUNUMPY_BOUNDS_CHECK
            if (i < 0 || i >= n) { printf("View index %ld out of range [0, %ld)\n", i, n); __trap(); }
        #endif
            return data[i]; } };"#,
    )
    .expect("write");
    let src = r#"#include <cunumpy/view.cuh>
    __global__ void fill(View<int> v) { v[threadIdx.x] = 7; }"#;
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct View {
        data: *mut i32,
        n: i64,
    }
    let lib = compiler()
        .compile(
            src,
            "fill",
            &["-DCUNUMPY_BOUNDS_CHECK".to_string()],
            &[dir.path().to_path_buf()],
            None,
        )
        .expect("compile");
    let mut data = vec![0i32; 40];
    let mut args = Args::default().val(View {
        data: data.as_mut_ptr(),
        n: 30,
    });
    let err = run(&lib, &mut args, 1, 32, 0, &LaunchOptions::default()).expect_err("trap");
    assert!(
        err.to_string().contains("View index 30 out of range"),
        "{err}"
    );
}

const RACY: &str = r#"
__global__ void racy(int* counter, int* done) {
    int v = counter[0];          // read ...
    counter[0] = v + 1;          // ... modify-write, no atomic, no barrier
    done[threadIdx.x] = 1;
}
__global__ void fine(int* counter, int* done) {
    atomicAdd(&counter[0], 1);
    done[threadIdx.x] = 1;
}
"#;

fn race_result(lib: &EmuLibrary, seed: Option<u64>) -> i32 {
    let mut counter = vec![0i32];
    let mut done = vec![0i32; 64];
    let mut args = Args::default().buf(&mut counter).buf(&mut done);
    let o = LaunchOptions {
        shuffle_seed: seed,
        ..Default::default()
    };
    run(lib, &mut args, 1, 64, 0, &o).expect("launch");
    assert!(done.iter().all(|&d| d == 1));
    counter[0]
}

#[test]
fn shuffled_order_exposes_a_race() {
    let racy = compile(RACY, "racy");
    let fine = compile(RACY, "fine");
    assert_eq!(race_result(&racy, None), 64, "serial order hides the race");
    let seeded: Vec<i32> = (1..=4).map(|s| race_result(&racy, Some(s))).collect();
    println!("racy kernel under seeds 1..4: {seeded:?}");
    assert!(seeded.iter().any(|&r| r != 64), "{seeded:?}");
    assert!(seeded.windows(2).any(|w| w[0] != w[1]), "{seeded:?}");
    assert_eq!(
        race_result(&racy, Some(3)),
        seeded[2],
        "a seed is reproducible"
    );
    for s in 1..=4 {
        assert_eq!(race_result(&fine, Some(s)), 64);
    }
    // A missing barrier in a shared-memory kernel shows up too.
    let src = r#"
    __global__ void neighbours(const int* in, int* out) {
        __shared__ int s[64];
        s[threadIdx.x] = in[threadIdx.x];
        // __syncthreads() missing here
        out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
        __syncthreads();
    }"#;
    let lib = compile(src, "neighbours");
    let mut input: Vec<i32> = (1..=64).collect();
    let mut outs = Vec::new();
    for seed in [1u64, 2] {
        let mut out = vec![0i32; 64];
        let mut args = Args::default().buf(&mut input).buf(&mut out);
        let o = LaunchOptions {
            shuffle_seed: Some(seed),
            ..Default::default()
        };
        run(&lib, &mut args, 1, 64, 0, &o).expect("launch");
        outs.push(out);
    }
    assert_ne!(outs[0], outs[1]);
}

#[test]
fn disk_cache_hits_and_rebuilds_a_corrupted_library() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache: PathBuf = dir.path().join("cache");
    let first = compiler()
        .compile(AXPY, "axpy", &["-DVARIANT=1".into()], &[], Some(&cache))
        .expect("compile");
    assert_eq!(first.cache_outcome(), CacheOutcome::Compiled);
    let path = first.library_path().to_path_buf();
    assert!(path.is_file());
    // The entry is core's one verified format: `<key>.cnk`, header then the library.
    assert_eq!(path.extension().and_then(|e| e.to_str()), Some("cnk"));
    let entry = std::fs::read(&path).expect("read entry");
    let library = cunumpy_core::disk::decode_verified(&entry).expect("a verified entry");
    assert!(library.starts_with(b"\x7fELF") || library.starts_with(&[0xcf, 0xfa, 0xed, 0xfe]));
    drop(first);
    let t = Instant::now();
    let second = compiler()
        .compile(AXPY, "axpy", &["-DVARIANT=1".into()], &[], Some(&cache))
        .expect("compile");
    println!(
        "EMU-TIMING cache hit compile: {:.2} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(second.cache_outcome(), CacheOutcome::DiskHit);
    assert_eq!(second.library_path(), path);
    drop(second);
    // Corrupt it (through a new file, as a partial write by a crashed process would look).
    let tmp = cache.join("garbage");
    std::fs::write(&tmp, b"\x7fELF not really").expect("write");
    std::fs::rename(&tmp, &path).expect("rename");
    let third = compiler()
        .compile(AXPY, "axpy", &["-DVARIANT=1".into()], &[], Some(&cache))
        .expect("compile");
    assert_eq!(third.cache_outcome(), CacheOutcome::Compiled);
    let mut x = vec![1.0f32; 10];
    let mut y = vec![1.0f32; 10];
    let mut args = Args::default()
        .val(2.0f32)
        .buf(&mut x)
        .buf(&mut y)
        .val(10i32);
    run(&third, &mut args, 1, 32, 0, &LaunchOptions::default()).expect("launch");
    assert_eq!(y, vec![3.0f32; 10]);
    // Other options are another key.
    let other = compiler()
        .compile(AXPY, "axpy", &["-DVARIANT=2".into()], &[], Some(&cache))
        .expect("compile");
    assert_eq!(other.cache_outcome(), CacheOutcome::Compiled);
    let leftovers: Vec<_> = std::fs::read_dir(&cache)
        .expect("read_dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "build directories are removed");
}

#[test]
fn disk_cache_treats_an_older_layout_as_a_miss() {
    // cunumpy before the one verified format stored `<key>.so` with `<key>.sha256` beside it.
    let dir = tempfile::tempdir().expect("tempdir");
    let cache: PathBuf = dir.path().join("cache");
    let first = compiler()
        .compile(AXPY, "axpy", &["-DVARIANT=3".into()], &[], Some(&cache))
        .expect("compile");
    let entry = first.library_path().to_path_buf();
    drop(first);
    let key = entry
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("key")
        .to_string();
    let bytes = std::fs::read(&entry).expect("read");
    let library = cunumpy_core::disk::decode_verified(&bytes)
        .expect("verified")
        .to_vec();
    std::fs::remove_file(&entry).expect("remove");
    std::fs::write(cache.join(format!("{key}.so")), &library).expect("write");
    std::fs::write(
        cache.join(format!("{key}.sha256")),
        cunumpy_core::cache_key::sha256_hex(&library),
    )
    .expect("write");
    let again = compiler()
        .compile(AXPY, "axpy", &["-DVARIANT=3".into()], &[], Some(&cache))
        .expect("compile");
    assert_eq!(again.cache_outcome(), CacheOutcome::Compiled);
    assert_eq!(again.library_path(), entry);
    assert!(entry.is_file());
}

#[test]
fn compile_errors_carry_the_log_and_the_command() {
    let err = compiler()
        .compile(
            "__global__ void broken(float* x) { x[0] = undefined_name; }",
            "broken",
            &[],
            &[],
            None,
        )
        .expect_err("does not compile");
    match &err {
        EmuError::Compile {
            kernel,
            command,
            stderr,
        } => {
            assert_eq!(kernel, "broken");
            assert!(stderr.contains("undefined_name"), "{stderr}");
            assert!(stderr.contains("broken.cu:1"), "{stderr}");
            assert!(command.contains("-ffp-contract=off"), "{command}");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn invalid_launch_shapes_are_refused() {
    let lib = compile(AXPY, "axpy");
    let mut args = Args::default()
        .val(1.0f32)
        .val(std::ptr::null_mut::<f32>())
        .val(std::ptr::null_mut::<f32>())
        .val(0i32);
    // SAFETY: nothing runs: the shape is refused first.
    let err = unsafe {
        lib.launch(
            args.params(),
            [1, 1, 1],
            [2048, 1, 1],
            0,
            &LaunchOptions::default(),
        )
    }
    .expect_err("too many threads");
    assert!(matches!(err, EmuError::InvalidLaunch { .. }), "{err}");
}

#[test]
fn integer_division_by_zero_and_int_min_by_minus_one_do_not_kill_the_process() {
    // Without the division guard each of these lines raises SIGFPE on x86-64 and the test
    // binary dies. The GPU gives all bits set for a 32-bit zero divisor and wraps INT_MIN / -1.
    let src = r#"
    #define HALF(v) ((v) / 2)
    struct V { int x; };
    __device__ V operator/(V a, int b) { return V{a.x / b + 1000}; }
    enum class Mode : int { a = 6 };
    __device__ int operator/(Mode m, int b) { return (int)m / b + 2000; }
    enum Plain { kSix = 6 };
    constexpr int kQuarter = 256 / 4;
    template <int N> struct Fixed { static constexpr int value = N % 7; };
    extern "C" __global__ void divs(const int* a, const int* b, int* q, int* r,
                                    unsigned* uq, unsigned* ur, long long* lq, long long* lr,
                                    float* f, int n) {
        __shared__ int pad[kQuarter / 2];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        pad[0] = Fixed<9>::value;
        q[i] = a[i] / b[i];
        r[i] = a[i] % b[i];
        uq[i] = (unsigned)a[i] / (unsigned)b[i];
        ur[i] = (unsigned)a[i] % (unsigned)b[i];
        long long la = a[i] == INT_MIN ? LLONG_MIN : a[i];
        lq[i] = la / (long long)b[i];
        lr[i] = la;
        lr[i] %= (long long)b[i];
        int c = a[i];
        c /= b[i];
        q[i] += 0 * c + 0 * HALF(a[i]);
        V v{a[i]};
        if (i == 3) q[i] = (v / b[i]).x + pad[0] - Fixed<9>::value;
        f[i] = (float)a[i] / (float)b[i];
        if (i == 5) q[i] += (Mode::a / 3) - 2002 + (kSix / 0) + 1;
    }
    "#;
    let lib = compile(src, "divs");
    let a: Vec<i32> = vec![7, -7, i32::MIN, 9, 0, 100];
    let b: Vec<i32> = vec![0, 0, -1, 2, 0, -7];
    let n = a.len();
    let (mut a, mut b) = (a, b);
    let mut q = vec![0i32; n];
    let mut r = vec![0i32; n];
    let mut uq = vec![0u32; n];
    let mut ur = vec![0u32; n];
    let mut lq = vec![0i64; n];
    let mut lr = vec![0i64; n];
    let mut f = vec![0f32; n];
    let mut args = Args::default()
        .buf(&mut a)
        .buf(&mut b)
        .buf(&mut q)
        .buf(&mut r)
        .buf(&mut uq)
        .buf(&mut ur)
        .buf(&mut lq)
        .buf(&mut lr)
        .buf(&mut f)
        .val(n as i32);
    run(&lib, &mut args, 1, 32, 0, &LaunchOptions::default()).expect("launch");
    assert_eq!(q, vec![-1, -1, i32::MIN, 9 / 2 + 1000, -1, -14]);
    assert_eq!(r, vec![-1, -1, 0, 1, -1, 2]);
    assert_eq!(uq[..2], [u32::MAX, u32::MAX]);
    assert_eq!(uq[2], (i32::MIN as u32) / u32::MAX);
    assert_eq!(ur[..2], [u32::MAX, u32::MAX]);
    // 64-bit: operands whose upper halves are zero take the GPU's 32-bit sequence
    // (0xFFFFFFFF zero-extended), others the 64-bit one (all bits set)
    let low = i64::from(u32::MAX);
    assert_eq!(lq, vec![low, -1, i64::MIN, 4, low, -14]);
    assert_eq!(lr, vec![low, -1, 0, 1, low, 2]);
    assert!(f[0].is_infinite() && f[1].is_infinite() && f[4].is_nan());
    assert_eq!(f[5], 100f32 / -7f32);
}

const WILD: &str = r#"
#define SCALE(v, d) ((v) / (d))
__global__ void through_null(float* x, int which) {
    float* p = nullptr;
    if (threadIdx.x == 3) {
        if (which == 0) p[threadIdx.x] = 1.0f;
        if (which == 1) *(float*)(0x10000000000ull) = 2.0f;
        if (which == 2) x[0] = (float)SCALE((int)threadIdx.x, (int)x[3]);  // x[3] is 0
    }
}
__global__ void through_null_sync(float* x) {
    __syncthreads();
    float* p = (float*)0;
    if (threadIdx.x == 5) p[1] = x[0];
}
__device__ int deep(int n) { volatile char pad[4096]; pad[0] = (char)n; return n == 0 ? pad[0] : deep(n - 1) + pad[0]; }
__global__ void overflow(int* out) { __syncthreads(); out[threadIdx.x] = deep(1 << 20); }
__global__ void param_is_null(float* x) { x[threadIdx.x] = 1.0f; }
"#;

#[test]
fn writes_through_null_or_wild_pointers_and_sigfpe_fail_the_launch_not_the_process() {
    let lib = compile(WILD, "through_null");
    let mut x = vec![0f32; 4];
    for (which, needle) in [
        (0, "through a NULL pointer"),
        (1, "points into no array"),
        (2, "arithmetic fault (SIGFPE)"),
    ] {
        let mut args = Args::default().buf(&mut x).val(which);
        let err = run(&lib, &mut args, 1, 8, 0, &LaunchOptions::default()).expect_err("fault");
        let text = err.to_string();
        assert!(text.contains(needle), "{which}: {text}");
        assert!(text.contains("kernel 'through_null'"), "{text}");
        assert!(text.contains("thread (3,0,0) of block (0,0,0)"), "{text}");
        let want = if which == 2 {
            Fault::Other
        } else {
            Fault::OutOfBounds
        };
        assert_eq!(err.fault(), Some(want), "{text}");
    }
    // fibers (a barrier), and the process still launches afterwards
    let sync = compile(WILD, "through_null_sync");
    for _ in 0..3 {
        let mut args = Args::default().buf(&mut x);
        let err = run(&sync, &mut args, 2, 32, 0, &LaunchOptions::default()).expect_err("fault");
        assert!(err.to_string().contains("thread (5,0,0)"), "{err}");
        assert_eq!(err.fault(), Some(Fault::OutOfBounds));
    }
    let mut args = Args::default().buf(&mut x).val(7i32);
    run(&lib, &mut args, 1, 8, 0, &LaunchOptions::default()).expect("a clean launch after faults");
}

#[test]
fn fiber_stack_overflow_is_reported() {
    let lib = compile(WILD, "overflow");
    let mut out = vec![0i32; 4];
    let mut args = Args::default().buf(&mut out);
    let o = LaunchOptions {
        stack_size: 64 * 1024,
        ..Default::default()
    };
    let err = run(&lib, &mut args, 1, 4, 0, &o).expect_err("overflow");
    assert!(err.to_string().contains("stack overflow"), "{err}");
}

#[test]
fn a_null_pointer_parameter_is_named_in_the_checked_build() {
    let lib = compile(WILD, "param_is_null");
    let mut args = Args::default().val(std::ptr::null_mut::<f32>());
    let o = LaunchOptions {
        bounds: Some(vec![None]),
        ..Default::default()
    };
    let err = run(&lib, &mut args, 1, 4, 0, &o).expect_err("null");
    let text = err.to_string();
    assert!(text.contains("parameter 0 'x', which is NULL"), "{text}");
    assert_eq!(err.fault(), Some(Fault::OutOfBounds));
    // unchecked: the hardware fault is caught the same way
    let err = run(&lib, &mut args, 1, 4, 0, &LaunchOptions::default()).expect_err("null");
    assert!(err.to_string().contains("NULL pointer"), "{err}");
}

const HIST: &str = r#"
__global__ void hist(float* h, const int* cell, const float* w, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) h[cell[i]] += w[i];
}
__global__ void hist_atomic(float* h, const int* cell, const float* w, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&h[cell[i]], w[i]);
}
__global__ void hist_sync(float* h, const int* cell, const float* w, int n) {
    // one writer per step: ordered by the barrier
    for (int t = 0; t < (int)blockDim.x; t++) {
        if ((int)threadIdx.x == t && t < n) h[cell[t]] += w[t];
        __syncthreads();
    }
}
__global__ void flag(int* found, const int* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 2) found[0] = 1;  // the same value from every writer: benign
}
"#;

fn hist_launch(
    lib: &EmuLibrary,
    grid: u32,
    block: u32,
    o: &LaunchOptions,
) -> Result<Vec<f32>, EmuError> {
    let n = 64usize;
    let mut h = vec![0f32; 8];
    let mut cell: Vec<i32> = (0..n as i32).map(|i| (i * 5) % 8).collect();
    let mut w = vec![1f32; n];
    let mut args = Args::default()
        .buf(&mut h)
        .buf(&mut cell)
        .buf(&mut w)
        .val(n as i32);
    run(lib, &mut args, grid, block, 0, o)?;
    Ok(h)
}

#[test]
fn race_detection_names_kernel_array_index_and_threads() {
    let racy = compile(HIST, "hist");
    let detect = LaunchOptions {
        detect_races: true,
        ..Default::default()
    };
    // serial order gives the right answer and hides the race; detection reports it
    assert_eq!(
        hist_launch(&racy, 1, 64, &LaunchOptions::default()).expect("run"),
        vec![8f32; 8]
    );
    for (grid, block) in [(1, 64), (2, 32), (8, 8)] {
        let err = hist_launch(&racy, grid, block, &detect).expect_err("race");
        let text = err.to_string();
        assert_eq!(err.fault(), Some(Fault::Race), "{text}");
        assert!(
            text.contains("kernel 'hist': data race on h[0] (pointer parameter 0 'h')"),
            "{text}"
        );
        // cell[i] = 5i mod 8: threads 0 and 8 both add to h[0]
        assert!(
            text.contains("written by thread (0,0,0) of block (0,0,0)"),
            "{text}"
        );
        let second = if block == 8 {
            "thread (0,0,0) of block (1,0,0)"
        } else {
            "thread (8,0,0) of block (0,0,0)"
        };
        assert!(text.contains(&format!("and by {second}")), "{text}");
    }
    // fibers in a shuffled order: still found (the first pair seen depends on the seed)
    let shuffled = LaunchOptions {
        detect_races: true,
        shuffle_seed: Some(7),
        ..Default::default()
    };
    let err = hist_launch(&racy, 1, 64, &shuffled).expect_err("race");
    assert_eq!(err.fault(), Some(Fault::Race), "{err}");
    // atomics, and writes ordered by a barrier, are not races
    let atomic = compile(HIST, "hist_atomic");
    let sync = compile(HIST, "hist_sync");
    for o in [&detect, &shuffled] {
        assert_eq!(
            hist_launch(&atomic, 2, 32, o).expect("atomics"),
            vec![8f32; 8]
        );
        assert_eq!(
            hist_launch(&sync, 1, 64, o).expect("ordered"),
            vec![8f32; 8]
        );
    }
    let flag = compile(HIST, "flag");
    let mut found = vec![0i32];
    let mut x: Vec<i32> = (0..32).collect();
    let mut args = Args::default().buf(&mut found).buf(&mut x).val(32i32);
    run(&flag, &mut args, 1, 32, 0, &detect).expect("same-value stores are not reported");
    assert_eq!(found[0], 1);
}

#[test]
fn constant_memory_is_per_launch_and_starts_at_the_initialiser() {
    use cunumpy_emu::ConstantValues;
    use std::sync::Arc;
    let src = r#"
typedef unsigned int uint;
__constant__ float scale = 2.0f;
__constant__ uint offsets[3] = {1, 2, 3};
__constant__ const int folded = 1; // read-only memory on the host: never written
extern "C" __global__ void apply(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = scale * (float)offsets[i % 3] * folded;
}
"#;
    let lib = compile(src, "apply");
    assert_eq!(
        lib.constants(),
        vec![
            ("scale".to_string(), 4),
            ("offsets".to_string(), 12),
            ("folded".to_string(), 4)
        ]
    );
    assert_eq!(
        lib.constant_initial("scale"),
        Some(&2.0f32.to_ne_bytes()[..])
    );
    let mut out = vec![0.0f32; 6];
    let n = 6i32;
    let mut args = Args::default().buf(&mut out).val(n);
    run(&lib, &mut args, 1, 8, 0, &LaunchOptions::default()).expect("accepted");
    assert_eq!(out, vec![2.0, 4.0, 6.0, 2.0, 4.0, 6.0]);

    let values = Arc::new(ConstantValues::default());
    values.set("scale", 0.5f32.to_ne_bytes().to_vec());
    let offsets: Vec<u8> = [10u32, 20, 30]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    values.set("offsets", offsets);
    let with = LaunchOptions {
        constants: Some(values.clone()),
        ..LaunchOptions::default()
    };
    let mut args = Args::default().buf(&mut out).val(n);
    run(&lib, &mut args, 1, 8, 0, &with).expect("accepted");
    assert_eq!(out, vec![5.0, 10.0, 15.0, 5.0, 10.0, 15.0]);
    // another kernel of the same library that set nothing sees the initialisers again
    let mut args = Args::default().buf(&mut out).val(n);
    run(&lib, &mut args, 1, 8, 0, &LaunchOptions::default()).expect("accepted");
    assert_eq!(out, vec![2.0, 4.0, 6.0, 2.0, 4.0, 6.0]);
    // a value of the wrong size is refused, not truncated
    values.set("scale", vec![0u8; 8]);
    let mut args = Args::default().buf(&mut out).val(n);
    let err = run(&lib, &mut args, 1, 8, 0, &with).expect_err("refused");
    assert!(err.to_string().contains("'scale' has 4 bytes"), "{err}");
}
