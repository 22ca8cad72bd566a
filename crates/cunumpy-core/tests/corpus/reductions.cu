#include <cunumpy/reduce.cuh>

namespace {
constexpr int kWarp = 32;
}

template <typename T, int BLOCK, bool ACCUMULATE>
__global__ void __launch_bounds__(BLOCK)
block_sum(const T* __restrict__ in, T* __restrict__ out, const size_t n)
{
    __shared__ T partial[BLOCK];
    T acc = T(0);
    for (size_t i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) acc += in[i];
    partial[threadIdx.x] = acc;
}

template <typename T, typename Acc = T, unsigned int BLOCK = 256>
__launch_bounds__(BLOCK) __global__
void dot(const T* x, const T* y, Acc* result, int n) {}

template<class Real>
static __global__ void histogram(const Real* values, unsigned int* counts,
                                 Real lo, Real hi, int n_bins, int n) {}

template <typename T, int N>
__global__ void fixed_window(const T window[N], T* out, ptrdiff_t stride) {}

template <typename Index, typename Value>
__global__ void segment_sum(const Index* segments, const Value* values, Value* out,
                            Index n_segments) {}
