/* plan:
plan `complex_rows_c64`: 2 kernel(s), 2 launch(es), workspace 0 bytes
kernel 0 `complex_rows_c64_k0`: reduction: 1000 output(s) x 256 reduced element(s), one warp per output
  fuses: conjugate, multiply, mean
  reads: in0: complex64[1000, 256]
  writes: out1: complex64[1000, 1]
  bytes: 2048000 read, 8000 written
  launch complex_rows_c64_k0<<<125, 256>>>(in0, out1, stin0_0, K, M)
kernel 1 `complex_rows_c64_k1`: elementwise over 256000 element(s)
  fuses: multiply, add, exp, absolute
  reads: in0: complex64[1000, 256], in1: float32[256], s0: complex128
  writes: out0: float32[1000, 256]
  bytes: 2049024 read, 1024000 written
  launch complex_rows_c64_k1<<<500, 256>>>(in0, in1, out0, s0, d1, d1m, d1s, n)
total: 4097024 bytes read, 1032000 bytes written
*/

// complex64 / complex128 (NumPy's layout: real, imag)
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
struct cn_c128;
struct alignas(8) cn_c64 {
    float re, im;
    cn_c64() = default;
    CN_D cn_c64(float r, float i = 0.0f) : re(r), im(i) {}
    CN_D explicit cn_c64(const cn_c128& z);
};
struct alignas(16) cn_c128 {
    double re, im;
    cn_c128() = default;
    CN_D cn_c128(double r, double i = 0.0) : re(r), im(i) {}
    CN_D explicit cn_c128(const cn_c64& z) : re(z.re), im(z.im) {}
};
CN_D cn_c64::cn_c64(const cn_c128& z) : re((float)z.re), im((float)z.im) {}

