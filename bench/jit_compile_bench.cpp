// bench_jit_compile: compile time of the cpu_cpp JIT (in-process Clang + ORC, stax::cpu::ClangJit)
// next to `c++ -O3 -march=native -shared -fPIC` + dlopen of the same source, in one run.
//
//   bench_jit_compile [warm_reps=15] [external_reps=5]
//
// cold: a fresh process (fork) constructs a ClangJit (driver run + LLJIT creation) and compiles
//       one kernel; libLLVM/libclang-cpp are already mapped (process start-up is not counted).
// warm: median of warm_reps compiles on one ClangJit after two warm-up compiles; each module is
//       freed after it is timed.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/external_compiler.h"
#include "plugins/cpu_cpp/clang_jit.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Kernel {
  const char* name;
  const char* symbol;
  std::string source;
};

std::string fused20_source() {
  // 20 pointwise ops in one loop, as the fusion of a small elementwise graph prints them.
  return R"(extern "C" float expf(float);
extern "C" float tanhf(float);
static inline float max_f(float a, float b) { return a > b ? a : b; }
static inline float min_f(float a, float b) { return a < b ? a : b; }
extern "C" void fused20(const float* __restrict in0, const float* __restrict in1,
                        float* __restrict out0, long n) {
  for (long i0 = 0; i0 < n; ++i0) {
    float t0 = in0[i0];
    float t1 = in1[i0];
    float t2 = t0 * t1;
    float t3 = t2 + 1.0f;
    float t4 = t3 * t3;
    float t5 = t4 - t0;
    float t6 = max_f(t5, 0.0f);
    float t7 = t6 / (t1 * t1 + 1.0f);
    float t8 = expf(-t7);
    float t9 = t8 + 1.0f;
    float t10 = 1.0f / t9;
    float t11 = t10 * t0;
    float t12 = tanhf(t11);
    float t13 = t12 * 0.5f;
    float t14 = t13 + t2;
    float t15 = min_f(t14, 6.0f);
    float t16 = t15 * t15;
    float t17 = t16 - t3;
    float t18 = -t17;
    float t19 = t18 * 0.125f;
    float t20 = t19 + t10;
    out0[i0] = t20;
  }
}
)";
}

std::vector<Kernel> kernels() {
  return {
      {"pointwise", "pointwise",
       R"(extern "C" void pointwise(const float* __restrict in0, const float* __restrict in1,
                          float* __restrict out0, long n) {
  for (long i0 = 0; i0 < n; ++i0) out0[i0] = (in0[i0] + in1[i0]) * 0.5f;
}
)"},
      {"reduction", "reduction",
       R"(extern "C" void reduction(const float* __restrict in0, float* __restrict out0, long rows,
                          long cols) {
  for (long r = 0; r < rows; ++r) {
    float acc = 0.0f;
#pragma clang loop vectorize(enable)
    for (long c = 0; c < cols; ++c) acc += in0[r * cols + c];
    out0[r] = acc;
  }
}
)"},
      {"fused20", "fused20", fused20_source()},
  };
}

stax::cpu::ClangJitOptions options_for(int opt_level) {
  stax::cpu::ClangJitOptions options;
  options.opt_level = opt_level;
  return options;
}

struct Cold {
  double construct_ms = -1, first_compile_ms = -1;
  double total() const { return construct_ms + first_compile_ms; }
};

// Construct + first compile in a forked child, so that every measurement is really cold.
Cold measure_cold(const Kernel& k, int opt_level) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    double out[2] = {-1, -1};
    try {
      auto t0 = Clock::now();
      stax::cpu::ClangJit jit(options_for(opt_level));
      out[0] = ms_since(t0);
      auto t1 = Clock::now();
      stax::cpu::CompiledModule m = jit.compile(k.source, {k.symbol}, k.name);
      out[1] = ms_since(t1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cold %s -O%d: %s\n", k.name, opt_level, e.what());
    }
    ssize_t ignored = write(fds[1], out, sizeof out);
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  double in[2] = {-1, -1};
  ssize_t got = read(fds[0], in, sizeof in);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != static_cast<ssize_t>(sizeof in)) return {};
  return {in[0], in[1]};
}

struct Warm {
  double total_ms = 0, frontend_ms = 0, jit_ms = 0;
};

Warm measure_warm(stax::cpu::ClangJit& jit, const Kernel& k, int reps) {
  for (int i = 0; i < 2; ++i) jit.compile(k.source, {k.symbol}, k.name);
  std::vector<double> total, fe, be;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    stax::cpu::CompiledModule m = jit.compile(k.source, {k.symbol}, k.name);
    total.push_back(ms_since(t0));
    fe.push_back(m.times().frontend_ms);
    be.push_back(m.times().jit_ms);
  }
  return {median(total), median(fe), median(be)};
}

