//! NumPy 2 type promotion (NEP 50): `promote_types` for two strong dtypes, and the n-ary
//! `result_type` where Python scalars are "weak" (they take the array's dtype when their kind
//! fits: `float32_array * 2.5` stays float32, `int8_array + 1` stays int8, while
//! `int_array + 2.5` becomes float64).

use cunumpy_core::dtype::{DType, DTypeKind};

/// The type of one argument as promotion sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArgType {
    pub dtype: DType,
    /// A Python scalar (`int`, `float`, `bool`, `complex`), as opposed to an array or a NumPy
    /// scalar.
    pub weak: bool,
}

impl ArgType {
    pub fn strong(dtype: DType) -> Self {
        ArgType { dtype, weak: false }
    }
    pub fn weak(dtype: DType) -> Self {
        ArgType { dtype, weak: true }
    }
}

fn kind_rank(k: DTypeKind) -> u8 {
    match k {
        DTypeKind::Bool => 0,
        DTypeKind::Signed | DTypeKind::Unsigned => 1,
        DTypeKind::Float => 2,
        DTypeKind::Complex => 3,
    }
}

fn bits(d: DType) -> usize {
    d.itemsize() * 8
}

fn signed_of_bits(b: usize) -> DType {
    match b {
        8 => DType::Int8,
        16 => DType::Int16,
        32 => DType::Int32,
        _ => DType::Int64,
    }
}

/// The smallest float that holds every value of an integer (or bool) type exactly enough for
/// NumPy's rules: 8/16-bit integers fit float32 (NumPy would pick float16 for 8-bit ones, which
/// cunumpy does not have), wider ones need float64.
fn float_holding(d: DType) -> DType {
    match d.kind() {
        DTypeKind::Float | DTypeKind::Complex => d,
        _ if d.itemsize() <= 2 => DType::Float32,
        _ => DType::Float64,
    }
}

/// NumPy's `np.promote_types(a, b)` for the supported dtypes.
pub fn promote_types(a: DType, b: DType) -> DType {
    use DTypeKind::*;
    if a == b {
        return a;
    }
    match (a.kind(), b.kind()) {
        (Bool, _) => b,
        (_, Bool) => a,
        (Signed, Signed) | (Unsigned, Unsigned) => {
            if a.itemsize() >= b.itemsize() {
                a
            } else {
                b
            }
        }
        (Signed, Unsigned) | (Unsigned, Signed) => {
            let (s, u) = if a.kind() == Signed { (a, b) } else { (b, a) };
            if bits(s) > bits(u) {
                s
            } else if bits(u) >= 64 {
                DType::Float64
            } else {
                signed_of_bits(bits(u) * 2)
            }
        }
        (Float, Float) => {
            if a.itemsize() >= b.itemsize() {
                a
            } else {
                b
            }
        }
        (Complex, Complex) => {
            if a.itemsize() >= b.itemsize() {
                a
            } else {
                b
            }
        }
        (Float, Complex) | (Complex, Float) => {
            let (f, c) = if a.kind() == Float { (a, b) } else { (b, a) };
            if f == DType::Float64 {
                DType::Complex128
            } else {
                c
            }
        }
        (Signed | Unsigned, Float | Complex) => promote_types(float_holding(a), b),
        (Float | Complex, Signed | Unsigned) => promote_types(a, float_holding(b)),
    }
}

/// The default dtype of a weak Python scalar of the given kind (bool, int64, float64,
/// complex128).
fn default_of(k: DTypeKind) -> DType {
    match k {
        DTypeKind::Bool => DType::Bool,
        DTypeKind::Signed | DTypeKind::Unsigned => DType::Int64,
        DTypeKind::Float => DType::Float64,
        DTypeKind::Complex => DType::Complex128,
    }
}

/// NEP 50 `result_type` of several arguments (arrays, NumPy scalars and weak Python scalars).
pub fn promote(args: &[ArgType]) -> DType {
    let strong = args
        .iter()
        .filter(|a| !a.weak)
        .map(|a| a.dtype)
        .reduce(promote_types);
    let weak_kind = args
        .iter()
        .filter(|a| a.weak)
        .map(|a| a.dtype.kind())
        .max_by_key(|k| kind_rank(*k));
    match (strong, weak_kind) {
        (Some(s), None) => s,
        (None, Some(w)) => default_of(w),
        (None, None) => DType::Float64,
        (Some(s), Some(w)) => {
            if kind_rank(w) <= kind_rank(s.kind()) {
                s
            } else {
                match (w, s) {
                    // float32 + 1j -> complex64
                    (DTypeKind::Complex, DType::Float32) => DType::Complex64,
                    _ => default_of(w),
                }
            }
        }
    }
}

/// Whether the result of an op over these arguments is itself weak: only Python operators on
/// Python scalars alone (`k * 2` with `k` a Python float stays a Python float).
pub fn result_is_weak(operator: bool, args: &[ArgType]) -> bool {
    operator && !args.is_empty() && args.iter().all(|a| a.weak)
}

/// The float type a math function computes in for this (promoted) dtype.
pub fn float_for(d: DType) -> DType {
    float_holding(d)
}
