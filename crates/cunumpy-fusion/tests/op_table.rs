//! The op table is complete: every op has a name, a CUDA expression using exactly its
//! arguments, a dtype rule, and a CPU kernel for every dtype its rule can produce.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod common;
use common::*;
use cunumpy_fusion::*;

const ALL: [DType; 11] = [
    DType::Bool,
    DType::Int8,
    DType::UInt8,
    DType::Int16,
    DType::UInt16,
    DType::Int32,
    DType::UInt32,
    DType::Int64,
    DType::UInt64,
    DType::Float32,
    DType::Float64,
];

#[test]
fn table_rows_are_in_enum_order_and_named_once() {
    let ops: Vec<Op> = Op::all().collect();
    assert_eq!(ops.len(), OPS.len());
    for (i, d) in OPS.iter().enumerate() {
        assert_eq!(d.op as usize, i, "row {i} ({}) out of order", d.name);
        assert_eq!(Op::from_name(d.name), Some(d.op));
        assert_eq!(OPS.iter().filter(|e| e.name == d.name).count(), 1);
        assert!((1..=3).contains(&d.arity));
    }
    for name in [
        "add",
        "subtract",
        "multiply",
        "true_divide",
        "floor_divide",
        "remainder",
        "power",
        "negative",
        "positive",
        "absolute",
        "equal",
        "not_equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "invert",
        "left_shift",
        "right_shift",
        "exp",
        "log",
        "log2",
        "log10",
        "expm1",
        "log1p",
        "sqrt",
        "sin",
        "cos",
        "tan",
        "arcsin",
        "arccos",
        "arctan",
        "arctan2",
        "sinh",
        "cosh",
        "tanh",
        "floor",
        "ceil",
        "trunc",
        "rint",
        "sign",
        "square",
        "reciprocal",
        "minimum",
        "maximum",
        "clip",
        "where",
        "isnan",
        "isinf",
        "isfinite",
        "divide",
        "mod",
        "abs",
        "bitwise_not",
    ] {
        assert!(Op::from_name(name).is_some(), "missing op {name}");
    }
}

#[test]
fn cuda_templates_use_exactly_their_arguments() {
    for d in OPS.iter() {
        for k in 0..3 {
            let used = d.cuda.contains(&format!("{{{k}}}"));
            assert_eq!(
                used,
                k < d.arity,
                "{}: `{}` and argument {k}",
                d.name,
                d.cuda
            );
        }
        let helpers: Vec<&str> = d
            .cuda
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("cn_"))
            .collect();
        for h in helpers {
            assert!(
                PREAMBLE.contains(&format!(" {h}("))
                    || COMPLEX_PREAMBLE.contains(&format!(" {h}(")),
                "{}: helper {h} is not in the preamble (or the complex one)",
                d.name
            );
        }
    }
}

