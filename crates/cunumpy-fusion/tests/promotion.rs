//! NumPy 2 promotion: `np.promote_types` and NEP 50 weak Python scalars, and the dtype rules
//! of the op table (results checked against NumPy 2.x behaviour).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use cunumpy_fusion::*;
use DType::*;

#[test]
fn promote_types_matches_numpy() {
    let cases = [
        (Bool, Bool, Bool),
        (Bool, Int8, Int8),
        (Bool, Float32, Float32),
        (Int8, UInt8, Int16),
        (Int16, UInt16, Int32),
        (Int32, UInt32, Int64),
        (Int64, UInt64, Float64),
        (UInt8, Int32, Int32),
        (UInt32, Int8, Int64),
        (Int8, Int64, Int64),
        (UInt8, UInt64, UInt64),
        (Int8, Float32, Float32),
        (UInt8, Float32, Float32),
        (Int16, Float32, Float32),
        (UInt16, Float32, Float32),
        (Int32, Float32, Float64),
        (Int64, Float32, Float64),
        (UInt64, Float32, Float64),
        (Int64, Float64, Float64),
        (Float32, Float64, Float64),
        (Float32, Complex64, Complex64),
        (Float64, Complex64, Complex128),
        (Int32, Complex64, Complex128),
        (Int16, Complex64, Complex64),
    ];
    for (a, b, want) in cases {
        assert_eq!(promote_types(a, b), want, "{a} + {b}");
        assert_eq!(promote_types(b, a), want, "{b} + {a}");
    }
}

#[test]
fn nep50_weak_python_scalars() {
    let s = ArgType::strong;
    let w = ArgType::weak;
    let cases = [
        // float32_array * 2.5 stays float32
        (vec![s(Float32), w(Float64)], Float32),
        // int array + python float -> float64
        (vec![s(Int32), w(Float64)], Float64),
        (vec![s(Int8), w(Float64)], Float64),
        // int8 array + python int stays int8
        (vec![s(Int8), w(Int64)], Int8),
        (vec![s(UInt8), w(Int64)], UInt8),
        // bool array + python int -> int64; bool array + python bool -> bool
        (vec![s(Bool), w(Int64)], Int64),
        (vec![s(Bool), w(Bool)], Bool),
        (vec![s(Bool), w(Float64)], Float64),
        // float32 + python complex -> complex64
        (vec![s(Float32), w(Complex128)], Complex64),
        (vec![s(Float64), w(Complex128)], Complex128),
        // numpy scalars are strong
        (vec![s(Float32), s(Float64)], Float64),
        (vec![s(Int8), s(Int64)], Int64),
        // python scalars alone
        (vec![w(Int64), w(Float64)], Float64),
        (vec![w(Int64), w(Int64)], Int64),
        // three arguments
        (vec![s(Float32), w(Int64), w(Float64)], Float32),
    ];
    for (args, want) in cases {
        assert_eq!(promote(&args), want, "{args:?}");
    }
}

fn result(op: Op, args: &[(DType, bool)]) -> std::result::Result<(DType, bool), String> {
    let mut g = GraphBuilder::new();
    let vals: Vec<Value> = args
        .iter()
        .map(|&(d, weak)| {
            if weak {
                g.scalar(d, true).unwrap()
            } else {
                g.input(d, 1).unwrap()
            }
        })
        .collect();
    let v = g.op(op, &vals).map_err(|e| e.to_string())?;
    let i = g.info(v).unwrap();
    Ok((i.dtype, i.weak))
}

