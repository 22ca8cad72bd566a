//! The value of a scalar parameter at call time, as the caller gives it (a Python bool, int,
//! float or complex), before it is converted to the dtype the plan declared for it.

use crate::scalar::complex::Complex;
use crate::scalar::elem::{cast_sv, Sv};
use cunumpy_core::dtype::{DType, DTypeKind};

/// The value of a scalar parameter at call time; converted to the declared dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarValue {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    /// A complex value (real part, imaginary part).
    Complex(f64, f64),
}

impl ScalarValue {
    /// The value converted to `dtype`; None when it does not convert (a complex value with a
    /// nonzero imaginary part for a real dtype).
    pub(crate) fn to_sv(self, dtype: DType) -> Option<Sv> {
        let v = match self {
            ScalarValue::Bool(b) => Sv::Bool(b),
            ScalarValue::Int(i) => Sv::Int64(i),
            ScalarValue::UInt(u) => Sv::UInt64(u),
            ScalarValue::Float(f) => Sv::Float64(f),
            ScalarValue::Complex(re, im) => {
                if im != 0.0 && dtype.kind() != DTypeKind::Complex {
                    return None;
                }
                Sv::Complex128(Complex::new(re, im))
            }
        };
        cast_sv(v, dtype)
    }
}
