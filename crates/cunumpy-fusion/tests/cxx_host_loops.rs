//! Compiled CPU loops (needs a host C++ compiler: g++, clang++ or `$CXX`): every program the
//! executor compiles must give the interpreter's results bit for bit, reductions included.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod common;
use common::*;
use cunumpy_fusion::*;
use std::sync::Mutex;
use std::time::Duration;

/// The compile mode is process-wide: tests that change it run one at a time.
static MODE: Mutex<()> = Mutex::new(());

/// The bits of every value, every NaN as one canonical NaN (which operand's NaN an addition
/// passes on depends on the operand order the compiler picks; a NaN is a NaN).
fn bits(outs: &[Out]) -> Vec<Vec<u64>> {
    outs.iter()
        .map(|o| {
            o.f64s()
                .iter()
                .map(|x| if x.is_nan() { f64::NAN } else { *x }.to_bits())
                .collect()
        })
        .collect()
}

/// Runs a graph interpreted and compiled; asserts equal bits and that a loop was built.
fn same_bits(graph: &Graph, inputs: &[(&In, &[usize])], scalars: &[ScalarValue], what: &str) {
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    set_host_loops(HostLoopMode::Off, 0);
    let (_, interpreted) = run(graph, inputs, scalars);
    set_host_loops(HostLoopMode::Sync, 1);
    let before = host_loop_status();
    let (_, compiled) = run(graph, inputs, scalars);
    let after = host_loop_status();
    set_host_loops(HostLoopMode::Background, 1 << 16);
    assert!(after.failed.is_empty(), "{what}: {:?}", after.failed);
    assert!(after.runs > before.runs, "{what}: no compiled loop ran");
    assert_eq!(bits(&compiled), bits(&interpreted), "{what}");
}

fn specials(n: usize, seed: u64) -> Vec<f64> {
    let s = [
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e308,
        -1e-310,
        2.5,
        -3.0,
    ];
    data(n, seed)
        .into_iter()
        .enumerate()
        .map(|(i, x)| {
            if i % 7 == 3 {
                s[(i / 7) % s.len()]
            } else {
                x * 1e3
            }
        })
        .collect()
}

#[test]
fn chain_sum_of_squares_and_centering_match_the_interpreter() {
    let n = 300_007; // four whole reduction chunks, a partial one, and tails
    let (a, b, c, d) = (data(n, 1), data(n, 2), data(n, 3), data(n, 4));
    let ins = [In::F64(a), In::F64(b), In::F64(c), In::F64(d)];
    let sh = [n];

    let chain = chain_graph();
    let all: Vec<(&In, &[usize])> = ins.iter().map(|x| (x, &sh[..])).collect();
    same_bits(&chain, &all, &[ScalarValue::Float(2.5)], "a*b+c*d-2.5*a");

    let mut g = GraphBuilder::new();
    let x = g.input(DType::Float64, 1).unwrap();
    let y = g.input(DType::Float64, 1).unwrap();
    let dxy = g.op(Op::Sub, &[x, y]).unwrap();
    let sq = g.op(Op::Square, &[dxy]).unwrap();
    let total = g.reduce(ReduceKind::Sum, sq, &Axis::All, false).unwrap();
    g.output(total).unwrap();
    let sumsq = g.finish().unwrap();
    same_bits(&sumsq, &all[..2], &[], "sum((a-b)**2)");

    let centre = centering_graph();
    same_bits(&centre, &all[..1], &[], "a - mean(a)");
}

