//! Complex element types of the CPU executor: [`Complex`], laid out like NumPy's complex64 and
//! complex128 (two floats or doubles, real part first), and its scalar math, following NumPy's
//! loops (Smith's division, `npy_cpow`'s repeated multiplication for small integer powers).
//! The CUDA preamble's `cn_c64` / `cn_c128` helpers compute the same formulas.

/// One complex number: `re + im*j`. `Complex<f32>` is NumPy's complex64, `Complex<f64>` its
/// complex128 (same size and field order, so a NumPy buffer can be viewed as a slice of it).
/// Ordering is lexicographic (real part first), as NumPy sorts complex values.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
#[repr(C)]
pub struct Complex<T> {
    pub re: T,
    pub im: T,
}

impl<T> Complex<T> {
    /// `re + im*j`.
    pub const fn new(re: T, im: T) -> Self {
        Complex { re, im }
    }
}

macro_rules! complex_math {
    ($t:ident, $tanh_cut:expr) => {
        impl Complex<$t> {
            #[inline(always)]
            pub(crate) fn add(self, o: Self) -> Self {
                Complex::new(self.re + o.re, self.im + o.im)
            }
            #[inline(always)]
            pub(crate) fn sub(self, o: Self) -> Self {
                Complex::new(self.re - o.re, self.im - o.im)
            }
            #[inline(always)]
            pub(crate) fn mul(self, o: Self) -> Self {
                Complex::new(
                    self.re * o.re - self.im * o.im,
                    self.re * o.im + self.im * o.re,
                )
            }
            /// Smith's algorithm, as NumPy's complex division loop.
            #[inline(always)]
            pub(crate) fn div(self, o: Self) -> Self {
                let (ar, ai, br, bi) = (self.re, self.im, o.re, o.im);
                let (abr, abi) = (br.abs(), bi.abs());
                if abr >= abi {
                    if abr == 0.0 && abi == 0.0 {
                        // divide by zero: inf or nan, as NumPy
                        return Complex::new(ar / abr, ai / abi);
                    }
                    let rat = bi / br;
                    let scl = 1.0 / (br + bi * rat);
                    Complex::new((ar + ai * rat) * scl, (ai - ar * rat) * scl)
                } else {
                    let rat = br / bi;
                    let scl = 1.0 / (bi + br * rat);
                    Complex::new((ar * rat + ai) * scl, (ai * rat - ar) * scl)
                }
            }
            #[inline(always)]
            pub(crate) fn neg(self) -> Self {
                Complex::new(-self.re, -self.im)
            }
            #[inline(always)]
            pub(crate) fn conj(self) -> Self {
                Complex::new(self.re, -self.im)
            }
            #[inline(always)]
            pub(crate) fn abs(self) -> $t {
                self.re.hypot(self.im)
            }
            #[inline(always)]
            pub(crate) fn is_nan(self) -> bool {
                self.re.is_nan() || self.im.is_nan()
            }
            #[inline(always)]
            pub(crate) fn is_inf(self) -> bool {
                self.re.is_infinite() || self.im.is_infinite()
            }
            #[inline(always)]
            pub(crate) fn is_finite(self) -> bool {
                self.re.is_finite() && self.im.is_finite()
            }
            pub(crate) fn exp(self) -> Self {
                let e = self.re.exp();
                if self.im == 0.0 {
                    // keeps the sign of a zero imaginary part
                    return Complex::new(e, self.im);
                }
                let (s, c) = self.im.sin_cos();
                Complex::new(e * c, e * s)
            }
            pub(crate) fn ln(self) -> Self {
                Complex::new(self.abs().ln(), self.im.atan2(self.re))
            }
            /// The principal square root (branch cut along the negative real axis).
            pub(crate) fn sqrt(self) -> Self {
                let (a, b) = (self.re, self.im);
                if a == 0.0 && b == 0.0 {
                    return Complex::new(0.0, b);
                }
                if b.is_infinite() {
                    return Complex::new($t::INFINITY, b);
                }
                if a.is_nan() {
                    return Complex::new(a, $t::NAN);
                }
                if a.is_infinite() {
                    return if a > 0.0 {
                        Complex::new(
                            a,
                            if b.is_nan() {
                                b
                            } else {
                                (0.0 as $t).copysign(b)
                            },
                        )
                    } else {
                        Complex::new((b - b).abs(), a.abs().copysign(b))
                    };
                }
                let t = ((a.abs() + self.abs()) * 0.5).sqrt();
                if a >= 0.0 {
                    Complex::new(t, b / (2.0 * t))
                } else {
                    Complex::new(b.abs() / (2.0 * t), t.copysign(b))
                }
            }
            pub(crate) fn sin(self) -> Self {
                let (s, c) = self.re.sin_cos();
                Complex::new(s * self.im.cosh(), c * self.im.sinh())
            }
            pub(crate) fn cos(self) -> Self {
                let (s, c) = self.re.sin_cos();
                Complex::new(c * self.im.cosh(), -(s * self.im.sinh()))
            }
            pub(crate) fn sinh(self) -> Self {
                let (s, c) = self.im.sin_cos();
                Complex::new(self.re.sinh() * c, self.re.cosh() * s)
            }
            pub(crate) fn cosh(self) -> Self {
                let (s, c) = self.im.sin_cos();
                Complex::new(self.re.cosh() * c, self.re.sinh() * s)
            }
            /// Kahan's formula (as the C library's ctanh), exact for large real parts.
            pub(crate) fn tanh(self) -> Self {
                let (x, y) = (self.re, self.im);
                if x.abs() >= $tanh_cut {
                    let e = (-2.0 * x.abs()).exp();
                    return Complex::new((1.0 as $t).copysign(x), 4.0 * y.sin() * y.cos() * e);
                }
                let t = y.tan();
                let beta = 1.0 + t * t;
                let s = x.sinh();
                let rho = (1.0 + s * s).sqrt();
                let den = 1.0 + beta * s * s;
                Complex::new(beta * rho * s / den, t / den)
            }
            /// NumPy's `npy_cpow`: exact repeated multiplication for integer exponents below
            /// 100 in magnitude, `exp(b * log(a))` otherwise.
            pub(crate) fn pow(self, b: Self) -> Self {
                let one = Complex::new(1.0, 0.0);
                if b.re == 0.0 && b.im == 0.0 {
                    return one;
                }
                if self.re == 0.0 && self.im == 0.0 {
                    return if b.re > 0.0 && b.im == 0.0 {
                        Complex::new(0.0, 0.0)
                    } else {
                        Complex::new($t::NAN, $t::NAN)
                    };
                }
                if b.im == 0.0 && b.re == b.re.trunc() && b.re.abs() < 100.0 {
                    let n = b.re as i64;
                    match n {
                        1 => return self,
                        2 => return self.mul(self),
                        3 => return self.mul(self).mul(self),
                        _ => {}
                    }
                    let mut m = n.unsigned_abs();
                    let (mut acc, mut p) = (one, self);
                    while m > 0 {
                        if m & 1 == 1 {
                            acc = acc.mul(p);
                        }
                        m >>= 1;
                        if m > 0 {
                            p = p.mul(p);
                        }
                    }
                    return if n < 0 { one.div(acc) } else { acc };
                }
                b.mul(self.ln()).exp()
            }
            /// NumPy's `a < b`: lexicographic, and a real-part decision needs both imaginary
            /// parts non-NaN (so any NaN makes the comparison false).
            #[inline(always)]
            pub(crate) fn lt(self, o: Self) -> bool {
                (self.re < o.re && !self.im.is_nan() && !o.im.is_nan())
                    || (self.re == o.re && self.im < o.im)
            }
            #[inline(always)]
            pub(crate) fn le(self, o: Self) -> bool {
                (self.re < o.re && !self.im.is_nan() && !o.im.is_nan())
                    || (self.re == o.re && self.im <= o.im)
            }
            #[inline(always)]
            pub(crate) fn gt(self, o: Self) -> bool {
                o.lt(self)
            }
            #[inline(always)]
            pub(crate) fn ge(self, o: Self) -> bool {
                o.le(self)
            }
            /// `minimum`: a NaN in either argument propagates (the first one if both).
            #[inline(always)]
            pub(crate) fn minimum(self, o: Self) -> Self {
                if self.is_nan() || self.le(o) {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            pub(crate) fn maximum(self, o: Self) -> Self {
                if self.is_nan() || self.ge(o) {
                    self
                } else {
                    o
                }
            }
            /// `fmin`: a NaN loses to a number (NaN only when both are NaN).
            #[inline(always)]
            pub(crate) fn fmin(self, o: Self) -> Self {
                if o.is_nan() || self.le(o) {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            pub(crate) fn fmax(self, o: Self) -> Self {
                if o.is_nan() || self.ge(o) {
                    self
                } else {
                    o
                }
            }
        }
    };
}
complex_math!(f32, 9.0);
complex_math!(f64, 22.0);

// The inverse trigonometric and hyperbolic functions and the exp/log variants, in double
// precision (complex64 computes them in complex128 and rounds, as accurate as NumPy's
// single-precision C library calls without a second set of formulas).
impl Complex<f64> {
    /// `i * self`.
    #[inline(always)]
    fn times_i(self) -> Self {
        Complex::new(-self.im, self.re)
    }
    /// `-i * self`.
    #[inline(always)]
    fn times_minus_i(self) -> Self {
        Complex::new(self.im, -self.re)
    }
    /// `tan(z) = -i tanh(i z)`.
    pub(crate) fn tan(self) -> Self {
        self.times_i().tanh().times_minus_i()
    }
    /// `asinh(z) = log(z + sqrt(z^2 + 1))`, computed in the first quadrant (where it
    /// has no cancellation) and carried to the others by its odd and conjugate
    /// symmetries; `z^2 + 1` as `(1 - y)(1 + y) + x^2 + 2xy i`.
    pub(crate) fn asinh(self) -> Self {
        let (x, y) = (self.re.abs(), self.im.abs());
        let w = Complex::new((1.0 - y) * (1.0 + y) + x * x, 2.0 * x * y).sqrt();
        let r = Complex::new(x + w.re, y + w.im).ln();
        Complex::new(r.re.copysign(self.re), r.im.copysign(self.im))
    }
    /// `asin(z) = -i asinh(i z)`.
    pub(crate) fn asin(self) -> Self {
        self.times_i().asinh().times_minus_i()
    }
    /// `acos(z) = pi/2 - asin(z)`.
    pub(crate) fn acos(self) -> Self {
        let s = self.asin();
        Complex::new(core::f64::consts::FRAC_PI_2 - s.re, -s.im)
    }
    /// `acosh(z) = log(z + sqrt(z + 1) sqrt(z - 1))` (Kahan's form, with the branch
    /// cuts NumPy has).
    pub(crate) fn acosh(self) -> Self {
        let one = Complex::new(1.0, 0.0);
        let w = self.add(one).sqrt().mul(self.sub(one).sqrt());
        self.add(w).ln()
    }
    /// `atanh(z) = (log(1 + z) - log(1 - z)) / 2`: real part
    /// `log1p(4x / ((1 - x)^2 + y^2)) / 4`, imaginary part
    /// `atan2(2y, (1 - x)(1 + x) - y^2) / 2`.
    pub(crate) fn atanh(self) -> Self {
        let (x, y) = (self.re, self.im);
        let d = (1.0 - x) * (1.0 - x) + y * y;
        let re = 0.25 * (4.0 * x / d).ln_1p();
        let im = 0.5 * (2.0 * y).atan2((1.0 - x) * (1.0 + x) - y * y);
        Complex::new(re, im)
    }
    /// `atan(z) = -i atanh(i z)`.
    pub(crate) fn atan(self) -> Self {
        self.times_i().atanh().times_minus_i()
    }
    /// `exp(z) - 1` without the cancellation near 0: real part
    /// `expm1(x) cos(y) - 2 sin(y/2)^2`.
    pub(crate) fn expm1(self) -> Self {
        let (x, y) = (self.re, self.im);
        let h = (0.5 * y).sin();
        Complex::new(x.exp_m1() * y.cos() - 2.0 * h * h, x.exp() * y.sin())
    }
    /// `log(1 + z)`.
    pub(crate) fn ln_1p(self) -> Self {
        let a = self.re + 1.0;
        Complex::new(a.hypot(self.im).ln(), self.im.atan2(a))
    }
    pub(crate) fn log2(self) -> Self {
        let l = self.ln();
        Complex::new(
            l.re * core::f64::consts::LOG2_E,
            l.im * core::f64::consts::LOG2_E,
        )
    }
    pub(crate) fn log10(self) -> Self {
        let l = self.ln();
        Complex::new(
            l.re * core::f64::consts::LOG10_E,
            l.im * core::f64::consts::LOG10_E,
        )
    }
    /// `2^z = exp(z ln 2)`.
    pub(crate) fn exp2(self) -> Self {
        let k = core::f64::consts::LN_2;
        Complex::new(self.re * k, self.im * k).exp()
    }
}

impl Complex<f32> {
    fn widen(self) -> Complex<f64> {
        Complex::new(self.re as f64, self.im as f64)
    }
}

impl Complex<f64> {
    fn narrow(self) -> Complex<f32> {
        Complex::new(self.re as f32, self.im as f32)
    }
}

/// complex64: computed in complex128 and rounded.
impl Complex<f32> {
    pub(crate) fn tan(self) -> Self {
        self.widen().tan().narrow()
    }
    pub(crate) fn asinh(self) -> Self {
        self.widen().asinh().narrow()
    }
    pub(crate) fn asin(self) -> Self {
        self.widen().asin().narrow()
    }
    pub(crate) fn acos(self) -> Self {
        self.widen().acos().narrow()
    }
    pub(crate) fn acosh(self) -> Self {
        self.widen().acosh().narrow()
    }
    pub(crate) fn atanh(self) -> Self {
        self.widen().atanh().narrow()
    }
    pub(crate) fn atan(self) -> Self {
        self.widen().atan().narrow()
    }
    pub(crate) fn expm1(self) -> Self {
        self.widen().expm1().narrow()
    }
    pub(crate) fn ln_1p(self) -> Self {
        self.widen().ln_1p().narrow()
    }
    pub(crate) fn log2(self) -> Self {
        self.widen().log2().narrow()
    }
    pub(crate) fn log10(self) -> Self {
        self.widen().log10().narrow()
    }
    pub(crate) fn exp2(self) -> Self {
        self.widen().exp2().narrow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Complex<f64>, b: Complex<f64>) -> bool {
        (a.re - b.re).abs() <= 1e-12 * (1.0 + b.re.abs())
            && (a.im - b.im).abs() <= 1e-12 * (1.0 + b.im.abs())
    }

    type C = Complex<f64>;

    #[test]
    fn arithmetic_and_functions_match_their_definitions() {
        let z = C::new(1.5, -2.0);
        let w = C::new(-0.25, 0.75);
        assert_eq!(
            z.mul(w),
            C::new(1.5 * -0.25 + 2.0 * 0.75, 1.5 * 0.75 + 2.0 * 0.25)
        );
        assert!(close(z.div(w).mul(w), z));
        assert!(close(z.sqrt().mul(z.sqrt()), z));
        assert!(close(z.ln().exp(), z));
        assert!(close(z.pow(C::new(3.0, 0.0)), z.mul(z).mul(z)));
        assert!(close(
            z.pow(C::new(-5.0, 0.0)),
            C::new(1.0, 0.0).div(z.mul(z).mul(z).mul(z).mul(z))
        ));
        assert!(close(z.pow(w), w.mul(z.ln()).exp()));
        // tanh = sinh / cosh, also where the large-argument branch takes over
        assert!(close(z.tanh(), z.sinh().div(z.cosh())));
        let big = C::new(30.0, 0.5);
        assert!(close(big.tanh(), C::new(1.0, 0.0)));
        assert_eq!(z.abs(), 2.5);
        assert_eq!(C::new(-4.0, 0.0).sqrt(), C::new(0.0, 2.0));
        assert_eq!(C::new(-4.0, -0.0).sqrt(), C::new(0.0, -2.0));
        assert!(C::new(1.0, 0.0).div(C::new(0.0, 0.0)).is_inf());
    }

    #[test]
    fn complex64_agrees_with_complex128_rounded() {
        let z = Complex::<f32>::new(0.5, -1.25);
        let w = Complex::<f64>::new(0.5, -1.25);
        for (a, b) in [
            (z.exp(), w.exp()),
            (z.ln(), w.ln()),
            (z.sqrt(), w.sqrt()),
            (z.sin(), w.sin()),
            (z.cos(), w.cos()),
            (z.tanh(), w.tanh()),
            (z.pow(z), w.pow(w)),
        ] {
            assert!((a.re as f64 - b.re).abs() < 1e-6 && (a.im as f64 - b.im).abs() < 1e-6);
        }
    }
}
