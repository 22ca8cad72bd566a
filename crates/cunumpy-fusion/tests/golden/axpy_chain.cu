/* plan:
plan `axpy_chain`: 1 kernel(s), 1 launch(es), workspace 0 bytes
kernel 0 `axpy_chain_k0`: elementwise over 67108864 element(s)
  fuses: multiply, multiply, add, multiply, subtract
  reads: in0: float64[67108864], in1: float64[67108864], in2: float64[67108864], in3: float64[67108864], s0: float64
  writes: out0: float64[67108864]
  bytes: 2147483648 read, 536870912 written
  launch axpy_chain_k0<<<262144, 256>>>(in0, in1, in2, in3, out0, s0, n)
total: 2147483648 bytes read, 536870912 bytes written
*/

extern "C" __global__ void axpy_chain_k0(
    const double* __restrict__ in0,
    const double* __restrict__ in1,
    const double* __restrict__ in2,
    const double* __restrict__ in3,
    double* __restrict__ out0,
    const double s0,
    const int n)
{
    const int stride = (int)blockDim.x * (int)gridDim.x;
    for (int i = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x; i < n; i += stride) {
        const double r0 = in0[i];
        const double r1 = in1[i];
        const double r3 = in2[i];
        const double r4 = in3[i];
        const double r7 = s0;
        const double r2 = (r0 * r1);
        const double r5 = (r3 * r4);
        const double r6 = (r2 + r5);
        const double r8 = (r7 * r0);
        const double r9 = (r6 - r8);
        out0[i] = r9;
    }
}
