//! The CPU executor against straightforward Rust reference loops.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::needless_range_loop)] // tests may panic

mod common;
use common::*;
use cunumpy_fusion::*;

fn f64s(v: &[f64]) -> In {
    In::F64(v.to_vec())
}

#[test]
fn elementwise_chain_matches_reference() {
    // a*b + c*d - 2.5*a
    let n = 10_007;
    let (a, b, c, d) = (data(n, 1), data(n, 2), data(n, 3), data(n, 4));
    let mut g = GraphBuilder::new();
    let va = g.input(DType::Float64, 1).unwrap();
    let vb = g.input(DType::Float64, 1).unwrap();
    let vc = g.input(DType::Float64, 1).unwrap();
    let vd = g.input(DType::Float64, 1).unwrap();
    let k = g.scalar(DType::Float64, true).unwrap();
    let ab = g.op(Op::Mul, &[va, vb]).unwrap();
    let cd = g.op(Op::Mul, &[vc, vd]).unwrap();
    let ka = g.op(Op::Mul, &[k, va]).unwrap();
    let s = g.op(Op::Add, &[ab, cd]).unwrap();
    let r = g.op(Op::Sub, &[s, ka]).unwrap();
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    let sh = [n];
    let ins = [f64s(&a), f64s(&b), f64s(&c), f64s(&d)];
    let (p, outs) = run(
        &graph,
        &[
            (&ins[0], &sh),
            (&ins[1], &sh),
            (&ins[2], &sh),
            (&ins[3], &sh),
        ],
        &[ScalarValue::Float(2.5)],
    );
    assert_eq!(p.kernels.len(), 1);
    let want: Vec<f64> = (0..n)
        .map(|i| a[i] * b[i] + c[i] * d[i] - 2.5 * a[i])
        .collect();
    close(&outs[0].f64s(), &want, 0.0, "a*b+c*d-2.5*a");
    // a new scalar value: same plan, new result
    let (_, outs) = run(
        &graph,
        &[
            (&ins[0], &sh),
            (&ins[1], &sh),
            (&ins[2], &sh),
            (&ins[3], &sh),
        ],
        &[ScalarValue::Int(-3)],
    );
    let want: Vec<f64> = (0..n)
        .map(|i| a[i] * b[i] + c[i] * d[i] + 3.0 * a[i])
        .collect();
    close(&outs[0].f64s(), &want, 0.0, "scalar -3");
}

#[test]
fn math_functions_match_std() {
    let n = 3000;
    let a: Vec<f64> = data(n, 5);
    let b: Vec<f64> = data(n, 6);
    let c: Vec<f64> = data(n, 7);
    // exp(-a*a)*sin(b)+c
    let mut g = GraphBuilder::new();
    let va = g.input(DType::Float64, 1).unwrap();
    let vb = g.input(DType::Float64, 1).unwrap();
    let vc = g.input(DType::Float64, 1).unwrap();
    let aa = g.op(Op::Mul, &[va, va]).unwrap();
    let na = g.op(Op::Neg, &[aa]).unwrap();
    let e = g.op(Op::Exp, &[na]).unwrap();
    let s = g.op(Op::Sin, &[vb]).unwrap();
    let es = g.op(Op::Mul, &[e, s]).unwrap();
    let r = g.op(Op::Add, &[es, vc]).unwrap();
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    let sh = [n];
    let ins = [f64s(&a), f64s(&b), f64s(&c)];
    let (_, outs) = run(
        &graph,
        &[(&ins[0], &sh), (&ins[1], &sh), (&ins[2], &sh)],
        &[],
    );
    let want: Vec<f64> = (0..n)
        .map(|i| (-(a[i] * a[i])).exp() * b[i].sin() + c[i])
        .collect();
    // the executor's vectorised exp and sin are within 2 ulp of libm, not bit-identical
    close(&outs[0].f64s(), &want, 1e-15, "exp(-a*a)*sin(b)+c");
}

