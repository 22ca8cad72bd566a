//! Needs a host C++ compiler (`c++`): the generated CUDA C of every op on every dtype it
//! accepts, and of each reduction strategy, type-checks through a small host shim of the CUDA
//! built-ins. Skipped (with a message) when no compiler is found, unless
//! `CUNUMPY_REQUIRE_CXX=1`, which turns the skip into a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use cunumpy_core::dtype::DTypeKind;
use cunumpy_fusion::*;
use std::process::Command;

const SHIM: &str = r#"
#include <math.h>
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __shared__ static
struct cn_dim3 { unsigned x, y, z; };
static cn_dim3 threadIdx, blockIdx, blockDim, gridDim;
template <class T> T __shfl_down_sync(unsigned, T v, int) { return v; }
static unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static void __syncthreads() {}
"#;

const ALL: [DType; 11] = [
    DType::Bool,
    DType::Int8,
    DType::UInt8,
    DType::Int16,
    DType::UInt16,
    DType::Int32,
    DType::UInt32,
    DType::Int64,
    DType::UInt64,
    DType::Float32,
    DType::Float64,
];

/// One source per shape (preamble once, then the kernels of every dtype). The shapes reach
/// every reduction strategy: split (both axes of the first, axis 0 of the second and third),
/// one thread per output (axis 0 of the first), four lanes per output (axis 1 of the second)
/// and one warp per output (axis 1 of the third).
fn sources() -> Vec<String> {
    let shapes = [vec![3, 1 << 20], vec![1 << 20, 16], vec![4096, 300]];
    let mut out: Vec<String> = shapes
        .iter()
        .map(|_| format!("{PREAMBLE}{COMPLEX_PREAMBLE}"))
        .collect();
    // every op on every dtype, as elementwise kernels, one plan per dtype
    for &t in ALL.iter().chain(&[DType::Complex64, DType::Complex128]) {
        let mut g = GraphBuilder::new();
        let x = g.input(t, 2).unwrap();
        let y = g.input(t, 1).unwrap();
        let c = g.input(DType::Bool, 1).unwrap();
        for d in OPS.iter() {
            let args: Vec<Value> = (0..d.arity)
                .map(|i| match (d.op, i) {
                    (Op::Where, 0) => c,
                    (_, 0) => x,
                    _ => y,
                })
                .collect();
            if let Ok(r) = g.op(d.op, &args) {
                g.output(r).unwrap();
            }
        }
        for k in [
            ReduceKind::Sum,
            ReduceKind::Prod,
            ReduceKind::Min,
            ReduceKind::Max,
            ReduceKind::Any,
            ReduceKind::All,
            ReduceKind::Mean { ddof: 1 },
        ] {
            for axis in [Axis::All, Axis::One(0), Axis::One(1)] {
                match g.reduce(k, x, &axis, false) {
                    Ok(r) => {
                        g.output(r).unwrap();
                    }
                    // any and all are refused for complex
                    Err(e) => assert!(t.kind() == DTypeKind::Complex, "{e}"),
                }
            }
        }
        let graph = g.finish().unwrap();
        let opts = PlanOptions {
            name: format!("all_{t}"),
            ..PlanOptions::default()
        };
        for (shape, src) in shapes.iter().zip(out.iter_mut()) {
            let p = plan_with_options(
                &graph,
                &[shape.clone(), vec![shape[1]], vec![shape[1]]],
                &opts,
            )
            .unwrap()
            .for_device(DeviceTarget::H200);
            let all = &p.source;
            let kernels = &all[p.preamble_len..];
            src.push_str(kernels.strip_prefix(COMPLEX_PREAMBLE).unwrap_or(kernels));
        }
    }
    out
}

