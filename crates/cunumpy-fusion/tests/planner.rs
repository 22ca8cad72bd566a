//! What the planner fuses: kernel counts for key expressions, CSE and dead code, buffers and
//! their reuse, and that launches describe every parameter.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use cunumpy_fusion::*;

fn input(g: &mut GraphBuilder, ndim: usize) -> Value {
    g.input(DType::Float64, ndim).unwrap()
}

/// The plan loaded on an H200 (132 SMs).
fn h200(p: &Plan) -> DevicePlan {
    p.for_device(DeviceTarget::H200)
}

#[test]
fn elementwise_chain_is_one_kernel_one_launch() {
    let mut g = GraphBuilder::new();
    let (a, b, c) = (input(&mut g, 1), input(&mut g, 1), input(&mut g, 1));
    let ab = g.op(Op::Mul, &[a, b]).unwrap();
    let e = g.op(Op::Exp, &[ab]).unwrap();
    let r = g.op(Op::Add, &[e, c]).unwrap();
    let r2 = g.op(Op::Sin, &[r]).unwrap();
    g.output(r).unwrap();
    g.output(r2).unwrap();
    let p = plan(&g.finish().unwrap(), &vec![vec![1000]; 3]).unwrap();
    assert_eq!(p.kernels.len(), 1);
    assert_eq!(h200(&p).kernels[0].launches.len(), 1);
    assert_eq!(p.kernels[0].bytes_read, 3 * 8000);
    assert_eq!(p.kernels[0].bytes_written, 2 * 8000);
    assert_eq!(
        p.kernels[0].writes,
        vec![Operand::Output(0), Operand::Output(1)]
    );
    assert_eq!(h200(&p).workspace_bytes(), 0);
}

#[test]
fn sum_of_squared_difference_is_one_fused_reduction() {
    let mut g = GraphBuilder::new();
    let (a, b) = (input(&mut g, 1), input(&mut g, 1));
    let two = g.scalar(DType::Int64, true).unwrap();
    let d = g.op(Op::Sub, &[a, b]).unwrap();
    let sq = g.op(Op::Pow, &[d, two]).unwrap();
    let s = g.reduce(ReduceKind::Sum, sq, &Axis::All, false).unwrap();
    g.output(s).unwrap();
    let graph = g.finish().unwrap();
    let p = plan(&graph, &[vec![1 << 20], vec![1 << 20]]).unwrap();
    assert_eq!(p.kernels.len(), 1, "{}", p.explain());
    let k = &p.kernels[0];
    assert!(matches!(
        k.kind,
        KernelKind::Reduction {
            strategy: Strategy::Split,
            outputs: 1,
            ..
        }
    ));
    assert_eq!(k.fused_ops, vec!["subtract", "power", "sum"]);
    let d = h200(&p);
    assert_eq!(d.kernels[0].launches.len(), 2);
    assert!(k.bytes_read >= 2 * 8 * (1 << 20));
    // the partials are written and read back on the device
    assert!(d.kernels[0].bytes_read > k.bytes_read);
    // small inputs: one warp, one launch
    let p = plan(&graph, &[vec![1000], vec![1000]]).unwrap();
    assert_eq!(h200(&p).kernels[0].launches.len(), 1);
}

#[test]
fn a_minus_mean_is_a_reduction_then_an_elementwise_kernel() {
    let mut g = GraphBuilder::new();
    let a = input(&mut g, 1);
    let m = g
        .reduce(ReduceKind::Mean { ddof: 0 }, a, &Axis::All, false)
        .unwrap();
    let d = g.op(Op::Sub, &[a, m]).unwrap();
    g.output(d).unwrap();
    let p = plan(&g.finish().unwrap(), &[vec![1 << 20]]).unwrap();
    assert_eq!(p.kernels.len(), 2, "{}", p.explain());
    assert!(matches!(p.kernels[0].kind, KernelKind::Reduction { .. }));
    assert!(matches!(p.kernels[1].kind, KernelKind::Elementwise { .. }));
    // the mean goes through one 8-byte workspace buffer
    assert!(p.kernels[0].writes.contains(&Operand::Buffer(0)));
    assert!(p.kernels[1].reads.contains(&Operand::Buffer(0)));
    assert_eq!(p.buffers[0].elements, 1);
    // reads a twice, writes once
    let total = p.bytes_read() + p.bytes_written();
    let a_bytes = 8u64 << 20;
    assert!(
        total >= 3 * a_bytes && total < 3 * a_bytes + 100_000,
        "{total}"
    );
}

