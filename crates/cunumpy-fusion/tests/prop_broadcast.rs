//! Property test: random shapes with broadcasting, an elementwise expression reduced over a
//! random axis set with and without keepdims, against naive reference loops.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::needless_range_loop)] // tests may panic

mod common;
use common::*;
use cunumpy_fusion::{Axis, DType, GraphBuilder, Op, ReduceKind};
use proptest::prelude::*;

fn shapes(
) -> impl proptest::strategy::Strategy<Value = (Vec<usize>, Vec<bool>, Vec<bool>, Vec<bool>)> {
    // full shape, which dims `b` broadcasts (size 1), which axes are reduced, keepdims
    (1usize..=3)
        .prop_flat_map(|nd| {
            (
                prop::collection::vec(1usize..=40, nd),
                prop::collection::vec(any::<bool>(), nd),
                prop::collection::vec(any::<bool>(), nd),
                prop::collection::vec(any::<bool>(), 1),
            )
        })
        .prop_map(|(s, b, r, k)| (s, b, r, k))
}

fn coords(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for j in (0..shape.len()).rev() {
        c[j] = flat % shape[j];
        flat /= shape[j];
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn broadcast_then_reduce((shape, bcast, red, keep) in shapes(), seed in 0u64..1000) {
        let nd = shape.len();
        let bshape: Vec<usize> = shape.iter().zip(&bcast).map(|(&d, &b)| if b { 1 } else { d }).collect();
        let n: usize = shape.iter().product();
        let nb: usize = bshape.iter().product();
        let a = data(n, seed);
        let b = data(nb, seed + 1);
        let axes: Vec<isize> = (0..nd).filter(|&j| red[j]).map(|j| j as isize - nd as isize).collect();
        let keepdims = keep[0];
        let mut g = GraphBuilder::new();
        let va = g.input(DType::Float64, nd).unwrap();
        let vb = g.input(DType::Float64, nd).unwrap();
        let prod = g.op(Op::Mul, &[va, vb]).unwrap();
        let e = g.op(Op::Sub, &[prod, va]).unwrap();
        let axis = if axes.is_empty() { Axis::All } else { Axis::Many(axes.clone()) };
        let s = g.reduce(ReduceKind::Sum, e, &axis, keepdims).unwrap();
        g.output(e).unwrap();
        g.output(s).unwrap();
        let graph = g.finish().unwrap();
        let (ia, ib) = (In::F64(a.clone()), In::F64(b.clone()));
        let (_, outs) = run(&graph, &[(&ia, &shape), (&ib, &bshape)], &[]);
        // reference: elementwise with broadcasting, then the reduction
        let mut ew = vec![0.0; n];
        for f in 0..n {
            let c = coords(f, &shape);
            let mut fb = 0;
            for j in 0..nd {
                fb = fb * bshape[j] + if bcast[j] { 0 } else { c[j] };
            }
            ew[f] = a[f] * b[fb] - a[f];
        }
        close(&outs[0].f64s(), &ew, 0.0, "elementwise");
        let raxes: Vec<usize> = if axes.is_empty() { (0..nd).collect() } else { (0..nd).filter(|&j| red[j]).collect() };
        let (want, _) = reduce_ref(&ew, &shape, &raxes, 0.0, |x, y| x + y);
        close(&outs[1].f64s(), &want, 1e-12, "sum");
    }
}
