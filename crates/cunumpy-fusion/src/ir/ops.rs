//! THE op table. Every elementwise operation is defined once here: its name, arity, dtype rule,
//! CUDA C expression template and CPU kernel. The graph builder (type checking), the planner,
//! the CUDA code generator and the CPU executor all read this table and nothing else.

use crate::ir::promote::{float_for, promote, ArgType};
use crate::scalar::complex::Complex;
use crate::scalar::elem::{map1, map2, map3, BitElem, Elem, FloatElem, Operand};
use crate::scalar::extra::{ExtraElem, ExtraFloat};
use crate::scalar::vmath;
use cunumpy_core::dtype::{DType, DTypeKind};

/// An elementwise operation (the index of its row in [`OPS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Op {
    Add,
    Sub,
    Mul,
    TrueDiv,
    FloorDiv,
    Mod,
    Pow,
    Neg,
    Pos,
    Abs,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    LogicalNot,
    BitAnd,
    BitOr,
    BitXor,
    Invert,
    LeftShift,
    RightShift,
    Exp,
    Log,
    Log2,
    Log10,
    Expm1,
    Log1p,
    Sqrt,
    Sin,
    Cos,
    Tan,
    Arcsin,
    Arccos,
    Arctan,
    Arctan2,
    Sinh,
    Cosh,
    Tanh,
    Floor,
    Ceil,
    Trunc,
    Rint,
    Sign,
    Square,
    Reciprocal,
    Minimum,
    Maximum,
    Clip,
    Where,
    IsNan,
    IsInf,
    IsFinite,
    Real,
    Imag,
    Conj,
    Arcsinh,
    Arccosh,
    Arctanh,
    Hypot,
    Exp2,
    Cbrt,
    Fmax,
    Fmin,
    Copysign,
    Nextafter,
    Fmod,
    Signbit,
    FrexpMantissa,
    FrexpExponent,
    RoundHalf,
    I0,
}

/// How an operation types its arguments: given the argument dtypes (and weak flags), the
/// dtypes the loop runs on (arguments are cast to these) and the result dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Promote all arguments; bool stays bool (add = or, multiply = and, min/max).
    Arith,
    /// Promote; bool is an error (subtract, negative, positive, sign).
    ArithNoBool,
    /// Promote; bool computes in int8 (floor_divide, remainder, power, square, reciprocal).
    ArithBoolAsInt8,
    /// Promote; integers and bool compute in float64 (true_divide).
    TrueDiv,
    /// Promote the arguments, result bool.
    Compare,
    /// Arguments converted to bool, result bool.
    Logical,
    /// Integers and bool only; promote.
    Bitwise,
    /// Integers only (bool computes in int8); promote.
    Shift,
    /// The float type of the promoted arguments (integers to float64, small ones to float32).
    FloatMath,
    /// Keep the dtype (integers included): abs, floor, ceil, trunc.
    Keep,
    /// Any argument dtype, result bool (isnan, isinf, isfinite).
    Predicate,
    /// `where(cond, x, y)`: cond to bool, x and y promoted.
    Where,
    /// `clip(x, lo, hi)`: all three promoted.
    Clip,
}