#define CN_COMPLEX_HELPERS(C, T, F, TANH_CUT)                                         \
CN_D C operator+(C a, C b) { return C(a.re + b.re, a.im + b.im); }                  \
CN_D C operator-(C a, C b) { return C(a.re - b.re, a.im - b.im); }                  \
CN_D C operator*(C a, C b) { return C(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re); } \
CN_D C operator/(C a, C b) { T abr = fabs##F(b.re), abi = fabs##F(b.im);            \
    if (abr >= abi) { if (abr == 0 && abi == 0) return C(a.re / abr, a.im / abi);    \
        T rat = b.im / b.re, scl = (T)1 / (b.re + b.im * rat);                       \
        return C((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl); }            \
    T rat = b.re / b.im, scl = (T)1 / (b.im + b.re * rat);                           \
    return C((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl); }                \
CN_D C operator/(C a, T b) { return C(a.re / b, a.im / b); }                        \
CN_D C operator-(C a) { return C(-a.re, -a.im); }                                   \
CN_D C operator+(C a) { return a; }                                                 \
CN_D bool operator==(C a, C b) { return a.re == b.re && a.im == b.im; }             \
CN_D bool operator!=(C a, C b) { return a.re != b.re || a.im != b.im; }             \
CN_D T cn_abs(C a) { return hypot##F(a.re, a.im); }                                 \
CN_D T cn_real(C a) { return a.re; }                                                \
CN_D T cn_imag(C a) { return a.im; }                                                \
CN_D C cn_conj(C a) { return C(a.re, -a.im); }                                      \
CN_D bool cn_isnan(C a) { return a.re != a.re || a.im != a.im; }                    \
CN_D bool cn_isinf(C a) { return isinf(a.re) || isinf(a.im); }                      \
CN_D bool cn_isfinite(C a) { return isfinite(a.re) && isfinite(a.im); }             \
CN_D C cn_reciprocal(C a) { return C((T)1) / a; }                                   \
CN_D C exp(C a) { T e = exp##F(a.re); if (a.im == 0) return C(e, a.im);             \
    return C(e * cos##F(a.im), e * sin##F(a.im)); }                                  \
CN_D C log(C a) { return C(log##F(hypot##F(a.re, a.im)), atan2##F(a.im, a.re)); }   \
CN_D C sqrt(C z) { T a = z.re, b = z.im;                                             \
    if (a == 0 && b == 0) return C((T)0, b);                                         \
    if (isinf(b)) return C((T)INFINITY, b);                                          \
    if (a != a) return C(a, a);                                                      \
    if (isinf(a)) return a > 0 ? C(a, b != b ? b : copysign##F((T)0, b))             \
                               : C(fabs##F(b - b), copysign##F(-a, b));              \
    T t = sqrt##F((fabs##F(a) + hypot##F(a, b)) * (T)0.5);                           \
    return a >= 0 ? C(t, b / (2 * t)) : C(fabs##F(b) / (2 * t), copysign##F(t, b)); } \
CN_D C sin(C z) { return C(sin##F(z.re) * cosh##F(z.im), cos##F(z.re) * sinh##F(z.im)); } \
CN_D C cos(C z) { return C(cos##F(z.re) * cosh##F(z.im), -(sin##F(z.re) * sinh##F(z.im))); } \
CN_D C sinh(C z) { return C(sinh##F(z.re) * cos##F(z.im), cosh##F(z.re) * sin##F(z.im)); } \
CN_D C cosh(C z) { return C(cosh##F(z.re) * cos##F(z.im), sinh##F(z.re) * sin##F(z.im)); } \
CN_D C tanh(C z) { T x = z.re, y = z.im;                                             \
    if (fabs##F(x) >= (T)TANH_CUT) { T e = exp##F(-2 * fabs##F(x));                  \
        return C(copysign##F((T)1, x), 4 * sin##F(y) * cos##F(y) * e); }             \
    T t = tan##F(y), beta = 1 + t * t, s = sinh##F(x), rho = sqrt##F(1 + s * s);     \
    T den = 1 + beta * s * s; return C(beta * rho * s / den, t / den); }             \
CN_D C cn_pow(C a, C b) { if (b.re == 0 && b.im == 0) return C((T)1);              \
    if (a.re == 0 && a.im == 0)                                                      \
        return (b.re > 0 && b.im == 0) ? C((T)0) : C((T)NAN, (T)NAN);                \
    if (b.im == 0 && b.re == trunc##F(b.re) && fabs##F(b.re) < 100) {                \
        long long n = (long long)b.re;                                               \
        if (n == 1) return a; if (n == 2) return a * a; if (n == 3) return a * a * a; \
        unsigned long long m = n < 0 ? (unsigned long long)-n : (unsigned long long)n; \
        C acc((T)1), p = a;                                                          \
        while (m > 0) { if (m & 1) acc = acc * p; m >>= 1; if (m > 0) p = p * p; }   \
        return n < 0 ? C((T)1) / acc : acc; }                                        \
    return exp(b * log(a)); }                                                        \
CN_D bool operator<(C a, C b) { return (a.re < b.re && a.im == a.im && b.im == b.im)  \
    || (a.re == b.re && a.im < b.im); }                                              \
CN_D bool operator<=(C a, C b) { return (a.re < b.re && a.im == a.im && b.im == b.im) \
    || (a.re == b.re && a.im <= b.im); }                                             \
CN_D bool operator>(C a, C b) { return b < a; }                                     \
CN_D bool operator>=(C a, C b) { return b <= a; }                                   \
CN_D C cn_min(C a, C b) { return (cn_isnan(a) || a <= b) ? a : b; }                 \
CN_D C cn_max(C a, C b) { return (cn_isnan(a) || a >= b) ? a : b; }                 \
CN_D C cn_fmin(C a, C b) { return (cn_isnan(b) || a <= b) ? a : b; }                \
CN_D C cn_fmax(C a, C b) { return (cn_isnan(b) || a >= b) ? a : b; }                \
CN_D C cn_shfl_down(unsigned mask, C v, int o) {                                     \
    return C(__shfl_down_sync(mask, v.re, o), __shfl_down_sync(mask, v.im, o)); }
CN_COMPLEX_HELPERS(cn_c64, float, f, 9)
CN_COMPLEX_HELPERS(cn_c128, double, , 22)

// the inverse trigonometric and hyperbolic functions and the exp/log variants, in double
// precision; complex64 computes them in complex128 and rounds (as the CPU executor does)
CN_D cn_c128 tan(cn_c128 z) { cn_c128 t = tanh(cn_c128(-z.im, z.re)); return cn_c128(t.im, -t.re); }
CN_D cn_c128 asinh(cn_c128 z) { double x = fabs(z.re), y = fabs(z.im);
    cn_c128 w = sqrt(cn_c128((1 - y) * (1 + y) + x * x, 2 * x * y));
    cn_c128 r = log(cn_c128(x + w.re, y + w.im));
    return cn_c128(copysign(r.re, z.re), copysign(r.im, z.im)); }
CN_D cn_c128 asin(cn_c128 z) { cn_c128 t = asinh(cn_c128(-z.im, z.re)); return cn_c128(t.im, -t.re); }
CN_D cn_c128 acos(cn_c128 z) { cn_c128 s = asin(z); return cn_c128((double)1.5707963267948966 - s.re, -s.im); }
CN_D cn_c128 acosh(cn_c128 z) { return log(z + sqrt(z + cn_c128((double)1)) * sqrt(z - cn_c128((double)1))); }
CN_D cn_c128 atanh(cn_c128 z) { double x = z.re, y = z.im, d = (1 - x) * (1 - x) + y * y;
    return cn_c128((double)0.25 * log1p(4 * x / d),
             (double)0.5 * atan2(2 * y, (1 - x) * (1 + x) - y * y)); }
CN_D cn_c128 atan(cn_c128 z) { cn_c128 t = atanh(cn_c128(-z.im, z.re)); return cn_c128(t.im, -t.re); }
CN_D cn_c128 expm1(cn_c128 z) { double h = sin((double)0.5 * z.im);
    return cn_c128(expm1(z.re) * cos(z.im) - 2 * h * h, exp(z.re) * sin(z.im)); }
CN_D cn_c128 log1p(cn_c128 z) { double a = z.re + 1; return cn_c128(log(hypot(a, z.im)), atan2(z.im, a)); }
CN_D cn_c128 log2(cn_c128 z) { cn_c128 l = log(z);
    return cn_c128(l.re * (double)1.4426950408889634, l.im * (double)1.4426950408889634); }
CN_D cn_c128 log10(cn_c128 z) { cn_c128 l = log(z);
    return cn_c128(l.re * (double)0.4342944819032518, l.im * (double)0.4342944819032518); }
CN_D cn_c128 exp2(cn_c128 z) { return exp(cn_c128(z.re * (double)0.6931471805599453, z.im * (double)0.6931471805599453)); }
CN_D cn_c64 tan(cn_c64 z) { return cn_c64(tan(cn_c128(z))); }
CN_D cn_c64 asinh(cn_c64 z) { return cn_c64(asinh(cn_c128(z))); }
CN_D cn_c64 asin(cn_c64 z) { return cn_c64(asin(cn_c128(z))); }
CN_D cn_c64 acos(cn_c64 z) { return cn_c64(acos(cn_c128(z))); }
CN_D cn_c64 acosh(cn_c64 z) { return cn_c64(acosh(cn_c128(z))); }
CN_D cn_c64 atanh(cn_c64 z) { return cn_c64(atanh(cn_c128(z))); }
CN_D cn_c64 atan(cn_c64 z) { return cn_c64(atan(cn_c128(z))); }
CN_D cn_c64 expm1(cn_c64 z) { return cn_c64(expm1(cn_c128(z))); }
CN_D cn_c64 log1p(cn_c64 z) { return cn_c64(log1p(cn_c128(z))); }
CN_D cn_c64 log2(cn_c64 z) { return cn_c64(log2(cn_c128(z))); }
CN_D cn_c64 log10(cn_c64 z) { return cn_c64(log10(cn_c128(z))); }
CN_D cn_c64 exp2(cn_c64 z) { return cn_c64(exp2(cn_c128(z))); }

// imag of a real value is zero (real and conjugate of a real value are the value itself)
#define CN_IMAG_OF_REAL(T) CN_D T cn_imag(T) { return (T)0; }
CN_IMAG_OF_REAL(bool)
CN_IMAG_OF_REAL(signed char)
CN_IMAG_OF_REAL(unsigned char)
CN_IMAG_OF_REAL(short)
CN_IMAG_OF_REAL(unsigned short)
CN_IMAG_OF_REAL(int)
CN_IMAG_OF_REAL(unsigned int)
CN_IMAG_OF_REAL(long long)
CN_IMAG_OF_REAL(unsigned long long)
CN_IMAG_OF_REAL(float)
CN_IMAG_OF_REAL(double)

extern "C" __global__ void complex_rows_c64_k0(
    const cn_c64* __restrict__ in0,
    cn_c64* __restrict__ out1,
    const int stin0_0,
    const int K,
    const int M)
{
    const int lane = threadIdx.x & 31;
    const int warps = (int)gridDim.x * (int)(blockDim.x >> 5);
    for (int m = (int)blockIdx.x * (int)(blockDim.x >> 5) + (int)(threadIdx.x >> 5); m < M; m += warps) {
        const int c0 = m;
        const int b0 = c0 * stin0_0;
        cn_c128 acc0 = 0;
#pragma unroll 4
        for (int k = lane; k < K; k += 32) {
            const int c1 = k;
            const cn_c64 r0 = in0[b0 + c1];
            const cn_c64 r1 = cn_conj(r0);
            const cn_c64 r2 = (r1 * r0);
            const cn_c128 r3 = (cn_c128)(r2);
            acc0 = (acc0 + (cn_c128)r3);
        }
        for (int o = 16; o > 0; o >>= 1) {
            acc0 = (acc0 + cn_shfl_down(0xffffffffu, acc0, o));
        }
        if (lane == 0) {
            const cn_c64 red0 = (cn_c64)(acc0 / ((double)K - 0.0));
            const cn_c64 q0 = red0;
            out1[m] = q0;
        }
    }
}

extern "C" __global__ void complex_rows_c64_k1(
    const cn_c64* __restrict__ in0,
    const float* __restrict__ in1,
    float* __restrict__ out0,
    const cn_c128 s0,
    const int d1,
    const unsigned int d1m,
    const int d1s,
    const int n)
{
    const int stride = (int)blockDim.x * (int)gridDim.x * 2;
    for (int base = (int)blockIdx.x * (int)blockDim.x * 2 + (int)threadIdx.x; base < n; base += stride) {
        if (base + 1 * (int)blockDim.x < n) {
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                const int i = base + u * (int)blockDim.x;
                int ctmp = i;
                const int cq1 = (int)((__umulhi((unsigned)ctmp, d1m) + (unsigned)ctmp) >> d1s);
                const int c1 = ctmp - cq1 * d1; ctmp = cq1;
                const int c0 = ctmp;
                const cn_c64 r0 = in0[i];
                const float r1 = in1[c1];
                const cn_c128 r4 = s0;
                const cn_c64 r2 = (cn_c64)(r1);
                const cn_c64 r3 = (r0 * r2);
                const cn_c64 r5 = (cn_c64)(r4);
                const cn_c64 r6 = (r3 + r5);
                const cn_c64 r7 = exp(r6);
                const float r8 = cn_abs(r7);
                out0[i] = r8;
            }
        } else {
            for (int u = 0; u < 2; ++u) {
                const int i = base + u * (int)blockDim.x;
                if (i < n) {
                    int ctmp = i;
                    const int cq1 = (int)((__umulhi((unsigned)ctmp, d1m) + (unsigned)ctmp) >> d1s);
                    const int c1 = ctmp - cq1 * d1; ctmp = cq1;
                    const int c0 = ctmp;
                    const cn_c64 r0 = in0[i];
                    const float r1 = in1[c1];
                    const cn_c128 r4 = s0;
                    const cn_c64 r2 = (cn_c64)(r1);
                    const cn_c64 r3 = (r0 * r2);
                    const cn_c64 r5 = (cn_c64)(r4);
                    const cn_c64 r6 = (r3 + r5);
                    const cn_c64 r7 = exp(r6);
                    const float r8 = cn_abs(r7);
                    out0[i] = r8;
                }
            }
        }
    }
}