/// Every unary float op of the table against its `f64` method.
#[test]
fn every_unary_float_op() {
    let n = 257;
    let a: Vec<f64> = data(n, 8).iter().map(|x| x * 0.45).collect();
    let pos: Vec<f64> = a.iter().map(|x| x.abs() + 0.1).collect();
    type F = fn(f64) -> f64;
    let cases: Vec<(Op, F, bool)> = vec![
        (Op::Exp, f64::exp, false),
        (Op::Log, f64::ln, true),
        (Op::Log2, f64::log2, true),
        (Op::Log10, f64::log10, true),
        (Op::Expm1, f64::exp_m1, false),
        (Op::Log1p, f64::ln_1p, true),
        (Op::Sqrt, f64::sqrt, true),
        (Op::Sin, f64::sin, false),
        (Op::Cos, f64::cos, false),
        (Op::Tan, f64::tan, false),
        (Op::Arcsin, f64::asin, false),
        (Op::Arccos, f64::acos, false),
        (Op::Arctan, f64::atan, false),
        (Op::Sinh, f64::sinh, false),
        (Op::Cosh, f64::cosh, false),
        (Op::Tanh, f64::tanh, false),
        (Op::Floor, f64::floor, false),
        (Op::Ceil, f64::ceil, false),
        (Op::Trunc, f64::trunc, false),
        (Op::Rint, f64::round_ties_even, false),
        (Op::Abs, f64::abs, false),
        (Op::Neg, |x| -x, false),
        (Op::Pos, |x| x, false),
        (Op::Square, |x| x * x, false),
        (Op::Reciprocal, |x| 1.0 / x, true),
        (
            Op::Sign,
            |x| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x
                }
            },
            false,
        ),
    ];
    for (op, f, positive) in cases {
        let x = if positive { &pos } else { &a };
        let mut g = GraphBuilder::new();
        let v = g.input(DType::Float64, 1).unwrap();
        let r = g.op(op, &[v]).unwrap();
        g.output(r).unwrap();
        let graph = g.finish().unwrap();
        let inp = f64s(x);
        let (_, outs) = run(&graph, &[(&inp, &[n])], &[]);
        let want: Vec<f64> = x.iter().map(|&v| f(v)).collect();
        // exp, sin and cos are vectorised (within 2 ulp of libm); the rest call libm
        let rtol = if matches!(op, Op::Exp | Op::Sin | Op::Cos) {
            5e-16
        } else {
            0.0
        };
        close(&outs[0].f64s(), &want, rtol, op.name());
    }
}

#[test]
fn binary_ops_and_numpy_division_semantics() {
    let a = vec![7.0, -7.0, 7.0, -7.0, 2.5, 0.0, 1.0];
    let b = vec![2.0, 2.0, -2.0, -2.0, 0.5, 3.0, 0.0];
    let floordiv = [3.0, -4.0, -4.0, 3.0, 5.0, 0.0, f64::INFINITY];
    let modv = [1.0, 1.0, -1.0, -1.0, 0.0, 0.0, f64::NAN];
    for (op, want) in [(Op::FloorDiv, &floordiv[..]), (Op::Mod, &modv[..])] {
        let mut g = GraphBuilder::new();
        let x = g.input(DType::Float64, 1).unwrap();
        let y = g.input(DType::Float64, 1).unwrap();
        let r = g.op(op, &[x, y]).unwrap();
        g.output(r).unwrap();
        let graph = g.finish().unwrap();
        let (ia, ib) = (f64s(&a), f64s(&b));
        let (_, outs) = run(&graph, &[(&ia, &[7]), (&ib, &[7])], &[]);
        close(&outs[0].f64s(), want, 0.0, op.name());
    }
    // integers: Python-style floor division and modulo, 0 for a zero divisor
    let ai = In::I64(vec![7, -7, 7, -7, 5, i64::MIN]);
    let bi = In::I64(vec![2, 2, -2, -2, 0, -1]);
    for (op, want) in [
        (
            Op::FloorDiv,
            vec![3.0, -4.0, -4.0, 3.0, 0.0, i64::MIN as f64],
        ),
        (Op::Mod, vec![1.0, 1.0, -1.0, -1.0, 0.0, 0.0]),
        (
            Op::TrueDiv,
            vec![3.5, -3.5, -3.5, 3.5, f64::INFINITY, i64::MIN as f64 / -1.0],
        ),
    ] {
        let mut g = GraphBuilder::new();
        let x = g.input(DType::Int64, 1).unwrap();
        let y = g.input(DType::Int64, 1).unwrap();
        let r = g.op(op, &[x, y]).unwrap();
        g.output(r).unwrap();
        let graph = g.finish().unwrap();
        let (_, outs) = run(&graph, &[(&ai, &[6]), (&bi, &[6])], &[]);
        close(&outs[0].f64s(), &want, 0.0, op.name());
    }
    // arctan2, power, minimum/maximum with NaN
    let x = vec![1.0, -1.0, f64::NAN, 2.0];
    let y = vec![2.0, 0.5, 1.0, f64::NAN];
    let cases: Vec<(Op, Vec<f64>)> = vec![
        (
            Op::Arctan2,
            x.iter().zip(&y).map(|(a, b)| a.atan2(*b)).collect(),
        ),
        (Op::Pow, x.iter().zip(&y).map(|(a, b)| a.powf(*b)).collect()),
        (Op::Minimum, vec![1.0, -1.0, f64::NAN, f64::NAN]),
        (Op::Maximum, vec![2.0, 0.5, f64::NAN, f64::NAN]),
    ];
    for (op, want) in cases {
        let mut g = GraphBuilder::new();
        let a = g.input(DType::Float64, 1).unwrap();
        let b = g.input(DType::Float64, 1).unwrap();
        let r = g.op(op, &[a, b]).unwrap();
        g.output(r).unwrap();
        let graph = g.finish().unwrap();
        let (ia, ib) = (f64s(&x), f64s(&y));
        let (_, outs) = run(&graph, &[(&ia, &[4]), (&ib, &[4])], &[]);
        close(&outs[0].f64s(), &want, 1e-15, op.name());
    }
}

