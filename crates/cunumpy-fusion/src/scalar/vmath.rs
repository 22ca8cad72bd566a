//! Vectorisable `exp`, `sin` and `cos` for the CPU executor's block loops.
//!
//! Each function is a branch-free loop over a slice (range reduction, then a polynomial), so
//! the compiler turns it into SIMD code; the standard library's scalar libm calls it replaces
//! cost several times more per element. Accuracy: within 2 ulp of the correctly rounded
//! result over the whole domain (the tests below compare against libm on millions of random
//! and edge inputs), NaN in gives NaN out, `exp` overflows to inf and underflows gradually
//! through the subnormals to 0, `sin(-0.0)` is `-0.0`. `sin`/`cos` reduce their argument
//! exactly (four-part Cody-Waite) for |x| < 1e6; larger arguments, infinities and NaN go to
//! libm element by element in a second pass.
//!
//! Every loop is compiled twice on x86-64: for the baseline target (SSE2, separate multiply
//! and add) and with AVX2 + FMA enabled, picked at run time when the CPU has both. The two
//! can differ in the last bit (a fused multiply-add rounds once), both stay within the bound;
//! one machine always takes the same path, so results are reproducible run to run and do not
//! depend on the thread count. On aarch64 the polynomials always use FMA.
//!
//! `float32` goes through the `float64` code (converted in and out), which is accurate to
//! the float32 ulp.

use crate::scalar::elem::{FloatElem, Operand};

/// 1.5 * 2^52: adding it rounds a double of magnitude below 2^51 to an integer (ties to
/// even), which then sits in the low bits of the sum's representation.
const MAGIC: f64 = 6_755_399_441_055_744.0;
const LOG2E: f64 = std::f64::consts::LOG2_E;
/// ln 2 split in two: the high part has 11 trailing zero bits, so `n * LN2_HI` is exact for
/// |n| < 2^11.
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
const FRAC_2_PI: f64 = std::f64::consts::FRAC_2_PI;
/// pi / 2 in four parts, the first three of 33 significant bits (so `n * PIO2_k` is exact for
/// |n| < 2^20), the last rounded to double.
const PIO2_1: f64 = 1.570_796_326_734_125_6;
const PIO2_2: f64 = 6.077_100_506_303_966e-11;
const PIO2_3: f64 = 2.022_266_248_711_166_5e-21;
const PIO2_4: f64 = 8.478_427_660_368_9e-32;
/// Arguments of `sin`/`cos` below this reduce exactly with the four parts (|n| < 2^20).
const TRIG_FAST_MAX: f64 = 1.0e6;

/// 1/k! for k = 2..=17 (Taylor coefficients; the series are truncated where the remainder
/// is below 0.05 ulp on the reduced ranges |r| <= ln2/2 and |r| <= pi/4).
const INV_FACT: [f64; 16] = [
    0.5,
    0.166_666_666_666_666_66,
    0.041_666_666_666_666_664,
    0.008_333_333_333_333_333,
    0.001_388_888_888_888_889,
    0.000_198_412_698_412_698_4,
    2.480_158_730_158_73e-5,
    2.755_731_922_398_589_3e-6,
    2.755_731_922_398_589e-7,
    2.505_210_838_544_172e-8,
    2.087_675_698_786_81e-9,
    1.605_904_383_682_161_3e-10,
    1.147_074_559_772_972_5e-11,
    7.647_163_731_819_816e-13,
    4.779_477_332_387_385e-14,
    2.811_457_254_345_520_6e-15,
];