#[test]
fn comparisons_selections_and_nan_rules_match_the_interpreter() {
    let n = 70_001;
    let ins = [In::F64(specials(n, 5)), In::F64(specials(n, 6))];
    let sh = [n];
    let all: Vec<(&In, &[usize])> = ins.iter().map(|x| (x, &sh[..])).collect();
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let b = g.input(DType::Float64, 1).unwrap();
    let lo = g.scalar(DType::Float64, true).unwrap();
    let hi = g.scalar(DType::Float64, true).unwrap();
    let lt = g.op(Op::Lt, &[a, b]).unwrap();
    let mn = g.op(Op::Minimum, &[a, b]).unwrap();
    let mx = g.op(Op::Maximum, &[a, b]).unwrap();
    let w = g.op(Op::Where, &[lt, mn, mx]).unwrap();
    let cl = g.op(Op::Clip, &[w, lo, hi]).unwrap();
    let q = g.op(Op::TrueDiv, &[cl, b]).unwrap();
    let sq = g.op(Op::Sqrt, &[q]).unwrap();
    let ab = g.op(Op::Abs, &[sq]).unwrap();
    let fl = g.op(Op::Floor, &[ab]).unwrap();
    let nan = g.op(Op::IsNan, &[a]).unwrap();
    let fin = g.op(Op::IsFinite, &[b]).unwrap();
    let both = g.op(Op::LogicalAnd, &[nan, fin]).unwrap();
    g.output(fl).unwrap();
    g.output(both).unwrap();
    let f = g.finish().unwrap();
    same_bits(
        &f,
        &all,
        &[ScalarValue::Float(-100.0), ScalarValue::Float(1e300)],
        "where/min/max/clip/sqrt/floor/isnan",
    );

    // products and sums of special values (min/max folds stay interpreted)
    for kind in [ReduceKind::Prod, ReduceKind::Sum] {
        let mut g = GraphBuilder::new();
        let a = g.input(DType::Float64, 1).unwrap();
        let r = g.reduce(kind, a, &Axis::All, false).unwrap();
        g.output(r).unwrap();
        let f = g.finish().unwrap();
        same_bits(&f, &all[..1], &[], &format!("{kind:?}"));
    }
}

#[test]
fn integer_wrapping_casts_and_bools_match_the_interpreter() {
    let n = 131_075;
    let i: Vec<i64> = ints(n, 7, -5, 5)
        .into_iter()
        .enumerate()
        .map(|(j, x)| match j % 11 {
            0 => i64::MAX,
            1 => i64::MIN,
            _ => x * 1_000_000_007,
        })
        .collect();
    let small: Vec<i8> = ints(n, 8, -128, 127).into_iter().map(|x| x as i8).collect();
    let ins = [
        In::I64(i),
        In::I8(small),
        In::F32(data(n, 9).iter().map(|&x| x as f32).collect()),
    ];
    let sh = [n];
    let all: Vec<(&In, &[usize])> = ins.iter().map(|x| (x, &sh[..])).collect();
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Int64, 1).unwrap();
    let s8 = g.input(DType::Int8, 1).unwrap();
    let f32v = g.input(DType::Float32, 1).unwrap();
    let sum = g.op(Op::Add, &[a, a]).unwrap();
    let prod = g.op(Op::Mul, &[sum, a]).unwrap();
    let neg = g.op(Op::Neg, &[s8]).unwrap();
    let abs8 = g.op(Op::Abs, &[neg]).unwrap();
    let inv = g.op(Op::Invert, &[abs8]).unwrap();
    let bits8 = g.op(Op::BitXor, &[inv, s8]).unwrap();
    let mixed = g.op(Op::Add, &[prod, bits8]).unwrap(); // int8 promoted to int64
    let as_float = g.op(Op::Mul, &[mixed, f32v]).unwrap(); // int64 * float32 -> float64
    let gt = g.op(Op::Gt, &[as_float, f32v]).unwrap();
    let nt = g.op(Op::LogicalNot, &[gt]).unwrap();
    g.output(mixed).unwrap();
    g.output(as_float).unwrap();
    g.output(nt).unwrap();
    let f = g.finish().unwrap();
    same_bits(&f, &all, &[], "int64 wrapping, int8 bits, casts, bools");

    let mut g = GraphBuilder::new();
    let a = g.input(DType::Int64, 1).unwrap();
    let t = g.op(Op::Mul, &[a, a]).unwrap();
    let r = g.reduce(ReduceKind::Sum, t, &Axis::All, false).unwrap();
    g.output(r).unwrap();
    let f = g.finish().unwrap();
    same_bits(&f, &all[..1], &[], "int64 sum of squares (wrapping)");
}