#[test]
fn integer_bitwise_logical_and_comparisons() {
    let a = In::I32(vec![5, -3, 0, 12, 255, -128]);
    let b = In::I32(vec![3, 1, 0, 2, 40, 3]);
    let av = [5i32, -3, 0, 12, 255, -128];
    let bv = [3i32, 1, 0, 2, 40, 3];
    type F = fn(i32, i32) -> f64;
    let cases: Vec<(Op, F)> = vec![
        (Op::BitAnd, |a, b| (a & b) as f64),
        (Op::BitOr, |a, b| (a | b) as f64),
        (Op::BitXor, |a, b| (a ^ b) as f64),
        (
            Op::LeftShift,
            |a, b| if b < 32 { (a << b) as f64 } else { 0.0 },
        ),
        (Op::RightShift, |a, b| {
            if b < 32 {
                (a >> b) as f64
            } else if a < 0 {
                -1.0
            } else {
                0.0
            }
        }),
        (Op::Add, |a, b| a.wrapping_add(b) as f64),
        (Op::Sub, |a, b| a.wrapping_sub(b) as f64),
        (Op::Mul, |a, b| a.wrapping_mul(b) as f64),
        (Op::Pow, |a, b| a.wrapping_pow(b as u32) as f64),
        (Op::Minimum, |a, b| a.min(b) as f64),
        (Op::Maximum, |a, b| a.max(b) as f64),
        (Op::Eq, |a, b| (a == b) as u8 as f64),
        (Op::Ne, |a, b| (a != b) as u8 as f64),
        (Op::Lt, |a, b| (a < b) as u8 as f64),
        (Op::Le, |a, b| (a <= b) as u8 as f64),
        (Op::Gt, |a, b| (a > b) as u8 as f64),
        (Op::Ge, |a, b| (a >= b) as u8 as f64),
        (Op::LogicalAnd, |a, b| (a != 0 && b != 0) as u8 as f64),
        (Op::LogicalOr, |a, b| (a != 0 || b != 0) as u8 as f64),
        (Op::LogicalXor, |a, b| ((a != 0) != (b != 0)) as u8 as f64),
    ];
    for (op, f) in cases {
        let mut g = GraphBuilder::new();
        let x = g.input(DType::Int32, 1).unwrap();
        let y = g.input(DType::Int32, 1).unwrap();
        let r = g.op(op, &[x, y]).unwrap();
        g.output(r).unwrap();
        let graph = g.finish().unwrap();
        let (_, outs) = run(&graph, &[(&a, &[6]), (&b, &[6])], &[]);
        let want: Vec<f64> = av.iter().zip(&bv).map(|(&a, &b)| f(a, b)).collect();
        close(&outs[0].f64s(), &want, 0.0, op.name());
    }
    // unary integer ops
    type U = fn(i32) -> f64;
    let unary: Vec<(Op, U)> = vec![
        (Op::Invert, |a| (!a) as f64),
        (Op::Neg, |a| (-a) as f64),
        (Op::Abs, |a| a.abs() as f64),
        (Op::Sign, |a| a.signum() as f64),
        (Op::Square, |a| (a * a) as f64),
        (Op::LogicalNot, |a| (a == 0) as u8 as f64),
        (Op::IsNan, |_| 0.0),
        (Op::IsFinite, |_| 1.0),
        (Op::Floor, |a| a as f64),
    ];
    for (op, f) in unary {
        let mut g = GraphBuilder::new();
        let x = g.input(DType::Int32, 1).unwrap();
        let r = g.op(op, &[x]).unwrap();
        g.output(r).unwrap();
        let graph = g.finish().unwrap();
        let (_, outs) = run(&graph, &[(&a, &[6])], &[]);
        let want: Vec<f64> = av.iter().map(|&a| f(a)).collect();
        close(&outs[0].f64s(), &want, 0.0, op.name());
    }
}

