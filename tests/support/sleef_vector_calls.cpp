// vector_math_test's calls of SLEEF's AVX-512 vector functions through a pointer found by dlsym.
// This file is compiled with -mavx512f (tests/CMakeLists.txt), so the whole file uses the AVX-512
// calling convention (vectors in zmm registers); the test calls it only where the CPU has AVX-512F.
#include <cstring>

namespace {
typedef float v16f __attribute__((vector_size(64)));
typedef double v8d __attribute__((vector_size(64)));

template <class V, class T>
void call(void* fn, const T* a, const T* b, T* out) {
  V x, y, r;
  std::memcpy(&x, a, sizeof x);
  if (b) {
    std::memcpy(&y, b, sizeof y);
    r = reinterpret_cast<V (*)(V, V)>(fn)(x, y);
  } else {
    r = reinterpret_cast<V (*)(V)>(fn)(x);
  }
  std::memcpy(out, &r, sizeof r);
}
}  // namespace

void call_vf(void* fn, const float* a, const float* b, float* out) { call<v16f>(fn, a, b, out); }
void call_vd(void* fn, const double* a, const double* b, double* out) { call<v8d>(fn, a, b, out); }