double measure_external(const stax::bench::ExternalCompiler& cc, const Kernel& k, int reps) {
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    auto lib = cc.compile(k.source);
    lib->symbol(k.symbol);
    times.push_back(ms_since(t0));
  }
  return median(times);
}

// The pointwise kernel from both compilers on the same input: same bits expected.
bool outputs_match(stax::cpu::ClangJit& jit, const stax::bench::ExternalCompiler& cc,
                   const Kernel& fused) {
  using Fn = void(const float*, const float*, float*, long);
  const long n = 4099;
  std::vector<float> a(n), b(n), x(n), y(n);
  for (long i = 0; i < n; ++i) {
    a[i] = 0.01f * static_cast<float>(i) - 20.0f;
    b[i] = 1.0f / static_cast<float>(i + 3);
  }
  stax::cpu::CompiledModule m = jit.compile(fused.source, {fused.symbol}, fused.name);
  auto lib = cc.compile(fused.source);
  m.function<Fn>(fused.symbol)(a.data(), b.data(), x.data(), n);
  reinterpret_cast<Fn*>(lib->symbol(fused.symbol))(a.data(), b.data(), y.data(), n);
  return std::memcmp(x.data(), y.data(), n * sizeof(float)) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int warm_reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  const int ext_reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  const std::vector<Kernel> ks = kernels();
  const int levels[] = {3, 0};
  try {
    // Cold numbers first, before this process touches LLVM.
    std::vector<std::vector<Cold>> cold(2, std::vector<Cold>(ks.size()));
    for (int l = 0; l < 2; ++l)
      for (size_t k = 0; k < ks.size(); ++k) cold[l][k] = measure_cold(ks[k], levels[l]);

    stax::cpu::ClangJit o3(options_for(3)), o0(options_for(0));
    stax::cpu::ClangJit* jits[] = {&o3, &o0};
    std::vector<std::vector<Warm>> warm(2, std::vector<Warm>(ks.size()));
    for (int l = 0; l < 2; ++l)
      for (size_t k = 0; k < ks.size(); ++k) warm[l][k] = measure_warm(*jits[l], ks[k], warm_reps);

    const stax::bench::ExternalCompiler cc;
    std::vector<double> ext(ks.size());
    for (size_t k = 0; k < ks.size(); ++k) ext[k] = measure_external(cc, ks[k], ext_reps);
    const bool match = outputs_match(o3, cc, ks[2]);

    std::printf(
        "bench_jit_compile: stax::cpu::ClangJit (in-process clang + ORC LLJIT) vs `%s`"
        " + dlopen\n",
        cc.command_line().c_str());
    std::printf(
        "host cpu %s; ms; warm = median of %d, external = median of %d; cold = fresh "
        "process: ClangJit construction + first compile\n\n",
        o3.target_cpu().c_str(), warm_reps, ext_reps);
    std::printf("%-10s | %-21s | %-17s | %-21s | %-17s | %9s | %8s %8s\n", "kernel",
                "O3 cold (ctor+first)", "O3 warm (fe/jit)", "O0 cold (ctor+first)",
                "O0 warm (fe/jit)", "c++ -O3", "c++/O3w", "c++/O0w");
    std::printf("%s\n", std::string(134, '-').c_str());
    for (size_t k = 0; k < ks.size(); ++k) {
      char c3[32], c0[32], w3[32], w0[32];
      std::snprintf(c3, sizeof c3, "%6.1f (%5.1f+%5.1f)", cold[0][k].total(),
                    cold[0][k].construct_ms, cold[0][k].first_compile_ms);
      std::snprintf(c0, sizeof c0, "%6.1f (%5.1f+%5.1f)", cold[1][k].total(),
                    cold[1][k].construct_ms, cold[1][k].first_compile_ms);
      std::snprintf(w3, sizeof w3, "%5.1f (%4.1f/%4.1f)", warm[0][k].total_ms,
                    warm[0][k].frontend_ms, warm[0][k].jit_ms);
      std::snprintf(w0, sizeof w0, "%5.1f (%4.1f/%4.1f)", warm[1][k].total_ms,
                    warm[1][k].frontend_ms, warm[1][k].jit_ms);
      std::printf("%-10s | %-21s | %-17s | %-21s | %-17s | %9.1f | %7.1fx %7.1fx\n", ks[k].name, c3,
                  w3, c0, w0, ext[k], ext[k] / warm[0][k].total_ms, ext[k] / warm[1][k].total_ms);
    }
    std::printf("\nfe = clang frontend + -O pipeline, jit = ORC codegen + link + lookup.\n");
    std::printf("fused20 output, JIT -O3 vs c++ -O3: %s\n", match ? "bit-identical" : "DIFFERENT");
    return match ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_jit_compile: %s\n", e.what());
    return 1;
  }
}
