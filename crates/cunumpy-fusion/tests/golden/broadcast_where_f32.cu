/* plan:
plan `broadcast_where_f32`: 1 kernel(s), 1 launch(es), workspace 0 bytes
kernel 0 `broadcast_where_f32_k0`: elementwise over 300000 element(s)
  fuses: greater, multiply, where
  reads: in0: float32[1000, 300], in1: float32[300], s0: int64, s1: float64
  writes: out0: float32[1000, 300]
  bytes: 1201200 read, 1200000 written
  launch broadcast_where_f32_k0<<<586, 256>>>(in0, in1, out0, s0, s1, d1, d1m, d1s, n)
total: 1201200 bytes read, 1200000 bytes written
*/

extern "C" __global__ void broadcast_where_f32_k0(
    const float* __restrict__ in0,
    const float* __restrict__ in1,
    float* __restrict__ out0,
    const long long s0,
    const double s1,
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
                const long long r1 = s0;
                const float r4 = in1[c1];
                const double r6 = s1;
                const float r2 = (float)(r1);
                const bool r3 = (r0 > r2);
                const float r5 = (r0 * r4);
                const float r7 = (float)(r6);
                const float r8 = (r3 ? r5 : r7);
                out0[i] = r8;
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
                    const long long r1 = s0;
                    const float r4 = in1[c1];
                    const double r6 = s1;
                    const float r2 = (float)(r1);
                    const bool r3 = (r0 > r2);
                    const float r5 = (r0 * r4);
                    const float r7 = (float)(r6);
                    const float r8 = (r3 ? r5 : r7);
                    out0[i] = r8;
                }
            }
        }
    }
}