#[test]
fn bare_reductions_compile_only_out_of_cache() {
    // sum(a) of an array as it is: interpreted below 32 MiB, compiled from there on
    let n = (36 << 20) / 8 + 5;
    let ins = [In::F64(data(n, 31))];
    let sh = [n];
    let all: Vec<(&In, &[usize])> = ins.iter().map(|x| (x, &sh[..])).collect();
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let r = g.reduce(ReduceKind::Sum, a, &Axis::All, false).unwrap();
    g.output(r).unwrap();
    let f = g.finish().unwrap();
    same_bits(&f, &all, &[], "sum(a), 36 MiB");
    let small = [In::F64(data(1 << 16, 32))];
    let sh = [1 << 16];
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    set_host_loops(HostLoopMode::Sync, 2); // (not the one-point epilogue)
    let runs = host_loop_status().runs;
    let _ = run(&f, &[(&small[0], &sh[..])], &[]);
    set_host_loops(HostLoopMode::Background, 1 << 16);
    assert_eq!(
        host_loop_status().runs,
        runs,
        "a small bare sum stays interpreted"
    );
}

#[test]
fn background_builds_finish_and_are_then_used() {
    let n = 1 << 17;
    let ins = [In::F32(data(n, 11).iter().map(|&x| x as f32).collect())];
    let sh = [n];
    let all: Vec<(&In, &[usize])> = ins.iter().map(|x| (x, &sh[..])).collect();
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float32, 1).unwrap();
    let h = g.scalar(DType::Float64, true).unwrap();
    let r = g.op(Op::Mul, &[a, h]).unwrap();
    let c = g.op(Op::Ceil, &[r]).unwrap();
    g.output(c).unwrap();
    let f = g.finish().unwrap();
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    set_host_loops(HostLoopMode::Off, 0);
    let (_, want) = run(&f, &all, &[ScalarValue::Float(0.5)]);
    set_host_loops(HostLoopMode::Background, 1);
    // the first run starts the build and is interpreted; later ones use the loop when loaded
    let (p, first) = run(&f, &all, &[ScalarValue::Float(0.5)]);
    assert!(
        wait_for_host_loops(Duration::from_secs(120)),
        "build did not finish"
    );
    assert!(host_loop_status().failed.is_empty());
    let runs = host_loop_status().runs;
    let (_, later) = run(&f, &all, &[ScalarValue::Float(0.5)]);
    assert_eq!(host_loop_status().runs, runs + 1, "the loaded loop ran");
    set_host_loops(HostLoopMode::Background, 1 << 16);
    assert_eq!(bits(&first), bits(&want));
    assert_eq!(bits(&later), bits(&want));
    assert_eq!(p.kernels.len(), 1);
}

/// A result large enough to be written with non-temporal stores, into a target that starts
/// `skew` elements after a 64-byte boundary (the head before the boundary is written plainly).
#[test]
fn streamed_results_match_at_every_alignment() {
    let n = (9 << 20) / 8 + 13; // over 8 MiB of float64
    let (a, b) = (data(n, 21), data(n, 22));
    let mut g = GraphBuilder::new();
    let x = g.input(DType::Float64, 1).unwrap();
    let y = g.input(DType::Float64, 1).unwrap();
    let s = g.op(Op::Sub, &[x, y]).unwrap();
    let p = g.op(Op::Mul, &[s, x]).unwrap();
    g.output(p).unwrap();
    let graph = g.finish().unwrap();
    let plan = plan(&graph, &[vec![n], vec![n]]).unwrap();
    let want: Vec<u64> = (0..n).map(|i| ((a[i] - b[i]) * a[i]).to_bits()).collect();
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    set_host_loops(HostLoopMode::Sync, 1);
    for skew in [0usize, 1, 5, 7] {
        let mut store = vec![f64::NAN; n + 16];
        let base = store.as_ptr() as usize;
        let first = ((64 - base % 64) % 64) / 8 + skew;
        let out = &mut store[first..first + n];
        let before = host_loop_status().runs;
        let shape = [n];
        execute_cpu(
            &plan,
            &[ArrayRef::new(&a, &shape), ArrayRef::new(&b, &shape)],
            &[],
            &mut [ArrayMut::new(out, &shape)],
        )
        .unwrap();
        assert_eq!(host_loop_status().runs, before + 1, "skew {skew}: compiled");
        let got: Vec<u64> = store[first..first + n]
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert!(got == want, "skew {skew}");
        assert!(
            store[..first].iter().all(|v| v.is_nan()),
            "skew {skew}: before"
        );
        assert!(
            store[first + n..].iter().all(|v| v.is_nan()),
            "skew {skew}: after"
        );
    }
    set_host_loops(HostLoopMode::Background, 1 << 16);
}

