/* plan:
plan `a_minus_mean`: 2 kernel(s), 3 launch(es), workspace 17152 bytes
kernel 0 `a_minus_mean_k0`: reduction: 1 output(s) x 67108864 reduced element(s), split into 2112 block(s) per output + final combine
  fuses: mean
  reads: in0: float64[67108864]
  writes: buf0: float64[1]
  bytes: 536887808 read, 16904 written
  launch a_minus_mean_k0_partial<<<2112, 256>>>(in0, part0, M, K, P)
  launch a_minus_mean_k0_final<<<1, 256>>>(part0, buf0, K, M, P)
kernel 1 `a_minus_mean_k1`: elementwise over 67108864 element(s)
  fuses: subtract
  reads: in0: float64[67108864], buf0: float64[1]
  writes: out0: float64[67108864]
  bytes: 536870920 read, 536870912 written
  launch a_minus_mean_k1<<<131072, 256>>>(in0, buf0, out0, n)
buf0: 1 x float64 at workspace offset 16896 (kernels 0..=1): result of mean (%1)
buf1: 2112 x float64 at workspace offset 0 (kernels 0..=0): partials of mean #0 in kernel 0
total: 1073758728 bytes read, 536887816 bytes written
*/

extern "C" __global__ void a_minus_mean_k0_partial(
    const double* __restrict__ in0,
    double* __restrict__ part0,
    const int M,
    const int K,
    const int P)
{
    __shared__ double sh0[8];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    for (int blk = blockIdx.x; blk < M * P; blk += gridDim.x) {
        const int m = blk / P;
        const int p = blk - m * P;
        double acc0 = 0;
        for (int k = p * (int)blockDim.x + (int)threadIdx.x; k < K; k += P * (int)blockDim.x) {
            const int c0 = k;
            const double r0 = in0[c0];
            acc0 = (acc0 + (double)r0);
        }
        for (int o = 16; o > 0; o >>= 1) {
            acc0 = (acc0 + __shfl_down_sync(0xffffffffu, acc0, o));
        }
        if (lane == 0) sh0[warp] = acc0;
        __syncthreads();
        if (warp == 0) {
            acc0 = lane < 8 ? sh0[lane] : (double)0;
            for (int o = 16; o > 0; o >>= 1) {
                acc0 = (acc0 + __shfl_down_sync(0xffffffffu, acc0, o));
            }
        }
        if (threadIdx.x == 0) part0[blk] = acc0;
        __syncthreads();
    }
}

extern "C" __global__ void a_minus_mean_k0_final(
    const double* __restrict__ part0,
    double* __restrict__ buf0,
    const int K,
    const int M,
    const int P)
{
    __shared__ double sh0[8];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    for (int m = blockIdx.x; m < M; m += gridDim.x) {
        double acc0 = 0;
        for (int p = threadIdx.x; p < P; p += blockDim.x) {
            acc0 = (acc0 + part0[m * P + p]);
        }
        for (int o = 16; o > 0; o >>= 1) {
            acc0 = (acc0 + __shfl_down_sync(0xffffffffu, acc0, o));
        }
        if (lane == 0) sh0[warp] = acc0;
        __syncthreads();
        if (warp == 0) {
            acc0 = lane < 8 ? sh0[lane] : (double)0;
            for (int o = 16; o > 0; o >>= 1) {
                acc0 = (acc0 + __shfl_down_sync(0xffffffffu, acc0, o));
            }
        }
        if (threadIdx.x == 0) {
            const double red0 = (double)((double)acc0 / ((double)K - 0.0));
            const double q0 = red0;
            buf0[m] = q0;
        }
        __syncthreads();
    }
}

extern "C" __global__ void a_minus_mean_k1(
    const double* __restrict__ in0,
    const double* __restrict__ buf0,
    double* __restrict__ out0,
    const int n)
{
    const int stride = (int)blockDim.x * (int)gridDim.x * 2;
    for (int base = (int)blockIdx.x * (int)blockDim.x * 2 + (int)threadIdx.x; base < n; base += stride) {
        if (base + 1 * (int)blockDim.x < n) {
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                const int i = base + u * (int)blockDim.x;
                const double r0 = in0[i];
                const double r1 = buf0[0];
                const double r2 = (r0 - r1);
                out0[i] = r2;
            }
        } else {
            for (int u = 0; u < 2; ++u) {
                const int i = base + u * (int)blockDim.x;
                if (i < n) {
                    const double r0 = in0[i];
                    const double r1 = buf0[0];
                    const double r2 = (r0 - r1);
                    out0[i] = r2;
                }
            }
        }
    }
}
