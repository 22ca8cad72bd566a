//! Golden files of generated CUDA C (reviewed as diffs). `UPDATE_GOLDEN=1 cargo test -p
//! cunumpy-fusion --test golden` rewrites them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod common;
use common::{centering_graph, chain_graph};
use cunumpy_fusion::*;
use std::path::PathBuf;

fn check(name: &str, graph: &Graph, shapes: &[Vec<usize>]) {
    let opts = PlanOptions {
        name: name.to_string(),
        ..PlanOptions::default()
    };
    let planned = plan_with_options(graph, shapes, &opts).unwrap();
    // the golden files show the plan loaded on an H200 (132 SMs)
    let p = planned.for_device(DeviceTarget::H200);
    let mut text = String::new();
    text.push_str("/* plan:\n");
    text.push_str(&p.explain(&planned));
    text.push_str("*/\n");
    // the preamble (the helpers the kernels call) is not shown; keep only the kernels
    text.push_str(&p.source[p.preamble_len..]);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.cu"));
    if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with UPDATE_GOLDEN=1", path.display()));
    if text != want {
        let line = text
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| text.lines().count().min(want.lines().count()));
        panic!(
            "generated CUDA for {name} changed at line {}:\n  now:    {}\n  golden: {}\n\
             (review the diff, then UPDATE_GOLDEN=1 to accept)",
            line + 1,
            text.lines().nth(line).unwrap_or("<end>"),
            want.lines().nth(line).unwrap_or("<end>")
        );
    }
}

#[test]
fn golden_preamble() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/preamble.cuh");
    if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::write(&path, PREAMBLE).unwrap();
        return;
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), PREAMBLE);
}

/// The names `cn_*(` called in `text`.
fn helpers_called(text: &str) -> std::collections::BTreeSet<String> {
    text.split("cn_")
        .skip(1)
        .filter_map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest[name.len()..]
                .starts_with('(')
                .then(|| format!("cn_{name}"))
        })
        .collect()
}

#[test]
fn source_keeps_only_the_helpers_its_kernels_call() {
    // a plain elementwise plan (a * b + s) calls no helper: its source has none
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let b = g.input(DType::Float64, 1).unwrap();
    let one = g.scalar(DType::Float64, true).unwrap();
    let ab = g.op(Op::Mul, &[a, b]).unwrap();
    let r = g.op(Op::Add, &[ab, one]).unwrap();
    g.output(r).unwrap();
    let p = plan(&g.finish().unwrap(), &[vec![1000], vec![1000]])
        .unwrap()
        .for_device(DeviceTarget::H200);
    let preamble = &p.source[..p.preamble_len];
    assert!(helpers_called(&p.source[p.preamble_len..]).is_empty());
    assert!(helpers_called(preamble).is_empty(), "{preamble}");
    assert!(!preamble.contains("CN_INT_HELPERS") && !preamble.contains("CN_FLOAT_HELPERS"));
    assert!(p.source.len() < PREAMBLE.len(), "{} bytes", p.source.len());
    // floor division calls cn_floordiv: defined (for every C type of its family), and no
    // other helper of the table is
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Int64, 1).unwrap();
    let b = g.input(DType::Int64, 1).unwrap();
    let q = g.op(Op::FloorDiv, &[a, b]).unwrap();
    g.output(q).unwrap();
    let p = plan(&g.finish().unwrap(), &[vec![1000], vec![1000]])
        .unwrap()
        .for_device(DeviceTarget::H200);
    let preamble = &p.source[..p.preamble_len];
    let defined = helpers_called(preamble);
    assert_eq!(
        defined.into_iter().collect::<Vec<_>>(),
        ["cn_floordiv"],
        "{preamble}"
    );
    assert!(preamble.contains("CN_INT_HELPERS(long long)"));
}

#[test]
fn golden_elementwise_chain() {
    // a*b + c*d - k*a
    check("axpy_chain", &chain_graph(), &vec![vec![1 << 26]; 4]);
}

#[test]
fn golden_broadcast_float32_where() {
    // where(x > 0, x * w[None, :], 0.5) on float32 (2-d) with a row vector
    let mut g = GraphBuilder::new();
    let x = g.input(DType::Float32, 2).unwrap();
    let w = g.input(DType::Float32, 1).unwrap();
    let zero = g.scalar(DType::Int64, true).unwrap();
    let half = g.scalar(DType::Float64, true).unwrap();
    let pos = g.op(Op::Gt, &[x, zero]).unwrap();
    let xw = g.op(Op::Mul, &[x, w]).unwrap();
    let r = g.op(Op::Where, &[pos, xw, half]).unwrap();
    g.output(r).unwrap();
    check(
        "broadcast_where_f32",
        &g.finish().unwrap(),
        &[vec![1000, 300], vec![300]],
    );
}

#[test]
fn golden_sum_of_squares() {
    // sum((a - b) ** 2): one fused split reduction
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let b = g.input(DType::Float64, 1).unwrap();
    let two = g.scalar(DType::Int64, true).unwrap();
    let d = g.op(Op::Sub, &[a, b]).unwrap();
    let sq = g.op(Op::Pow, &[d, two]).unwrap();
    let s = g.reduce(ReduceKind::Sum, sq, &Axis::All, false).unwrap();
    g.output(s).unwrap();
    check(
        "sum_sq_diff",
        &g.finish().unwrap(),
        &[vec![1 << 26], vec![1 << 26]],
    );
}

#[test]
fn golden_a_minus_mean() {
    check("a_minus_mean", &centering_graph(), &[vec![1 << 26]]);
}

