//! inputs: a, x, y, n
//! outputs: out
//! threadgroup: 128
// out[i] = a * x[i] + y[i] for i < n (a and n arrive as one-element arrays)
uint i = thread_position_in_grid.x;
if (i < (uint)n[0]) out[i] = a[0] * x[i] + y[i];