#[test]
fn where_clip_isnan_astype_and_weak_scalars() {
    let x = vec![-1.5, 0.25, f64::NAN, 3.0, f64::INFINITY, -0.0];
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let lo = g.scalar(DType::Float64, true).unwrap();
    let hi = g.scalar(DType::Float64, true).unwrap();
    let zero = g.scalar(DType::Int64, true).unwrap();
    let c = g.op(Op::Clip, &[a, lo, hi]).unwrap();
    let pos = g.op(Op::Gt, &[a, zero]).unwrap();
    let w = g.op(Op::Where, &[pos, a, zero]).unwrap();
    let nan = g.op(Op::IsNan, &[a]).unwrap();
    let inf = g.op(Op::IsInf, &[a]).unwrap();
    let fin = g.op(Op::IsFinite, &[a]).unwrap();
    let i = g.astype(c, DType::Int16).unwrap();
    for v in [c, w, nan, inf, fin, i] {
        g.output(v).unwrap();
    }
    let graph = g.finish().unwrap();
    let ia = f64s(&x);
    let (p, outs) = run(
        &graph,
        &[(&ia, &[6])],
        &[
            ScalarValue::Float(-1.0),
            ScalarValue::Float(1.0),
            ScalarValue::Int(0),
        ],
    );
    assert_eq!(p.kernels.len(), 1, "{}", p.explain());
    close(
        &outs[0].f64s(),
        &[-1.0, 0.25, f64::NAN, 1.0, 1.0, -0.0],
        0.0,
        "clip",
    );
    close(
        &outs[1].f64s(),
        &[0.0, 0.25, 0.0, 3.0, f64::INFINITY, 0.0],
        0.0,
        "where",
    );
    close(&outs[2].f64s(), &[0., 0., 1., 0., 0., 0.], 0.0, "isnan");
    close(&outs[3].f64s(), &[0., 0., 0., 0., 1., 0.], 0.0, "isinf");
    close(&outs[4].f64s(), &[1., 1., 0., 1., 0., 1.], 0.0, "isfinite");
    assert_eq!(p.outputs[5].dtype, DType::Int16);
    let o5 = outs[5].f64s();
    assert_eq!((o5[0], o5[1], o5[3]), (-1.0, 0.0, 1.0));

    // float32 * python float stays float32 and rounds like float32
    let x32: Vec<f32> = data(100, 9).iter().map(|&v| v as f32).collect();
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float32, 1).unwrap();
    let k = g.scalar(DType::Float64, true).unwrap();
    let r = g.op(Op::Mul, &[a, k]).unwrap();
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    let ia = In::F32(x32.clone());
    let (p, outs) = run(&graph, &[(&ia, &[100])], &[ScalarValue::Float(0.1)]);
    assert_eq!(p.outputs[0].dtype, DType::Float32);
    match &outs[0] {
        Out::F32(v) => {
            for (g, x) in v.iter().zip(&x32) {
                assert_eq!(*g, x * 0.1f32);
            }
        }
        o => panic!("{o:?}"),
    }
    // int8 array + python int stays int8 (wrapping)
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Int8, 1).unwrap();
    let k = g.scalar(DType::Int64, true).unwrap();
    let r = g.op(Op::Add, &[a, k]).unwrap();
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    let ia = In::I8(vec![1, 100, -128]);
    let (p, outs) = run(&graph, &[(&ia, &[3])], &[ScalarValue::Int(100)]);
    assert_eq!(p.outputs[0].dtype, DType::Int8);
    assert_eq!(outs[0], Out::I8(vec![101, -56, -28]));
}

#[test]
fn broadcasting_shapes() {
    // (4, 1, 5) * (3, 1) + (5,) -> (4, 3, 5)
    let (sa, sb, sc) = ([4usize, 1, 5], [3usize, 1], [5usize]);
    let a = data(20, 10);
    let b = data(3, 11);
    let c = data(5, 12);
    let mut g = GraphBuilder::new();
    let va = g.input(DType::Float64, 3).unwrap();
    let vb = g.input(DType::Float64, 2).unwrap();
    let vc = g.input(DType::Float64, 1).unwrap();
    let m = g.op(Op::Mul, &[va, vb]).unwrap();
    let r = g.op(Op::Add, &[m, vc]).unwrap();
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    let ins = [f64s(&a), f64s(&b), f64s(&c)];
    let (p, outs) = run(
        &graph,
        &[(&ins[0], &sa), (&ins[1], &sb), (&ins[2], &sc)],
        &[],
    );
    assert_eq!(p.outputs[0].shape, vec![4, 3, 5]);
    let mut want = Vec::new();
    for i in 0..4 {
        for j in 0..3 {
            for k in 0..5 {
                want.push(a[i * 5 + k] * b[j] + c[k]);
            }
        }
    }
    close(&outs[0].f64s(), &want, 0.0, "broadcast");

    // a large row-broadcast crossing block boundaries: (300, 70) - (70,) and (300, 1)
    let (r_, c_) = (300usize, 70usize);
    let x = data(r_ * c_, 13);
    let row = data(c_, 14);
    let col = data(r_, 15);
    let mut g = GraphBuilder::new();
    let vx = g.input(DType::Float64, 2).unwrap();
    let vr = g.input(DType::Float64, 1).unwrap();
    let vcol = g.input(DType::Float64, 2).unwrap();
    let d = g.op(Op::Sub, &[vx, vr]).unwrap();
    let e = g.op(Op::Mul, &[d, vcol]).unwrap();
    g.output(e).unwrap();
    let graph = g.finish().unwrap();
    let ins = [f64s(&x), f64s(&row), f64s(&col)];
    let (_, outs) = run(
        &graph,
        &[(&ins[0], &[r_, c_]), (&ins[1], &[c_]), (&ins[2], &[r_, 1])],
        &[],
    );
    let want: Vec<f64> = (0..r_ * c_)
        .map(|f| (x[f] - row[f % c_]) * col[f / c_])
        .collect();
    close(&outs[0].f64s(), &want, 0.0, "row/col broadcast");
}

