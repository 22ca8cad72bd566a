// cunumpy-emu Metal layer: the Metal Shading Language (MSL) built-ins that an MLX-style kernel
// body uses, written on top of the CUDA prelude (cunumpy_emu.h), which comes first in the same
// translation unit and provides the fibers, barriers, warp exchanges, atomics and checked
// pointers.
//
// The crate (src/metal.rs) rewrites the kernel: address-space qualifiers (`device`, `constant`,
// `thread`) are dropped, `threadgroup` declarations become `__shared__` ones, and the MLX
// signature becomes one `__global__` function whose thread attributes are locals computed from
// the CUDA built-ins. What is left for this header: MSL's types, `metal::` math, barriers,
// SIMD-group functions and device atomics.
//
// A SIMD-group is 32 threads (Apple GPUs' SIMD width): consecutive threads of a threadgroup in
// its linear order, the lanes of one emulated warp. SIMD-group functions take part over the
// lanes still running (a ballot over `__activemask()`), so a partial last SIMD-group works as on
// the GPU.
#pragma once
#ifndef CUNUMPY_EMU_METAL
#define CUNUMPY_EMU_METAL 1
#define CUNUMPY_EMU_METAL_VERSION 1

// ---------------------------------------------------------------- scalar types
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef _Float16 half;
typedef _Float16 float16_t;
typedef float float32_t;
// bfloat16: stored as the upper 16 bits of a float, converted on every use.
struct bfloat16_t {
  unsigned short bits;
  bfloat16_t() = default;
  bfloat16_t(float f) {
    unsigned u;
    std::memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest even
    bits = (unsigned short)(u >> 16);
  }
  operator float() const {
    unsigned u = (unsigned)bits << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};
typedef bfloat16_t bfloat;
struct complex64_t {
  float real, imag;
  complex64_t() = default;
  constexpr complex64_t(float r, float i = 0.0f) : real(r), imag(i) {}
  friend complex64_t operator+(complex64_t a, complex64_t b) { return {a.real + b.real, a.imag + b.imag}; }
  friend complex64_t operator-(complex64_t a, complex64_t b) { return {a.real - b.real, a.imag - b.imag}; }
  friend complex64_t operator*(complex64_t a, complex64_t b) {
    return {a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real};
  }
  complex64_t& operator+=(complex64_t b) { return *this = *this + b; }
  complex64_t& operator*=(complex64_t b) { return *this = *this * b; }
};

// ---------------------------------------------------------------- vector arithmetic
// The vector structs come from the CUDA prelude (`float2`, `uint3`, ...); MSL constructs them as
// `float2(a, b)` (C++20 aggregate initialisation with parentheses) and computes on them
// component-wise.
#define CNM_VOPS2(V, T)                                                                                   \
  inline V operator+(V a, V b) { return V{(T)(a.x + b.x), (T)(a.y + b.y)}; }                              \
  inline V operator-(V a, V b) { return V{(T)(a.x - b.x), (T)(a.y - b.y)}; }                              \
  inline V operator*(V a, V b) { return V{(T)(a.x * b.x), (T)(a.y * b.y)}; }                              \
  inline V operator*(V a, T s) { return V{(T)(a.x * s), (T)(a.y * s)}; }                                  \
  inline V operator*(T s, V a) { return a * s; }                                                          \
  inline V& operator+=(V& a, V b) { return a = a + b; }
#define CNM_VOPS3(V, T)                                                                                   \
  inline V operator+(V a, V b) { return V{(T)(a.x + b.x), (T)(a.y + b.y), (T)(a.z + b.z)}; }              \
  inline V operator-(V a, V b) { return V{(T)(a.x - b.x), (T)(a.y - b.y), (T)(a.z - b.z)}; }              \
  inline V operator*(V a, V b) { return V{(T)(a.x * b.x), (T)(a.y * b.y), (T)(a.z * b.z)}; }              \
  inline V operator*(V a, T s) { return V{(T)(a.x * s), (T)(a.y * s), (T)(a.z * s)}; }                    \
  inline V operator*(T s, V a) { return a * s; }                                                          \
  inline V& operator+=(V& a, V b) { return a = a + b; }
#define CNM_VOPS4(V, T)                                                                                   \
  inline V operator+(V a, V b) { return V{(T)(a.x + b.x), (T)(a.y + b.y), (T)(a.z + b.z), (T)(a.w + b.w)}; } \
  inline V operator-(V a, V b) { return V{(T)(a.x - b.x), (T)(a.y - b.y), (T)(a.z - b.z), (T)(a.w - b.w)}; } \
  inline V operator*(V a, V b) { return V{(T)(a.x * b.x), (T)(a.y * b.y), (T)(a.z * b.z), (T)(a.w * b.w)}; } \
  inline V operator*(V a, T s) { return V{(T)(a.x * s), (T)(a.y * s), (T)(a.z * s), (T)(a.w * s)}; }     \
  inline V operator*(T s, V a) { return a * s; }                                                          \
  inline V& operator+=(V& a, V b) { return a = a + b; }
CNM_VOPS2(float2, float) CNM_VOPS3(float3, float) CNM_VOPS4(float4, float)
CNM_VOPS2(int2, int) CNM_VOPS3(int3, int) CNM_VOPS4(int4, int)
CNM_VOPS2(uint2, unsigned) CNM_VOPS3(uint3, unsigned) CNM_VOPS4(uint4, unsigned)
#undef CNM_VOPS2
#undef CNM_VOPS3
#undef CNM_VOPS4

namespace metal {

// ---------------------------------------------------------------- math
// The functions of <cmath> and the CUDA prelude are the same entities here (using-declarations),
// so `sqrt(x)` and `metal::sqrt(x)` resolve alike; MSL-only ones are defined.
using ::abs; using std::abs;
using std::acos; using std::acosh; using std::asin; using std::asinh; using std::atan; using std::atan2;
using std::atanh; using std::ceil; using std::copysign; using std::cos; using std::cosh; using std::exp;
using std::exp2; using std::fabs; using std::floor; using std::fma; using std::fmax; using std::fmin;
using std::fmod; using std::isfinite; using std::isinf; using std::isnan; using std::log; using std::log10;
using std::log2; using std::pow; using std::rint; using std::round; using std::signbit; using std::sin;
using std::sinh; using std::sqrt; using std::tan; using std::tanh; using std::trunc;
using ::min; using ::max; using ::rsqrt; using ::sinpi; using ::cospi;
inline float exp10(float x) { return std::pow(10.0f, x); }
template <class T> inline T powr(T x, T y) { return std::pow(x, y); }
template <class T> inline T fract(T x) { return std::fmin(x - std::floor(x), (T)0x1.fffffep-1f); }
template <class T> inline T sign(T x) { return x > 0 ? (T)1 : x < 0 ? (T)-1 : x; }
template <class T> inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <class T> inline T saturate(T x) { return clamp(x, (T)0, (T)1); }
template <class T> inline T mix(T x, T y, T a) { return x + (y - x) * a; }
template <class T> inline T step(T edge, T x) { return x < edge ? (T)0 : (T)1; }
template <class T> inline T select(T a, T b, bool c) { return c ? b : a; }
template <class T> inline T divide(T a, T b) { return a / b; }
template <class T> inline T tanpi(T x) { return sinpi(x) / cospi(x); }
template <class T> inline T erf(T x) { return std::erf(x); }
template <class To, class From> inline To as_type(From f) { return cunumpy_emu::bits<To>(f); }
namespace precise { using namespace ::metal; }
namespace fast { using namespace ::metal; }

// ---------------------------------------------------------------- barriers
enum class mem_flags : unsigned { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4, mem_threadgroup_imageblock = 8 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return (mem_flags)((unsigned)a | (unsigned)b); }
inline void threadgroup_barrier(mem_flags) { cunumpy_emu::block_barrier(0, 0); }
inline void simdgroup_barrier(mem_flags) { __syncwarp(__activemask()); }

// ---------------------------------------------------------------- SIMD-group functions
// The lanes taking part: a ballot over the lanes not yet returned (threads past the grid's end
// return at once; the ballot completes when they have, and leaves them out).
inline unsigned simd_active() { return __ballot_sync(__activemask(), 1); }
template <class T> inline T simd_shuffle(T v, unsigned lane) { return __shfl_sync(__activemask(), v, (int)lane); }
template <class T> inline T simd_broadcast(T v, unsigned lane) { return simd_shuffle(v, lane); }
template <class T> inline T simd_broadcast_first(T v) {
  unsigned m = simd_active();
  return __shfl_sync(m, v, __builtin_ctz(m));
}
template <class T> inline T simd_shuffle_down(T v, unsigned d) { return __shfl_down_sync(__activemask(), v, d); }
template <class T> inline T simd_shuffle_up(T v, unsigned d) { return __shfl_up_sync(__activemask(), v, d); }
template <class T> inline T simd_shuffle_xor(T v, unsigned m) { return __shfl_xor_sync(__activemask(), v, (int)m); }
// Reductions and scans: every taking-part lane leaves its value in a per-SIMD-group table, a
// SIMD-group barrier later each lane folds the table in lane order (the same result on every
// lane), and a second barrier keeps the table until all have read it.
template <class T, class Op> inline T simd_fold(T v, Op op, bool inclusive, bool prefix, T empty) {
  static_assert(sizeof(T) <= 8, "SIMD-group reductions take values of up to 8 bytes");
  static thread_local unsigned long long table[32][32];
  unsigned mask = simd_active();
  unsigned lin = cunumpy_emu::tl_sched ? cunumpy_emu::tl_sched->cur->lin : 0;
  unsigned self = lin % 32, w = lin / 32;
  table[w][self] = cunumpy_emu::to_bits(v);
  __syncwarp(mask);
  T acc = empty;
  bool have = false;
  for (unsigned l = 0; l < 32; l++) {
    if (!(mask >> l & 1u)) continue;
    if (prefix && (l > self || (l == self && !inclusive))) continue;
    T x = cunumpy_emu::from_bits<T>(table[w][l]);
    acc = have ? op(acc, x) : x;
    have = true;
  }
  __syncwarp(mask);
  return acc;
}
template <class T> inline T simd_sum(T v) { return simd_fold(v, [](T a, T b) { return (T)(a + b); }, true, false, (T)0); }
template <class T> inline T simd_product(T v) { return simd_fold(v, [](T a, T b) { return (T)(a * b); }, true, false, (T)1); }
template <class T> inline T simd_max(T v) { return simd_fold(v, [](T a, T b) { return max(a, b); }, true, false, v); }
template <class T> inline T simd_min(T v) { return simd_fold(v, [](T a, T b) { return min(a, b); }, true, false, v); }
template <class T> inline T simd_and(T v) { return simd_fold(v, [](T a, T b) { return (T)(a & b); }, true, false, v); }
template <class T> inline T simd_or(T v) { return simd_fold(v, [](T a, T b) { return (T)(a | b); }, true, false, v); }
template <class T> inline T simd_xor(T v) { return simd_fold(v, [](T a, T b) { return (T)(a ^ b); }, true, false, v); }
template <class T> inline T simd_prefix_inclusive_sum(T v) { return simd_fold(v, [](T a, T b) { return (T)(a + b); }, true, true, (T)0); }
template <class T> inline T simd_prefix_exclusive_sum(T v) { return simd_fold(v, [](T a, T b) { return (T)(a + b); }, false, true, (T)0); }
template <class T> inline T simd_prefix_inclusive_product(T v) { return simd_fold(v, [](T a, T b) { return (T)(a * b); }, true, true, (T)1); }
template <class T> inline T simd_prefix_exclusive_product(T v) { return simd_fold(v, [](T a, T b) { return (T)(a * b); }, false, true, (T)1); }
inline bool simd_all(bool p) {
  unsigned m = simd_active();
  return __ballot_sync(m, p) == m;
}
inline bool simd_any(bool p) { return __ballot_sync(simd_active(), p) != 0; }
inline unsigned long long simd_ballot(bool p) { return __ballot_sync(simd_active(), p); }
inline bool simd_is_first() {
  unsigned self = cunumpy_emu::tl_sched ? cunumpy_emu::tl_sched->cur->lin % 32 : 0;
  return (unsigned)__builtin_ctz(simd_active()) == self;
}

// ---------------------------------------------------------------- atomics
enum memory_order { memory_order_relaxed, memory_order_seq_cst };
template <class T> struct atomic { T value; };
typedef atomic<int> atomic_int;
typedef atomic<unsigned> atomic_uint;
typedef atomic<float> atomic_float;
typedef atomic<bool> atomic_bool;
template <class T> struct same { typedef T type; };
template <class T> inline T* atomic_target(atomic<T>* a) { return &a->value; }
template <class T> inline T* atomic_target(const cunumpy_emu::ptr<atomic<T>>& a) { return &a.check(0)->value; }
template <class T> inline T* atomic_target(volatile atomic<T>* a) { return const_cast<T*>(&a->value); }
#define CNM_ATOMIC_RMW(NAME, CUDA)                                                                 \
  template <class T> inline T NAME(atomic<T>* a, typename same<T>::type v, memory_order = memory_order_relaxed) { \
    cunumpy_emu::maybe_yield(); return CUDA(atomic_target(a), v); }                                 \
  template <class T> inline T NAME(const cunumpy_emu::ptr<atomic<T>>& a, typename same<T>::type v, memory_order = memory_order_relaxed) { \
    cunumpy_emu::maybe_yield(); return CUDA(atomic_target(a), v); }
CNM_ATOMIC_RMW(atomic_fetch_add_explicit, atomicAdd)
CNM_ATOMIC_RMW(atomic_fetch_sub_explicit, atomicSub)
CNM_ATOMIC_RMW(atomic_fetch_min_explicit, atomicMin)
CNM_ATOMIC_RMW(atomic_fetch_max_explicit, atomicMax)
CNM_ATOMIC_RMW(atomic_fetch_and_explicit, atomicAnd)
CNM_ATOMIC_RMW(atomic_fetch_or_explicit, atomicOr)
CNM_ATOMIC_RMW(atomic_fetch_xor_explicit, atomicXor)
CNM_ATOMIC_RMW(atomic_exchange_explicit, atomicExch)
#undef CNM_ATOMIC_RMW
template <class A> inline auto atomic_load_explicit(A a, memory_order = memory_order_relaxed) {
  return __atomic_load_n(atomic_target(a), __ATOMIC_RELAXED);
}
template <class A, class V> inline void atomic_store_explicit(A a, V v, memory_order = memory_order_relaxed) {
  auto* t = atomic_target(a);
  __atomic_store_n(t, (std::remove_pointer_t<decltype(t)>)v, __ATOMIC_RELAXED);
}
template <class A, class E, class V>
inline bool atomic_compare_exchange_weak_explicit(A a, E* expected, V desired, memory_order = memory_order_relaxed,
                                                  memory_order = memory_order_relaxed) {
  auto* t = atomic_target(a);
  using T = std::remove_pointer_t<decltype(t)>;
  T want = (T)desired;
  return __atomic_compare_exchange(t, expected, &want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
}  // namespace metal

using namespace metal;

// Address spaces are all host memory here: the rewrite drops `device`, `constant` and `thread`.
// `threadgroup` storage is `__shared__` (one instance per block on its host thread).

#endif  // CUNUMPY_EMU_METAL
