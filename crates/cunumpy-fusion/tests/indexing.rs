//! Indexing in the graph: views (basic indices) become index maps of the loop that reads them,
//! gathers read in the same pass; the CPU executor's results against values computed here
//! element by element, and the plans' shapes (one kernel, no workspace, one read per array).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use cunumpy_fusion::*;

fn sl(start: Option<i64>, stop: Option<i64>, step: i64) -> IndexItem {
    IndexItem::Slice { start, stop, step }
}

fn run(graph: &Graph, inputs: &[(&[f64], &[usize])], out_len: usize) -> Vec<f64> {
    let shapes: Vec<Vec<usize>> = inputs.iter().map(|(_, s)| s.to_vec()).collect();
    let p = plan(graph, &shapes).unwrap();
    let refs: Vec<ArrayRef> = inputs.iter().map(|(d, s)| ArrayRef::new(*d, s)).collect();
    let mut out = vec![0.0; out_len];
    let shape = p.outputs[0].shape.clone();
    execute_cpu(&p, &refs, &[], &mut [ArrayMut::new(&mut out[..], &shape)]).unwrap();
    out
}

#[test]
fn three_point_stencil_is_one_kernel_reading_its_array_once() {
    let mut g = GraphBuilder::new();
    let u = g.input(DType::Float64, 1).unwrap();
    let right = g.index(u, &[sl(Some(2), None, 1)]).unwrap();
    let mid = g.index(u, &[sl(Some(1), Some(-1), 1)]).unwrap();
    let left = g.index(u, &[sl(None, Some(-2), 1)]).unwrap();
    let two_mid = g.op(Op::Add, &[mid, mid]).unwrap();
    let d = g.op(Op::Sub, &[right, two_mid]).unwrap();
    let r = g.op(Op::Add, &[d, left]).unwrap();
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    let n = 10_000;
    let p = plan(&graph, &[vec![n]]).unwrap();
    assert_eq!(p.kernels.len(), 1);
    assert_eq!(p.outputs[0].shape, vec![n - 2]);
    assert_eq!(p.kernels[0].reads, vec![Operand::Input(0)]);
    assert_eq!(p.bytes_read(), 8 * n as u64);
    assert_eq!(p.for_device(DeviceTarget::H200).workspace_bytes(), 0);
    let x: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 * 0.5).collect();
    let got = run(&graph, &[(&x, &[n])], n - 2);
    for i in 0..n - 2 {
        assert_eq!(got[i], x[i + 2] - (x[i + 1] + x[i + 1]) + x[i], "at {i}");
    }
}

#[test]
fn negative_steps_integers_and_new_axes_compose() {
    // a[::-2, None, 1] * a[1:, 0][::2][:, None, ...] on a (5, 3) array
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 2).unwrap();
    let l = g
        .index(
            a,
            &[sl(None, None, -2), IndexItem::NewAxis, IndexItem::Int(1)],
        )
        .unwrap();
    let col = g
        .index(a, &[sl(Some(1), None, 1), IndexItem::Int(0)])
        .unwrap();
    let col = g.index(col, &[sl(None, None, 2)]).unwrap();
    let r2 = g
        .index(col, &[IndexItem::Ellipsis, IndexItem::NewAxis])
        .unwrap();
    let r = g.op(Op::Mul, &[l, r2]).unwrap();
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    let x: Vec<f64> = (0..15).map(|i| i as f64 + 1.0).collect();
    // l: rows 4, 2, 0 of column 1, shape (3, 1); r2: rows 1, 3 of column 0, shape (2, 1)
    let p = plan(&graph, &[vec![5, 3]]);
    // (3, 1) and (2, 1) do not broadcast: NumPy's ValueError
    assert!(matches!(p, Err(FusionError::Broadcast { .. })), "{p:?}");
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 2).unwrap();
    let l = g
        .index(a, &[sl(None, None, -2), IndexItem::Int(1)])
        .unwrap(); // (3,)
    let col = g
        .index(a, &[sl(Some(-1), None, -2), IndexItem::Int(0)])
        .unwrap(); // rows 4, 2, 0
    let outer = g
        .index(col, &[sl(None, None, 1), IndexItem::NewAxis])
        .unwrap(); // (3, 1)
    let r = g.op(Op::Sub, &[outer, l]).unwrap(); // (3, 3)
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    let got = run(&graph, &[(&x, &[5, 3])], 9);
    let rows = [4, 2, 0];
    for i in 0..3 {
        for j in 0..3 {
            assert_eq!(got[i * 3 + j], x[rows[i] * 3] - x[rows[j] * 3 + 1]);
        }
    }
}