#[test]
fn golden_row_and_column_reductions() {
    // softmax over rows (warp per row) and a column max with keepdims (thread per column)
    let mut g = GraphBuilder::new();
    let x = g.input(DType::Float32, 2).unwrap();
    let mx = g.reduce(ReduceKind::Max, x, &Axis::One(1), true).unwrap();
    let d = g.op(Op::Sub, &[x, mx]).unwrap();
    let e = g.op(Op::Exp, &[d]).unwrap();
    let s = g.reduce(ReduceKind::Sum, e, &Axis::One(1), true).unwrap();
    let y = g.op(Op::TrueDiv, &[e, s]).unwrap();
    g.output(y).unwrap();
    check(
        "softmax_rows_f32",
        &g.finish().unwrap(),
        &[vec![100_000, 512]],
    );

    let mut g = GraphBuilder::new();
    let x = g.input(DType::Int32, 3).unwrap();
    let c = g
        .reduce(ReduceKind::Sum, x, &Axis::Many(vec![0, 2]), false)
        .unwrap();
    let m = g
        .reduce(ReduceKind::Max, x, &Axis::Many(vec![0, 2]), false)
        .unwrap();
    let r = g.op(Op::Sub, &[m, c]).unwrap();
    g.output(r).unwrap();
    check(
        "middle_axis_int32",
        &g.finish().unwrap(),
        &[vec![64, 100_000, 3]],
    );

    // the range of each row of 16 (benches/fusion.py's `max(axis=1) - min(axis=1)`): both
    // reductions and the subtraction in one kernel, 4 lanes per row, 8 rows per warp
    let mut g = GraphBuilder::new();
    let x = g.input(DType::Float64, 2).unwrap();
    let hi = g.reduce(ReduceKind::Max, x, &Axis::One(1), false).unwrap();
    let lo = g.reduce(ReduceKind::Min, x, &Axis::One(1), false).unwrap();
    let r = g.op(Op::Sub, &[hi, lo]).unwrap();
    g.output(r).unwrap();
    check(
        "row_range_short_rows",
        &g.finish().unwrap(),
        &[vec![1 << 22, 16]],
    );

    let mut g = GraphBuilder::new();
    let x = g.input(DType::Float64, 2).unwrap();
    let v = g.std(x, &Axis::One(0), 1, false).unwrap();
    g.output(v).unwrap();
    check(
        "column_std_ddof1",
        &g.finish().unwrap(),
        &[vec![1000, 100_000]],
    );
}

#[test]
fn golden_complex_rows() {
    // z: complex64 rows, f: float32, a Python complex (weak -> complex64):
    // (abs(exp(z * f + s)), mean(conj(z) * z, axis=1, keepdims=True))
    let mut g = GraphBuilder::new();
    let z = g.input(DType::Complex64, 2).unwrap();
    let f = g.input(DType::Float32, 1).unwrap();
    let s = g.scalar(DType::Complex128, true).unwrap();
    let zf = g.op(Op::Mul, &[z, f]).unwrap();
    let t = g.op(Op::Add, &[zf, s]).unwrap();
    let e = g.op(Op::Exp, &[t]).unwrap();
    let r = g.op(Op::Abs, &[e]).unwrap();
    g.output(r).unwrap();
    let c = g.op_by_name("conj", &[z]).unwrap();
    let p = g.op(Op::Mul, &[c, z]).unwrap();
    let m = g
        .reduce(ReduceKind::Mean { ddof: 0 }, p, &Axis::One(1), true)
        .unwrap();
    g.output(m).unwrap();
    let graph = g.finish().unwrap();
    check("complex_rows_c64", &graph, &[vec![1000, 256], vec![256]]);
    // the complex helpers come after the shared preamble, only in sources that use them
    let p = plan(&graph, &[vec![1000, 256], vec![256]])
        .unwrap()
        .for_device(DeviceTarget::H200);
    assert!(p.source[p.preamble_len..].starts_with(COMPLEX_PREAMBLE));
    assert!(p.source.contains("const cn_c128 s0"));
}

fn slice(start: Option<i64>, stop: Option<i64>) -> IndexItem {
    IndexItem::Slice {
        start,
        stop,
        step: 1,
    }
}

#[test]
fn golden_laplacian_2d() {
    // u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4 * u[1:-1, 1:-1]
    let mut g = GraphBuilder::new();
    let u = g.input(DType::Float64, 2).unwrap();
    let mid = slice(Some(1), Some(-1));
    let views = [
        [mid, slice(Some(2), None)],
        [mid, slice(None, Some(-2))],
        [slice(Some(2), None), mid],
        [slice(None, Some(-2)), mid],
    ];
    let mut acc = g.index(u, &views[0]).unwrap();
    for v in &views[1..] {
        let x = g.index(u, v).unwrap();
        acc = g.op(Op::Add, &[acc, x]).unwrap();
    }
    let four = g.scalar(DType::Int64, true).unwrap();
    let c = g.index(u, &[mid, mid]).unwrap();
    let c4 = g.op(Op::Mul, &[four, c]).unwrap();
    let r = g.op(Op::Sub, &[acc, c4]).unwrap();
    g.output(r).unwrap();
    check("laplacian_2d", &g.finish().unwrap(), &[vec![8192, 8192]]);
}

#[test]
fn golden_gather_times() {
    // a[idx] * b[::-1]
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let idx = g.input(DType::Int64, 1).unwrap();
    let b = g.input(DType::Float64, 1).unwrap();
    let t = g.gather(a, idx, 0).unwrap();
    let rb = g
        .index(
            b,
            &[IndexItem::Slice {
                start: None,
                stop: None,
                step: -1,
            }],
        )
        .unwrap();
    let r = g.op(Op::Mul, &[t, rb]).unwrap();
    g.output(r).unwrap();
    check(
        "gather_times",
        &g.finish().unwrap(),
        &[vec![1 << 22], vec![1 << 20], vec![1 << 20]],
    );
}
