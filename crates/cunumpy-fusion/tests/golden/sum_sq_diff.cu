/* plan:
plan `sum_sq_diff`: 1 kernel(s), 2 launch(es), workspace 16896 bytes
kernel 0 `sum_sq_diff_k0`: reduction: 1 output(s) x 67108864 reduced element(s), split into 2112 block(s) per output + final combine
  fuses: subtract, power, sum
  reads: in0: float64[67108864], in1: float64[67108864], s0: int64
  writes: out0: float64[]
  bytes: 1073758720 read, 16904 written
  launch sum_sq_diff_k0_partial<<<2112, 256>>>(in0, in1, part0, s0, M, K, P)
  launch sum_sq_diff_k0_final<<<1, 256>>>(part0, out0, M, P)
buf0: 2112 x float64 at workspace offset 0 (kernels 0..=0): partials of sum #0 in kernel 0
total: 1073758720 bytes read, 16904 bytes written
*/

extern "C" __global__ void sum_sq_diff_k0_partial(
    const double* __restrict__ in0,
    const double* __restrict__ in1,
    double* __restrict__ part0,
    const long long s0,
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
            const double r1 = in1[c0];
            const long long r3 = s0;
            const double r2 = (r0 - r1);
            const double r4 = (double)(r3);
            const double r5 = cn_pow(r2, r4);
            acc0 = (acc0 + (double)r5);
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

extern "C" __global__ void sum_sq_diff_k0_final(
    const double* __restrict__ part0,
    double* __restrict__ out0,
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
            const double red0 = (double)(acc0);
            const double q0 = red0;
            out0[m] = q0;
        }
        __syncthreads();
    }
}
