// ClangJit's precompiled prelude and its concurrent compiles (issue 27 item 6): a source that
// starts with ClangJitOptions::prelude compiles through the prelude's PCH into the very object
// bytes a whole-source compile makes, keeps the whole source's line numbers in its errors, and
// compiles running at once on several threads give the same objects as one after the other.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "plugins/cpu_cpp/clang_jit.h"

namespace stax::cpu {
namespace {

// A prelude in the style of cpu_cpp's (scalar semantics as inline templates and functions).
const std::string kPrelude = R"(// prelude
namespace stax_t {
template <class T> inline T add(T a, T b) { return a + b; }
template <class T> inline T mul(T a, T b) { return a * b; }
inline float relu(float x) { return x > 0.0f ? x : 0.0f; }
struct pair_f { float a, b; };
}  // namespace stax_t
#define STAX_T_TWICE(x) stax_t::add((x), (x))
// ---- kernel ----
)";

// Kernel i: a loop whose body depends on i (different code per kernel).
std::string kernel_source(int i) {
  const std::string n = std::to_string(i);
  return kPrelude + "extern \"C\" void k" + n +
         "(const float* __restrict x, float* __restrict y, long n) {\n"
         "  for (long j = 0; j < n; ++j)\n"
         "    y[j] = stax_t::relu(stax_t::mul(STAX_T_TWICE(x[j]), " + n + ".5f)) + " + n +
         ".0f;\n"
         "}\n";
}

ClangJitOptions options(bool with_prelude) {
  ClangJitOptions o;
  o.opt_level = 3;
  o.load_sleef = false;
  if (with_prelude) o.prelude = kPrelude;
  return o;
}

std::string error_text(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const JitError& e) {
    return e.what();
  }
  return "<no JitError thrown>";
}

TEST(ClangJitPch, SameObjectBytesWithAndWithoutThePch) {
  ClangJit whole(options(false)), pch(options(true));
  EXPECT_FALSE(pch.has_pch());  // built by the first compile that uses it
  for (int i = 0; i < 3; ++i) {
    const std::string sym = "k" + std::to_string(i);
    CompiledModule a = whole.compile(kernel_source(i), {sym}, sym);
    CompiledModule b = pch.compile(kernel_source(i), {sym}, sym);
    EXPECT_EQ(a.object(), b.object()) << sym;
    float x[3] = {-1.0f, 0.25f, 2.0f}, y[3];
    b.function<void(const float*, float*, long)>(sym)(x, y, 3);
    const float scale = static_cast<float>(i) + 0.5f;
    EXPECT_EQ(y[0], 0.0f + static_cast<float>(i));
    EXPECT_EQ(y[1], 0.5f * scale + static_cast<float>(i));
    EXPECT_EQ(y[2], 4.0f * scale + static_cast<float>(i));
  }
  EXPECT_TRUE(pch.has_pch());
  EXPECT_EQ(pch.pch_error(), "");
  EXPECT_FALSE(whole.has_pch());
}

TEST(ClangJitPch, ErrorsKeepTheWholeSourcesLineNumbers) {
  ClangJit whole(options(false)), pch(options(true));
  const std::string bad = kPrelude + "extern \"C\" int f(int a) {\n  return a + undeclared;\n}\n";
  const std::string e_whole = error_text([&] { whole.compile(bad, {"f"}, "bad"); });
  const std::string e_pch = error_text([&] { pch.compile(bad, {"f"}, "bad"); });
  // The prelude has 9 lines: the use of `undeclared` is on line 11 of the whole source.
  EXPECT_NE(e_pch.find("bad.cpp:11:14: error: use of undeclared identifier 'undeclared'"),
            std::string::npos)
      << e_pch;
  EXPECT_EQ(e_pch, e_whole);  // the same message, numbered source included
  EXPECT_TRUE(pch.has_pch());
}

TEST(ClangJitPch, SourcesWithoutThePreludeCompileWhole) {
  ClangJit pch(options(true));
  CompiledModule m = pch.compile("extern \"C\" int g(int a) { return a * 3; }", {"g"}, "g");
  EXPECT_EQ(m.function<int(int)>("g")(7), 21);
  EXPECT_FALSE(pch.has_pch());  // never asked for
  // A source that differs from the prelude in one character is not covered either.
  std::string almost = kernel_source(1);
  almost[3] = 'P';  // "// Prelude"
  CompiledModule k = pch.compile(almost, {"k1"}, "k1");
  EXPECT_FALSE(pch.has_pch());
}

TEST(ClangJitPch, APreludeThatFailsLeavesSourcesCompiledWhole) {
  ClangJitOptions o = options(false);
  o.prelude = "int broken(\n";
  ClangJit jit(o);
  const std::string e =
      error_text([&] { jit.compile(o.prelude + "extern \"C\" int h() { return 1; }\n", {"h"}, "h"); });
  EXPECT_NE(e.find("clang failed to compile kernel 'h'"), std::string::npos) << e;
  EXPECT_FALSE(jit.has_pch());
  EXPECT_NE(jit.pch_error().find("the prelude's precompiled header failed"), std::string::npos)
      << jit.pch_error();
  // Sources without it are unaffected.
  CompiledModule m = jit.compile("extern \"C\" int h2() { return 2; }", {"h2"}, "h2");
  EXPECT_EQ(m.function<int()>("h2")(), 2);
}

// Compiles of different kernels on four threads at once give the objects of serial compiles.
// The threads start at once on a fresh ClangJit: one builds the PCH while the others compile
// their first sources whole rather than wait for it (ClangJit's prepare); every object is the
// serial compile's all the same, and the PCH serves the rest.
TEST(ClangJitPch, ConcurrentCompilesGiveTheSerialObjects) {
  const int kKernels = 12, kThreads = 4;
  ClangJit serial(options(true)), parallel(options(true));
  std::vector<std::string> want(kKernels), got(kKernels);
  for (int i = 0; i < kKernels; ++i) {
    const std::string sym = "k" + std::to_string(i);
    want[i] = serial.compile(kernel_source(i), {sym}, sym).object();
  }
  std::atomic<int> next{0};
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int i; (i = next++) < kKernels;) {
          const std::string sym = "k" + std::to_string(i);
          CompiledModule m = parallel.compile(kernel_source(i), {sym}, sym);
          float x[1] = {1.0f}, y[1];
          m.function<void(const float*, float*, long)>(sym)(x, y, 1);
          if (y[0] != 2.0f * (static_cast<float>(i) + 0.5f) + static_cast<float>(i))
            errors[t] += sym + " computed " + std::to_string(y[0]) + "; ";
          got[i] = m.object();
        }
      } catch (const std::exception& e) {
        errors[t] += e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  for (int i = 0; i < kKernels; ++i) EXPECT_EQ(got[i], want[i]) << "kernel " << i;
  EXPECT_TRUE(parallel.has_pch()) << parallel.pch_error();
}

}  // namespace
}  // namespace stax::cpu
