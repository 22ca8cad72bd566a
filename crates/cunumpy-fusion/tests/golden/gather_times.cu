/* plan:
plan `gather_times`: 1 kernel(s), 1 launch(es), workspace 0 bytes
kernel 0 `gather_times_k0`: elementwise over 1048576 element(s)
  fuses: take, view, multiply
  reads: in0: float64[4194304], in1: int64[1048576], in2: float64[1048576]
  writes: out0: float64[1048576]
  bytes: 50331648 read, 8388608 written
  launch gather_times_k0<<<2048, 256>>>(in1, in2, in0, out0, stin2_0, oin2, len0, n)
total: 50331648 bytes read, 8388608 bytes written
*/

extern "C" __global__ void gather_times_k0(
    const long long* __restrict__ in1,
    const double* __restrict__ in2,
    const double* __restrict__ in0,
    double* __restrict__ out0,
    const int stin2_0,
    const int oin2,
    const long long len0,
    const int n)
{
    const int stride = (int)blockDim.x * (int)gridDim.x * 2;
    for (int base = (int)blockIdx.x * (int)blockDim.x * 2 + (int)threadIdx.x; base < n; base += stride) {
        if (base + 1 * (int)blockDim.x < n) {
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                const int i = base + u * (int)blockDim.x;
                const int c0 = i;
                const long long r0 = in1[i];
                const double r3 = in2[oin2 + c0 * stin2_0];
                long long r1 = (long long)(r0);
                if (r1 < 0) r1 += len0;
                if (r1 < 0 || r1 >= len0) { printf("fuse: gather_times_k0: index %lld is out of bounds for axis 0 with size %lld\n", (long long)(r0), len0); __trap(); }
                const double r2 = in0[(int)r1];
                const double r4 = (r2 * r3);
                out0[i] = r4;
            }
        } else {
            for (int u = 0; u < 2; ++u) {
                const int i = base + u * (int)blockDim.x;
                if (i < n) {
                    const int c0 = i;
                    const long long r0 = in1[i];
                    const double r3 = in2[oin2 + c0 * stin2_0];
                    long long r1 = (long long)(r0);
                    if (r1 < 0) r1 += len0;
                    if (r1 < 0 || r1 >= len0) { printf("fuse: gather_times_k0: index %lld is out of bounds for axis 0 with size %lld\n", (long long)(r0), len0); __trap(); }
                    const double r2 = in0[(int)r1];
                    const double r4 = (r2 * r3);
                    out0[i] = r4;
                }
            }
        }
    }
}
