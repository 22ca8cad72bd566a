//! Complex dtypes: type rules of the op table, the graph's refusals, and the CPU executor's
//! results against formulas computed here element by element.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use cunumpy_fusion::*;

/// What core's packer (the one of user kernels) writes for each parameter of `launch`.
fn packed(
    p: &DevicePlan,
    launch: &Launch,
    ptrs: &DevicePointers<'_>,
    svs: &[ScalarValue],
) -> std::result::Result<Vec<Vec<u8>>, String> {
    let args = launch_args(p, launch, ptrs, svs, 0).map_err(|e| e.to_string())?;
    let plan = cunumpy_core::args::ArgPlan::new(&launch_signature(launch), &|_| None)
        .map_err(|e| e.message)?;
    let mut buffer = plan.new_buffer();
    for (i, arg) in args.iter().enumerate() {
        plan.pack(i, arg, 0, &mut buffer).map_err(|e| e.message)?;
    }
    Ok((0..args.len()).map(|i| buffer.bytes_of(&plan, i)).collect())
}

fn arg(dtype: DType, weak: bool) -> ArgType {
    ArgType { dtype, weak }
}

#[test]
fn type_rules_follow_numpy_for_complex() {
    let c64 = arg(DType::Complex64, false);
    let c128 = arg(DType::Complex128, false);
    let f32 = arg(DType::Float32, false);
    let py_complex = arg(DType::Complex128, true);
    // float32 + Python complex -> complex64 (NEP 50); float32 * complex64 -> complex64
    assert_eq!(
        Op::Add.signature(&[f32, py_complex]).unwrap().1,
        DType::Complex64
    );
    assert_eq!(Op::Mul.signature(&[f32, c64]).unwrap().1, DType::Complex64);
    assert_eq!(
        Op::TrueDiv.signature(&[c64, c64]).unwrap().1,
        DType::Complex64
    );
    assert_eq!(Op::Exp.signature(&[c128]).unwrap().1, DType::Complex128);
    // absolute, real and imag give the real dtype of the same precision
    for op in [Op::Abs, Op::Real, Op::Imag] {
        assert_eq!(op.signature(&[c64]).unwrap().1, DType::Float32, "{op:?}");
        assert_eq!(op.signature(&[c128]).unwrap().1, DType::Float64, "{op:?}");
    }
    assert_eq!(
        Op::Eq.signature(&[c64, c128]).unwrap(),
        (vec![DType::Complex128; 2], DType::Bool)
    );
    // ordering, rounding, bitwise and min/max have no complex loop here
    for op in [
        Op::Lt,
        Op::Floor,
        Op::Maximum,
        Op::FloorDiv,
        Op::Mod,
        Op::Arctan2,
        Op::Sign,
    ] {
        let args = vec![c128; op.def().arity];
        let e = op.signature(&args).unwrap_err();
        assert!(e.contains("complex"), "{op:?}: {e}");
        assert!(!op.supports_complex());
    }
    assert_eq!(Op::from_name("conj"), Some(Op::Conj));
}

#[test]
fn graph_refuses_complex_min_max_and_lossy_astype() {
    let mut g = GraphBuilder::new();
    let z = g.input(DType::Complex64, 1).unwrap();
    for kind in [
        ReduceKind::Min,
        ReduceKind::Max,
        ReduceKind::Any,
        ReduceKind::All,
    ] {
        let e = g.reduce(kind, z, &Axis::All, false).unwrap_err();
        assert_eq!(
            e,
            FusionError::UnsupportedDType {
                op: kind.name().into(),
                dtype: DType::Complex64
            }
        );
    }
    let e = g.astype(z, DType::Int32).unwrap_err().to_string();
    assert!(e.contains("astype") && e.contains("imaginary"), "{e}");
    assert!(g.var(z, &Axis::All, 0, false).is_err());
    // real -> complex is fine; real/conj of a real value are the value itself
    let f = g.input(DType::Float64, 1).unwrap();
    assert!(g.astype(f, DType::Complex64).is_ok());
    assert_eq!(g.op(Op::Conj, &[f]).unwrap(), f);
    assert_eq!(g.op(Op::Real, &[f]).unwrap(), f);
}