#[test]
fn epilogues_and_sibling_reductions_fuse() {
    // sqrt(sum(x*x)), mean(x), max(x) - min(x) share one kernel
    let mut g = GraphBuilder::new();
    let x = input(&mut g, 2);
    let xx = g.op(Op::Mul, &[x, x]).unwrap();
    let ss = g.reduce(ReduceKind::Sum, xx, &Axis::One(1), false).unwrap();
    let n = g.op(Op::Sqrt, &[ss]).unwrap();
    let mean = g
        .reduce(ReduceKind::Mean { ddof: 0 }, x, &Axis::One(1), false)
        .unwrap();
    let mx = g.reduce(ReduceKind::Max, x, &Axis::One(1), false).unwrap();
    let mn = g.reduce(ReduceKind::Min, x, &Axis::One(1), false).unwrap();
    let rng = g.op(Op::Sub, &[mx, mn]).unwrap();
    for v in [n, mean, rng] {
        g.output(v).unwrap();
    }
    let p = plan(&g.finish().unwrap(), &[vec![300, 400]]).unwrap();
    assert_eq!(p.kernels.len(), 1, "{}", p.explain());
    assert_eq!(p.kernels[0].writes.len(), 3);
    // a reduction over a different axis is another kernel
    let mut g = GraphBuilder::new();
    let x = input(&mut g, 2);
    let r = g.reduce(ReduceKind::Sum, x, &Axis::One(1), false).unwrap();
    let c = g.reduce(ReduceKind::Sum, x, &Axis::One(0), false).unwrap();
    g.output(r).unwrap();
    g.output(c).unwrap();
    let p = plan(&g.finish().unwrap(), &[vec![300, 400]]).unwrap();
    assert_eq!(p.kernels.len(), 2);
}

#[test]
fn dependent_reductions_split_and_buffers_are_reused() {
    // t = x - mean(x); u = t - mean(t); v = u - mean(u): three reduction levels
    let mut g = GraphBuilder::new();
    let mut x = input(&mut g, 1);
    for _ in 0..3 {
        let m = g
            .reduce(ReduceKind::Mean { ddof: 0 }, x, &Axis::All, true)
            .unwrap();
        x = g.op(Op::Sub, &[x, m]).unwrap();
    }
    g.output(x).unwrap();
    let p = plan(&g.finish().unwrap(), &[vec![1 << 16]]).unwrap();
    assert_eq!(p.kernels.len(), 4, "{}", p.explain());
    // every level's mean is needed by the last kernel: three live buffers
    let results: Vec<&BufferSpec> = p
        .buffers
        .iter()
        .filter(|b| b.purpose.starts_with("result"))
        .collect();
    assert_eq!(results.len(), 3);
    // buffers whose lifetimes do not overlap share workspace bytes
    let mut g = GraphBuilder::new();
    let x = input(&mut g, 1);
    let y = input(&mut g, 1);
    let sx = g.reduce(ReduceKind::Sum, x, &Axis::All, false).unwrap();
    let sy = g.reduce(ReduceKind::Sum, y, &Axis::All, false).unwrap();
    let z = g.op(Op::Add, &[sx, sy]).unwrap();
    g.output(z).unwrap();
    // different lengths: two reduction kernels (equal lengths would share one kernel)
    let p = plan(&g.finish().unwrap(), &[vec![1 << 22], vec![1 << 21]]).unwrap();
    assert_eq!(p.kernels.len(), 2, "{}", p.explain());
    // split reductions: partials of kernel 0 and kernel 1 never overlap in time
    let d = h200(&p);
    let g = &d.geometry;
    let partials: Vec<&BufferSpec> = g
        .buffers
        .iter()
        .filter(|b| b.purpose.starts_with("partials"))
        .collect();
    assert_eq!(partials.len(), 2, "{}", d.explain(&p));
    for (b, offset) in g.buffers.iter().zip(&g.offsets) {
        assert_eq!(offset % 256, 0);
        assert!(offset + b.bytes() <= d.workspace_bytes());
    }
    let sum_sizes: usize = g
        .buffers
        .iter()
        .map(|b| b.bytes().div_ceil(256) * 256)
        .sum();
    assert!(d.workspace_bytes() < sum_sizes, "{}", d.explain(&p));
}

#[test]
fn cse_and_dead_code() {
    let mut g = GraphBuilder::new();
    let a = input(&mut g, 1);
    let b = input(&mut g, 1);
    let x1 = g.op(Op::Mul, &[a, b]).unwrap();
    let x2 = g.op(Op::Mul, &[a, b]).unwrap();
    assert_eq!(x1, x2, "CSE at construction");
    let dead = g.op(Op::Exp, &[a]).unwrap();
    let _dead2 = g.op(Op::Sin, &[dead]).unwrap();
    let r = g.op(Op::Add, &[x1, x2]).unwrap();
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    // inputs a, b; mul; add
    assert_eq!(graph.nodes.len(), 4, "{graph}");
    assert_eq!(graph.inputs.len(), 2);
    // same-dtype astype is the identity
    let mut g = GraphBuilder::new();
    let a = input(&mut g, 1);
    assert_eq!(g.astype(a, DType::Float64).unwrap(), a);
}

