/* plan:
plan `softmax_rows_f32`: 3 kernel(s), 3 launch(es), workspace 800256 bytes
kernel 0 `softmax_rows_f32_k0`: reduction: 100000 output(s) x 512 reduced element(s), one warp per output
  fuses: max
  reads: in0: float32[100000, 512]
  writes: buf0: float32[100000]
  bytes: 204800000 read, 400000 written
  launch softmax_rows_f32_k0<<<1056, 256>>>(in0, buf0, stin0_0, M, K)
kernel 1 `softmax_rows_f32_k1`: reduction: 100000 output(s) x 512 reduced element(s), one warp per output
  fuses: subtract, exp, sum
  reads: in0: float32[100000, 512], buf0: float32[100000]
  writes: buf1: float32[100000]
  bytes: 205200000 read, 400000 written
  launch softmax_rows_f32_k1<<<1056, 256>>>(in0, buf0, buf1, stin0_0, M, K)
kernel 2 `softmax_rows_f32_k2`: elementwise over 51200000 element(s)
  fuses: subtract, exp, true_divide
  reads: in0: float32[100000, 512], buf0: float32[100000], buf1: float32[100000]
  writes: out0: float32[100000, 512]
  bytes: 205600000 read, 204800000 written
  launch softmax_rows_f32_k2<<<100000, 256>>>(in0, buf0, buf1, out0, d1, d1m, d1s, n)
buf0: 100000 x float32 at workspace offset 0 (kernels 0..=2): result of max (%1)
buf1: 100000 x float32 at workspace offset 400128 (kernels 1..=2): result of sum (%4)
total: 615600000 bytes read, 205600000 bytes written
*/

extern "C" __global__ void softmax_rows_f32_k0(
    const float* __restrict__ in0,
    float* __restrict__ buf0,
    const int stin0_0,
    const int M,
    const int K)
{
    const int lane = threadIdx.x & 31;
    const int warps = (int)gridDim.x * (int)(blockDim.x >> 5);
    for (int m = (int)blockIdx.x * (int)(blockDim.x >> 5) + (int)(threadIdx.x >> 5); m < M; m += warps) {
        const int c0 = m;
        const int b0 = c0 * stin0_0;
        float acc0 = -INFINITY;
#pragma unroll 4
        for (int k = lane; k < K; k += 32) {
            const int c1 = k;
            const float r0 = in0[b0 + c1];
            acc0 = cn_max(acc0, (float)r0);
        }
        for (int o = 16; o > 0; o >>= 1) {
            acc0 = cn_max(acc0, __shfl_down_sync(0xffffffffu, acc0, o));
        }
        if (lane == 0) {
            const float red0 = (float)(acc0);
            const float q0 = red0;
            buf0[m] = q0;
        }
    }
}

extern "C" __global__ void softmax_rows_f32_k1(
    const float* __restrict__ in0,
    const float* __restrict__ buf0,
    float* __restrict__ buf1,
    const int stin0_0,
    const int M,
    const int K)
{
    const int lane = threadIdx.x & 31;
    const int warps = (int)gridDim.x * (int)(blockDim.x >> 5);
    for (int m = (int)blockIdx.x * (int)(blockDim.x >> 5) + (int)(threadIdx.x >> 5); m < M; m += warps) {
        const int c0 = m;
        const int b0 = c0 * stin0_0;
        const int b1 = c0;
        double acc0 = 0;
#pragma unroll 4
        for (int k = lane; k < K; k += 32) {
            const int c1 = k;
            const float r0 = in0[b0 + c1];
            const float r1 = buf0[b1];
            const float r2 = (r0 - r1);
            const float r3 = exp(r2);
            const double r4 = (double)(r3);
            acc0 = (acc0 + (double)r4);
        }
        for (int o = 16; o > 0; o >>= 1) {
            acc0 = (acc0 + __shfl_down_sync(0xffffffffu, acc0, o));
        }
        if (lane == 0) {
            const float red0 = (float)(acc0);
            const float q0 = red0;
            buf1[m] = q0;
        }
    }
}

extern "C" __global__ void softmax_rows_f32_k2(
    const float* __restrict__ in0,
    const float* __restrict__ buf0,
    const float* __restrict__ buf1,
    float* __restrict__ out0,
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
                const float r0 = in0[i];
                const float r1 = buf0[c0];
                const float r4 = buf1[c0];
                const float r2 = (r0 - r1);
                const float r3 = exp(r2);
                const float r5 = (r3 / r4);
                out0[i] = r5;
            }
        } else {
            for (int u = 0; u < 2; ++u) {
                const int i = base + u * (int)blockDim.x;
                if (i < n) {
                    int ctmp = i;
                    const int cq1 = (int)((__umulhi((unsigned)ctmp, d1m) + (unsigned)ctmp) >> d1s);
                    const int c1 = ctmp - cq1 * d1; ctmp = cq1;
                    const int c0 = ctmp;
                    const float r0 = in0[i];
                    const float r1 = buf0[c0];
                    const float r4 = buf1[c0];
                    const float r2 = (r0 - r1);
                    const float r3 = exp(r2);
                    const float r5 = (r3 / r4);
                    out0[i] = r5;
                }
            }
        }
    }
}