fn sl(start: Option<i64>, stop: Option<i64>, step: i64) -> IndexItem {
    IndexItem::Slice { start, stop, step }
}

/// The five-point Laplacian of a 2-D grid: every leaf reads rows of the grid at an offset, so
/// the plan runs through the row loop (`cn_rows`), with odd sizes, rows that are not whole
/// tiles, and a result over 8 MiB (streamed).
#[test]
fn two_dimensional_views_run_row_by_row_with_the_interpreters_bits() {
    let all = || sl(None, None, 1);
    let mid = || sl(Some(1), Some(-1), 1);
    let mut g = GraphBuilder::new();
    let u = g.input(DType::Float64, 2).unwrap();
    let e = g.index(u, &[mid(), sl(Some(2), None, 1)]).unwrap();
    let w = g.index(u, &[mid(), sl(None, Some(-2), 1)]).unwrap();
    let s = g.index(u, &[sl(Some(2), None, 1), mid()]).unwrap();
    let n = g.index(u, &[sl(None, Some(-2), 1), mid()]).unwrap();
    let c = g.index(u, &[mid(), mid()]).unwrap();
    let four = g.scalar(DType::Float64, false).unwrap();
    let sum = g.op(Op::Add, &[e, w]).unwrap();
    let sum = g.op(Op::Add, &[sum, s]).unwrap();
    let sum = g.op(Op::Add, &[sum, n]).unwrap();
    let fc = g.op(Op::Mul, &[four, c]).unwrap();
    let r = g.op(Op::Sub, &[sum, fc]).unwrap();
    g.output(r).unwrap();
    let lap = g.finish().unwrap();
    for (rows, cols) in [(301usize, 517usize), (67, 64), (5, 2000), (1102, 1005)] {
        let x = In::F64(specials(rows * cols, 31));
        let what = format!("laplacian {rows}x{cols}");
        same_bits(
            &lap,
            &[(&x, &[rows, cols])],
            &[ScalarValue::Float(4.0)],
            &what,
        );
    }

    // every other row, reversed, against a contiguous array; a 3-D view whose outer axes
    // collapse into one row stride
    let mut g = GraphBuilder::new();
    let u = g.input(DType::Float64, 2).unwrap();
    let v = g.input(DType::Float64, 2).unwrap();
    let t = g
        .index(u, &[sl(None, None, -2), sl(Some(1), None, 1)])
        .unwrap();
    let p = g.op(Op::Mul, &[t, v]).unwrap();
    g.output(p).unwrap();
    let strided = g.finish().unwrap();
    let (x, y) = (In::F64(data(101 * 333, 32)), In::F64(data(51 * 332, 33)));
    same_bits(
        &strided,
        &[(&x, &[101, 333]), (&y, &[51, 332])],
        &[],
        "u[::-2, 1:] * v",
    );
    let mut g = GraphBuilder::new();
    let u = g.input(DType::Float32, 3).unwrap();
    let t = g
        .index(u, &[sl(Some(1), None, 1), all(), sl(Some(3), None, 1)])
        .unwrap();
    let q = g.op(Op::Square, &[t]).unwrap();
    g.output(q).unwrap();
    let three = g.finish().unwrap();
    let x = In::F32(data(4 * 7 * 611, 34).iter().map(|&v| v as f32).collect());
    same_bits(
        &three,
        &[(&x, &[4, 7, 611])],
        &[],
        "u[1:, :, 3:] ** 2 (float32)",
    );
}

