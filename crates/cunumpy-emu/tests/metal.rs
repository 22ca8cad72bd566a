//! Metal kernels (MLX conventions) run through the emulator, compared with results computed
//! here in Rust.

use std::ffi::c_void;

use cunumpy_emu::{
    EmuCompiler, EmuError, Fault, MetalBuffer, MetalInput, MetalKernelSource, MetalLaunchOptions,
    MetalOutput, TemplateArg,
};

fn kernel(
    source: &str,
    inputs: &[(&str, &str, usize)],
    outputs: &[(&str, &str)],
) -> MetalKernelSource {
    MetalKernelSource {
        name: "test".into(),
        source: source.into(),
        header: String::new(),
        inputs: inputs
            .iter()
            .map(|&(n, t, d)| MetalInput {
                name: n.into(),
                ty: t.into(),
                ndim: d,
            })
            .collect(),
        outputs: outputs
            .iter()
            .map(|&(n, t)| MetalOutput {
                name: n.into(),
                ty: t.into(),
            })
            .collect(),
        atomic_outputs: false,
        template: Vec::new(),
    }
}

fn buf<T>(v: &mut [T], shape: &[i64]) -> MetalBuffer {
    MetalBuffer {
        ptr: v.as_mut_ptr().cast::<c_void>(),
        nbytes: std::mem::size_of_val(v),
        shape: shape.to_vec(),
    }
}

fn run(
    k: &MetalKernelSource,
    inputs: &[MetalBuffer],
    outputs: &[MetalBuffer],
    grid: [u32; 3],
    tg: [u32; 3],
    options: &MetalLaunchOptions,
) -> Result<(), EmuError> {
    let c = EmuCompiler::detect().expect("a host C++ compiler");
    let (lib, t) = c.compile_metal(k, None)?;
    // SAFETY: the buffers are live vectors of the sizes given, kept for the launch.
    unsafe { t.launch(&lib, inputs, outputs, grid, tg, options) }
}

#[test]
fn elementwise_with_metal_math_and_a_partial_threadgroup() {
    let k = kernel(
        "uint i = thread_position_in_grid.x;\nout[i] = metal::exp(inp[i]) + sqrt(inp[i]);",
        &[("inp", "float", 1)],
        &[("out", "float")],
    );
    let mut x: Vec<f32> = (0..1000).map(|i| i as f32 / 100.0).collect();
    let mut y = vec![0f32; 1000];
    run(
        &k,
        &[buf(&mut x, &[1000])],
        &[buf(&mut y, &[1000])],
        [1000, 1, 1],
        [256, 1, 1],
        &MetalLaunchOptions {
            bounds: true,
            ..Default::default()
        },
    )
    .expect("the call succeeds");
    for (a, b) in x.iter().zip(&y) {
        assert!((a.exp() + a.sqrt() - b).abs() <= 1e-5 * b.abs());
    }
}

#[test]
fn threadgroup_reduction_simd_sum_and_template() {
    let k = MetalKernelSource {
        template: vec![
            ("TG".into(), TemplateArg::Int(128)),
            ("T".into(), TemplateArg::Type("float".into())),
        ],
        ..kernel(
            "threadgroup T partial[TG];\n\
             uint l = thread_position_in_threadgroup.x;\n\
             uint i = thread_position_in_grid.x;\n\
             T v = x[i];\n\
             T s = simd_sum(v);\n\
             if (thread_index_in_simdgroup == 0) partial[simdgroup_index_in_threadgroup] = s;\n\
             threadgroup_barrier(mem_flags::mem_threadgroup);\n\
             if (l == 0) {\n\
               T t = 0;\n\
               for (uint w = 0; w < simdgroups_per_threadgroup; w++) t += partial[w];\n\
               out[threadgroup_position_in_grid.x] = t;\n\
             }",
            &[("x", "float", 1)],
            &[("out", "float")],
        )
    };
    let n = 1000usize;
    let mut x: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let groups = n.div_ceil(128);
    let mut out = vec![0f32; groups];
    run(
        &k,
        &[buf(&mut x, &[n as i64])],
        &[buf(&mut out, &[groups as i64])],
        [n as u32, 1, 1],
        [128, 1, 1],
        &MetalLaunchOptions::default(),
    )
    .expect("the call succeeds");
    for (g, o) in out.iter().enumerate() {
        let want: f32 = x[g * 128..((g + 1) * 128).min(n)].iter().sum();
        assert_eq!(*o, want);
    }
}

#[test]
fn atomic_histogram_and_out_of_bounds() {
    let k = MetalKernelSource {
        atomic_outputs: true,
        ..kernel(
            "uint i = thread_position_in_grid.x;\n\
             atomic_fetch_add_explicit(&hist[bins[i]], 1, memory_order_relaxed);",
            &[("bins", "int32_t", 1)],
            &[("hist", "int32_t")],
        )
    };
    let mut bins: Vec<i32> = (0..5000).map(|i| i * 7919 % 10).collect();
    let mut hist = vec![0i32; 10];
    let opts = MetalLaunchOptions {
        bounds: true,
        ..Default::default()
    };
    run(
        &k,
        &[buf(&mut bins, &[5000])],
        &[buf(&mut hist, &[10])],
        [5000, 1, 1],
        [64, 1, 1],
        &opts,
    )
    .expect("the call succeeds");
    for (b, h) in hist.iter().enumerate() {
        assert_eq!(
            *h as usize,
            bins.iter().filter(|&&v| v as usize == b).count()
        );
    }
    bins[17] = 10;
    let err = run(
        &k,
        &[buf(&mut bins, &[5000])],
        &[buf(&mut hist, &[10])],
        [5000, 1, 1],
        [64, 1, 1],
        &opts,
    )
    .expect_err("the call is rejected");
    assert_eq!(err.fault(), Some(Fault::OutOfBounds), "{err}");
    assert!(err.to_string().contains("'hist'"), "{err}");
}
