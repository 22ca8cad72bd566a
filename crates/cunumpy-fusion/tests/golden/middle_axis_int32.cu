/* plan:
plan `middle_axis_int32`: 1 kernel(s), 1 launch(es), workspace 0 bytes
kernel 0 `middle_axis_int32_k0`: reduction: 100000 output(s) x 192 reduced element(s), one warp per output
  fuses: sum, max, subtract
  reads: in0: int32[64, 100000, 3]
  writes: out0: int64[100000]
  bytes: 76800000 read, 800000 written
  launch middle_axis_int32_k0<<<1056, 256>>>(in0, out0, d2, d2m, d2s, stin0_1, stin0_0, M, K)
total: 76800000 bytes read, 800000 bytes written
*/

extern "C" __global__ void middle_axis_int32_k0(
    const int* __restrict__ in0,
    long long* __restrict__ out0,
    const int d2,
    const unsigned int d2m,
    const int d2s,
    const int stin0_1,
    const int stin0_0,
    const int M,
    const int K)
{
    const int lane = threadIdx.x & 31;
    const int warps = (int)gridDim.x * (int)(blockDim.x >> 5);
    for (int m = (int)blockIdx.x * (int)(blockDim.x >> 5) + (int)(threadIdx.x >> 5); m < M; m += warps) {
        const int c1 = m;
        const int b0 = c1 * stin0_1;
        long long acc0 = 0;
        int acc1 = (-2147483647 - 1);
#pragma unroll 4
        for (int k = lane; k < K; k += 32) {
            int ctmp = k;
            const int cq2 = (int)((__umulhi((unsigned)ctmp, d2m) + (unsigned)ctmp) >> d2s);
            const int c2 = ctmp - cq2 * d2; ctmp = cq2;
            const int c0 = ctmp;
            const int r0 = in0[b0 + c0 * stin0_0 + c2];
            const long long r1 = (long long)(r0);
            acc0 = (acc0 + (long long)r1);
            acc1 = cn_max(acc1, (int)r0);
        }
        for (int o = 16; o > 0; o >>= 1) {
            acc0 = (acc0 + __shfl_down_sync(0xffffffffu, acc0, o));
            acc1 = cn_max(acc1, __shfl_down_sync(0xffffffffu, acc1, o));
        }
        if (lane == 0) {
            const long long red0 = (long long)(acc0);
            const int red1 = (int)(acc1);
            const int q0 = red1;
            const long long q2 = red0;
            const long long q1 = (long long)(q0);
            const long long q3 = (q1 - q2);
            out0[m] = q3;
        }
    }
}