pub(crate) type K1<T, U> = fn(Operand<'_, T>, &mut [U]);
pub(crate) type K2<T, U> = fn(Operand<'_, T>, Operand<'_, T>, &mut [U]);
pub(crate) type K3<C, T> = fn(Operand<'_, C>, Operand<'_, T>, Operand<'_, T>, &mut [T]);

macro_rules! kernel_sets {
    ($( $name:ident [$sig:ident] { $($f:ident : $t:ty),* } )*) => {
        $(
            #[derive(Clone, Copy)]
            pub(crate) struct $name { $(pub(crate) $f: $sig<$t>,)* }
        )*
    };
}

// Signatures per class: K1<T, U> / K2<T, U> with U = T or bool.
pub(crate) type Same1<T> = K1<T, T>;
pub(crate) type Same2<T> = K2<T, T>;
pub(crate) type Pred<T> = K1<T, bool>;
pub(crate) type Cmp<T> = K2<T, bool>;
pub(crate) type Sel<T> = K3<bool, T>;
pub(crate) type Tern<T> = K3<T, T>;

kernel_sets! {
    All1 [Same1] { b: bool, i8: i8, u8: u8, i16: i16, u16: u16, i32: i32, u32: u32, i64: i64, u64: u64, f32: f32, f64: f64 }
    All2 [Same2] { b: bool, i8: i8, u8: u8, i16: i16, u16: u16, i32: i32, u32: u32, i64: i64, u64: u64, f32: f32, f64: f64 }
    Cmp2 [Cmp] { b: bool, i8: i8, u8: u8, i16: i16, u16: u16, i32: i32, u32: u32, i64: i64, u64: u64, f32: f32, f64: f64 }
    Pred1 [Pred] { b: bool, i8: i8, u8: u8, i16: i16, u16: u16, i32: i32, u32: u32, i64: i64, u64: u64, f32: f32, f64: f64 }
    Sel3 [Sel] { b: bool, i8: i8, u8: u8, i16: i16, u16: u16, i32: i32, u32: u32, i64: i64, u64: u64, f32: f32, f64: f64 }
    All3 [Tern] { b: bool, i8: i8, u8: u8, i16: i16, u16: u16, i32: i32, u32: u32, i64: i64, u64: u64, f32: f32, f64: f64 }
    Bits1 [Same1] { b: bool, i8: i8, u8: u8, i16: i16, u16: u16, i32: i32, u32: u32, i64: i64, u64: u64 }
    Bits2 [Same2] { b: bool, i8: i8, u8: u8, i16: i16, u16: u16, i32: i32, u32: u32, i64: i64, u64: u64 }
    Float1 [Same1] { f32: f32, f64: f64 }
    Float2 [Same2] { f32: f32, f64: f64 }
    Cx1 [Same1] { c64: C64, c128: C128 }
    Cx2 [Same2] { c64: C64, c128: C128 }
    CxCmp2 [Cmp] { c64: C64, c128: C128 }
    CxPred1 [Pred] { c64: C64, c128: C128 }
    CxSel3 [Sel] { c64: C64, c128: C128 }
}

/// The Rust element types of complex64 and complex128.
pub(crate) type C64 = Complex<f32>;
pub(crate) type C128 = Complex<f64>;

/// Complex-to-real loops (absolute, real, imag).
#[derive(Clone, Copy)]
pub(crate) struct CxReal1 {
    pub(crate) c64: K1<C64, f32>,
    pub(crate) c128: K1<C128, f64>,
}

/// The complex loops of an op (the ops [`Op::signature`] accepts complex arguments for).
#[derive(Clone, Copy)]
pub(crate) enum CxKernel {
    Same1(Cx1),
    Same2(Cx2),
    Cmp2(CxCmp2),
    Pred1(CxPred1),
    Where(CxSel3),
    ToReal(CxReal1),
}

macro_rules! cx1 {
    ($f:expr) => {
        CxKernel::Same1(Cx1 {
            c64: |a, o| map1(a, o, $f),
            c128: |a, o| map1(a, o, $f),
        })
    };
}
macro_rules! cx2 {
    ($f:expr) => {
        CxKernel::Same2(Cx2 {
            c64: |a, b, o| map2(a, b, o, $f),
            c128: |a, b, o| map2(a, b, o, $f),
        })
    };
}
macro_rules! cx_cmp2 {
    ($f:expr) => {
        CxKernel::Cmp2(CxCmp2 {
            c64: |a, b, o| map2(a, b, o, $f),
            c128: |a, b, o| map2(a, b, o, $f),
        })
    };
}
macro_rules! cx_pred1 {
    ($f:expr) => {
        CxKernel::Pred1(CxPred1 {
            c64: |a, o| map1(a, o, $f),
            c128: |a, o| map1(a, o, $f),
        })
    };
}
macro_rules! cx_real1 {
    ($f:expr) => {
        CxKernel::ToReal(CxReal1 {
            c64: |a, o| map1(a, o, $f),
            c128: |a, o| map1(a, o, $f),
        })
    };
}

/// The CPU kernel of an op: slice-level loops, one per element type it supports (each one a
/// monomorphised copy of the op's scalar function).
#[derive(Clone, Copy)]
pub(crate) enum CpuKernel {
    All1(All1),
    All2(All2),
    Cmp2(Cmp2),
    Pred1(Pred1),
    Where(Sel3),
    All3(All3),
    Bits1(Bits1),
    Bits2(Bits2),
    Float1(Float1),
    Float2(Float2),
}

macro_rules! each_type {
    ($ctor:ident, $set:ident, $helper:ident, $f:expr, [$($field:ident),*]) => {
        CpuKernel::$ctor($set { $($field: |a, o| $helper(a, o, $f),)* })
    };
}
macro_rules! each_type2 {
    ($ctor:ident, $set:ident, $f:expr, [$($field:ident),*]) => {
        CpuKernel::$ctor($set { $($field: |a, b, o| map2(a, b, o, $f),)* })
    };
}
macro_rules! each_type3 {
    ($ctor:ident, $set:ident, $f:expr, [$($field:ident),*]) => {
        CpuKernel::$ctor($set { $($field: |a, b, c, o| map3(a, b, c, o, $f),)* })
    };
}
macro_rules! all1 {
    ($f:expr) => {
        each_type!(
            All1,
            All1,
            map1,
            $f,
            [b, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64]
        )
    };
}
macro_rules! pred1 {
    ($f:expr) => {
        each_type!(
            Pred1,
            Pred1,
            map1,
            $f,
            [b, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64]
        )
    };
}
macro_rules! bits1 {
    ($f:expr) => {
        each_type!(
            Bits1,
            Bits1,
            map1,
            $f,
            [b, i8, u8, i16, u16, i32, u32, i64, u64]
        )
    };
}
macro_rules! float1 {
    ($f:expr) => {
        each_type!(Float1, Float1, map1, $f, [f32, f64])
    };
}
macro_rules! all2 {
    ($f:expr) => {
        each_type2!(
            All2,
            All2,
            $f,
            [b, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64]
        )
    };
}
macro_rules! cmp2 {
    ($f:expr) => {
        each_type2!(
            Cmp2,
            Cmp2,
            $f,
            [b, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64]
        )
    };
}
macro_rules! bits2 {
    ($f:expr) => {
        each_type2!(Bits2, Bits2, $f, [b, i8, u8, i16, u16, i32, u32, i64, u64])
    };
}
macro_rules! float2 {
    ($f:expr) => {
        each_type2!(Float2, Float2, $f, [f32, f64])
    };
}
macro_rules! sel3 {
    ($f:expr) => {
        each_type3!(
            Where,
            Sel3,
            $f,
            [b, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64]
        )
    };
}
macro_rules! all3 {
    ($f:expr) => {
        each_type3!(
            All3,
            All3,
            $f,
            [b, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64]
        )
    };
}

/// One row of the op table.
#[derive(Clone, Copy)]
pub struct OpDef {
    pub op: Op,
    /// The NumPy ufunc name (`"add"`, `"arctan2"`, ...).
    pub name: &'static str,
    pub arity: usize,
    pub rule: Rule,
    /// Whether the op is a Python operator (`+`, `<`, `~`, ...): on weak Python scalars only,
    /// its result stays weak, as Python computes it.
    pub operator: bool,
    /// CUDA C expression; `{0}`, `{1}`, `{2}` are the (already cast) arguments. Helpers named
    /// `cn_*` are overloaded for every C type in the source preamble.
    pub cuda: &'static str,
    pub(crate) cpu: CpuKernel,
    /// The complex64/complex128 loops, for the ops defined on complex (the CUDA expression is
    /// the same: the preamble overloads operators and functions for `cn_c64`/`cn_c128`).
    pub(crate) cpu_complex: Option<CxKernel>,
}

macro_rules! row {
    ($op:ident, $name:expr, $arity:expr, $rule:ident, $operator:expr, $cuda:expr, $cpu:expr) => {
        row!($op, $name, $arity, $rule, $operator, $cuda, $cpu, None)
    };
    ($op:ident, $name:expr, $arity:expr, $rule:ident, $operator:expr, $cuda:expr, $cpu:expr,
     $cx:expr) => {
        OpDef {
            op: Op::$op,
            name: $name,
            arity: $arity,
            rule: Rule::$rule,
            operator: $operator,
            cuda: $cuda,
            cpu: $cpu,
            cpu_complex: $cx,
        }
    };
}

/// The op table, indexed by `Op as usize`.
// The comparison rows are instantiated for bool too, where `a < b` is what NumPy means.
#[allow(clippy::bool_comparison)]
pub static OPS: [OpDef; 76] = [
    row!(
        Add,
        "add",
        2,
        Arith,
        true,
        "({0} + {1})",
        all2!(|a, b| a.add_(b)),
        Some(cx2!(|a, b| a.add(b)))
    ),
    row!(
        Sub,
        "subtract",
        2,
        ArithNoBool,
        true,
        "({0} - {1})",
        all2!(|a, b| a.sub_(b)),
        Some(cx2!(|a, b| a.sub(b)))
    ),
    row!(
        Mul,
        "multiply",
        2,
        Arith,
        true,
        "({0} * {1})",
        all2!(|a, b| a.mul_(b)),
        Some(cx2!(|a, b| a.mul(b)))
    ),
    row!(
        TrueDiv,
        "true_divide",
        2,
        TrueDiv,
        true,
        "({0} / {1})",
        float2!(|a, b| a.truediv_(b)),
        Some(cx2!(|a, b| a.div(b)))
    ),
    row!(
        FloorDiv,
        "floor_divide",
        2,
        ArithBoolAsInt8,
        true,
        "cn_floordiv({0}, {1})",
        all2!(|a, b| a.floordiv_(b))
    ),
    row!(
        Mod,
        "remainder",
        2,
        ArithBoolAsInt8,
        true,
        "cn_mod({0}, {1})",
        all2!(|a, b| a.rem_(b))
    ),
    row!(
        Pow,
        "power",
        2,
        ArithBoolAsInt8,
        true,
        "cn_pow({0}, {1})",
        all2!(|a, b| a.pow_(b)),
        Some(cx2!(|a, b| a.pow(b)))
    ),
    row!(
        Neg,
        "negative",
        1,
        ArithNoBool,
        true,
        "(-{0})",
        all1!(|a| a.neg_()),
        Some(cx1!(|a| a.neg()))
    ),
    row!(
        Pos,
        "positive",
        1,
        ArithNoBool,
        true,
        "(+{0})",
        all1!(|a| a),
        Some(cx1!(|a| a))
    ),
    row!(
        Abs,
        "absolute",
        1,
        Keep,
        true,
        "cn_abs({0})",
        all1!(|a| a.abs_()),
        Some(cx_real1!(|a| a.abs()))
    ),
    row!(
        Eq,
        "equal",
        2,
        Compare,
        true,
        "({0} == {1})",
        cmp2!(|a, b| a == b),
        Some(cx_cmp2!(|a, b| a == b))
    ),
    row!(
        Ne,
        "not_equal",
        2,
        Compare,
        true,
        "({0} != {1})",
        cmp2!(|a, b| a != b),
        Some(cx_cmp2!(|a, b| a != b))
    ),
    row!(
        Lt,
        "less",
        2,
        Compare,
        true,
        "({0} < {1})",
        cmp2!(|a, b| a < b),
        Some(cx_cmp2!(|a, b| a.lt(b)))
    ),
    row!(
        Le,
        "less_equal",
        2,
        Compare,
        true,
        "({0} <= {1})",
        cmp2!(|a, b| a <= b),
        Some(cx_cmp2!(|a, b| a.le(b)))
    ),
    row!(
        Gt,
        "greater",
        2,
        Compare,
        true,
        "({0} > {1})",
        cmp2!(|a, b| a > b),
        Some(cx_cmp2!(|a, b| a.gt(b)))
    ),
    row!(
        Ge,
        "greater_equal",
        2,
        Compare,
        true,
        "({0} >= {1})",
        cmp2!(|a, b| a >= b),
        Some(cx_cmp2!(|a, b| a.ge(b)))
    ),
    row!(
        LogicalAnd,
        "logical_and",
        2,
        Logical,
        false,
        "({0} && {1})",
        bits2!(|a, b| a.and_(b))
    ),
    row!(
        LogicalOr,
        "logical_or",
        2,
        Logical,
        false,
        "({0} || {1})",
        bits2!(|a, b| a.or_(b))
    ),
    row!(
        LogicalXor,
        "logical_xor",
        2,
        Logical,
        false,
        "({0} != {1})",
        bits2!(|a, b| a.xor_(b))
    ),
    row!(
        LogicalNot,
        "logical_not",
        1,
        Logical,
        false,
        "(!{0})",
        bits1!(|a| a.not_())
    ),
    row!(
        BitAnd,
        "bitwise_and",
        2,
        Bitwise,
        true,
        "({0} & {1})",
        bits2!(|a, b| a.and_(b))
    ),
    row!(
        BitOr,
        "bitwise_or",
        2,
        Bitwise,
        true,
        "({0} | {1})",
        bits2!(|a, b| a.or_(b))
    ),
    row!(
        BitXor,
        "bitwise_xor",
        2,
        Bitwise,
        true,
        "({0} ^ {1})",
        bits2!(|a, b| a.xor_(b))
    ),
    row!(
        Invert,
        "invert",
        1,
        Bitwise,
        true,
        "cn_invert({0})",
        bits1!(|a| a.not_())
    ),
    row!(
        LeftShift,
        "left_shift",
        2,
        Shift,
        true,
        "cn_shl({0}, {1})",
        bits2!(|a, b| a.shl_(b))
    ),
    row!(
        RightShift,
        "right_shift",
        2,
        Shift,
        true,
        "cn_shr({0}, {1})",
        bits2!(|a, b| a.shr_(b))
    ),
    row!(
        Exp,
        "exp",
        1,
        FloatMath,
        false,
        "exp({0})",
        CpuKernel::Float1(Float1 {
            f32: vmath::exp_f32,
            f64: vmath::exp_f64
        }),
        Some(cx1!(|a| a.exp()))
    ),
    row!(
        Log,
        "log",
        1,
        FloatMath,
        false,
        "log({0})",
        float1!(|a| a.ln_()),
        Some(cx1!(|a| a.ln()))
    ),
    row!(
        Log2,
        "log2",
        1,
        FloatMath,
        false,
        "log2({0})",
        float1!(|a| a.log2_()),
        Some(cx1!(|a| a.log2()))
    ),
    row!(
        Log10,
        "log10",
        1,
        FloatMath,
        false,
        "log10({0})",
        float1!(|a| a.log10_()),
        Some(cx1!(|a| a.log10()))
    ),
    row!(
        Expm1,
        "expm1",
        1,
        FloatMath,
        false,
        "expm1({0})",
        float1!(|a| a.expm1_()),
        Some(cx1!(|a| a.expm1()))
    ),
    row!(
        Log1p,
        "log1p",
        1,
        FloatMath,
        false,
        "log1p({0})",
        float1!(|a| a.ln1p_()),
        Some(cx1!(|a| a.ln_1p()))
    ),
    row!(
        Sqrt,
        "sqrt",
        1,
        FloatMath,
        false,
        "sqrt({0})",
        float1!(|a| a.sqrt_()),
        Some(cx1!(|a| a.sqrt()))
    ),
    row!(
        Sin,
        "sin",
        1,
        FloatMath,
        false,
        "sin({0})",
        CpuKernel::Float1(Float1 {
            f32: vmath::sin_f32,
            f64: vmath::sin_f64
        }),
        Some(cx1!(|a| a.sin()))
    ),
    row!(
        Cos,
        "cos",
        1,
        FloatMath,
        false,
        "cos({0})",
        CpuKernel::Float1(Float1 {
            f32: vmath::cos_f32,
            f64: vmath::cos_f64
        }),
        Some(cx1!(|a| a.cos()))
    ),
    row!(
        Tan,
        "tan",
        1,
        FloatMath,
        false,
        "tan({0})",
        float1!(|a| a.tan_()),
        Some(cx1!(|a| a.tan()))
    ),
    row!(
        Arcsin,
        "arcsin",
        1,
        FloatMath,
        false,
        "asin({0})",
        float1!(|a| a.asin_()),
        Some(cx1!(|a| a.asin()))
    ),
    row!(
        Arccos,
        "arccos",
        1,
        FloatMath,
        false,
        "acos({0})",
        float1!(|a| a.acos_()),
        Some(cx1!(|a| a.acos()))
    ),
    row!(
        Arctan,
        "arctan",
        1,
        FloatMath,
        false,
        "atan({0})",
        float1!(|a| a.atan_()),
        Some(cx1!(|a| a.atan()))
    ),
    row!(
        Arctan2,
        "arctan2",
        2,
        FloatMath,
        false,
        "atan2({0}, {1})",
        float2!(|a, b| a.atan2_(b))
    ),
    row!(
        Sinh,
        "sinh",
        1,
        FloatMath,
        false,
        "sinh({0})",
        float1!(|a| a.sinh_()),
        Some(cx1!(|a| a.sinh()))
    ),
    row!(
        Cosh,
        "cosh",
        1,
        FloatMath,
        false,
        "cosh({0})",
        float1!(|a| a.cosh_()),
        Some(cx1!(|a| a.cosh()))
    ),
    row!(
        Tanh,
        "tanh",
        1,
        FloatMath,
        false,
        "tanh({0})",
        float1!(|a| a.tanh_()),
        Some(cx1!(|a| a.tanh()))
    ),
    row!(
        Floor,
        "floor",
        1,
        Keep,
        false,
        "cn_floor({0})",
        all1!(|a| a.floor_())
    ),
    row!(
        Ceil,
        "ceil",
        1,
        Keep,
        false,
        "cn_ceil({0})",
        all1!(|a| a.ceil_())
    ),
    row!(
        Trunc,
        "trunc",
        1,
        Keep,
        false,
        "cn_trunc({0})",
        all1!(|a| a.trunc_())
    ),
    row!(
        Rint,
        "rint",
        1,
        FloatMath,
        false,
        "rint({0})",
        float1!(|a| a.rint_())
    ),
    row!(
        Sign,
        "sign",
        1,
        ArithNoBool,
        false,
        "cn_sign({0})",
        all1!(|a| a.sign_())
    ),
    row!(
        Square,
        "square",
        1,
        ArithBoolAsInt8,
        false,
        "({0} * {0})",
        all1!(|a| a.mul_(a)),
        Some(cx1!(|a| a.mul(a)))
    ),
    row!(
        Reciprocal,
        "reciprocal",
        1,
        ArithBoolAsInt8,
        false,
        "cn_reciprocal({0})",
        all1!(|a| a.reciprocal_()),
        Some(cx1!(|a| a.reciprocal_()))
    ),
    row!(
        Minimum,
        "minimum",
        2,
        Arith,
        false,
        "cn_min({0}, {1})",
        all2!(|a, b| a.min_(b)),
        Some(cx2!(|a, b| a.minimum(b)))
    ),
    row!(
        Maximum,
        "maximum",
        2,
        Arith,
        false,
        "cn_max({0}, {1})",
        all2!(|a, b| a.max_(b)),
        Some(cx2!(|a, b| a.maximum(b)))
    ),
    row!(
        Clip,
        "clip",
        3,
        Clip,
        false,
        "cn_min(cn_max({0}, {1}), {2})",
        all3!(|a, lo, hi| a.max_(lo).min_(hi))
    ),
    row!(
        Where,
        "where",
        3,
        Where,
        false,
        "({0} ? {1} : {2})",
        sel3!(|c, x, y| if c { x } else { y }),
        Some(CxKernel::Where(CxSel3 {
            c64: |c, x, y, o| map3(c, x, y, o, |c, x, y| if c { x } else { y }),
            c128: |c, x, y, o| map3(c, x, y, o, |c, x, y| if c { x } else { y })
        }))
    ),
    row!(
        IsNan,
        "isnan",
        1,
        Predicate,
        false,
        "cn_isnan({0})",
        pred1!(|a| a.is_nan_()),
        Some(cx_pred1!(|a| a.is_nan()))
    ),
    row!(
        IsInf,
        "isinf",
        1,
        Predicate,
        false,
        "cn_isinf({0})",
        pred1!(|a| a.is_inf_()),
        Some(cx_pred1!(|a| a.is_inf()))
    ),
    row!(
        IsFinite,
        "isfinite",
        1,
        Predicate,
        false,
        "cn_isfinite({0})",
        pred1!(|a| a.is_finite_()),
        Some(cx_pred1!(|a| a.is_finite()))
    ),
    // real and conjugate of a real dtype are the value itself (the graph builder returns the
    // argument); imag of a real dtype is zero
    row!(
        Real,
        "real",
        1,
        Keep,
        false,
        "cn_real({0})",
        all1!(|a| a),
        Some(cx_real1!(|a| a.re))
    ),
    row!(
        Imag,
        "imag",
        1,
        Keep,
        false,
        "cn_imag({0})",
        all1!(|_a| Elem::from_i64(0)),
        Some(cx_real1!(|a| a.im))
    ),
    row!(
        Conj,
        "conjugate",
        1,
        Keep,
        false,
        "cn_conj({0})",
        all1!(|a| a),
        Some(cx1!(|a| a.conj()))
    ),
    row!(
        Arcsinh,
        "arcsinh",
        1,
        FloatMath,
        false,
        "asinh({0})",
        float1!(|a| a.asinh()),
        Some(cx1!(|a| a.asinh()))
    ),
    row!(
        Arccosh,
        "arccosh",
        1,
        FloatMath,
        false,
        "acosh({0})",
        float1!(|a| a.acosh()),
        Some(cx1!(|a| a.acosh()))
    ),
    row!(
        Arctanh,
        "arctanh",
        1,
        FloatMath,
        false,
        "atanh({0})",
        float1!(|a| a.atanh()),
        Some(cx1!(|a| a.atanh()))
    ),
    row!(
        Hypot,
        "hypot",
        2,
        FloatMath,
        false,
        "hypot({0}, {1})",
        float2!(|a, b| a.hypot(b))
    ),
    row!(
        Exp2,
        "exp2",
        1,
        FloatMath,
        false,
        "exp2({0})",
        float1!(|a| a.exp2()),
        Some(cx1!(|a| a.exp2()))
    ),
    row!(
        Cbrt,
        "cbrt",
        1,
        FloatMath,
        false,
        "cbrt({0})",
        float1!(|a| a.cbrt())
    ),
    row!(
        Fmax,
        "fmax",
        2,
        Arith,
        false,
        "cn_fmax({0}, {1})",
        all2!(|a, b| a.fmax_(b)),
        Some(cx2!(|a, b| a.fmax(b)))
    ),
    row!(
        Fmin,
        "fmin",
        2,
        Arith,
        false,
        "cn_fmin({0}, {1})",
        all2!(|a, b| a.fmin_(b)),
        Some(cx2!(|a, b| a.fmin(b)))
    ),
    row!(
        Copysign,
        "copysign",
        2,
        FloatMath,
        false,
        "copysign({0}, {1})",
        float2!(|a, b| a.copysign(b))
    ),
    row!(
        Nextafter,
        "nextafter",
        2,
        FloatMath,
        false,
        "nextafter({0}, {1})",
        float2!(|a, b| a.nextafter_(b))
    ),
    row!(
        Fmod,
        "fmod",
        2,
        ArithBoolAsInt8,
        false,
        "cn_fmod({0}, {1})",
        all2!(|a, b| a.fmod_(b))
    ),
    row!(
        Signbit,
        "signbit",
        1,
        Predicate,
        false,
        "cn_signbit({0})",
        pred1!(|a| a.signbit_())
    ),
    // the two results of `frexp` (not NumPy names: `xp.frexp` traces both)
    row!(
        FrexpMantissa,
        "_frexp_mantissa",
        1,
        FloatMath,
        false,
        "cn_frexp_m({0})",
        float1!(|a| a.frexp_().0)
    ),
    row!(
        FrexpExponent,
        "_frexp_exponent",
        1,
        FloatMath,
        false,
        "cn_frexp_e({0})",
        float1!(|a| a.frexp_().1)
    ),
    // a float32 value rounded to the nearest float16 one: float16 values are computed in
    // float32 and rounded after every operation, as NumPy and CUDA's `__half` do
    row!(
        RoundHalf,
        "_round_float16",
        1,
        FloatMath,
        false,
        "cn_round_half({0})",
        float1!(|a| a.round_half_())
    ),
    // the modified Bessel function of the first kind, order 0 (`numpy.i0`, not a ufunc there)
    row!(
        I0,
        "i0",
        1,
        FloatMath,
        false,
        "cn_i0({0})",
        float1!(|a| a.i0_())
    ),
];

/// The NumPy and array-API spellings of table ops that a fused function may call as
/// `xp.<alias>`: (alias, table name). The Python tracer takes this list from here.
pub const OP_ALIASES: &[(&str, &str)] = &[
    ("divide", "true_divide"),
    ("mod", "remainder"),
    ("abs", "absolute"),
    ("pow", "power"),
    ("bitwise_not", "invert"),
    ("bitwise_invert", "invert"),
    ("bitwise_left_shift", "left_shift"),
    ("bitwise_right_shift", "right_shift"),
    ("asin", "arcsin"),
    ("acos", "arccos"),
    ("atan", "arctan"),
    ("atan2", "arctan2"),
    ("conj", "conjugate"),
    ("asinh", "arcsinh"),
    ("acosh", "arccosh"),
    ("atanh", "arctanh"),
];

/// Short operator names the graph builder also accepts (no NumPy function has them, so
/// `xp.neg` stays unknown in a fused function).
const OPERATOR_NAMES: &[(&str, &str)] = &[
    ("neg", "negative"),
    ("pos", "positive"),
    ("eq", "equal"),
    ("ne", "not_equal"),
    ("lt", "less"),
    ("le", "less_equal"),
    ("gt", "greater"),
    ("ge", "greater_equal"),
];

impl Op {
    /// Whether the op calls a math-library function (`exp`, `sin`, `log`, `pow`, ...): a long
    /// computation per element, and not exact across implementations.
    pub(crate) fn calls_math_library(self) -> bool {
        matches!(
            self,
            Op::Exp
                | Op::Log
                | Op::Log2
                | Op::Log10
                | Op::Expm1
                | Op::Log1p
                | Op::Sin
                | Op::Cos
                | Op::Tan
                | Op::Arcsin
                | Op::Arccos
                | Op::Arctan
                | Op::Arctan2
                | Op::Sinh
                | Op::Cosh
                | Op::Tanh
                | Op::Pow
                | Op::Arcsinh
                | Op::Arccosh
                | Op::Arctanh
                | Op::Hypot
                | Op::Exp2
                | Op::Cbrt
                | Op::I0
        )
    }

    /// Every op, in table order.
    pub fn all() -> impl Iterator<Item = Op> {
        OPS.iter().map(|d| d.op)
    }

    /// The op's row of the table.
    pub fn def(self) -> &'static OpDef {
        &OPS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// Looks an op up by its table name, a NumPy or array-API alias ([`OP_ALIASES`]:
    /// `"divide"`, `"mod"`, `"abs"`, ...) or a short operator name (`"neg"`, `"eq"`, ...).
    pub fn from_name(name: &str) -> Option<Op> {
        let canonical = OP_ALIASES
            .iter()
            .chain(OPERATOR_NAMES)
            .find(|(alias, _)| *alias == name)
            .map_or(name, |(_, table_name)| table_name);
        OPS.iter().find(|d| d.name == canonical).map(|d| d.op)
    }

    /// The loop dtypes of the arguments and the result dtype for these argument types, or a
    /// message saying why NumPy has no loop for them.
    pub fn signature(self, args: &[ArgType]) -> Result<(Vec<DType>, DType), String> {
        let d = self.def();
        if args.len() != d.arity {
            return Err(format!(
                "takes {} argument(s), {} given",
                d.arity,
                args.len()
            ));
        }
        let all_same = |t: DType| (vec![t; args.len()], t);
        let common = || promote(args);
        if args.iter().any(|a| a.dtype.kind() == DTypeKind::Complex) {
            return self.complex_signature(args);
        }
        match d.rule {
            Rule::Arith => Ok(all_same(common())),
            Rule::ArithNoBool => {
                let t = common();
                if t == DType::Bool {
                    Err("is not supported for bool (use logical_xor / logical_not)".into())
                } else {
                    Ok(all_same(t))
                }
            }
            Rule::ArithBoolAsInt8 => {
                let t = common();
                Ok(all_same(if t == DType::Bool { DType::Int8 } else { t }))
            }
            Rule::TrueDiv => {
                let t = common();
                Ok(all_same(match t.kind() {
                    DTypeKind::Float => t,
                    _ => DType::Float64,
                }))
            }
            Rule::Compare => {
                let t = common();
                Ok((vec![t; args.len()], DType::Bool))
            }
            Rule::Logical => Ok((vec![DType::Bool; args.len()], DType::Bool)),
            Rule::Bitwise | Rule::Shift => {
                let t = common();
                match t.kind() {
                    DTypeKind::Bool if d.rule == Rule::Shift => Ok(all_same(DType::Int8)),
                    DTypeKind::Bool | DTypeKind::Signed | DTypeKind::Unsigned => Ok(all_same(t)),
                    _ => Err(format!("is only defined for integers and bool, not {t}")),
                }
            }
            // numpy.i0 computes integers and bool in float64 (it is not a ufunc)
            Rule::FloatMath if self == Op::I0 && common().kind() != DTypeKind::Float => {
                Ok(all_same(DType::Float64))
            }
            Rule::FloatMath => Ok(all_same(float_for(common()))),
            Rule::Keep => Ok(all_same(common())),
            Rule::Predicate => {
                let t = common();
                Ok((vec![t; args.len()], DType::Bool))
            }
            Rule::Where => {
                let t = promote(&args[1..]);
                Ok((vec![DType::Bool, t, t], t))
            }
            Rule::Clip => Ok(all_same(common())),
        }
    }

    /// Whether NumPy's loop for this op is implemented for complex arguments here.
    pub fn supports_complex(self) -> bool {
        self.def().cpu_complex.is_some()
    }

    /// The signature when an argument is complex: the ops with complex loops (see
    /// [`Op::supports_complex`]); absolute, real and imag give the real dtype of the same
    /// precision.
    fn complex_signature(self, args: &[ArgType]) -> Result<(Vec<DType>, DType), String> {
        let n = args.len();
        if self == Op::Where {
            if args[0].dtype.kind() == DTypeKind::Complex {
                return Err(format!(
                    "does not take a complex condition ({}); compare it first, e.g. `c != 0`",
                    args[0].dtype
                ));
            }
            let t = promote(&args[1..]);
            return Ok((vec![DType::Bool, t, t], t));
        }
        let t = promote(args);
        if !self.supports_complex() {
            return Err(format!(
                "is not supported for complex dtypes (promoted dtype {t})"
            ));
        }
        Ok(match self {
            Op::Eq
            | Op::Ne
            | Op::Lt
            | Op::Le
            | Op::Gt
            | Op::Ge
            | Op::IsNan
            | Op::IsInf
            | Op::IsFinite => (vec![t; n], DType::Bool),
            Op::Abs | Op::Real | Op::Imag => (vec![t; n], real_of(t)),
            _ => (vec![t; n], t),
        })
    }
}

/// The real dtype of a complex dtype's parts (other dtypes: themselves).
pub(crate) fn real_of(t: DType) -> DType {
    match t {
        DType::Complex64 => DType::Float32,
        DType::Complex128 => DType::Float64,
        other => other,
    }
}