#[test]
fn cpu_executor_computes_complex_elementwise_and_reductions() {
    // f(z, a, s) = (abs(z * a + s), sum(conj(z) * z, axis 1, keepdims), mean(z))
    let mut g = GraphBuilder::new();
    let z = g.input(DType::Complex128, 2).unwrap();
    let a = g.input(DType::Float64, 1).unwrap();
    let s = g.scalar(DType::Complex128, true).unwrap();
    let za = g.op(Op::Mul, &[z, a]).unwrap();
    let t = g.op(Op::Add, &[za, s]).unwrap();
    let r = g.op(Op::Abs, &[t]).unwrap();
    g.output(r).unwrap();
    let c = g.op(Op::Conj, &[z]).unwrap();
    let p = g.op(Op::Mul, &[c, z]).unwrap();
    let sum = g.reduce(ReduceKind::Sum, p, &Axis::One(1), true).unwrap();
    g.output(sum).unwrap();
    let mean = g
        .reduce(ReduceKind::Mean { ddof: 0 }, z, &Axis::All, false)
        .unwrap();
    g.output(mean).unwrap();
    let graph = g.finish().unwrap();
    let (rows, cols) = (3, 5000);
    let plan = plan(&graph, &[vec![rows, cols], vec![cols]]).unwrap();
    assert_eq!(plan.outputs[0].dtype, DType::Float64);
    assert_eq!(plan.outputs[1].dtype, DType::Complex128);

    let zs: Vec<Complex<f64>> = (0..rows * cols)
        .map(|i| Complex::new((i as f64 * 0.37).sin(), (i as f64 * 0.11).cos()))
        .collect();
    let av: Vec<f64> = (0..cols).map(|j| 1.0 + j as f64 * 1e-3).collect();
    let (sr, si) = (0.5, -2.0);
    let mut out_abs = vec![0.0f64; rows * cols];
    let mut out_sum = vec![Complex::<f64>::default(); rows];
    let mut out_mean = vec![Complex::<f64>::default(); 1];
    let (zshape, ashape) = ([rows, cols], [cols]);
    let (sshape, mshape) = ([rows, 1], []);
    execute_cpu(
        &plan,
        &[ArrayRef::new(&zs, &zshape), ArrayRef::new(&av, &ashape)],
        &[ScalarValue::Complex(sr, si)],
        &mut [
            ArrayMut::new(&mut out_abs, &zshape),
            ArrayMut::new(&mut out_sum, &sshape),
            ArrayMut::new(&mut out_mean, &mshape),
        ],
    )
    .unwrap();
    for i in 0..rows * cols {
        let (re, im) = (zs[i].re * av[i % cols] + sr, zs[i].im * av[i % cols] + si);
        assert!((out_abs[i] - re.hypot(im)).abs() < 1e-12, "{i}");
    }
    for r in 0..rows {
        let want: f64 = zs[r * cols..(r + 1) * cols]
            .iter()
            .map(|c| c.re * c.re + c.im * c.im)
            .sum();
        assert!((out_sum[r].re - want).abs() < 1e-9 * want, "{r}");
        assert!(out_sum[r].im.abs() < 1e-9, "{r}");
    }
    let n = (rows * cols) as f64;
    let (mr, mi) = zs.iter().fold((0.0, 0.0), |(a, b), c| (a + c.re, b + c.im));
    assert!((out_mean[0].re - mr / n).abs() < 1e-12);
    assert!((out_mean[0].im - mi / n).abs() < 1e-12);
}

#[test]
fn complex_scalar_parameters_pack_as_two_parts() {
    let mut g = GraphBuilder::new();
    let z = g.input(DType::Complex64, 1).unwrap();
    let s = g.scalar(DType::Complex64, false).unwrap();
    let y = g.op(Op::Mul, &[z, s]).unwrap();
    g.output(y).unwrap();
    let p = plan(&g.finish().unwrap(), &[vec![10]])
        .unwrap()
        .for_device(DeviceTarget::H200);
    let launch = &p.kernels[0].launches[0];
    let ptrs = DevicePointers {
        inputs: &[0x1000],
        outputs: &[0x2000],
        workspace: 0,
    };
    let values = packed(&p, launch, &ptrs, &[ScalarValue::Complex(1.5, -2.0)]).unwrap();
    let (param, bytes) = launch
        .params
        .iter()
        .zip(&values)
        .find(|(p, _)| p.value == ParamValue::Scalar(0))
        .unwrap();
    assert_eq!(param_c_type(param), "cn_c64");
    assert_eq!(
        bytes,
        &[1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()].concat()
    );
    // a complex value with an imaginary part does not convert to a real parameter
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float32, 1).unwrap();
    let s = g.scalar(DType::Float32, false).unwrap();
    let y = g.op(Op::Mul, &[a, s]).unwrap();
    g.output(y).unwrap();
    let p = plan(&g.finish().unwrap(), &[vec![10]])
        .unwrap()
        .for_device(DeviceTarget::H200);
    let l = &p.kernels[0].launches[0];
    assert!(packed(&p, l, &ptrs, &[ScalarValue::Complex(1.0, 1.0)]).is_err());
}