fn red_ref(kind: ReduceKind, x: &[f64], shape: &[usize], axes: &[usize]) -> Vec<f64> {
    let (init, f): (f64, fn(f64, f64) -> f64) = match kind {
        ReduceKind::Sum | ReduceKind::Mean { .. } => (0.0, |a, b| a + b),
        ReduceKind::Prod => (1.0, |a, b| a * b),
        ReduceKind::Min => (f64::INFINITY, f64::min),
        ReduceKind::Max => (f64::NEG_INFINITY, f64::max),
        ReduceKind::Any => (0.0, |a, b| ((a != 0.0) || (b != 0.0)) as u8 as f64),
        ReduceKind::All => (1.0, |a, b| ((a != 0.0) && (b != 0.0)) as u8 as f64),
    };
    let (v, k) = reduce_ref(x, shape, axes, init, f);
    match kind {
        ReduceKind::Mean { ddof } => v.iter().map(|s| s / (k as f64 - ddof as f64)).collect(),
        _ => v,
    }
}

/// Every reduction, over every axis choice of a 3-d array, with and without keepdims.
#[test]
fn every_reduction_every_axis() {
    let shape = [6usize, 5, 70];
    let n: usize = shape.iter().product();
    let x: Vec<f64> = data(n, 20).iter().map(|v| v * 0.6).collect();
    // some exact zeros so any/all differ
    let x: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| if i % 7 == 0 { 0.0 } else { v })
        .collect();
    let axis_cases: Vec<(Axis, Vec<usize>)> = vec![
        (Axis::All, vec![0, 1, 2]),
        (Axis::One(0), vec![0]),
        (Axis::One(1), vec![1]),
        (Axis::One(-1), vec![2]),
        (Axis::Many(vec![0, 2]), vec![0, 2]),
        (Axis::Many(vec![-2, 0]), vec![0, 1]),
        (Axis::Many(vec![1, 2]), vec![1, 2]),
    ];
    let kinds = [
        ReduceKind::Sum,
        ReduceKind::Prod,
        ReduceKind::Min,
        ReduceKind::Max,
        ReduceKind::Any,
        ReduceKind::All,
        ReduceKind::Mean { ddof: 0 },
    ];
    let inp = f64s(&x);
    for kind in kinds {
        for (axis, axes) in &axis_cases {
            for keepdims in [false, true] {
                let mut g = GraphBuilder::new();
                let a = g.input(DType::Float64, 3).unwrap();
                let r = g.reduce(kind, a, axis, keepdims).unwrap();
                g.output(r).unwrap();
                let graph = g.finish().unwrap();
                let (p, outs) = run(&graph, &[(&inp, &shape)], &[]);
                let want_shape: Vec<usize> = (0..3)
                    .filter_map(|d| {
                        if axes.contains(&d) {
                            keepdims.then_some(1)
                        } else {
                            Some(shape[d])
                        }
                    })
                    .collect();
                assert_eq!(p.outputs[0].shape, want_shape, "{kind:?} {axis:?}");
                assert_eq!(p.kernels.len(), 1);
                let want = red_ref(kind, &x, &shape, axes);
                let rtol = if kind == ReduceKind::Prod {
                    1e-12
                } else {
                    1e-13
                };
                close(
                    &outs[0].f64s(),
                    &want,
                    rtol,
                    &format!("{kind:?} axis={axis:?} keepdims={keepdims}"),
                );
            }
        }
    }
}

#[test]
fn reductions_of_integers_and_bools_use_numpy_dtypes() {
    let x = In::I8(vec![100, 100, 100, -5, 7, 1]);
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Int8, 2).unwrap();
    let s = g.reduce(ReduceKind::Sum, a, &Axis::One(1), false).unwrap();
    let m = g
        .reduce(ReduceKind::Mean { ddof: 0 }, a, &Axis::All, false)
        .unwrap();
    let mx = g.reduce(ReduceKind::Max, a, &Axis::One(0), false).unwrap();
    let pr = g.reduce(ReduceKind::Prod, a, &Axis::All, false).unwrap();
    for v in [s, m, mx, pr] {
        g.output(v).unwrap();
    }
    let graph = g.finish().unwrap();
    let (p, outs) = run(&graph, &[(&x, &[2, 3])], &[]);
    assert_eq!(p.outputs[0].dtype, DType::Int64);
    assert_eq!(p.outputs[1].dtype, DType::Float64);
    assert_eq!(p.outputs[2].dtype, DType::Int8);
    assert_eq!(p.outputs[3].dtype, DType::Int64);
    assert_eq!(outs[0], Out::I64(vec![300, 3]));
    close(&outs[1].f64s(), &[303.0 / 6.0], 1e-15, "mean");
    assert_eq!(outs[2], Out::I8(vec![100, 100, 100]));
    assert_eq!(outs[3], Out::I64(vec![100 * 100 * 100 * -5 * 7]));

    let b = In::B(vec![true, false, true, true, true, true]);
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Bool, 2).unwrap();
    let s = g.reduce(ReduceKind::Sum, a, &Axis::All, false).unwrap();
    let an = g.reduce(ReduceKind::Any, a, &Axis::One(0), false).unwrap();
    let al = g.reduce(ReduceKind::All, a, &Axis::One(1), true).unwrap();
    for v in [s, an, al] {
        g.output(v).unwrap();
    }
    let graph = g.finish().unwrap();
    let (_, outs) = run(&graph, &[(&b, &[2, 3])], &[]);
    assert_eq!(outs[0], Out::I64(vec![5]));
    assert_eq!(outs[1], Out::B(vec![true, true, true]));
    assert_eq!(outs[2], Out::B(vec![false, true]));
}

