/* plan:
plan `column_std_ddof1`: 2 kernel(s), 2 launch(es), workspace 800000 bytes
kernel 0 `column_std_ddof1_k0`: reduction: 100000 output(s) x 1000 reduced element(s), one thread per output
  fuses: mean
  reads: in0: float64[1000, 100000]
  writes: buf0: float64[100000]
  bytes: 800000000 read, 800000 written
  launch column_std_ddof1_k0<<<391, 256>>>(in0, buf0, stin0_0, K, M)
kernel 1 `column_std_ddof1_k1`: reduction: 100000 output(s) x 1000 reduced element(s), one thread per output
  fuses: subtract, multiply, mean, sqrt
  reads: in0: float64[1000, 100000], buf0: float64[100000]
  writes: out0: float64[100000]
  bytes: 800800000 read, 800000 written
  launch column_std_ddof1_k1<<<391, 256>>>(in0, buf0, out0, stin0_0, K, M)
buf0: 100000 x float64 at workspace offset 0 (kernels 0..=1): result of mean (%1)
total: 1600800000 bytes read, 1600000 bytes written
*/

extern "C" __global__ void column_std_ddof1_k0(
    const double* __restrict__ in0,
    double* __restrict__ buf0,
    const int stin0_0,
    const int K,
    const int M)
{
    const int stride = (int)blockDim.x * (int)gridDim.x;
    for (int m = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x; m < M; m += stride) {
        const int c1 = m;
        const int b0 = c1;
        double acc0 = 0;
        for (int k = 0; k < K; ++k) {
            const int c0 = k;
            const double r0 = in0[b0 + c0 * stin0_0];
            acc0 = (acc0 + (double)r0);
        }
        {
            const double red0 = (double)((double)acc0 / ((double)K - 0.0));
            const double q0 = red0;
            buf0[m] = q0;
        }
    }
}

extern "C" __global__ void column_std_ddof1_k1(
    const double* __restrict__ in0,
    const double* __restrict__ buf0,
    double* __restrict__ out0,
    const int stin0_0,
    const int K,
    const int M)
{
    const int stride = (int)blockDim.x * (int)gridDim.x;
    for (int m = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x; m < M; m += stride) {
        const int c1 = m;
        const int b0 = c1;
        const int b1 = c1;
        double acc0 = 0;
        for (int k = 0; k < K; ++k) {
            const int c0 = k;
            const double r0 = in0[b0 + c0 * stin0_0];
            const double r1 = buf0[b1];
            const double r2 = (r0 - r1);
            const double r3 = (r2 * r2);
            acc0 = (acc0 + (double)r3);
        }
        {
            const double red0 = (double)((double)acc0 / ((double)K - 1.0));
            const double q0 = red0;
            const double q1 = sqrt(q0);
            out0[m] = q1;
        }
    }
}
