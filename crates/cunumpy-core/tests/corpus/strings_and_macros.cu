#include <cstdio>

#define KERNEL_NAME "__global__ void fake_from_macro(int n)"
#define REAL double
#define LAUNCH(k, ...) k<<<1, 1>>>(__VA_ARGS__)
#define MULTILINE_DECL \
    __global__ void fake_multiline(int n) \
    {}

static const char* kDoc = "call __global__ void fake_in_string(double* x) from Python";
static const char* kRaw = R"doc(
    __global__ void fake_in_raw(double* x) { }
    a ")" inside
)doc";
static const char kQuote = '"';
static const char* kEscaped = "\"__global__ void fake_escaped()\"";

/*
__global__ void fake_in_block_comment(double* x) {}
*/
// __global__ void fake_in_line_comment(double* x) {}

__global__ void real_after_strings(double* x /* "not a string" */, int n) // trailing "
{
    if (n == 0) printf("__global__ %d\n", n);
}

__global__ void with_macro_param(REAL* x, int n) {}

#define KERNEL_ATTRS
__global__ void KERNEL_ATTRS
attr_macro_between(int n) {}

__global__
void
spread_over_lines
(
  float*
  x
  ,
  unsigned
  n
)
{}
