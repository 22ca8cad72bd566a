//! One library for several kernels of a source (`EmuCompiler::compile_module`, the launches of
//! a fused plan): each kernel launches from the same library file, plain and bounds-checked.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use std::ffi::c_void;

use cunumpy_emu::{EmuCompiler, EmuError, Fault, LaunchOptions};

const SRC: &str = r#"
extern "C" __global__ void add_one(double* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0;
}
extern "C" __global__ void scale(const double* x, double* y, double a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) y[i] = a * x[i];  // reads one past the end at i == n
}
extern "C" __global__ void block_sum(const double* x, double* out, int n) {
    __shared__ double s[64];
    s[threadIdx.x] = threadIdx.x < n ? x[threadIdx.x] : 0.0;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0;
        for (int i = 0; i < 64; ++i) t += s[i];
        out[0] = t;
    }
}
"#;

fn ptr<T>(v: &mut T) -> *mut c_void {
    (v as *mut T).cast()
}

#[test]
fn a_module_launches_each_kernel_from_one_library() {
    let dir = std::env::temp_dir().join(format!("cunumpy-emu-module-{}", std::process::id()));
    let cxx = EmuCompiler::detect().expect("a host C++ compiler");
    let names: Vec<String> = ["add_one", "scale", "block_sum"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let libs = cxx
        .compile_module(SRC, &names, &[], &[], Some(&dir))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(libs.len(), 3);
    assert!(libs
        .iter()
        .all(|l| l.library_path() == libs[0].library_path()));
    assert_eq!(
        libs.iter().map(|l| l.kernel()).collect::<Vec<_>>(),
        ["add_one", "scale", "block_sum"]
    );
    assert_eq!(
        libs.iter().map(|l| l.param_count()).collect::<Vec<_>>(),
        [2, 4, 3]
    );
    assert_eq!(libs[1].param_names(), ["x", "y", "a", "n"]);

    let mut x: Vec<f64> = (0..64).map(f64::from).collect();
    let (mut px, mut n) = (x.as_mut_ptr(), 64i32);
    let mut params = [ptr(&mut px), ptr(&mut n)];
    // SAFETY: params point at a double* of 64 elements and an int, as add_one declares.
    unsafe {
        libs[0].launch(
            params.as_mut_ptr(),
            [1, 1, 1],
            [64, 1, 1],
            0,
            &LaunchOptions::default(),
        )
    }
    .unwrap();
    assert_eq!(x[10], 11.0);

    let mut out = [0.0f64];
    let (mut px, mut po, mut n) = (x.as_mut_ptr(), out.as_mut_ptr(), 64i32);
    let mut params = [ptr(&mut px), ptr(&mut po), ptr(&mut n)];
    // SAFETY: as block_sum declares: 64 doubles, one double, an int.
    unsafe {
        libs[2].launch(
            params.as_mut_ptr(),
            [1, 1, 1],
            [64, 1, 1],
            0,
            &LaunchOptions::default(),
        )
    }
    .unwrap();
    assert_eq!(out[0], (1..=64).map(f64::from).sum::<f64>());

    // the checked build of the same module catches scale's read past the end
    let mut y = vec![0.0f64; 64];
    let (mut px, mut py, mut a, mut n) = (x.as_mut_ptr(), y.as_mut_ptr(), 2.0f64, 63i32);
    let mut params = [ptr(&mut px), ptr(&mut py), ptr(&mut a), ptr(&mut n)];
    let bounds = LaunchOptions {
        bounds: Some(vec![Some(63 * 8), Some(64 * 8), None, None]),
        ..LaunchOptions::default()
    };
    // SAFETY: as scale declares; the one access past x's 63 declared elements is checked.
    let e = unsafe { libs[1].launch(params.as_mut_ptr(), [1, 1, 1], [64, 1, 1], 0, &bounds) }
        .unwrap_err();
    assert!(
        matches!(
            e,
            EmuError::Kernel {
                fault: Fault::OutOfBounds,
                ..
            }
        ),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_module_of_one_kernel_compiles_only_the_checked_build() {
    // a fused plan of one launch: its bounds-checked launches must not build a second library
    let dir = std::env::temp_dir().join(format!("cunumpy-emu-module1-{}", std::process::id()));
    let cxx = EmuCompiler::detect().expect("a host C++ compiler");
    let libs = cxx
        .compile_module(SRC, &["add_one".to_string()], &[], &[], Some(&dir))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(libs.len(), 1);
    let mut x: Vec<f64> = vec![1.0; 8];
    let (mut px, mut n) = (x.as_mut_ptr(), 8i32);
    let mut params = [ptr(&mut px), ptr(&mut n)];
    let options = LaunchOptions {
        bounds: Some(vec![Some(8 * 8), None]),
        ..LaunchOptions::default()
    };
    // SAFETY: params point at a double* of 8 elements and an int, as add_one declares.
    unsafe { libs[0].launch(params.as_mut_ptr(), [1, 1, 1], [8, 1, 1], 0, &options) }.unwrap();
    assert_eq!(x, vec![2.0; 8]);
    let entries = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "cnk"))
        .count();
    assert_eq!(
        entries,
        1,
        "one library file (the checked build) in {}",
        dir.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
