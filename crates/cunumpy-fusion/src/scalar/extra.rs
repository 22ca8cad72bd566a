//! Scalar semantics of the ops added for NumPy's wider ufunc set: `fmod` (C's truncated
//! remainder; an integer division by zero gives 0, as NumPy does), `fmax`/`fmin` (NaN only
//! when both are NaN), `signbit`, `nextafter`, `frexp`, and the rounding of a float to the
//! nearest float16 value (NumPy computes float16 ufuncs in float32 and rounds each result).
//! The C preamble (`codegen::dialect`) computes the same formulas.

/// The NumPy ufuncs of this module, per element type.
pub(crate) trait ExtraElem: Copy {
    fn fmod_(self, o: Self) -> Self;
    fn fmax_(self, o: Self) -> Self;
    fn fmin_(self, o: Self) -> Self;
    fn signbit_(self) -> bool;
}

macro_rules! int_extra {
    ($signed:expr; $($t:ty),*) => {$(
        impl ExtraElem for $t {
            fn fmod_(self, o: Self) -> Self {
                if o == 0 { 0 } else { self.wrapping_rem(o) }
            }
            fn fmax_(self, o: Self) -> Self { Ord::max(self, o) }
            fn fmin_(self, o: Self) -> Self { Ord::min(self, o) }
            #[allow(unused_comparisons)]
            fn signbit_(self) -> bool { $signed && self < 0 }
        }
    )*};
}
int_extra!(true; i8, i16, i32, i64);
int_extra!(false; u8, u16, u32, u64);

impl ExtraElem for bool {
    fn fmod_(self, o: Self) -> Self {
        self && !o // never used: bool computes in int8
    }
    fn fmax_(self, o: Self) -> Self {
        self || o
    }
    fn fmin_(self, o: Self) -> Self {
        self && o
    }
    fn signbit_(self) -> bool {
        false
    }
}

/// The float-only functions of this module.
pub(crate) trait ExtraFloat: Copy {
    fn nextafter_(self, toward: Self) -> Self;
    /// `frexp`: the mantissa in [0.5, 1) and the exponent (as a float); zero, infinities and
    /// NaN give themselves and 0, as NumPy does.
    fn frexp_(self) -> (Self, Self);
    /// The nearest float16 value (ties to even; overflow to infinity; float16 subnormals).
    fn round_half_(self) -> Self;
    /// `numpy.i0`, the modified Bessel function of the first kind of order 0 ([`i0_series`]).
    fn i0_(self) -> Self;
}

/// `I0(x)`: the power series `sum_k (x^2/4)^k / (k!)^2`, in double precision (every term is
/// positive, so the sum has no cancellation: relative error about `|x|` ulps). As NumPy's
/// `i0`, whose large-argument form multiplies by `exp(|x|)` in the argument's precision, it is
/// infinite once `exp(|x|)` overflows (`|x| > overflow_at`) and NaN at infinity.
pub(crate) fn i0_series(x: f64, overflow_at: f64) -> f64 {
    let a = x.abs();
    if !a.is_finite() {
        return f64::NAN;
    }
    if a > overflow_at {
        return f64::INFINITY;
    }
    let q = 0.25 * a * a;
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    let mut k = 1.0f64;
    while k < 4096.0 {
        term *= q / (k * k);
        sum += term;
        if term <= sum * 1e-17 {
            break;
        }
        k += 1.0;
    }
    sum
}