/// `a[idx] * b` reads the table at each checked index in the product's loop; negative and
/// unsigned indices as NumPy has them; an index out of range gives the interpreter's error.
#[test]
fn gathers_run_compiled_with_the_interpreters_bits_and_errors() {
    let table = 70_001;
    let n = 1_100_003; // a result over 8 MiB: streamed
    let a = In::F64(specials(table, 41));
    let b = In::F64(data(n, 42));
    let graph = |dt: DType| {
        let mut g = GraphBuilder::new();
        let a = g.input(DType::Float64, 1).unwrap();
        let i = g.input(dt, 1).unwrap();
        let b = g.input(DType::Float64, 1).unwrap();
        let t = g.gather(a, i, 0).unwrap();
        let r = g.op(Op::Mul, &[t, b]).unwrap();
        g.output(r).unwrap();
        g.finish().unwrap()
    };
    let ti = table as i64;
    let signed: Vec<i64> = ints(n, 43, -ti, ti)
        .into_iter()
        .map(|v| v.clamp(-ti, ti - 1))
        .collect();
    let idx64 = In::I64(signed.clone());
    let idx32 = In::I32(signed.iter().map(|&v| v as i32).collect());
    let idxu = In::U8(signed.iter().map(|&v| v.unsigned_abs() as u8).collect());
    for (dt, idx, what) in [
        (DType::Int64, &idx64, "int64"),
        (DType::Int32, &idx32, "int32"),
        (DType::UInt8, &idxu, "uint8"),
    ] {
        same_bits(
            &graph(dt),
            &[(&a, &[table]), (idx, &[n]), (&b, &[n])],
            &[],
            &format!("a[idx] * b, {what} indices"),
        );
    }
    // an index out of range (past the end, and before the start) is the interpreter's error
    let g64 = graph(DType::Int64);
    let p = plan(&g64, &[vec![table], vec![n], vec![n]]).unwrap();
    let (av, bv) = (specials(table, 41), data(n, 42));
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    set_host_loops(HostLoopMode::Sync, 1);
    for bad in [ti, -ti - 1] {
        let mut ix = signed.clone();
        ix[n / 2 + 7] = bad;
        let mut out = vec![0.0; n];
        let e = execute_cpu(
            &p,
            &[
                ArrayRef::new(&av[..], &[table]),
                ArrayRef::new(&ix[..], &[n]),
                ArrayRef::new(&bv[..], &[n]),
            ],
            &[],
            &mut [ArrayMut::new(&mut out[..], &[n])],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("fuse: `take`: index {bad} is out of bounds for axis 0 with size {table}")
        );
    }
    set_host_loops(HostLoopMode::Background, 1 << 16);
}