#[test]
fn integers_out_of_range_and_bad_indices_are_errors() {
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let v = g.index(a, &[IndexItem::Int(-4)]).unwrap();
    g.output(v).unwrap();
    let graph = g.finish().unwrap();
    let e = plan(&graph, &[vec![3]]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "fuse: `index`: index -4 is out of bounds for axis 0 with size 3"
    );
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    assert!(matches!(
        g.index(a, &[IndexItem::Int(0), IndexItem::Int(0)]),
        Err(FusionError::Index { .. })
    ));
    assert!(g.index(a, &[sl(None, None, 0)]).is_err());
    let m = g.input(DType::Bool, 1).unwrap();
    assert!(matches!(g.gather(a, m, 0), Err(FusionError::Type { .. })));
}

#[test]
fn gather_is_one_pass_and_bounds_checked() {
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 2).unwrap();
    let idx = g.input(DType::Int32, 1).unwrap();
    let b = g.input(DType::Float64, 2).unwrap();
    let t = g.gather(a, idx, 1).unwrap(); // a[:, idx]
    let r = g.op(Op::Mul, &[t, b]).unwrap();
    g.output(r).unwrap();
    let graph = g.finish().unwrap();
    let p = plan(&graph, &[vec![3, 4], vec![5], vec![3, 5]]).unwrap();
    assert_eq!(p.kernels.len(), 1);
    let x: Vec<f64> = (0..12).map(|i| i as f64).collect();
    let w: Vec<f64> = (0..15).map(|i| 1.0 + i as f64 / 8.0).collect();
    let run_with = |ix: &[i32]| {
        let mut out = vec![0.0; 15];
        execute_cpu(
            &p,
            &[
                ArrayRef::new(&x[..], &[3, 4]),
                ArrayRef::new(ix, &[5]),
                ArrayRef::new(&w[..], &[3, 5]),
            ],
            &[],
            &mut [ArrayMut::new(&mut out[..], &[3, 5])],
        )
        .map(|()| out)
    };
    let ix = [0, 3, -1, -4, 2];
    let got = run_with(&ix).unwrap();
    for r in 0..3 {
        for (c, &i) in ix.iter().enumerate() {
            let col = if i < 0 { i + 4 } else { i } as usize;
            assert_eq!(got[r * 5 + c], x[r * 4 + col] * w[r * 5 + c]);
        }
    }
    let e = run_with(&[0, 1, 4, 0, 0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "fuse: `take`: index 4 is out of bounds for axis 1 with size 4"
    );
    assert!(run_with(&[0, -5, 0, 0, 0]).is_err());
    let src = p.for_device(DeviceTarget::H200).source;
    assert!(src.contains("__trap()"), "{src}");
}

#[test]
fn a_view_of_a_reduction_is_read_from_memory_by_a_later_kernel() {
    // s = sum(a, axis=1); s[1:] - s[:-1]
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 2).unwrap();
    let s = g.reduce(ReduceKind::Sum, a, &Axis::One(1), false).unwrap();
    let hi = g.index(s, &[sl(Some(1), None, 1)]).unwrap();
    let lo = g.index(s, &[sl(None, Some(-1), 1)]).unwrap();
    let d = g.op(Op::Sub, &[hi, lo]).unwrap();
    g.output(d).unwrap();
    let graph = g.finish().unwrap();
    let p = plan(&graph, &[vec![6, 5]]).unwrap();
    assert_eq!(p.kernels.len(), 2);
    assert_eq!(p.buffers.len(), 1);
    let x: Vec<f64> = (0..30).map(|i| (i * i % 11) as f64).collect();
    let got = run(&graph, &[(&x, &[6, 5])], 5);
    let sums: Vec<f64> = (0..6).map(|r| x[r * 5..r * 5 + 5].iter().sum()).collect();
    for i in 0..5 {
        assert_eq!(got[i], sums[i + 1] - sums[i]);
    }
}