#[test]
fn large_reductions_are_parallel_deterministic_and_accurate() {
    // long enough to use several chunks per output
    let n = 200_003;
    let x = data(n, 30);
    let y = data(n, 31);
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let b = g.input(DType::Float64, 1).unwrap();
    let two = g.scalar(DType::Int64, true).unwrap();
    let d = g.op(Op::Sub, &[a, b]).unwrap();
    let sq = g.op(Op::Pow, &[d, two]).unwrap();
    let s = g.reduce(ReduceKind::Sum, sq, &Axis::All, false).unwrap();
    g.output(s).unwrap();
    let graph = g.finish().unwrap();
    let (ix, iy) = (f64s(&x), f64s(&y));
    let args: [(&In, &[usize]); 2] = [(&ix, &[n]), (&iy, &[n])];
    let (p, outs) = run(&graph, &args, &[ScalarValue::Int(2)]);
    assert_eq!(p.kernels.len(), 1);
    // compensated reference
    let mut sum = 0.0f64;
    let mut comp = 0.0f64;
    for i in 0..n {
        let v = (x[i] - y[i]).powi(2) - comp;
        let t = sum + v;
        comp = (t - sum) - v;
        sum = t;
    }
    close(&outs[0].f64s(), &[sum], 1e-13, "sum((a-b)**2)");
    // bit-identical on every run and on every thread count
    let first = outs[0].f64s()[0];
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let again = pool.install(|| run(&graph, &args, &[ScalarValue::Int(2)]).1);
        assert_eq!(
            again[0].f64s()[0].to_bits(),
            first.to_bits(),
            "{threads} threads"
        );
    }
    // 2-d: long rows, several outputs, columns
    let (r, c) = (3usize, 70_001usize);
    let z = data(r * c, 32);
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 2).unwrap();
    let rows = g.reduce(ReduceKind::Sum, a, &Axis::One(1), false).unwrap();
    let cols = g.reduce(ReduceKind::Max, a, &Axis::One(0), false).unwrap();
    g.output(rows).unwrap();
    g.output(cols).unwrap();
    let graph = g.finish().unwrap();
    let iz = f64s(&z);
    let (_, outs) = run(&graph, &[(&iz, &[r, c])], &[]);
    close(
        &outs[0].f64s(),
        &red_ref(ReduceKind::Sum, &z, &[r, c], &[1]),
        1e-12,
        "rows",
    );
    close(
        &outs[1].f64s(),
        &red_ref(ReduceKind::Max, &z, &[r, c], &[0]),
        0.0,
        "cols",
    );
}

#[test]
fn a_minus_mean_var_std_softmax() {
    let (r, c) = (37usize, 129usize);
    let x = data(r * c, 40);
    let ix = f64s(&x);
    // a - mean(a)
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 2).unwrap();
    let m = g
        .reduce(ReduceKind::Mean { ddof: 0 }, a, &Axis::All, false)
        .unwrap();
    let d = g.op(Op::Sub, &[a, m]).unwrap();
    g.output(d).unwrap();
    let graph = g.finish().unwrap();
    let (p, outs) = run(&graph, &[(&ix, &[r, c])], &[]);
    assert_eq!(p.kernels.len(), 2, "{}", p.explain());
    let mean: f64 = x.iter().sum::<f64>() / x.len() as f64;
    let want: Vec<f64> = x.iter().map(|v| v - mean).collect();
    close(&outs[0].f64s(), &want, 1e-14, "a - mean(a)");

    // var and std with ddof, per row, keepdims
    for ddof in [0u32, 1] {
        let mut g = GraphBuilder::new();
        let a = g.input(DType::Float64, 2).unwrap();
        let v = g.var(a, &Axis::One(1), ddof, true).unwrap();
        let s = g.std(a, &Axis::One(-1), ddof, false).unwrap();
        g.output(v).unwrap();
        g.output(s).unwrap();
        let graph = g.finish().unwrap();
        let (p, outs) = run(&graph, &[(&ix, &[r, c])], &[]);
        assert_eq!(p.outputs[0].shape, vec![r, 1]);
        assert_eq!(p.outputs[1].shape, vec![r]);
        let mut want_v = Vec::new();
        for i in 0..r {
            let row = &x[i * c..(i + 1) * c];
            let mu = row.iter().sum::<f64>() / c as f64;
            let ss: f64 = row.iter().map(|v| (v - mu) * (v - mu)).sum();
            want_v.push(ss / (c as f64 - ddof as f64));
        }
        let want_s: Vec<f64> = want_v.iter().map(|v| v.sqrt()).collect();
        close(&outs[0].f64s(), &want_v, 1e-13, "var");
        close(&outs[1].f64s(), &want_s, 1e-13, "std");
        // mean kernel, then var kernel with sqrt fused in its epilogue
        assert_eq!(p.kernels.len(), 2, "{}", p.explain());
    }

    // softmax over rows
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 2).unwrap();
    let mx = g.reduce(ReduceKind::Max, a, &Axis::One(1), true).unwrap();
    let d = g.op(Op::Sub, &[a, mx]).unwrap();
    let e = g.op(Op::Exp, &[d]).unwrap();
    let s = g.reduce(ReduceKind::Sum, e, &Axis::One(1), true).unwrap();
    let y = g.op(Op::TrueDiv, &[e, s]).unwrap();
    g.output(y).unwrap();
    let graph = g.finish().unwrap();
    let (p, outs) = run(&graph, &[(&ix, &[r, c])], &[]);
    assert_eq!(p.kernels.len(), 3, "{}", p.explain());
    let mut want = Vec::new();
    for i in 0..r {
        let row = &x[i * c..(i + 1) * c];
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        want.extend(row.iter().map(|v| (v - m).exp() / s));
    }
    close(&outs[0].f64s(), &want, 1e-14, "softmax");
}