#[test]
fn launches_describe_every_parameter_and_32_bit_indexing() {
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float32, 2).unwrap();
    let b = g.input(DType::Float32, 1).unwrap();
    let k = g.scalar(DType::Float64, true).unwrap();
    let ab = g.op(Op::Mul, &[a, b]).unwrap();
    let r = g.op(Op::Add, &[ab, k]).unwrap();
    let s = g.reduce(ReduceKind::Sum, r, &Axis::One(0), true).unwrap();
    g.output(r).unwrap();
    g.output(s).unwrap();
    let graph = g.finish().unwrap();
    let p = h200(&plan(&graph, &[vec![512, 1024], vec![1024]]).unwrap());
    let src = &p.source;
    for k in &p.kernels {
        for l in &k.launches {
            assert!(l.grid >= 1 && l.block == 256);
            let sig_start = src.find(&format!("void {}(", l.name)).unwrap();
            let sig = &src[sig_start..sig_start + src[sig_start..].find(')').unwrap()];
            for prm in &l.params {
                assert!(
                    sig.contains(&format!(" {}", prm.name)),
                    "{} in {sig}",
                    prm.name
                );
                if let ParamValue::Scalar(i) = prm.value {
                    assert_eq!(i, 0);
                    assert_eq!(param_c_type(prm), "double");
                }
            }
            assert_eq!(sig.matches(',').count() + 1, l.params.len(), "{sig}");
        }
    }
    assert!(
        src.contains("for (int i") || src.contains("for (int base"),
        "32-bit indexing"
    );
    assert!(!src.contains("atomic"), "deterministic: no atomics");
    assert!(src.contains("__shfl_down_sync") || src.contains("for (int k = 0; k < K; ++k)"));
    // sizes beyond 2^31 use 64-bit indices
    let p = plan(&graph, &[vec![1 << 16, 1 << 16], vec![1 << 16]]).unwrap();
    let wide = h200(&p).source;
    assert!(wide.contains("for (long long i") || wide.contains("for (long long base"));
    // the source depends on the pattern, not the sizes: new sizes, same source
    let p1 = plan(&graph, &[vec![300, 1000], vec![1000]]).unwrap();
    let p2 = plan(&graph, &[vec![700, 900], vec![900]]).unwrap();
    assert_eq!(h200(&p1).source, h200(&p2).source);
    // and the explanation names kernels, bytes and launches
    let e = h200(&p1).explain(&p1);
    assert!(
        e.contains("kernel 0") && e.contains("bytes") && e.contains("launch"),
        "{e}"
    );
}

#[test]
fn lambda_names_become_c_identifiers() {
    assert_eq!(c_ident("<lambda>"), "_lambda_");
    assert_eq!(c_ident("3d"), "_3d");
    let mut g = GraphBuilder::new();
    let a = input(&mut g, 1);
    let r = g.op(Op::Neg, &[a]).unwrap();
    g.output(r).unwrap();
    let opts = PlanOptions {
        name: "<lambda>".into(),
        ..PlanOptions::default()
    };
    let p = plan_with_options(&g.finish().unwrap(), &[vec![10]], &opts).unwrap();
    assert!(h200(&p).source.contains("void _lambda__k0("));
}

#[test]
fn a_plan_loaded_on_a_device_gets_that_devices_grids() {
    // sum(a) over 2^24 points: a split reduction, 16 blocks per SM for the partials
    let mut g = GraphBuilder::new();
    let a = input(&mut g, 1);
    let s = g.reduce(ReduceKind::Sum, a, &Axis::All, false).unwrap();
    g.output(s).unwrap();
    let p = plan(&g.finish().unwrap(), &[vec![1 << 24]]).unwrap();
    for sm_count in [132u32, 16, 108] {
        let d = p.for_device(DeviceTarget::new(sm_count));
        let partial = &d.kernels[0].launches[0];
        assert_eq!(partial.grid, 16 * sm_count, "{}", d.explain(&p));
        let width = ParamValue::Int(16 * i64::from(sm_count));
        assert!(partial
            .params
            .iter()
            .any(|q| q.name == "P" && q.value == width));
        // the partials buffer holds one value per block
        assert_eq!(
            d.workspace_bytes(),
            (16 * sm_count as usize * 8).div_ceil(256) * 256
        );
        assert!(d
            .explain(&p)
            .contains(&format!("split into {} block(s) per output", 16 * sm_count)));
    }
    // a row reduction with many rows: a warp per row, the grid capped at 8 blocks per SM
    let mut g = GraphBuilder::new();
    let a = input(&mut g, 2);
    let s = g.reduce(ReduceKind::Sum, a, &Axis::One(1), false).unwrap();
    g.output(s).unwrap();
    let p = plan(&g.finish().unwrap(), &[vec![1 << 16, 64]]).unwrap();
    let grids: Vec<u32> = [132u32, 20]
        .iter()
        .map(|&n| p.for_device(DeviceTarget::new(n)).kernels[0].launches[0].grid)
        .collect();
    assert_eq!(grids, vec![132 * 8, 20 * 8]);
    // the plan itself is device-free, and so is its text
    assert!(!p.explain().contains("launch"));
    assert_eq!(
        p.for_device(DeviceTarget::new(132)).source,
        p.for_device(DeviceTarget::new(20)).source
    );
}
