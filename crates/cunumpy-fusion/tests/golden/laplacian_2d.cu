/* plan:
plan `laplacian_2d`: 1 kernel(s), 1 launch(es), workspace 0 bytes
kernel 0 `laplacian_2d_k0`: elementwise over 67076100 element(s)
  fuses: view, view, add, view, add, view, add, view, multiply, subtract
  reads: in0: float64[8192, 8192], s0: int64
  writes: out0: float64[8190, 8190]
  bytes: 536870912 read, 536608800 written
  launch laplacian_2d_k0<<<131009, 256>>>(in0, out0, s0, d1, d1m, d1s, stin0_0, oin0, oin0_2, oin0_3, oin0_4, oin0_5, n)
total: 536870912 bytes read, 536608800 bytes written
*/

extern "C" __global__ void laplacian_2d_k0(
    const double* __restrict__ in0,
    double* __restrict__ out0,
    const long long s0,
    const int d1,
    const unsigned int d1m,
    const int d1s,
    const int stin0_0,
    const int oin0,
    const int oin0_2,
    const int oin0_3,
    const int oin0_4,
    const int oin0_5,
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
                const double r0 = in0[oin0 + c0 * stin0_0 + c1];
                const double r1 = in0[oin0_2 + c0 * stin0_0 + c1];
                const double r3 = in0[oin0_3 + c0 * stin0_0 + c1];
                const double r5 = in0[oin0_4 + c0 * stin0_0 + c1];
                const long long r7 = s0;
                const double r9 = in0[oin0_5 + c0 * stin0_0 + c1];
                const double r2 = (r0 + r1);
                const double r4 = (r2 + r3);
                const double r6 = (r4 + r5);
                const double r8 = (double)(r7);
                const double r10 = (r8 * r9);
                const double r11 = (r6 - r10);
                out0[i] = r11;
            }
        } else {
            for (int u = 0; u < 2; ++u) {
                const int i = base + u * (int)blockDim.x;
                if (i < n) {
                    int ctmp = i;
                    const int cq1 = (int)((__umulhi((unsigned)ctmp, d1m) + (unsigned)ctmp) >> d1s);
                    const int c1 = ctmp - cq1 * d1; ctmp = cq1;
                    const int c0 = ctmp;
                    const double r0 = in0[oin0 + c0 * stin0_0 + c1];
                    const double r1 = in0[oin0_2 + c0 * stin0_0 + c1];
                    const double r3 = in0[oin0_3 + c0 * stin0_0 + c1];
                    const double r5 = in0[oin0_4 + c0 * stin0_0 + c1];
                    const long long r7 = s0;
                    const double r9 = in0[oin0_5 + c0 * stin0_0 + c1];
                    const double r2 = (r0 + r1);
                    const double r4 = (r2 + r3);
                    const double r6 = (r4 + r5);
                    const double r8 = (double)(r7);
                    const double r10 = (r8 * r9);
                    const double r11 = (r6 - r10);
                    out0[i] = r11;
                }
            }
        }
    }
}
