// The grid emulator's warp shuffles (plugins/cuda_nvrtc/grid_emulator.h, the host-emulation
// prelude of cuda_printer.cpp): __shfl_down_sync and __shfl_xor_sync in hand-written CUDA C,
// compiled by the in-process Clang JIT with the emulation prelude and launched over a grid; each
// GPU thread is a fiber that switches at the shuffle. Checked element by element against what
// the CUDA Programming Guide defines (the source lane's value; out-of-range lanes keep their own).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "plugins/cpu_cpp/clang_jit.h"
#include "plugins/cuda_nvrtc/cuda_printer.h"
#include "plugins/cuda_nvrtc/grid_emulator.h"
#include "stax/sdk/types.hpp"

namespace stax::cuda {
namespace {

constexpr const char kKernels[] = R"(
extern "C" __global__ void shuffles(const float* in, float* down3, float* xor5, long long* xor1,
                                    double* warp_sum) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  float v = in[t];
  down3[t] = __shfl_down_sync(0xffffffffu, v, 3, 16);
  xor5[t] = __shfl_xor_sync(0xffffffffu, v, 5);
  long long w = (long long)t * 1000000007LL;
  xor1[t] = __shfl_xor_sync(0xffffffffu, w, 1);
  // A butterfly sum over the warp: every lane ends with the warp's total.
  double s = (double)v;
  for (int m = 16; m >= 1; m /= 2) s += __shfl_xor_sync(0xffffffffu, s, m);
  warp_sum[t] = s;
}
template <class T, T... I> struct seq {};
template <class... P, unsigned long... I>
inline void call(void (*f)(P...), void* const* a, seq<unsigned long, I...>) {
  f(static_cast<P>(a[I])...);
}
extern "C" void entry(stax_emu_state* state, void* const* buffers) {
  stax_emu = state;
  call(shuffles, buffers, __make_integer_seq<seq, unsigned long, 5>{});
}
)";

TEST(CudaEmulator, ShufflesSwitchFibersAndReadTheSourceLane) {
  cpu::ClangJitOptions o;
  o.opt_level = 1;
  o.load_sleef = false;
  cpu::ClangJit jit(o);
  cpu::CompiledModule m = jit.compile(kernel_prelude(Target::HostEmulation) + kKernels,
                                      {"entry"}, "shuffles");
  auto* entry = m.function<EmuEntry>("entry");
  const unsigned grid = 3, block = 64, n = grid * block;
  std::vector<float> in(n), down3(n), xor5(n);
  std::vector<long long> xor1(n);
  std::vector<double> warp_sum(n);
  for (unsigned i = 0; i < n; ++i) in[i] = static_cast<float>(i) * 0.5f - 7.0f;
  void* args[] = {in.data(), down3.data(), xor5.data(), xor1.data(), warp_sum.data()};
  GridEmulator emulator;
  emulator.launch(entry, args, grid, block, "shuffles");
  for (unsigned t = 0; t < n; ++t) {
    unsigned lane16 = t % 16;
    EXPECT_EQ(down3[t], lane16 + 3 < 16 ? in[t + 3] : in[t]) << t;
    EXPECT_EQ(xor5[t], in[t ^ 5u]) << t;
    EXPECT_EQ(xor1[t], static_cast<long long>(t ^ 1u) * 1000000007LL) << t;
    unsigned warp = t - t % 32;
    double want = 0;
    for (unsigned l = 0; l < 32; ++l) want += in[warp + l];
    EXPECT_NEAR(warp_sum[t], want, 1e-9) << t;
  }
}

}  // namespace
}  // namespace stax::cuda
