//! The value of a scalar parameter at call time, as the caller gives it (a Python bool, int,
//! float or complex), before it is converted to the dtype the plan declared for it. It is
//! core's one scalar type (`cunumpy_core::args::Scalar`), the type a user kernel's scalar
//! arguments have too.

use crate::scalar::complex::Complex;
use crate::scalar::elem::{cast_sv, Sv};
use cunumpy_core::args::Scalar;
use cunumpy_core::dtype::{DType, DTypeKind};

/// The value of a scalar parameter at call time: core's [`Scalar`].
pub use cunumpy_core::args::Scalar as ScalarValue;

/// `value` converted to `dtype` as NumPy converts a Python scalar that meets an array; None
/// when it does not convert (a complex value with a nonzero imaginary part for a real dtype,
/// an integer outside both the 64-bit signed and unsigned ranges).
pub(crate) fn to_sv(value: Scalar, dtype: DType) -> Option<Sv> {
    let v = match value {
        Scalar::Bool(b) => Sv::Bool(b),
        Scalar::Int(i) => match i64::try_from(i) {
            Ok(i) => Sv::Int64(i),
            Err(_) => Sv::UInt64(u64::try_from(i).ok()?),
        },
        Scalar::Float(f) => Sv::Float64(f),
        Scalar::Complex(re, im) => {
            if im != 0.0 && dtype.kind() != DTypeKind::Complex {
                return None;
            }
            Sv::Complex128(Complex::new(re, im))
        }
    };
    cast_sv(v, dtype)
}

/// A value already of its C type as core's [`Scalar`] (exactly: every value of a dtype of
/// the type map is a `Scalar` without rounding).
pub(crate) fn from_sv(v: Sv) -> Scalar {
    match v {
        Sv::Bool(b) => Scalar::Bool(b),
        Sv::Int8(x) => Scalar::Int(x.into()),
        Sv::UInt8(x) => Scalar::Int(x.into()),
        Sv::Int16(x) => Scalar::Int(x.into()),
        Sv::UInt16(x) => Scalar::Int(x.into()),
        Sv::Int32(x) => Scalar::Int(x.into()),
        Sv::UInt32(x) => Scalar::Int(x.into()),
        Sv::Int64(x) => Scalar::Int(x.into()),
        Sv::UInt64(x) => Scalar::Int(x.into()),
        Sv::Float32(x) => Scalar::Float(x.into()),
        Sv::Float64(x) => Scalar::Float(x),
        Sv::Complex64(c) => Scalar::Complex(c.re.into(), c.im.into()),
        Sv::Complex128(c) => Scalar::Complex(c.re, c.im),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_ints_beyond_i64_convert_as_uint64_and_beyond_u64_do_not() {
        let big = i128::from(u64::MAX);
        assert_eq!(
            to_sv(Scalar::Int(big), DType::UInt64),
            Some(Sv::UInt64(u64::MAX))
        );
        assert_eq!(to_sv(Scalar::Int(big + 1), DType::UInt64), None);
        assert_eq!(to_sv(Scalar::Int(-3), DType::Int8), Some(Sv::Int8(-3)));
        assert_eq!(to_sv(Scalar::Complex(1.0, 2.0), DType::Float64), None);
    }

    #[test]
    fn from_sv_is_exact() {
        assert_eq!(from_sv(Sv::Float32(0.1)), Scalar::Float(f64::from(0.1f32)));
        assert_eq!(from_sv(Sv::UInt64(u64::MAX)), Scalar::Int(u64::MAX.into()));
        assert_eq!(from_sv(Sv::Bool(true)), Scalar::Bool(true));
    }
}
