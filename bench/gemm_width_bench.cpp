// bench_gemm_width: what planning a product for the wrong width costs (issue 25). A 1-wide pool
// (the torch backend's OpenMP team after torch.set_num_threads(1)) used to get the plan of the
// configured width (2 here): its row blocks and column groups, run one after another on the
// calling thread (a 1-wide team's parallel_for runs its tasks inline). This runs the GPT block's
// products (bench/torch_backend.py: B*T = 512 rows, d = 128, 4d = 512, qkv 384, 4 heads of 32
// over 64 tokens) on one thread both ways, interleaved:
//   plan1  Context{threads = 1}: the 1-thread plan (what the pool's width at each call gives now)
//   plan2  Context{threads = 2} whose parallel_for runs the tasks inline: the old behaviour
// and prints, per shape, the row blocks of each plan, the bytes of packed B streamed per call
// (once per row block), and the thread CPU time per call (median over rounds of the mean over
// reps; thread CPU time, which other processes' load inflates less than wall time), and checks
// that both give the same bits.
//
//   bench_gemm_width [--rounds R] [--reps N]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "stax/sdk/gemm.hpp"

namespace {

namespace gemm = stax::sdk::gemm;

struct Shape {
  const char* name;
  int64_t batch, m, n, k;
  bool a_t, b_t;  // A read as a transpose (dW = Xᵀ dY), B read as a transpose (dX = dY Wᵀ)
};

double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

gemm::Problem<float> problem(const Shape& s, const float* a, const float* b, float* c) {
  gemm::Problem<float> p;
  p.batch = s.batch, p.m = s.m, p.n = s.n, p.k = s.k;
  p.a = a, p.a_rs = s.a_t ? 1 : s.k, p.a_cs = s.a_t ? s.m : 1, p.a_bs = s.m * s.k;
  p.b = b, p.b_rs = s.b_t ? 1 : s.n, p.b_cs = s.b_t ? s.k : 1, p.b_bs = s.k * s.n;
  p.c = c, p.c_rs = s.n, p.c_cs = 1, p.c_bs = s.m * s.n;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 15, reps = 40;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--reps")) reps = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: bench_gemm_width [--rounds R] [--reps N]\n");
      return 2;
    }
  }
  const std::vector<Shape> shapes = {
      {"qkv x@Wqkv 512x384x128", 1, 512, 384, 128, false, false},
      {"proj 512x128x128", 1, 512, 128, 128, false, false},
      {"fc1 512x512x128", 1, 512, 512, 128, false, false},
      {"fc2 512x128x512", 1, 512, 128, 512, false, false},
      {"dX fc2 dY@W^T 512x512x128", 1, 512, 512, 128, false, true},
      {"dW fc1 X^T@dY 128x512x512", 1, 128, 512, 512, true, false},
      {"bmm qk 32x64x64x32", 32, 64, 64, 32, false, true},
      {"bmm pv 32x64x32x64", 32, 64, 32, 64, false, false},
  };
  std::mt19937 rng(25);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  gemm::Workspace workspace;
  gemm::Context plan1, plan2;
  plan1.threads = 1;
  plan1.workspace = &workspace;
  plan2.threads = 2;
  plan2.workspace = &workspace;
  plan2.parallel_for = [](int64_t tasks, const std::function<void(int64_t)>& task) {
    for (int64_t t = 0; t < tasks; ++t) task(t);
  };
  std::printf("instruction set %s, %d rounds x %d reps, one thread\n", gemm::instruction_set(),
              rounds, reps);
  for (const Shape& s : shapes) {
    std::vector<float> a(s.batch * s.m * s.k), b(s.batch * s.k * s.n);
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    std::vector<float> c1(s.batch * s.m * s.n), c2(c1.size());
    const auto p1 = problem(s, a.data(), b.data(), c1.data());
    const auto p2 = problem(s, a.data(), b.data(), c2.data());
    gemm::multiply(p1, plan1);
    gemm::multiply(p2, plan2);
    const bool same = std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)) == 0;
    std::vector<double> t1, t2, ratio;
    for (int r = 0; r < rounds; ++r) {
      for (int side = 0; side < 2; ++side) {
        const bool first = (side == 0) == (r % 2 == 0);  // alternate which runs first
        const double t0 = thread_cpu_seconds();
        for (int i = 0; i < reps; ++i) gemm::multiply(first ? p1 : p2, first ? plan1 : plan2);
        (first ? t1 : t2).push_back((thread_cpu_seconds() - t0) / reps);
      }
      ratio.push_back(t2.back() / t1.back());
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const int64_t parallel_min = int64_t{1} << 18;  // gemm_driver.hpp kParallelMinTerms
    const bool old_parallel = s.batch * s.m * s.n * s.k >= parallel_min;
    auto bl1 = gemm::detail::plan(p1, plan1.instruction_set, 1);
    auto bl2 = gemm::detail::plan(p1, plan1.instruction_set, old_parallel && s.batch == 1 ? 2 : 1);
    auto b_bytes = [&](const gemm::detail::Blocking<float>& bl) {
      return bl.row_blocks * bl.packed_b_elems(s.k) * int64_t(sizeof(float)) * s.batch;
    };
    std::printf(
        "%-28s row_blocks %lld/%lld mc %lld/%lld packed-B streamed %lld/%lld KB  "
        "plan1 %.1f us  plan2 %.1f us  plan2/plan1 %.3f (median of rounds)  same_bits=%s\n",
        s.name, (long long)bl1.row_blocks, (long long)bl2.row_blocks, (long long)bl1.mc,
        (long long)bl2.mc, (long long)(b_bytes(bl1) >> 10), (long long)(b_bytes(bl2) >> 10),
        1e6 * median(t1), 1e6 * median(t2), median(ratio), same ? "yes" : "NO");
    if (!same) return 1;
  }
  return 0;
}
