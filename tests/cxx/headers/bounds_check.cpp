// Built with -DCUNUMPY_BOUNDS_CHECK by check_headers.sh. argv[1] names a case; the out-of-range
// cases must print the cunumpy message and trap (the shim's __trap exits with status 42).
#include "shim.h"
#include <cunumpy/array_view.cuh>

#include <cstring>

static double buf[1024];

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const char* c = argv[1];
  Array2D<double> a2{buf, {2, 3}, {3, 1}};
  CArray5D<double> c5{buf, {2, 3, 4, 5, 6}};
  Array16D<double> a16{buf, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4},
                       {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
  if (!std::strcmp(c, "in_range")) {  // edges of every axis pass
    a2(0, 0) = 1;
    a2(1, 2) = 2;
    c5(1, 2, 3, 4, 5) = 3;
    Array5D<double> s5 = c5;
    s5(0, 0, 0, 0, 0) = 4;
    a16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3) = 5;
    std::printf("in range ok\n");
    return 0;
  }
  if (!std::strcmp(c, "axis1")) a2(1, 3) = 0;
  if (!std::strcmp(c, "negative")) a2(-1, 0) = 0;
  if (!std::strcmp(c, "carray5")) c5(1, 2, 3, 4, 6) = 0;
  if (!std::strcmp(c, "converted")) {
    Array5D<double> s5 = c5;
    s5(0, 3, 0, 0, 0) = 0;
  }
  if (!std::strcmp(c, "axis15")) a16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4) = 0;
  if (!std::strcmp(c, "huge")) (void)a2(0, 1LL << 40);
  std::printf("no trap\n");
  return 0;
}