/// For every op and every argument dtype the rule accepts, a graph builds, plans, generates
/// CUDA, and runs on the CPU (so the CPU kernel has a loop for the rule's loop dtype).
#[test]
fn every_op_runs_on_every_dtype_its_rule_accepts() {
    let n = 5;
    let mut accepted = 0;
    for d in OPS.iter() {
        for &t in &ALL {
            let mut g = GraphBuilder::new();
            let args: Vec<Value> = (0..d.arity)
                .map(|i| {
                    if d.op == Op::Where && i == 0 {
                        g.input(DType::Bool, 1).unwrap()
                    } else {
                        g.input(t, 1).unwrap()
                    }
                })
                .collect();
            let r = match g.op(d.op, &args) {
                Ok(r) => r,
                Err(e) => {
                    // only documented rejections: bool for ArithNoBool, floats for bitwise
                    let msg = e.to_string();
                    assert!(msg.contains(d.name), "{msg}");
                    assert!(
                        matches!(d.rule, Rule::ArithNoBool | Rule::Bitwise | Rule::Shift),
                        "{} rejected {t}: {msg}",
                        d.name
                    );
                    continue;
                }
            };
            accepted += 1;
            g.output(r).unwrap();
            let graph = g.finish().unwrap();
            let inputs: Vec<In> = (0..d.arity)
                .map(|i| {
                    let dt = if d.op == Op::Where && i == 0 {
                        DType::Bool
                    } else {
                        t
                    };
                    let base = ints(n, i as u64 + 1, 0, 5);
                    match dt {
                        DType::Bool => In::B(base.iter().map(|&x| x % 2 == 1).collect()),
                        DType::Int8 => In::I8(base.iter().map(|&x| x as i8).collect()),
                        DType::UInt8 => In::U8(base.iter().map(|&x| x as u8).collect()),
                        DType::Int32 => In::I32(base.iter().map(|&x| x as i32).collect()),
                        DType::Int64 => In::I64(base.clone()),
                        DType::UInt64 => In::U64(base.iter().map(|&x| x as u64).collect()),
                        DType::Float32 => In::F32(base.iter().map(|&x| x as f32 * 0.3).collect()),
                        _ => In::F64(base.iter().map(|&x| x as f64 * 0.3).collect()),
                    }
                })
                .collect();
            // dtypes the test storage lacks are exercised through a cast from int64
            let supported = inputs
                .iter()
                .all(|i| i.dtype() == t || i.dtype() == DType::Bool);
            let p = plan(&graph, &vec![vec![n]; d.arity]).unwrap();
            let source = p.for_device(DeviceTarget::H200).source;
            assert!(source.contains(&p.kernels[0].name));
            if !supported {
                continue;
            }
            let shape = [n];
            let refs: Vec<(&In, &[usize])> = inputs.iter().map(|i| (i, &shape[..])).collect();
            let (_, outs) = run(&graph, &refs, &[]);
            assert_eq!(outs[0].f64s().len(), n, "{} on {t}", d.name);
        }
    }
    assert!(accepted > 400, "{accepted}");
}

/// int16/uint16/uint32 inputs (no test storage) reach every op through `astype`.
#[test]
fn every_op_through_a_cast_for_the_other_integer_dtypes() {
    for d in OPS.iter() {
        for t in [DType::Int16, DType::UInt16, DType::UInt32] {
            let mut g = GraphBuilder::new();
            let x = g.input(DType::Int64, 1).unwrap();
            let c = g.astype(x, t).unwrap();
            let mut args = vec![c; d.arity];
            if d.op == Op::Where {
                args[0] = g.op(Op::Gt, &[c, c]).unwrap();
            }
            let Ok(r) = g.op(d.op, &args) else { continue };
            g.output(r).unwrap();
            let graph = g.finish().unwrap();
            let inp = In::I64(vec![1, 2, 3]);
            let (_, outs) = run(&graph, &[(&inp, &[3])], &[]);
            assert_eq!(outs[0].f64s().len(), 3, "{} on {t}", d.name);
        }
    }
}

#[test]
fn aliases_and_reduction_names_resolve_in_the_table() {
    for (alias, name) in OP_ALIASES {
        let op = Op::from_name(name).unwrap_or_else(|| panic!("{alias} -> {name}: no such op"));
        assert_eq!(Op::from_name(alias), Some(op), "{alias}");
        assert!(
            OPS.iter().all(|d| d.name != *alias),
            "{alias} is a table name"
        );
    }
    // every reduction name traces: the ReduceKinds by name, var and std as builder calls
    for (name, traced) in REDUCTIONS {
        let mut g = GraphBuilder::new();
        let a = g.input(DType::Float64, 1).unwrap();
        let r = match *traced {
            "var" => g.var(a, &Axis::All, 0, false),
            "std" => g.std(a, &Axis::All, 0, false),
            _ => {
                let kind = ReduceKind::from_name(name).unwrap_or_else(|| panic!("{name}"));
                assert_eq!(kind.name(), *traced);
                g.reduce(kind, a, &Axis::All, false)
            }
        };
        assert!(r.is_ok(), "{name}");
    }
    assert_eq!(ReduceKind::from_name("var"), None);
}