#[test]
fn op_dtype_rules() {
    let a = |d| (d, false);
    let py = |d| (d, true);
    type Case = (Op, Vec<(DType, bool)>, DType);
    let cases: Vec<Case> = vec![
        (Op::TrueDiv, vec![a(Int64), a(Int64)], Float64),
        (Op::TrueDiv, vec![a(Int8), a(Int8)], Float64),
        (Op::TrueDiv, vec![a(Float32), py(Int64)], Float32),
        (Op::TrueDiv, vec![a(Bool), a(Bool)], Float64),
        (Op::FloorDiv, vec![a(Int32), py(Int64)], Int32),
        (Op::FloorDiv, vec![a(Bool), a(Bool)], Int8),
        (Op::Pow, vec![a(Float32), py(Int64)], Float32),
        (Op::Pow, vec![a(Int16), py(Int64)], Int16),
        (Op::Add, vec![a(Bool), a(Bool)], Bool),
        (Op::Mul, vec![a(UInt8), a(Int8)], Int16),
        (Op::Lt, vec![a(Float32), py(Float64)], Bool),
        (Op::Eq, vec![a(Int64), a(UInt64)], Bool),
        (Op::LogicalAnd, vec![a(Float64), a(Int8)], Bool),
        (Op::BitAnd, vec![a(Bool), a(Bool)], Bool),
        (Op::BitOr, vec![a(UInt8), py(Int64)], UInt8),
        (Op::LeftShift, vec![a(Bool), a(Bool)], Int8),
        (Op::Invert, vec![a(Bool)], Bool),
        (Op::Exp, vec![a(Float32)], Float32),
        (Op::Exp, vec![a(Int64)], Float64),
        (Op::Exp, vec![a(Int32)], Float64),
        (Op::Sqrt, vec![a(Int16)], Float32),
        // NumPy would give float16 here; cunumpy has no float16 (documented)
        (Op::Sqrt, vec![a(Int8)], Float32),
        (Op::Sin, vec![py(Float64)], Float64),
        (Op::Arctan2, vec![a(Float32), a(Int8)], Float32),
        (Op::Floor, vec![a(Int32)], Int32),
        (Op::Rint, vec![a(Int32)], Float64),
        (Op::Abs, vec![a(Int8)], Int8),
        (Op::Sign, vec![a(Float32)], Float32),
        (Op::Square, vec![a(Bool)], Int8),
        (Op::Minimum, vec![a(Int8), a(Float32)], Float32),
        (Op::Clip, vec![a(Float32), py(Int64), py(Float64)], Float32),
        (Op::Where, vec![a(Bool), a(Int32), py(Float64)], Float64),
        (Op::Where, vec![a(Bool), a(Float32), py(Int64)], Float32),
        (Op::IsNan, vec![a(Int64)], Bool),
    ];
    for (op, args, want) in cases {
        let (got, _) = result(op, &args).unwrap();
        assert_eq!(got, want, "{}({args:?})", op.name());
    }
    // weak results: operators on Python scalars only; ufuncs make a strong float64
    assert_eq!(
        result(Op::Mul, &[py(Float64), py(Int64)]).unwrap(),
        (Float64, true)
    );
    assert_eq!(result(Op::Exp, &[py(Float64)]).unwrap(), (Float64, false));
    // rejections name the op
    for (op, args) in [
        (Op::Sub, vec![a(Bool), a(Bool)]),
        (Op::Neg, vec![a(Bool)]),
        (Op::BitAnd, vec![a(Float64), a(Int8)]),
        (Op::Invert, vec![a(Float32)]),
    ] {
        let e = result(op, &args).unwrap_err();
        assert!(e.contains(op.name()), "{e}");
    }
    // complex inputs are supported; the operations without a complex loop are refused
    let mut g = GraphBuilder::new();
    let z = g.input(Complex64, 1).unwrap();
    let e = g.reduce(ReduceKind::Any, z, &Axis::All, false).unwrap_err();
    assert!(e.to_string().contains("complex64"), "{e}");
    // numpy.i0 (not a ufunc) keeps a float dtype and computes integers and bool in float64
    assert_eq!(result(Op::I0, &[a(Float32)]).unwrap(), (Float32, false));
    assert_eq!(result(Op::I0, &[a(Int8)]).unwrap(), (Float64, false));
    assert_eq!(result(Op::I0, &[a(Bool)]).unwrap(), (Float64, false));
    let e = result(Op::I0, &[a(Complex128)]).unwrap_err();
    assert!(e.contains("i0") && e.contains("complex"), "{e}");
}

#[test]
fn reduction_dtypes() {
    let cases = [
        (ReduceKind::Sum, Bool, Int64),
        (ReduceKind::Sum, Int8, Int64),
        (ReduceKind::Sum, UInt16, UInt64),
        (ReduceKind::Sum, Float32, Float32),
        (ReduceKind::Prod, Int32, Int64),
        (ReduceKind::Max, Int8, Int8),
        (ReduceKind::Any, Float64, Bool),
        (ReduceKind::Mean { ddof: 0 }, Int32, Float64),
        (ReduceKind::Mean { ddof: 0 }, Float32, Float32),
    ];
    for (k, arg, want) in cases {
        assert_eq!(k.types(arg).1, want, "{k:?}({arg})");
    }
    let mut g = GraphBuilder::new();
    let x = g.input(Int16, 2).unwrap();
    let v = g.var(x, &Axis::All, 0, false).unwrap();
    assert_eq!(g.info(v).unwrap().dtype, Float64);
    let e = g
        .reduce(ReduceKind::Sum, x, &Axis::One(2), false)
        .unwrap_err();
    assert!(e.to_string().contains("`sum`") && e.to_string().contains("axis 2"));
    let e = g
        .reduce(ReduceKind::Sum, x, &Axis::Many(vec![0, -2]), false)
        .unwrap_err();
    assert!(e.to_string().contains("repeated"));
}