/// `a * b + c`, fused when `F` (only instantiated where the CPU has FMA).
#[inline(always)]
fn madd<const F: bool>(a: f64, b: f64, c: f64) -> f64 {
    if F {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// 2^n for an integer-valued `n` in [-1022, 1023], from `n + MAGIC`'s representation.
#[inline(always)]
fn pow2_from_magic(t: f64) -> f64 {
    f64::from_bits(t.to_bits().wrapping_add(1023) << 52)
}

#[inline(always)]
fn exp1<const F: bool>(x: f64) -> f64 {
    // beyond these every result is inf / 0; NaN fails both tests and stays NaN
    let x = if x < -746.0 { -746.0 } else { x };
    let x = if x > 710.0 { 710.0 } else { x };
    let t = madd::<F>(x, LOG2E, MAGIC);
    let n = t - MAGIC;
    let r = madd::<F>(n, -LN2_HI, x);
    let r = madd::<F>(n, -LN2_LO, r);
    let c = &INV_FACT;
    let mut q = c[11];
    for k in (0..11).rev() {
        q = madd::<F>(q, r, c[k]);
    }
    let e = 1.0 + madd::<F>(r * r, q, r);
    // 2^n as two factors, each a normal double, so that overflow and gradual underflow
    // happen in the final rounded multiply
    let h = (n * 0.5) + MAGIC;
    let n1 = h - MAGIC;
    let s1 = pow2_from_magic(h);
    let s2 = pow2_from_magic((n - n1) + MAGIC);
    e * s1 * s2
}

/// sin (`COS` false) or cos of `x`, valid for |x| < `TRIG_FAST_MAX`.
#[inline(always)]
fn sincos1<const F: bool, const COS: bool>(x: f64) -> f64 {
    let t = madd::<F>(x, FRAC_2_PI, MAGIC);
    let n = t - MAGIC;
    let quadrant = t.to_bits().wrapping_add(COS as u64);
    let r = madd::<F>(n, -PIO2_1, x);
    let r = madd::<F>(n, -PIO2_2, r);
    // the last two parts together: one rounding less
    let r = r - madd::<F>(n, PIO2_4, n * PIO2_3);
    let r2 = r * r;
    let c = &INV_FACT;
    // sin r = r - r^3/3! + ... + r^17/17!
    let mut ps = c[15];
    for k in [13, 11, 9, 7, 5, 3, 1] {
        ps = madd::<F>(ps, -r2, c[k]);
    }
    let s = madd::<F>(r * r2, -ps, r);
    // r + (+0) would turn sin(-0.0) into +0.0
    let s = if r2 == 0.0 { r } else { s };
    // cos r = 1 - r^2/2! + ... + r^16/16!
    let mut pc = c[14];
    for k in [12, 10, 8, 6, 4, 2, 0] {
        pc = madd::<F>(pc, -r2, c[k]);
    }
    let co = madd::<F>(r2, -pc, 1.0);
    let v = if quadrant & 1 == 1 { co } else { s };
    f64::from_bits(v.to_bits() ^ ((quadrant & 2) << 62))
}

#[inline(always)]
fn exp_body<const F: bool>(a: &[f64], o: &mut [f64]) {
    for (o, &x) in o.iter_mut().zip(a) {
        *o = exp1::<F>(x);
    }
}

#[inline(always)]
fn exp32_body<const F: bool>(a: &[f32], o: &mut [f32]) {
    for (o, &x) in o.iter_mut().zip(a) {
        *o = exp1::<F>(x as f64) as f32;
    }
}

/// The fast loop; returns whether some argument needs the libm pass.
#[inline(always)]
fn trig_body<const F: bool, const COS: bool>(a: &[f64], o: &mut [f64]) -> bool {
    let mut slow = false;
    for (o, &x) in o.iter_mut().zip(a) {
        let bad = trig_slow(x);
        slow |= bad;
        *o = sincos1::<F, COS>(if bad { 0.0 } else { x });
    }
    slow
}

#[inline(always)]
fn trig32_body<const F: bool, const COS: bool>(a: &[f32], o: &mut [f32]) -> bool {
    let mut slow = false;
    for (o, &x) in o.iter_mut().zip(a) {
        let x = x as f64;
        let bad = trig_slow(x);
        slow |= bad;
        *o = sincos1::<F, COS>(if bad { 0.0 } else { x }) as f32;
    }
    slow
}

/// Whether the AVX2 + FMA copies may run (detected once by the standard library, cached).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Whether the portable copies use FMA: always on aarch64, never elsewhere.
const PORTABLE_FMA: bool = cfg!(target_arch = "aarch64");

macro_rules! dispatch {
    ($name:ident, $avx:ident, $body:ident, $t:ty, $ret:ty $(, $c:literal)?) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $avx(a: &[$t], o: &mut [$t]) -> $ret {
            $body::<true $(, $c)?>(a, o)
        }

        fn $name(a: &[$t], o: &mut [$t]) -> $ret {
            #[cfg(target_arch = "x86_64")]
            if avx2_fma() {
                // SAFETY: the CPU has AVX2 and FMA (detected at run time just above).
                return unsafe { $avx(a, o) };
            }
            $body::<PORTABLE_FMA $(, $c)?>(a, o)
        }
    };
}

dispatch!(exp_f64_slice, exp_f64_avx2, exp_body, f64, ());
dispatch!(exp_f32_slice, exp_f32_avx2, exp32_body, f32, ());
dispatch!(sin_f64_slice, sin_f64_avx2, trig_body, f64, bool, false);
dispatch!(cos_f64_slice, cos_f64_avx2, trig_body, f64, bool, true);
dispatch!(sin_f32_slice, sin_f32_avx2, trig32_body, f32, bool, false);
dispatch!(cos_f32_slice, cos_f32_avx2, trig32_body, f32, bool, true);

/// Applies a slice kernel to an operand (a splat is evaluated once, with the same code).
#[inline(always)]
fn apply<T: Copy + Default>(a: Operand<'_, T>, o: &mut [T], f: impl Fn(&[T], &mut [T])) {
    match a {
        Operand::Slice(s) => f(&s[..o.len()], o),
        Operand::Splat(v) => {
            let mut t = [T::default()];
            f(&[v], &mut t);
            o.fill(t[0]);
        }
    }
}

/// `o = exp(a)`, float64.
pub(crate) fn exp_f64(a: Operand<'_, f64>, o: &mut [f64]) {
    apply(a, o, exp_f64_slice);
}

/// `o = exp(a)`, float32.
pub(crate) fn exp_f32(a: Operand<'_, f32>, o: &mut [f32]) {
    apply(a, o, exp_f32_slice);
}

/// Whether a float64 argument of `sin`/`cos` is outside the fast reduction's range (or NaN).
#[inline(always)]
fn trig_slow(x: f64) -> bool {
    let ok = x.abs() < TRIG_FAST_MAX;
    !ok
}

macro_rules! trig_entry {
    ($name:ident, $slice:ident, $t:ty, $libm:ident, $doc:expr) => {
        #[doc = $doc]
        pub(crate) fn $name(a: Operand<'_, $t>, o: &mut [$t]) {
            apply(a, o, |s: &[$t], o: &mut [$t]| {
                if $slice(s, o) {
                    for (o, &x) in o.iter_mut().zip(s) {
                        if trig_slow(x.into()) {
                            *o = x.$libm();
                        }
                    }
                }
            });
        }
    };
}

trig_entry!(sin_f64, sin_f64_slice, f64, sin_, "`o = sin(a)`, float64.");
trig_entry!(cos_f64, cos_f64_slice, f64, cos_, "`o = cos(a)`, float64.");
trig_entry!(sin_f32, sin_f32_slice, f32, sin_, "`o = sin(a)`, float32.");
trig_entry!(cos_f32, cos_f32_slice, f32, cos_, "`o = cos(a)`, float32.");

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place (of the reference), NaN == NaN, equal infinities 0.
    fn ulp64(got: f64, want: f64) -> f64 {
        if got.is_nan() && want.is_nan() {
            return 0.0;
        }
        if got == want {
            return 0.0;
        }
        if !got.is_finite() || !want.is_finite() {
            return f64::INFINITY;
        }
        let ulp = if want == 0.0 {
            f64::from_bits(1)
        } else {
            let e = want.abs();
            f64::from_bits(e.to_bits() + 1) - e
        };
        (got - want).abs() / ulp
    }

    fn ulp32(got: f32, want: f32) -> f64 {
        if got.is_nan() && want.is_nan() {
            return 0.0;
        }
        if got == want {
            return 0.0;
        }
        if !got.is_finite() || !want.is_finite() {
            return f64::INFINITY;
        }
        let ulp = if want == 0.0 {
            f32::from_bits(1) as f64
        } else {
            let e = want.abs();
            (f32::from_bits(e.to_bits() + 1) - e) as f64
        };
        (got as f64 - want as f64).abs() / ulp
    }

    /// A small deterministic generator (xorshift64*).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
            lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
        }
        /// Any finite or special double (uniform over bit patterns).
        fn bits(&mut self) -> f64 {
            f64::from_bits(self.next())
        }
    }

    const EDGES: [f64; 22] = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        f64::MAX,
        f64::MIN,
        709.782712893384,
        709.7827128933841,
        -708.3964185322641,
        -745.1332191019411,
        -745.1332191019412,
        std::f64::consts::FRAC_PI_2,
        std::f64::consts::PI,
        999_999.999_999_999_9,
        1e6,
    ];

    /// Inputs: edges, uniform on several ranges, and random bit patterns.
    fn inputs(lo: f64, hi: f64, n: usize) -> Vec<f64> {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut v: Vec<f64> = EDGES.to_vec();
        for _ in 0..n {
            v.push(rng.uniform(lo, hi));
        }
        for _ in 0..n / 4 {
            v.push(rng.uniform(-1.0, 1.0) * 1e-3);
            v.push(rng.bits());
        }
        // the doubles next to multiples of pi/2 (worst cancellation of the reduction)
        for k in 1..2000i64 {
            let m = (k * k * 37) as f64 * std::f64::consts::FRAC_PI_2;
            for d in [-2i64, -1, 0, 1, 2] {
                v.push(f64::from_bits((m.to_bits() as i64 + d) as u64));
            }
        }
        v
    }

    fn check64(
        name: &str,
        f: fn(Operand<'_, f64>, &mut [f64]),
        reference: fn(f64) -> f64,
        x: &[f64],
    ) {
        let mut out = vec![0.0; x.len()];
        // odd block boundaries, like the executor's tails
        for (xs, os) in x.chunks(1021).zip(out.chunks_mut(1021)) {
            f(Operand::Slice(xs), os);
        }
        let mut worst = (0.0, 0.0);
        for (&xi, &got) in x.iter().zip(&out) {
            let want = reference(xi);
            let e = ulp64(got, want);
            assert!(
                e <= 2.0,
                "{name}({xi:e} = {:#x}) = {got:e}, libm {want:e}: {e} ulp",
                xi.to_bits()
            );
            if want == 0.0 {
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{name}({xi:e}): sign of zero"
                );
            }
            if e > worst.0 {
                worst = (e, xi);
            }
        }
        // splats give the slice result
        for &xi in x.iter().take(200) {
            let mut one = [0.0];
            f(Operand::Slice(&[xi]), &mut one);
            let mut many = [0.0; 3];
            f(Operand::Splat(xi), &mut many);
            assert!(many.iter().all(|v| v.to_bits() == one[0].to_bits()));
        }
        eprintln!(
            "{name}: max {} ulp at {:e} over {} inputs",
            worst.0,
            worst.1,
            x.len()
        );
    }

    fn check32(
        name: &str,
        f: fn(Operand<'_, f32>, &mut [f32]),
        reference: fn(f64) -> f64,
        x: &[f64],
    ) {
        let x: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let mut out = vec![0.0f32; x.len()];
        for (xs, os) in x.chunks(1021).zip(out.chunks_mut(1021)) {
            f(Operand::Slice(xs), os);
        }
        for (&xi, &got) in x.iter().zip(&out) {
            let want = reference(xi as f64) as f32;
            let e = ulp32(got, want);
            assert!(e <= 1.0, "{name}({xi:e}) = {got:e}, want {want:e}: {e} ulp");
        }
    }

    #[test]
    fn exp_within_two_ulp_of_libm() {
        let x = inputs(-750.0, 750.0, 1_000_000);
        check64("exp", exp_f64, f64::exp, &x);
        let x = inputs(-3.0, 3.0, 1_000_000);
        check64("exp", exp_f64, f64::exp, &x);
        check32("expf", exp_f32, f64::exp, &inputs(-110.0, 100.0, 500_000));
    }

    #[test]
    fn sin_cos_within_two_ulp_of_libm() {
        for (lo, hi) in [(-10.0, 10.0), (-1.2e6, 1.2e6), (-1e300, 1e300)] {
            let x = inputs(lo, hi, 1_000_000);
            check64("sin", sin_f64, f64::sin, &x);
            check64("cos", cos_f64, f64::cos, &x);
        }
        let x = inputs(-100.0, 100.0, 500_000);
        check32("sinf", sin_f32, f64::sin, &x);
        check32("cosf", cos_f32, f64::cos, &x);
    }

    #[test]
    fn special_values() {
        let mut o = [0.0; 6];
        let x = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            1000.0,
            -1000.0,
        ];
        exp_f64(Operand::Slice(&x), &mut o);
        assert!(o[0].is_nan());
        assert_eq!(&o[1..], &[f64::INFINITY, 0.0, 1.0, f64::INFINITY, 0.0]);
        sin_f64(Operand::Slice(&x), &mut o);
        assert!(o[0].is_nan() && o[1].is_nan() && o[2].is_nan());
        assert_eq!(o[3].to_bits(), (-0.0f64).to_bits());
        cos_f64(Operand::Slice(&x), &mut o);
        assert!(o[0].is_nan() && o[1].is_nan() && o[2].is_nan());
        assert_eq!(o[3], 1.0);
        // the smallest subnormal results
        let mut s = [0.0];
        exp_f64(Operand::Slice(&[-745.0]), &mut s);
        assert_eq!(s[0], (-745.0f64).exp());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn portable_and_fma_paths_agree_within_one_ulp() {
        if !avx2_fma() {
            return;
        }
        let x = inputs(-20.0, 20.0, 200_000);
        let (mut a, mut b) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        exp_body::<false>(&x, &mut a);
        // SAFETY: the CPU has AVX2 and FMA (checked above).
        unsafe { exp_f64_avx2(&x, &mut b) };
        for ((&p, &q), &w) in a.iter().zip(&b).zip(&x) {
            assert!(ulp64(p, q) <= 1.0, "exp({w:e}): {p:e} vs {q:e}");
        }
        trig_body::<false, false>(&x, &mut a);
        // SAFETY: as above.
        unsafe { sin_f64_avx2(&x, &mut b) };
        for ((&p, &q), &w) in a.iter().zip(&b).zip(&x) {
            assert!(ulp64(p, q) <= 1.0, "sin({w:e}): {p:e} vs {q:e}");
        }
    }
}