#[test]
fn several_outputs_epilogues_and_reused_outputs() {
    let n = 5000;
    let x = data(n, 50);
    let ix = f64s(&x);
    // returns (a*2, sum(a), sqrt(sum(a*a)), max(a) - min(a), a / max(a))
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let two = g.scalar(DType::Float64, true).unwrap();
    let a2 = g.op(Op::Mul, &[a, two]).unwrap();
    let s = g.reduce(ReduceKind::Sum, a, &Axis::All, false).unwrap();
    let aa = g.op(Op::Mul, &[a, a]).unwrap();
    let ss = g.reduce(ReduceKind::Sum, aa, &Axis::All, false).unwrap();
    let norm = g.op(Op::Sqrt, &[ss]).unwrap();
    let mx = g.reduce(ReduceKind::Max, a, &Axis::All, false).unwrap();
    let mn = g.reduce(ReduceKind::Min, a, &Axis::All, false).unwrap();
    let range = g.op(Op::Sub, &[mx, mn]).unwrap();
    let scaled = g.op(Op::TrueDiv, &[a, mx]).unwrap();
    for v in [a2, s, norm, range, scaled] {
        g.output(v).unwrap();
    }
    let graph = g.finish().unwrap();
    let (p, outs) = run(&graph, &[(&ix, &[n])], &[ScalarValue::Float(2.0)]);
    // one reduction kernel (4 sibling reductions + 2 epilogues), one elementwise kernel
    assert_eq!(p.kernels.len(), 2, "{}", p.explain());
    let sum: f64 = x.iter().sum();
    let norm_w = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    let mxw = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mnw = x.iter().cloned().fold(f64::INFINITY, f64::min);
    close(
        &outs[0].f64s(),
        &x.iter().map(|v| v * 2.0).collect::<Vec<_>>(),
        0.0,
        "a*2",
    );
    close(&outs[1].f64s(), &[sum], 1e-12, "sum");
    close(&outs[2].f64s(), &[norm_w], 1e-13, "norm");
    close(&outs[3].f64s(), &[mxw - mnw], 0.0, "range");
    close(
        &outs[4].f64s(),
        &x.iter().map(|v| v / mxw).collect::<Vec<_>>(),
        0.0,
        "scaled",
    );
}

#[test]
fn reduction_of_broadcast_expression_and_epilogue_with_input() {
    // sum(a[:, None] * b[None, :], axis=0) + bias  -> epilogue reads bias
    let (r, c) = (40usize, 90usize);
    let a = data(r, 60);
    let b = data(c, 61);
    let bias = data(c, 62);
    let mut g = GraphBuilder::new();
    let va = g.input(DType::Float64, 2).unwrap(); // (r, 1)
    let vb = g.input(DType::Float64, 1).unwrap(); // (c,)
    let vbias = g.input(DType::Float64, 1).unwrap();
    let prod = g.op(Op::Mul, &[va, vb]).unwrap();
    let s = g
        .reduce(ReduceKind::Sum, prod, &Axis::One(0), false)
        .unwrap();
    let o = g.op(Op::Add, &[s, vbias]).unwrap();
    g.output(o).unwrap();
    let graph = g.finish().unwrap();
    let ins = [f64s(&a), f64s(&b), f64s(&bias)];
    let (p, outs) = run(
        &graph,
        &[(&ins[0], &[r, 1]), (&ins[1], &[c]), (&ins[2], &[c])],
        &[],
    );
    assert_eq!(p.kernels.len(), 1, "{}", p.explain());
    let sa: f64 = a.iter().sum();
    let want: Vec<f64> = (0..c).map(|j| sa * b[j] + bias[j]).collect();
    close(
        &outs[0].f64s(),
        &want,
        1e-13,
        "outer-product column sum + bias",
    );
}

