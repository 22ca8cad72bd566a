/* plan:
plan `row_range_short_rows`: 1 kernel(s), 1 launch(es), workspace 0 bytes
kernel 0 `row_range_short_rows_k0`: reduction: 4194304 output(s) x 16 reduced element(s), 4 lanes per output (8 outputs per warp)
  fuses: max, min, subtract
  reads: in0: float64[4194304, 16]
  writes: out0: float64[4194304]
  bytes: 536870912 read, 33554432 written
  launch row_range_short_rows_k0<<<1056, 256>>>(in0, out0, stin0_0, M, K)
total: 536870912 bytes read, 33554432 bytes written
*/

extern "C" __global__ void row_range_short_rows_k0(
    const double* __restrict__ in0,
    double* __restrict__ out0,
    const int stin0_0,
    const int M,
    const int K)
{
    const int lane = threadIdx.x & 31;
    const int sub = lane & 3;
    const int rows = (int)gridDim.x * (int)(blockDim.x >> 5) * 8;
    for (int mw = ((int)blockIdx.x * (int)(blockDim.x >> 5) + (int)(threadIdx.x >> 5)) * 8; mw < M; mw += rows) {
        const int m = mw + (int)(lane >> 2);
        const int kend = m < M ? K : 0;
        const int c0 = m;
        const int b0 = c0 * stin0_0;
        double acc0 = -INFINITY;
        double acc1 = INFINITY;
#pragma unroll 4
        for (int k = sub; k < kend; k += 4) {
            const int c1 = k;
            const double r0 = in0[b0 + c1];
            acc0 = cn_max(acc0, (double)r0);
            acc1 = cn_min(acc1, (double)r0);
        }
        for (int o = 2; o > 0; o >>= 1) {
            acc0 = cn_max(acc0, __shfl_down_sync(0xffffffffu, acc0, o));
            acc1 = cn_min(acc1, __shfl_down_sync(0xffffffffu, acc1, o));
        }
        if (sub == 0 && m < M) {
            const double red0 = (double)(acc0);
            const double red1 = (double)(acc1);
            const double q0 = red0;
            const double q1 = red1;
            const double q2 = (q0 - q1);
            out0[m] = q2;
        }
    }
}
