#![allow(clippy::unwrap_used, clippy::expect_used, clippy::needless_range_loop)] // tests may panic
//! Helpers shared by the integration tests: deterministic data, running a plan on the CPU
//! with outputs of any dtype, naive reference reductions.
#![allow(dead_code)]

use cunumpy_fusion::*;

/// Deterministic pseudo-random floats in [-2, 2).
pub fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 4.0 - 2.0
        })
        .collect()
}

pub fn ints(n: usize, seed: u64, lo: i64, hi: i64) -> Vec<i64> {
    data(n, seed)
        .iter()
        .map(|x| lo + (((x + 2.0) / 4.0) * (hi - lo) as f64) as i64)
        .collect()
}

/// Input data of any dtype.
#[derive(Clone, Debug)]
pub enum In {
    F64(Vec<f64>),
    F32(Vec<f32>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    U64(Vec<u64>),
    B(Vec<bool>),
}

impl In {
    pub fn dtype(&self) -> DType {
        match self {
            In::F64(_) => DType::Float64,
            In::F32(_) => DType::Float32,
            In::I64(_) => DType::Int64,
            In::I32(_) => DType::Int32,
            In::I8(_) => DType::Int8,
            In::U8(_) => DType::UInt8,
            In::U64(_) => DType::UInt64,
            In::B(_) => DType::Bool,
        }
    }
    pub fn data(&self) -> Data<'_> {
        match self {
            In::F64(v) => Data::Float64(v),
            In::F32(v) => Data::Float32(v),
            In::I64(v) => Data::Int64(v),
            In::I32(v) => Data::Int32(v),
            In::I8(v) => Data::Int8(v),
            In::U8(v) => Data::UInt8(v),
            In::U64(v) => Data::UInt64(v),
            In::B(v) => Data::Bool(v),
        }
    }
    pub fn f64_at(&self, i: usize) -> f64 {
        match self {
            In::F64(v) => v[i],
            In::F32(v) => v[i] as f64,
            In::I64(v) => v[i] as f64,
            In::I32(v) => v[i] as f64,
            In::I8(v) => v[i] as f64,
            In::U8(v) => v[i] as f64,
            In::U64(v) => v[i] as f64,
            In::B(v) => v[i] as u8 as f64,
        }
    }
}

/// Output storage of any dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum Out {
    F64(Vec<f64>),
    F32(Vec<f32>),
    I64(Vec<i64>),
    U64(Vec<u64>),
    I32(Vec<i32>),
    I16(Vec<i16>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    B(Vec<bool>),
}

impl Out {
    pub fn alloc(t: &TensorSpec) -> Out {
        let n = t.size();
        match t.dtype {
            DType::Float64 => Out::F64(vec![f64::NAN; n]),
            DType::Float32 => Out::F32(vec![f32::NAN; n]),
            DType::Int64 => Out::I64(vec![-77; n]),
            DType::UInt64 => Out::U64(vec![77; n]),
            DType::Int32 => Out::I32(vec![-77; n]),
            DType::Int16 => Out::I16(vec![-77; n]),
            DType::Int8 => Out::I8(vec![-77; n]),
            DType::UInt8 => Out::U8(vec![77; n]),
            DType::UInt16 => Out::U16(vec![77; n]),
            DType::UInt32 => Out::U32(vec![77; n]),
            DType::Bool => Out::B(vec![false; n]),
            d => panic!("no test storage for {d}"),
        }
    }
    pub fn data_mut(&mut self) -> DataMut<'_> {
        match self {
            Out::F64(v) => DataMut::Float64(v),
            Out::F32(v) => DataMut::Float32(v),
            Out::I64(v) => DataMut::Int64(v),
            Out::U64(v) => DataMut::UInt64(v),
            Out::I32(v) => DataMut::Int32(v),
            Out::I16(v) => DataMut::Int16(v),
            Out::I8(v) => DataMut::Int8(v),
            Out::U8(v) => DataMut::UInt8(v),
            Out::U16(v) => DataMut::UInt16(v),
            Out::U32(v) => DataMut::UInt32(v),
            Out::B(v) => DataMut::Bool(v),
        }
    }
    pub fn f64s(&self) -> Vec<f64> {
        match self {
            Out::F64(v) => v.clone(),
            Out::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Out::I64(v) => v.iter().map(|&x| x as f64).collect(),
            Out::U64(v) => v.iter().map(|&x| x as f64).collect(),
            Out::I32(v) => v.iter().map(|&x| x as f64).collect(),
            Out::I16(v) => v.iter().map(|&x| x as f64).collect(),
            Out::I8(v) => v.iter().map(|&x| x as f64).collect(),
            Out::U8(v) => v.iter().map(|&x| x as f64).collect(),
            Out::U16(v) => v.iter().map(|&x| x as f64).collect(),
            Out::U32(v) => v.iter().map(|&x| x as f64).collect(),
            Out::B(v) => v.iter().map(|&x| x as u8 as f64).collect(),
        }
    }
}