#[test]
fn empty_and_zero_d_arrays() {
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let s = g.reduce(ReduceKind::Sum, a, &Axis::All, false).unwrap();
    let m = g
        .reduce(ReduceKind::Mean { ddof: 0 }, a, &Axis::All, false)
        .unwrap();
    let e = g.op(Op::Exp, &[a]).unwrap();
    for v in [s, m, e] {
        g.output(v).unwrap();
    }
    let graph = g.finish().unwrap();
    let ia = In::F64(vec![]);
    let (_, outs) = run(&graph, &[(&ia, &[0])], &[]);
    assert_eq!(outs[0], Out::F64(vec![0.0]));
    assert!(outs[1].f64s()[0].is_nan());
    assert_eq!(outs[2], Out::F64(vec![]));
    // max of an empty array has no identity
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let s = g.reduce(ReduceKind::Max, a, &Axis::All, false).unwrap();
    g.output(s).unwrap();
    let graph = g.finish().unwrap();
    let err = plan(&graph, &[vec![0]]).unwrap_err();
    assert!(err.to_string().contains("`max`"), "{err}");
    // 0-d input and a scalar output
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 0).unwrap();
    let k = g.scalar(DType::Float64, true).unwrap();
    let r = g.op(Op::Add, &[a, k]).unwrap();
    g.output(r).unwrap();
    g.output(k).unwrap();
    let graph = g.finish().unwrap();
    let ia = In::F64(vec![1.5]);
    let (p, outs) = run(&graph, &[(&ia, &[])], &[ScalarValue::Float(2.0)]);
    assert_eq!(p.outputs[0].shape, Vec::<usize>::new());
    assert_eq!(outs[0], Out::F64(vec![3.5]));
    assert_eq!(outs[1], Out::F64(vec![2.0]));
}

#[test]
fn argument_errors_name_the_problem() {
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let b = g.input(DType::Float64, 1).unwrap();
    let r = g.op(Op::Add, &[a, b]).unwrap();
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    let err = plan(&graph, &[vec![3], vec![4]]).unwrap_err();
    assert!(err.to_string().contains("`add`"), "{err}");
    let p = plan(&graph, &[vec![3], vec![3]]).unwrap();
    let x = vec![1.0f64; 3];
    let y = vec![1.0f32; 3];
    let mut o = vec![0.0f64; 3];
    let err = execute_cpu(
        &p,
        &[ArrayRef::new(&x, &[3]), ArrayRef::new(&y, &[3])],
        &[],
        &mut [ArrayMut::new(&mut o, &[3])],
    )
    .unwrap_err();
    assert!(err.to_string().contains("input 1"), "{err}");
}

#[test]
fn serial_and_parallel_sizes_and_outputs_of_one_value() {
    // sizes below, at and above the single-thread threshold; the last op is written straight
    // into its output unless the value is stored twice (then both outputs get a copy)
    for n in [1, 1023, 32_768, 32_769, 200_003] {
        let (x, y) = (data(n, 60), data(n, 61));
        let (ix, iy) = (f64s(&x), f64s(&y));
        let mut g = GraphBuilder::new();
        let a = g.input(DType::Float64, 1).unwrap();
        let b = g.input(DType::Float64, 1).unwrap();
        let k = g.scalar(DType::Float64, true).unwrap();
        let ab = g.op(Op::Mul, &[a, b]).unwrap();
        let r = g.op(Op::Sub, &[ab, k]).unwrap();
        let lt = g.op(Op::Lt, &[a, b]).unwrap();
        let s = g.reduce(ReduceKind::Sum, r, &Axis::All, false).unwrap();
        for v in [r, r, lt, s] {
            g.output(v).unwrap();
        }
        let graph = g.finish().unwrap();
        let (_, outs) = run(
            &graph,
            &[(&ix, &[n]), (&iy, &[n])],
            &[ScalarValue::Float(0.5)],
        );
        let want: Vec<f64> = (0..n).map(|i| x[i] * y[i] - 0.5).collect();
        close(&outs[0].f64s(), &want, 0.0, "r");
        close(&outs[1].f64s(), &want, 0.0, "r again");
        let sum: f64 = want.iter().sum();
        close(&outs[3].f64s(), &[sum], 1e-10, "sum");
        let (_, again) = run(
            &graph,
            &[(&ix, &[n]), (&iy, &[n])],
            &[ScalarValue::Float(0.5)],
        );
        assert_eq!(again[3].f64s(), outs[3].f64s(), "deterministic at {n}");
        let Out::B(lt_got) = &outs[2] else {
            panic!("a bool output")
        };
        assert!((0..n).all(|i| lt_got[i] == (x[i] < y[i])), "a < b at {n}");
    }
    // one output, computed in place: a single op chain into a fresh output
    let n = 70_001;
    let x = data(n, 62);
    let ix = f64s(&x);
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let e = g.op(Op::Exp, &[a]).unwrap();
    let r = g.op(Op::Mul, &[e, a]).unwrap();
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    let (_, outs) = run(&graph, &[(&ix, &[n])], &[]);
    let want: Vec<f64> = x.iter().map(|v| v.exp() * v).collect();
    close(&outs[0].f64s(), &want, 1e-15, "exp(a)*a");
}
