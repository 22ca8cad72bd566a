// Kernels using what public CUDA samples use (issue 21, item 10); run on the emulated device
// (tests/cxx/test_trust_emulator_cxx.py) and on the GPU (tests/gpu/test_real_cuda_gpu.py).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
typedef unsigned int uint;
typedef float real_t;
struct Params { float scale; int n; };

extern "C" __global__ void scale_typedef(real_t* x, const __grid_constant__ Params p, uint stride) {
    uint i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i * stride < (uint)p.n) x[i * stride] *= p.scale;
}

extern "C" __global__ void timed(long long* ticks, clock_t* small, int n) {
    clock_t t0 = clock();
    long long c0 = clock64();
    int i = threadIdx.x;
    if (i < n) { ticks[i] = clock64() - c0 >= 0 ? 1 : 0; small[i] = clock() - t0 >= 0 ? 1 : 0; }
}

extern "C" __global__ void axpb(float* y, const float* x, int n, float a = 2.0f, float b = 0.5f,
                                const float* offset = nullptr) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b + (offset ? offset[i] : 0.0f);
}

extern "C" __global__ void block_sums(const float* x, float* out, float* tile_out, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<8> eight = cg::tiled_partition<8>(block);
    __shared__ float partial[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    float s = v;
    for (int o = warp.size() / 2; o > 0; o /= 2) s += warp.shfl_down(s, o);
    if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = s;
    block.sync();
    if (block.thread_rank() == 0) {
        float t = 0.0f;
        for (int w = 0; w < (int)((block.size() + 31) / 32); w++) t += partial[w];
        out[blockIdx.x] = t;
    }
    float e = cg::reduce(eight, v, cg::plus<float>());
    eight.sync();
    if (eight.thread_rank() == 0 && i < n) tile_out[i / 8] = e;
}

extern "C" __global__ void bad_shuffle(int* out) {
    int v = threadIdx.x;
    if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0x0000ffffu, v, 20);
}