/// Reductions over short rows run as one compiled row loop folding every reduction of the
/// kernel, in the interpreter's order: max and min with NaN, signed zeros and infinities in
/// the rows, sums and means of products, integer rows; row lengths below, at and above a
/// lane group, and rows that straddle the interpreter's blocks.
#[test]
fn short_row_reductions_run_compiled_with_the_interpreters_bits() {
    let range = |dt: DType| {
        let mut g = GraphBuilder::new();
        let a = g.input(dt, 2).unwrap();
        let hi = g.reduce(ReduceKind::Max, a, &Axis::One(1), false).unwrap();
        let lo = g.reduce(ReduceKind::Min, a, &Axis::One(1), false).unwrap();
        let d = g.op(Op::Sub, &[hi, lo]).unwrap();
        g.output(d).unwrap();
        g.finish().unwrap()
    };
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 2).unwrap();
    let b = g.input(DType::Float64, 2).unwrap();
    let p = g.op(Op::Mul, &[a, b]).unwrap();
    let s = g.reduce(ReduceKind::Sum, p, &Axis::One(-1), false).unwrap();
    let m = g
        .reduce(ReduceKind::Mean { ddof: 0 }, a, &Axis::One(1), true)
        .unwrap();
    g.output(s).unwrap();
    g.output(m).unwrap();
    let sums = g.finish().unwrap();
    for (rows, k) in [
        (100_003usize, 16usize),
        (7001, 13),
        (3001, 700),
        (50_000, 3),
        (9, 4999),
    ] {
        let x = In::F64(specials(rows * k, 51));
        let y = In::F64(data(rows * k, 52));
        let sh = [rows, k];
        same_bits(
            &range(DType::Float64),
            &[(&x, &sh)],
            &[],
            &format!("max - min over rows of {k}, {rows} rows"),
        );
        same_bits(
            &sums,
            &[(&x, &sh), (&y, &sh)],
            &[],
            &format!("sum(a*b) and mean over rows of {k}"),
        );
        let z = In::I32(
            ints(rows * k, 53, -1000, 1000)
                .iter()
                .map(|&v| v as i32)
                .collect(),
        );
        same_bits(
            &range(DType::Int32),
            &[(&z, &sh)],
            &[],
            &format!("int32 max - min over rows of {k}"),
        );
    }
    // rows where the extremes are signed zeros: the compiled fold picks between +0 and -0 as
    // the interpreter does (a plain `a > b ? a : b` keeps the same operand order)
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 2).unwrap();
    let hi = g.reduce(ReduceKind::Max, a, &Axis::One(1), false).unwrap();
    let lo = g.reduce(ReduceKind::Min, a, &Axis::One(1), false).unwrap();
    g.output(hi).unwrap();
    g.output(lo).unwrap();
    let extrema = g.finish().unwrap();
    let signed_zeros = |seed: u64, rest: f64| {
        let picks = [0.0, -0.0, rest];
        ints(50_000 * 16, seed, 0, 3)
            .iter()
            .map(|&v| picks[usize::try_from(v).unwrap()])
            .collect::<Vec<f64>>()
    };
    for (seed, rest) in [(55, -1.0), (56, 1.0)] {
        let z = In::F64(signed_zeros(seed, rest));
        same_bits(
            &extrema,
            &[(&z, &[50_000, 16])],
            &[],
            &format!("max and min of signed zeros and {rest}"),
        );
    }
    // both loops compiled: the rows' reductions and the subtraction after them
    let x = In::F64(data(4096 * 16, 54));
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    set_host_loops(HostLoopMode::Sync, 1);
    let before = host_loop_status().runs;
    let _ = run(&range(DType::Float64), &[(&x, &[4096, 16])], &[]);
    let after = host_loop_status().runs;
    set_host_loops(HostLoopMode::Background, 1 << 16);
    assert_eq!(after, before + 2);
}

/// A plan run again with its loop cache writes its row reductions into the result columns of
/// the call before (`cpu::spares`): each call gives its own data's max - min, never a value
/// left from an earlier call, for rows inside one block and rows straddling blocks.
#[test]
fn row_reductions_of_a_cached_plan_see_only_their_own_call() {
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 2).unwrap();
    let hi = g.reduce(ReduceKind::Max, a, &Axis::One(1), false).unwrap();
    let lo = g.reduce(ReduceKind::Min, a, &Axis::One(1), false).unwrap();
    let d = g.op(Op::Sub, &[hi, lo]).unwrap();
    g.output(d).unwrap();
    let graph = g.finish().unwrap();
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    set_host_loops(HostLoopMode::Sync, 1);
    for (rows, k) in [(20_000usize, 16usize), (7001, 13)] {
        let p = plan(&graph, &[vec![rows, k]]).unwrap();
        let cache = HostLoopCache::new();
        let before = host_loop_status().runs;
        // the first call's values are large, the later ones' small: a value kept from the
        // first call would show as a range far too wide
        for (call, scale) in [1e6, 1.0, 1e-3].into_iter().enumerate() {
            let x: Vec<f64> = data(rows * k, 60 + call as u64)
                .iter()
                .map(|v| v * scale)
                .collect();
            let mut out = vec![f64::NAN; rows];
            execute_cpu_cached(
                &p,
                &cache,
                &[ArrayRef::new(&x[..], &[rows, k])],
                &[],
                &mut [ArrayMut::new(&mut out[..], &[rows])],
            )
            .unwrap();
            let (hi, _) = reduce_ref(&x, &[rows, k], &[1], f64::NEG_INFINITY, f64::max);
            let (lo, _) = reduce_ref(&x, &[rows, k], &[1], f64::INFINITY, f64::min);
            let want: Vec<f64> = hi.iter().zip(&lo).map(|(h, l)| h - l).collect();
            assert_eq!(out, want, "call {call}, {rows} rows of {k}");
        }
        assert!(
            host_loop_status().runs >= before + 3,
            "{rows} rows of {k}: the compiled row loop did not run on every call"
        );
    }
    set_host_loops(HostLoopMode::Background, 1 << 16);
}