/// The 2-D five-point Laplacian's graph (`4 * u[1:-1, 1:-1]` with an int scalar).
fn laplacian_graph() -> Graph {
    let mut g = GraphBuilder::new();
    let u = g.input(DType::Float64, 2).unwrap();
    let mid = sl(Some(1), Some(-1), 1);
    let views = [
        [mid, sl(Some(2), None, 1)],
        [mid, sl(None, Some(-2), 1)],
        [sl(Some(2), None, 1), mid],
        [sl(None, Some(-2), 1), mid],
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
    g.finish().unwrap()
}

fn source_with_rows(graph: &Graph, shapes: &[Vec<usize>], rows: u32) -> DevicePlan {
    let opts = PlanOptions {
        stencil_rows: rows,
        ..PlanOptions::default()
    };
    plan_with_options(graph, shapes, &opts)
        .unwrap()
        .for_device(DeviceTarget::H200)
}

#[test]
fn a_stencil_along_an_outer_axis_walks_rows_sharing_one_window() {
    let graph = laplacian_graph();
    for rows in [2u32, 8, 16] {
        let p = source_with_rows(&graph, &[vec![1000, 300]], rows);
        // one warp per tile of 32 columns by `rows` rows, inner chunk fastest
        let launch = &p.kernels[0].launches[0];
        let tiles = 998usize.div_ceil(rows as usize) * 298usize.div_ceil(32);
        assert_eq!(launch.grid as usize, tiles.div_ceil(256 / 32));
        assert!(p.source.contains(&format!("const int c0 = t0 * {rows};")));
        // the rows above, at and below share one window of rows + 2 loads
        let windows = p.source.matches("const double w0_").count();
        assert_eq!(windows, rows as usize + 2, "{}", p.source);
        assert!(!p.source.contains("w1_"));
    }
    // the flat mapping when asked (CUNUMPY_FUSION_STENCIL_TILES=0)
    let flat = source_with_rows(&graph, &[vec![1000, 300]], 0);
    assert!(!flat.source.contains("tile") && flat.source.contains("i < n"));
    // rows of fewer than 32 elements keep the flat mapping
    let narrow = source_with_rows(&graph, &[vec![1000, 20]], 8);
    assert!(!narrow.source.contains("tile"));
}

#[test]
fn only_shifts_along_an_outer_axis_choose_tiles() {
    // a 1-D stencil, shifts along the inner axis only, and an outer difference keep the flat
    // mapping; a 3-D stencil walks its outermost axis
    let mut g = GraphBuilder::new();
    let u = g.input(DType::Float64, 2).unwrap();
    let a = g
        .index(u, &[sl(None, None, 1), sl(Some(1), None, 1)])
        .unwrap();
    let b = g
        .index(u, &[sl(None, None, 1), sl(None, Some(-1), 1)])
        .unwrap();
    let r = g.op(Op::Sub, &[a, b]).unwrap();
    g.output(r).unwrap();
    let inner = g.finish().unwrap();
    assert!(!source_with_rows(&inner, &[vec![100, 100]], 8)
        .source
        .contains("tile"));
    let mut g = GraphBuilder::new();
    let x = g.input(DType::Float32, 1).unwrap();
    let row = g
        .index(x, &[IndexItem::NewAxis, sl(None, None, 1)])
        .unwrap();
    let col = g
        .index(x, &[sl(None, None, 1), IndexItem::NewAxis])
        .unwrap();
    let r = g.op(Op::Sub, &[row, col]).unwrap();
    g.output(r).unwrap();
    let outer = g.finish().unwrap();
    assert!(!source_with_rows(&outer, &[vec![100]], 8)
        .source
        .contains("tile"));
    // up + down + north - centre: two planes and one row from the centre; the planes save
    // more, so the tiles walk planes
    let mut g = GraphBuilder::new();
    let u = g.input(DType::Float32, 3).unwrap();
    let (mid, hi, lo) = (
        sl(Some(1), Some(-1), 1),
        sl(Some(2), None, 1),
        sl(None, Some(-2), 1),
    );
    let up = g.index(u, &[hi, mid, mid]).unwrap();
    let down = g.index(u, &[lo, mid, mid]).unwrap();
    let north = g.index(u, &[mid, hi, mid]).unwrap();
    let centre = g.index(u, &[mid, mid, mid]).unwrap();
    let s = g.op(Op::Add, &[up, down]).unwrap();
    let s = g.op(Op::Add, &[s, north]).unwrap();
    let r = g.op(Op::Sub, &[s, centre]).unwrap();
    g.output(r).unwrap();
    let planes = g.finish().unwrap();
    let p = source_with_rows(&planes, &[vec![9, 10, 40]], 4);
    assert!(p.source.contains("const int c0 = t0 * 4;"), "{}", p.source);
    assert!(p.source.contains("const int c1 = t1;"), "{}", p.source);
    assert_eq!(p.source.matches("const float w0_").count(), 6);
}
