//! Prints the CPU executor's time for the peer-figure expressions on 10^7 float64 elements
//! (best of 5), with the bytes each moves. No assertions: numbers for people.
//!
//! `cargo run --release -p cunumpy-fusion --example cpu_bench [-- N]`

use cunumpy_fusion::*;
use std::time::Instant;

type Build = fn(&mut GraphBuilder, &[Value]) -> Result<Value>;

fn main() -> Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let arrays: Vec<Vec<f64>> = (0..4)
        .map(|s| {
            (0..n)
                .map(|i| ((i as f64 + 1.0) * (0.37 + s as f64 * 0.11)).sin())
                .collect()
        })
        .collect();
    let cases: Vec<(&str, usize, Build)> = vec![
        ("a*b + c*d - 2.5*a", 4, |g, v| {
            let k = g.scalar(DType::Float64, true)?;
            let ab = g.op(Op::Mul, &[v[0], v[1]])?;
            let cd = g.op(Op::Mul, &[v[2], v[3]])?;
            let ka = g.op(Op::Mul, &[k, v[0]])?;
            let s = g.op(Op::Add, &[ab, cd])?;
            g.op(Op::Sub, &[s, ka])
        }),
        ("exp(-a*a)*sin(b) + c", 3, |g, v| {
            let aa = g.op(Op::Mul, &[v[0], v[0]])?;
            let na = g.op(Op::Neg, &[aa])?;
            let e = g.op(Op::Exp, &[na])?;
            let s = g.op(Op::Sin, &[v[1]])?;
            let es = g.op(Op::Mul, &[e, s])?;
            g.op(Op::Add, &[es, v[2]])
        }),
        ("sum((a-b)**2)", 2, |g, v| {
            let two = g.scalar(DType::Int64, true)?;
            let d = g.op(Op::Sub, &[v[0], v[1]])?;
            let sq = g.op(Op::Pow, &[d, two])?;
            g.reduce(ReduceKind::Sum, sq, &Axis::All, false)
        }),
        ("a - mean(a)", 1, |g, v| {
            let m = g.reduce(ReduceKind::Mean { ddof: 0 }, v[0], &Axis::All, false)?;
            g.op(Op::Sub, &[v[0], m])
        }),
    ];
    println!(
        "cunumpy-fusion CPU executor, float64, n = {n}, {} rayon threads",
        rayon::current_num_threads()
    );
    // the machine's parallel copy rate, measured in the same run, as the ceiling
    {
        use rayon::prelude::*;
        let src = &arrays[0];
        let mut dst = vec![0.0f64; n];
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = Instant::now();
            dst.par_chunks_mut(1 << 16)
                .zip(src.par_chunks(1 << 16))
                .for_each(|(d, s)| d.copy_from_slice(s));
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{:<24} {:>8.2} ms  {:>6.1} GB/s",
            "copy (ceiling)",
            best * 1e3,
            (16 * n) as f64 / best / 1e9
        );
    }
    for (name, nin, build) in cases {
        let mut g = GraphBuilder::new();
        let vals: Vec<Value> = (0..nin)
            .map(|_| g.input(DType::Float64, 1))
            .collect::<Result<_>>()?;
        let r = build(&mut g, &vals)?;
        g.output(r)?;
        let graph = g.finish()?;
        let shape = [n];
        let p = plan(&graph, &vec![vec![n]; nin])?;
        let scalars: Vec<ScalarValue> = p
            .scalars
            .iter()
            .map(|(d, _)| {
                if *d == DType::Int64 {
                    ScalarValue::Int(2)
                } else {
                    ScalarValue::Float(2.5)
                }
            })
            .collect();
        let out_shape = p.outputs[0].shape.clone();
        let mut out = vec![0.0f64; p.outputs[0].size()];
        let ins: Vec<ArrayRef<'_>> = arrays[..nin]
            .iter()
            .map(|a| ArrayRef::new(a, &shape))
            .collect();
        let mut best = f64::INFINITY;
        let loops = HostLoopCache::new();
        for _ in 0..5 {
            let t = Instant::now();
            execute_cpu_cached(
                &p,
                &loops,
                &ins,
                &scalars,
                &mut [ArrayMut::new(&mut out, &out_shape)],
            )?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        let bytes = (p.bytes_read() + p.bytes_written()) as f64;
        println!(
            "{name:<24} {:>8.2} ms  {:>6.1} GB/s  ({} kernel(s))",
            best * 1e3,
            bytes / best / 1e9,
            p.kernels.len()
        );
    }
    Ok(())
}