/// Plans and runs a graph; returns the plan and the outputs.
pub fn run(graph: &Graph, inputs: &[(&In, &[usize])], scalars: &[ScalarValue]) -> (Plan, Vec<Out>) {
    let shapes: Vec<Vec<usize>> = inputs.iter().map(|(_, s)| s.to_vec()).collect();
    let p = plan(graph, &shapes).expect("plan");
    let mut outs: Vec<Out> = p.outputs.iter().map(Out::alloc).collect();
    let shapes_out: Vec<Vec<usize>> = p.outputs.iter().map(|t| t.shape.clone()).collect();
    {
        let ins: Vec<ArrayRef<'_>> = inputs
            .iter()
            .map(|(d, s)| ArrayRef {
                data: d.data(),
                shape: s,
            })
            .collect();
        let mut o: Vec<ArrayMut<'_>> = outs
            .iter_mut()
            .zip(&shapes_out)
            .map(|(d, s)| ArrayMut {
                data: d.data_mut(),
                shape: s,
            })
            .collect();
        execute_cpu(&p, &ins, scalars, &mut o).expect("execute");
    }
    (p, outs)
}

/// Asserts two float vectors agree within a relative tolerance (NaNs must match).
pub fn close(got: &[f64], want: &[f64], rtol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if w.is_nan() {
            assert!(g.is_nan(), "{what}[{i}]: got {g}, want NaN");
            continue;
        }
        let tol = rtol * w.abs().max(1.0);
        assert!(
            (g - w).abs() <= tol || g == w,
            "{what}[{i}]: got {g}, want {w}"
        );
    }
}

/// Naive reference reduction of a C-contiguous array over `axes`; returns the values in the
/// C order of the kept dims.
pub fn reduce_ref(
    x: &[f64],
    shape: &[usize],
    axes: &[usize],
    init: f64,
    f: impl Fn(f64, f64) -> f64,
) -> (Vec<f64>, usize) {
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let m: usize = kept.iter().map(|&a| shape[a]).product();
    let k: usize = axes.iter().map(|&a| shape[a]).product();
    let mut out = vec![init; m];
    let n: usize = shape.iter().product();
    for (flat, &v) in x.iter().enumerate().take(n) {
        // coordinates
        let mut rem = flat;
        let mut coords = vec![0; shape.len()];
        for j in (0..shape.len()).rev() {
            coords[j] = rem % shape[j];
            rem /= shape[j];
        }
        let mut mi = 0;
        for &a in &kept {
            mi = mi * shape[a] + coords[a];
        }
        out[mi] = f(out[mi], v);
    }
    (out, k)
}

/// `a*b + c*d - k*a` over four float64 vectors and a float64 scalar `k`: the benchmarks'
/// elementwise chain.
pub fn chain_graph() -> Graph {
    let mut g = GraphBuilder::new();
    let v: Vec<Value> = (0..4)
        .map(|_| g.input(DType::Float64, 1).unwrap())
        .collect();
    let k = g.scalar(DType::Float64, true).unwrap();
    let ab = g.op(Op::Mul, &[v[0], v[1]]).unwrap();
    let cd = g.op(Op::Mul, &[v[2], v[3]]).unwrap();
    let ka = g.op(Op::Mul, &[k, v[0]]).unwrap();
    let s = g.op(Op::Add, &[ab, cd]).unwrap();
    let r = g.op(Op::Sub, &[s, ka]).unwrap();
    g.output(r).unwrap();
    g.finish().unwrap()
}

/// `a - mean(a)` over a float64 vector: a reduction feeding an elementwise kernel.
pub fn centering_graph() -> Graph {
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float64, 1).unwrap();
    let m = g
        .reduce(ReduceKind::Mean { ddof: 0 }, a, &Axis::All, false)
        .unwrap();
    let r = g.op(Op::Sub, &[a, m]).unwrap();
    g.output(r).unwrap();
    g.finish().unwrap()
}
