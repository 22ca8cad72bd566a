/* plan:
plan `laplacian_2d`: 1 kernel(s), 1 launch(es), workspace 0 bytes
kernel 0 `laplacian_2d_k0`: elementwise over 67076100 element(s)
  fuses: view, view, add, view, add, view, add, view, multiply, subtract
  reads: in0: float64[8192, 8192], s0: int64
  writes: out0: float64[8190, 8190]
  bytes: 536870912 read, 536608800 written
  launch laplacian_2d_k0<<<32768, 256>>>(in0, out0, s0, tn1, tn1m, tn1s, d1, d0, ic_0, stin0_0, oin0, oin0_2, oin0_3, oin0_4, oin0_5, nt)
total: 536870912 bytes read, 536608800 bytes written
*/

extern "C" __global__ void laplacian_2d_k0(
    const double* __restrict__ in0,
    double* __restrict__ out0,
    const long long s0,
    const int tn1,
    const unsigned int tn1m,
    const int tn1s,
    const int d1,
    const int d0,
    const int ic_0,
    const int stin0_0,
    const int oin0,
    const int oin0_2,
    const int oin0_3,
    const int oin0_4,
    const int oin0_5,
    const int nt)
{
    const int lane = (int)(threadIdx.x & 31);
    const int warps = (int)gridDim.x * (int)(blockDim.x >> 5);
    for (int tile = (int)blockIdx.x * (int)(blockDim.x >> 5) + (int)(threadIdx.x >> 5); tile < nt; tile += warps) {
        int ttmp = tile;
        const int tq1 = (int)((__umulhi((unsigned)ttmp, tn1m) + (unsigned)ttmp) >> tn1s);
        const int t1 = ttmp - tq1 * tn1; ttmp = tq1;
        const int t0 = ttmp;
        const int c0 = t0 * 8;
        const int c1 = t1 * 32 + lane;
        if (c1 < d1) {
            const int rows = d0 - c0;
            const int i0 = c0 * ic_0 + c1;
            const int b0 = oin0 + c0 * stin0_0 + c1;
            const int b1 = oin0_2 + c0 * stin0_0 + c1;
            const int b3 = oin0_3 + c0 * stin0_0 + c1;
            const int b5 = oin0_4 + c0 * stin0_0 + c1;
            const int b9 = oin0_5 + c0 * stin0_0 + c1;
            if (rows >= 8) {
                const double w0_0 = in0[b5];
                const double w0_1 = in0[b5 + 1 * stin0_0];
                const double w0_2 = in0[b5 + 2 * stin0_0];
                const double w0_3 = in0[b5 + 3 * stin0_0];
                const double w0_4 = in0[b5 + 4 * stin0_0];
                const double w0_5 = in0[b5 + 5 * stin0_0];
                const double w0_6 = in0[b5 + 6 * stin0_0];
                const double w0_7 = in0[b5 + 7 * stin0_0];
                const double w0_8 = in0[b5 + 8 * stin0_0];
                const double w0_9 = in0[b5 + 9 * stin0_0];
                {
                    const double r0 = in0[b0];
                    const double r1 = in0[b1];
                    const double r3 = w0_2;
                    const double r5 = w0_0;
                    const long long r7 = s0;
                    const double r9 = w0_1;
                    const double r2 = (r0 + r1);
                    const double r4 = (r2 + r3);
                    const double r6 = (r4 + r5);
                    const double r8 = (double)(r7);
                    const double r10 = (r8 * r9);
                    const double r11 = (r6 - r10);
                    out0[i0] = r11;
                }
                {
                    const double r0 = in0[b0 + 1 * stin0_0];
                    const double r1 = in0[b1 + 1 * stin0_0];
                    const double r3 = w0_3;
                    const double r5 = w0_1;
                    const long long r7 = s0;
                    const double r9 = w0_2;
                    const double r2 = (r0 + r1);
                    const double r4 = (r2 + r3);
                    const double r6 = (r4 + r5);
                    const double r8 = (double)(r7);
                    const double r10 = (r8 * r9);
                    const double r11 = (r6 - r10);
                    out0[i0 + 1 * ic_0] = r11;
                }
                {
                    const double r0 = in0[b0 + 2 * stin0_0];
                    const double r1 = in0[b1 + 2 * stin0_0];
                    const double r3 = w0_4;
                    const double r5 = w0_2;
                    const long long r7 = s0;
                    const double r9 = w0_3;
                    const double r2 = (r0 + r1);
                    const double r4 = (r2 + r3);
                    const double r6 = (r4 + r5);
                    const double r8 = (double)(r7);
                    const double r10 = (r8 * r9);
                    const double r11 = (r6 - r10);
                    out0[i0 + 2 * ic_0] = r11;
                }
                {
                    const double r0 = in0[b0 + 3 * stin0_0];
                    const double r1 = in0[b1 + 3 * stin0_0];
                    const double r3 = w0_5;
                    const double r5 = w0_3;
                    const long long r7 = s0;
                    const double r9 = w0_4;
                    const double r2 = (r0 + r1);
                    const double r4 = (r2 + r3);
                    const double r6 = (r4 + r5);
                    const double r8 = (double)(r7);
                    const double r10 = (r8 * r9);
                    const double r11 = (r6 - r10);
                    out0[i0 + 3 * ic_0] = r11;
                }
                {
                    const double r0 = in0[b0 + 4 * stin0_0];
                    const double r1 = in0[b1 + 4 * stin0_0];
                    const double r3 = w0_6;
                    const double r5 = w0_4;
                    const long long r7 = s0;
                    const double r9 = w0_5;
                    const double r2 = (r0 + r1);
                    const double r4 = (r2 + r3);
                    const double r6 = (r4 + r5);
                    const double r8 = (double)(r7);
                    const double r10 = (r8 * r9);
                    const double r11 = (r6 - r10);
                    out0[i0 + 4 * ic_0] = r11;
                }
                {
                    const double r0 = in0[b0 + 5 * stin0_0];
                    const double r1 = in0[b1 + 5 * stin0_0];
                    const double r3 = w0_7;
                    const double r5 = w0_5;
                    const long long r7 = s0;
                    const double r9 = w0_6;
                    const double r2 = (r0 + r1);
                    const double r4 = (r2 + r3);
                    const double r6 = (r4 + r5);
                    const double r8 = (double)(r7);
                    const double r10 = (r8 * r9);
                    const double r11 = (r6 - r10);
                    out0[i0 + 5 * ic_0] = r11;
                }
                {
                    const double r0 = in0[b0 + 6 * stin0_0];
                    const double r1 = in0[b1 + 6 * stin0_0];
                    const double r3 = w0_8;
                    const double r5 = w0_6;
                    const long long r7 = s0;
                    const double r9 = w0_7;
                    const double r2 = (r0 + r1);
                    const double r4 = (r2 + r3);
                    const double r6 = (r4 + r5);
                    const double r8 = (double)(r7);
                    const double r10 = (r8 * r9);
                    const double r11 = (r6 - r10);
                    out0[i0 + 6 * ic_0] = r11;
                }
                {
                    const double r0 = in0[b0 + 7 * stin0_0];
                    const double r1 = in0[b1 + 7 * stin0_0];
                    const double r3 = w0_9;
                    const double r5 = w0_7;
                    const long long r7 = s0;
                    const double r9 = w0_8;
                    const double r2 = (r0 + r1);
                    const double r4 = (r2 + r3);
                    const double r6 = (r4 + r5);
                    const double r8 = (double)(r7);
                    const double r10 = (r8 * r9);
                    const double r11 = (r6 - r10);
                    out0[i0 + 7 * ic_0] = r11;
                }
            } else {
                for (int t = 0; t < rows; ++t) {
                    const double r0 = in0[b0 + t * stin0_0];
                    const double r1 = in0[b1 + t * stin0_0];
                    const double r3 = in0[b3 + t * stin0_0];
                    const double r5 = in0[b5 + t * stin0_0];
                    const long long r7 = s0;
                    const double r9 = in0[b9 + t * stin0_0];
                    const double r2 = (r0 + r1);
                    const double r4 = (r2 + r3);
                    const double r6 = (r4 + r5);
                    const double r8 = (double)(r7);
                    const double r10 = (r8 * r9);
                    const double r11 = (r6 - r10);
                    out0[i0 + t * ic_0] = r11;
                }
            }
        }
    }
}