#[test]
fn generated_cuda_type_checks_with_host_compiler() {
    let have = Command::new("c++").arg("--version").output().is_ok();
    if !have {
        assert!(
            std::env::var("CUNUMPY_REQUIRE_CXX").as_deref() != Ok("1"),
            "no c++ compiler and CUNUMPY_REQUIRE_CXX=1"
        );
        eprintln!("SKIPPED: no host C++ compiler (`c++`)");
        return;
    }
    let all = sources().concat();
    for needle in [
        "const cn_c64 r",
        "cn_c128 acc0",
        "exp(r",
        "cn_abs(r",
        "asinh(r",
        "cn_c64(INFINITY, INFINITY)",
    ] {
        assert!(all.contains(needle), "no complex kernel code {needle}");
    }
    for strategy in [
        "_partial(",
        "for (int k = 0; k < K; ++k)",
        "k += 32)",
        "k += 4)",
    ] {
        assert!(all.contains(strategy), "no kernel with {strategy}");
    }
    let dir = std::env::temp_dir().join(format!("cunumpy-fusion-cxx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, src) in sources().iter().enumerate() {
        let path = dir.join(format!("k{i}.cpp"));
        std::fs::write(&path, format!("{SHIM}\n{src}")).unwrap();
        let out = Command::new("c++")
            .args(["-std=c++17", "-fsyntax-only", "-Werror=return-type"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}:\n{}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compiles `src` (after the shim) with the host compiler for syntax and types; false when
/// there is no compiler (the caller skips).
fn type_checks(name: &str, src: &str) -> bool {
    if Command::new("c++").arg("--version").output().is_err() {
        assert!(
            std::env::var("CUNUMPY_REQUIRE_CXX").as_deref() != Ok("1"),
            "no c++ compiler and CUNUMPY_REQUIRE_CXX=1"
        );
        eprintln!("SKIPPED: no host C++ compiler (`c++`)");
        return false;
    }
    let dir =
        std::env::temp_dir().join(format!("cunumpy-fusion-cxx-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("k.cpp");
    std::fs::write(&path, format!("{SHIM}\n{src}")).unwrap();
    let out = Command::new("c++")
        .args(["-std=c++17", "-fsyntax-only", "-Werror=return-type"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}:\n{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
    true
}

#[test]
fn tiled_stencils_type_check_with_host_compiler() {
    // u[2:, 1:-1] + u[:-2, 1:-1] - u[1:-1, 2:] * w[None, 1:-1] on several dtypes, with 32-bit
    // and 64-bit indices: the tiled mapping (windows, a view loaded once per tile)
    let mut src = format!("{PREAMBLE}{COMPLEX_PREAMBLE}");
    let sl = |start: Option<i64>, stop: Option<i64>| IndexItem::Slice {
        start,
        stop,
        step: 1,
    };
    let mid = sl(Some(1), Some(-1));
    for t in [
        DType::Float32,
        DType::Float64,
        DType::Int64,
        DType::Complex64,
        DType::Complex128,
    ] {
        let mut g = GraphBuilder::new();
        let u = g.input(t, 2).unwrap();
        let w = g.input(t, 1).unwrap();
        let up = g.index(u, &[sl(Some(2), None), mid]).unwrap();
        let down = g.index(u, &[sl(None, Some(-2)), mid]).unwrap();
        let right = g.index(u, &[mid, sl(Some(2), None)]).unwrap();
        let row = g.index(w, &[IndexItem::NewAxis, mid]).unwrap();
        let s = g.op(Op::Add, &[up, down]).unwrap();
        let p = g.op(Op::Mul, &[right, row]).unwrap();
        let r = g.op(Op::Sub, &[s, p]).unwrap();
        g.output(r).unwrap();
        let graph = g.finish().unwrap();
        for (n, wide) in [(300usize, "int"), (50_000, "long long")] {
            let opts = PlanOptions {
                name: format!("tiles_{t}_{n}"),
                ..PlanOptions::default()
            };
            let p = plan_with_options(&graph, &[vec![n, n], vec![n]], &opts)
                .unwrap()
                .for_device(DeviceTarget::H200);
            let kernels = &p.source[p.preamble_len..];
            let kernels = kernels.strip_prefix(COMPLEX_PREAMBLE).unwrap_or(kernels);
            assert!(
                kernels.contains(&format!("for ({wide} tile = ")),
                "{kernels}"
            );
            assert!(
                kernels.contains(" w0_3 = ") && kernels.contains(" = v"),
                "{kernels}"
            );
            src.push_str(kernels);
        }
    }
    type_checks("tiles", &src);
}