macro_rules! float_extra {
    ($t:ty, $bits:ty, $mant:expr, $exp_bias:expr) => {
        impl ExtraElem for $t {
            fn fmod_(self, o: Self) -> Self {
                self % o
            }
            fn fmax_(self, o: Self) -> Self {
                if self.is_nan() {
                    o
                } else if o.is_nan() || self >= o {
                    self
                } else {
                    o
                }
            }
            fn fmin_(self, o: Self) -> Self {
                if self.is_nan() {
                    o
                } else if o.is_nan() || self <= o {
                    self
                } else {
                    o
                }
            }
            fn signbit_(self) -> bool {
                self.is_sign_negative()
            }
        }

        impl ExtraFloat for $t {
            fn nextafter_(self, toward: Self) -> Self {
                if self.is_nan() || toward.is_nan() {
                    return self + toward;
                }
                if self == toward {
                    return toward;
                }
                if self == 0.0 {
                    let tiny = <$t>::from_bits(1);
                    return if toward > 0.0 { tiny } else { -tiny };
                }
                let b = self.to_bits();
                let up = (toward > self) == (self > 0.0);
                <$t>::from_bits(if up { b + 1 } else { b - 1 })
            }

            fn frexp_(self) -> (Self, Self) {
                if self == 0.0 || !self.is_finite() {
                    return (self, 0.0);
                }
                let (x, shift) = if self.abs() < <$t>::MIN_POSITIVE {
                    (self * (2.0 as $t).powi($mant + 1), $mant + 1)
                } else {
                    (self, 0)
                };
                let b = x.to_bits();
                let e = ((b >> $mant) & ((1 << (<$bits>::BITS - 1 - $mant)) - 1)) as i32;
                let exp = e - $exp_bias + 1 - shift;
                let m_bits = (b & !(((1 << (<$bits>::BITS - 1 - $mant)) - 1) << $mant))
                    | ((($exp_bias - 1) as $bits) << $mant);
                (<$t>::from_bits(m_bits), exp as $t)
            }

            fn i0_(self) -> Self {
                i0_series(self as f64, (<$t>::MAX as f64).ln()) as $t
            }

            fn round_half_(self) -> Self {
                if !self.is_finite() {
                    return self;
                }
                let a = self.abs();
                if a >= 65520.0 {
                    return <$t>::INFINITY.copysign(self);
                }
                // the spacing of float16 values around `a`: 2^-24 below 2^-14 (subnormals),
                // else 2^(e - 11) for a in [2^(e-1), 2^e)
                let quantum: $t = if a < (2.0 as $t).powi(-14) {
                    (2.0 as $t).powi(-24)
                } else {
                    let (_, e) = a.frexp_();
                    (2.0 as $t).powi(e as i32 - 11)
                };
                ((a / quantum).round_ties_even() * quantum).copysign(self)
            }
        }
    };
}
float_extra!(f32, u32, 23, 127);
float_extra!(f64, u64, 52, 1023);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frexp_matches_the_definition() {
        for &x in &[1.0f64, 0.75, -3.5, 1e-310, 6.0e300, 0.1] {
            let (m, e) = x.frexp_();
            assert!((0.5..1.0).contains(&m.abs()), "{x}: {m}");
            // (scaled in two halves: 2^e alone underflows to zero for a subnormal x)
            let (e1, e2) = (e as i32 / 2, e as i32 - e as i32 / 2);
            assert_eq!(m * 2f64.powi(e1) * 2f64.powi(e2), x);
        }
        assert_eq!(0.0f32.frexp_(), (0.0, 0.0));
        assert_eq!(f32::INFINITY.frexp_(), (f32::INFINITY, 0.0));
        let (m, e) = 1e-40f32.frexp_();
        let (e1, e2) = (e as i32 / 2, e as i32 - e as i32 / 2);
        assert_eq!(m * 2f32.powi(e1) * 2f32.powi(e2), 1e-40f32);
    }

    #[test]
    fn round_half_known_values() {
        // float16 has 11 significant bits: 1 + 2^-11 is a tie between 1 and 1 + 2^-10
        assert_eq!((1.0f32 + 2f32.powi(-11)).round_half_(), 1.0);
        assert_eq!(
            (1.0f32 + 3.0 * 2f32.powi(-11)).round_half_(),
            1.0 + 2.0 * 2f32.powi(-10)
        );
        assert_eq!(65504.0f32.round_half_(), 65504.0);
        assert_eq!(65519.0f32.round_half_(), 65504.0);
        assert_eq!(65520.0f32.round_half_(), f32::INFINITY);
        assert_eq!(2f32.powi(-25).round_half_(), 0.0); // a tie: to even (zero)
        assert_eq!((3.0 * 2f32.powi(-25)).round_half_(), 2f32.powi(-23));
        assert!((-0.0f32).round_half_().is_sign_negative());
        assert_eq!(0.1f32.round_half_(), 0.099975586);
    }

    #[test]
    fn i0_matches_numpy() {
        // numpy.i0 of these float64 values
        for (x, want) in [
            (0.0f64, 1.0f64),
            (0.5, 1.0634833707413234),
            (-3.3, 6.242630465183029),
            (7.9, 389.406283282158),
            (8.1, 469.5006067101214),
            (30.0, 781672297823.9775),
        ] {
            let got = x.i0_();
            assert!(
                (got - want).abs() <= 1e-13 * want,
                "i0({x}) = {got}, want {want}"
            );
        }
        assert_eq!(710.0f64.i0_(), f64::INFINITY);
        assert!(f64::INFINITY.i0_().is_nan() && f64::NAN.i0_().is_nan());
        assert_eq!(89.0f32.i0_(), f32::INFINITY);
        assert!((88.0f32.i0_() - 7.034_019_5e36).abs() <= 1e31);
    }

    #[test]
    fn nextafter_steps_one_ulp() {
        assert_eq!(1.0f64.nextafter_(2.0), 1.0 + f64::EPSILON);
        assert_eq!(1.0f32.nextafter_(0.0), 1.0 - f32::EPSILON / 2.0);
        assert_eq!(0.0f64.nextafter_(-1.0), -f64::from_bits(1));
        assert_eq!((-1.0f64).nextafter_(-2.0), -1.0 - f64::EPSILON);
    }

    #[test]
    fn fmod_and_fmax() {
        assert_eq!((-7i32).fmod_(3), -1);
        assert_eq!(5i8.fmod_(0), 0);
        assert_eq!(i8::MIN.fmod_(-1), 0);
        assert_eq!((-7.5f64).fmod_(2.0), -1.5);
        assert_eq!(f64::NAN.fmax_(1.0), 1.0);
        assert!(f64::NAN.fmin_(f64::NAN).is_nan());
        assert!((-0.0f64).signbit_() && !0.0f64.signbit_() && (-3i16).signbit_());
    }
}
