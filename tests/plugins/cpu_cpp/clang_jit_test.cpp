// The in-process JIT engine of cpu_cpp: compile C++ strings with Clang, link with ORC, call them.
#include "plugins/cpu_cpp/clang_jit.h"
#include "plugins/cpu_cpp/slab_arena.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/sanitizers.h"

namespace stax::cpu {
namespace {

// One JIT per test binary: the cold start (driver + LLJIT) is paid once.
ClangJit& jit() {
  static ClangJit instance;
  return instance;
}

ClangJitOptions make_options(int opt_level, bool load_sleef, std::vector<std::string> flags = {}) {
  ClangJitOptions options;
  options.opt_level = opt_level;
  options.load_sleef = load_sleef;
  options.extra_flags = std::move(flags);
  return options;
}

std::string error_text(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const JitError& e) {
    return e.what();
  }
  return "<no JitError thrown>";
}

const char* kAxpy = R"(
extern "C" void axpy(const float* x, const float* y, float* out, long n, float a) {
  for (long i = 0; i < n; ++i) out[i] = a * x[i] + y[i];
}
)";

TEST(ClangJit, CompilesAndRunsAFloatLoop) {
  CompiledModule m = jit().compile(kAxpy, {"axpy"}, "axpy_kernel");
  ASSERT_TRUE(m);
  EXPECT_EQ(m.name(), "axpy_kernel");
  ASSERT_EQ(m.symbols().size(), 1u);
  EXPECT_EQ(m.symbols()[0].first, "axpy");
  auto* fn = m.function<void(const float*, const float*, float*, long, float)>("axpy");
  ASSERT_NE(fn, nullptr);
  const long n = 1003;  // not a multiple of any vector width: exercises the epilogue
  std::vector<float> x(n), y(n), out(n, -1.0f);
  for (long i = 0; i < n; ++i) {
    x[i] = 0.37f * static_cast<float>(i) - 11.0f;
    y[i] = 1.0f / static_cast<float>(i + 1);
  }
  const float a = 1.7f;
  fn(x.data(), y.data(), out.data(), n, a);
  // Both sides are compiled with -ffp-contract=off: one rounding per operation, bit-identical.
  for (long i = 0; i < n; ++i) ASSERT_EQ(out[i], a * x[i] + y[i]) << "i=" << i;
  EXPECT_GT(m.times().frontend_ms, 0.0);
  EXPECT_GE(m.times().jit_ms, 0.0);
}

TEST(ClangJit, VectorizedReductionIsExact) {
  const char* src = R"(
extern "C" float sum(const float* x, long n) {
  float s = 0.0f;
#pragma clang loop vectorize(enable)
  for (long i = 0; i < n; ++i) s += x[i];
  return s;
}
extern "C" long isum(const int* x, long n) {
  long s = 0;
  for (long i = 0; i < n; ++i) s += x[i];
  return s;
}
)";
  CompiledModule m = jit().compile(src, {"sum", "isum"}, "reduce");
  auto* sum = m.function<float(const float*, long)>("sum");
  auto* isum = m.function<long(const int*, long)>("isum");
  const long n = 10007;
  std::vector<float> x(n);
  std::vector<int> xi(n);
  double expected = 0;
  long expected_i = 0;
  for (long i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 13) - 4.0f;  // small integers: every partial sum is exact
    xi[i] = static_cast<int>(i * 7 % 1001) - 500;
    expected += x[i];
    expected_i += xi[i];
  }
  EXPECT_EQ(sum(x.data(), n), static_cast<float>(expected));
  EXPECT_EQ(sum(x.data(), 0), 0.0f);
  EXPECT_EQ(sum(x.data(), 5), -4.0f - 3.0f - 2.0f - 1.0f + 0.0f);
  EXPECT_EQ(isum(xi.data(), n), expected_i);
}

TEST(ClangJit, SyntaxErrorCarriesDiagnosticsAndNumberedSource) {
  const char* src = "extern \"C\" int f(int x) {\n  int y = x + 1\n  return y;\n}\n";
  testing::internal::CaptureStderr();
  std::string what;
  try {
    jit().compile(src, {"f"}, "broken");
    FAIL() << "expected a JitError";
  } catch (const JitError& e) {
    what = e.what();
    EXPECT_EQ(e.stage(), "cpu_cpp jit");
    EXPECT_EQ(e.location(), "broken.cpp");
    EXPECT_EQ(e.code(), STAX_ERROR_COMPILE);
  }
  const std::string stderr_text = testing::internal::GetCapturedStderr();
  EXPECT_EQ(stderr_text, "") << "the JIT must not print";
  EXPECT_NE(what.find("broken.cpp:2:16: error: expected ';' at end of declaration"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("1 error generated."), std::string::npos) << what;
  EXPECT_NE(what.find("   2 |   int y = x + 1\n"), std::string::npos) << what;
  EXPECT_NE(what.find("   4 | }"), std::string::npos) << what;
  RecordProperty("error_text", what);
  // The JIT is still usable after an error.
  CompiledModule m = jit().compile(kAxpy, {"axpy"});
  EXPECT_TRUE(m);
}

TEST(ClangJit, TypeErrorNamesTheLine) {
  const char* src = "extern \"C\" void g(float* p) {\n  p = 3;\n}\n";
  const std::string what = error_text([&] { jit().compile(src, {"g"}, "typed"); });
  EXPECT_NE(what.find("typed.cpp:2:7: error: "), std::string::npos) << what;
  EXPECT_NE(what.find("   2 |   p = 3;"), std::string::npos) << what;
}

TEST(ClangJit, MissingSymbolIsAnError) {
  const char* src = "int not_extern_c(int x) { return x; }\n";
  const std::string what = error_text([&] { jit().compile(src, {"not_extern_c"}, "mangled"); });
  EXPECT_NE(what.find("does not define symbol 'not_extern_c'"), std::string::npos) << what;
  EXPECT_NE(what.find("_Z12not_extern_ci"), std::string::npos) << what;
  EXPECT_NE(what.find("extern \"C\""), std::string::npos) << what;
}

TEST(ClangJit, UnresolvedExternalIsAnErrorNotACrash) {
  const char* src = R"(
extern "C" float stax_no_such_function(float);
extern "C" float h(float x) { return stax_no_such_function(x) + 1.0f; }
)";
  testing::internal::CaptureStderr();
  const std::string what = error_text([&] { jit().compile(src, {"h"}, "unresolved"); });
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_NE(what.find("stax_no_such_function"), std::string::npos) << what;
  EXPECT_NE(what.find("could not link symbol 'h'"), std::string::npos) << what;
  // The failed module was removed: the same symbol name can be defined again.
  CompiledModule m =
      jit().compile("extern \"C\" float h(float x) { return x + 1.0f; }", {"h"}, "fixed");
  EXPECT_EQ(m.function<float(float)>("h")(2.0f), 3.0f);
}

TEST(ClangJit, CodeGenerationErrorIsAnErrorNotAnExit) {
  // Clang does not parse inline asm strings; LLVM's assembler does, inside ORC's code generation.
  const char* src = R"(extern "C" int bad_asm() {
  asm volatile("notaninstruction %eax");
  return 1;
}
)";
  testing::internal::CaptureStderr();
  const std::string what = error_text([&] { jit().compile(src, {"bad_asm"}, "asm"); });
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_NE(what.find("LLVM failed to generate code for kernel 'asm'"), std::string::npos) << what;
  EXPECT_NE(what.find("invalid instruction mnemonic 'notaninstruction'"), std::string::npos)
      << what;
  EXPECT_NE(what.find("   2 |   asm volatile(\"notaninstruction %eax\");"), std::string::npos)
      << what;
  // The symbol was freed with the failed module.
  CompiledModule m = jit().compile("extern \"C\" int bad_asm() { return 2; }", {"bad_asm"});
  EXPECT_EQ(m.function<int()>("bad_asm")(), 2);
}

TEST(ClangJit, LibmResolvesFromTheProcess) {
  const char* src = R"(
extern "C" float expf(float);
extern "C" float tanhf(float);
extern "C" void k(const float* x, float* e, float* t, long n) {
  for (long i = 0; i < n; ++i) {
    e[i] = expf(x[i]);
    t[i] = tanhf(x[i]);
  }
}
)";
  CompiledModule m = jit().compile(src, {"k"}, "libm");
  auto* k = m.function<void(const float*, float*, float*, long)>("k");
  const long n = 257;
  std::vector<float> x(n), e(n), t(n);
  for (long i = 0; i < n; ++i) x[i] = -8.0f + 0.0625f * static_cast<float>(i);
  k(x.data(), e.data(), t.data(), n);
  for (long i = 0; i < n; ++i) {
    // The kernel calls the process's expf/tanhf, so the values are the same to the bit.
    ASSERT_EQ(e[i], std::exp(x[i])) << "x=" << x[i];
    ASSERT_EQ(t[i], std::tanh(x[i])) << "x=" << x[i];
  }
}

TEST(ClangJit, SleefVectorMath) {
  if (!jit().sleef_available()) GTEST_SKIP() << "libsleef.so.3 not loadable here";
  const char* src = R"(
typedef float v16 __attribute__((vector_size(64)));
extern "C" v16 Sleef_expf16_u10(v16);
extern "C" void vexp(const float* x, float* y, long n) {
  for (long i = 0; i + 16 <= n; i += 16) {
    v16 v;
    __builtin_memcpy(&v, x + i, sizeof v);
    v = Sleef_expf16_u10(v);
    __builtin_memcpy(y + i, &v, sizeof v);
  }
}
)";
  CompiledModule m = jit().compile(src, {"vexp"}, "sleef");
  auto* vexp = m.function<void(const float*, float*, long)>("vexp");
  const long n = 512;
  std::vector<float> x(n), y(n, 0.0f);
  for (long i = 0; i < n; ++i) x[i] = -20.0f + 40.0f * static_cast<float>(i) / n;
  vexp(x.data(), y.data(), n);
  for (long i = 0; i < n; ++i) {
    const double ref = std::exp(static_cast<double>(x[i]));
    ASSERT_LE(std::abs(y[i] - ref) / ref, 2e-7) << "x=" << x[i] << " y=" << y[i];
  }
}

TEST(ClangJit, HelpersOfTwoLiveModulesDoNotClash) {
  auto src = [](int c) {
    return "float helper(float x) { return x + " + std::to_string(c) +
           ".0f; }\n"
           "extern \"C\" float entry" +
           std::to_string(c) + "(float x) { return helper(x); }\n";
  };
  CompiledModule a = jit().compile(src(1), {"entry1"}, "a");
  CompiledModule b = jit().compile(src(2), {"entry2"}, "b");
  EXPECT_EQ(a.function<float(float)>("entry1")(10.0f), 11.0f);
  EXPECT_EQ(b.function<float(float)>("entry2")(10.0f), 12.0f);
}

TEST(ClangJit, SameSymbolInTwoLiveModulesAndObjectsLinkedAgain) {
  // Every module has a JITDylib of its own: an asked-for name may repeat between live modules.
  const char* v1 = "extern \"C\" int dup() { return 1; }\n";
  const char* v2 = "extern \"C\" int dup() { return 2; }\n";
  CompiledModule first = jit().compile(v1, {"dup"}, "dup1");
  CompiledModule second = jit().compile(v2, {"dup"}, "dup2");
  EXPECT_EQ(first.function<int()>("dup")(), 1);
  EXPECT_EQ(second.function<int()>("dup")(), 2);
  // The object code (what the kernel cache stores) links again, any number of times, without
  // Clang, and behaves as the compiled module.
  ASSERT_GT(first.object().size(), 4u);
  EXPECT_EQ(first.object().substr(0, 4), "\x7f" "ELF");
  CompiledModule again = jit().load_object(first.object(), {"dup"}, "dup1");
  CompiledModule third = jit().load_object(first.object(), {"dup"}, "dup1");
  EXPECT_EQ(again.function<int()>("dup")(), 1);
  EXPECT_EQ(third.function<int()>("dup")(), 1);
  EXPECT_EQ(again.object(), first.object());
  EXPECT_EQ(again.times().frontend_ms, 0);
  first.reset();
  EXPECT_TRUE(first.empty());
  EXPECT_EQ(again.function<int()>("dup")(), 1);  // independent of the module it came from
  // Moves keep the code alive.
  CompiledModule moved = std::move(second);
  EXPECT_TRUE(second.empty());
  EXPECT_EQ(moved.function<int()>("dup")(), 2);
  // A damaged object or a missing symbol is a JitError, not a crash.
  std::string what = error_text([&] { jit().load_object("not an object", {"dup"}, "bad"); });
  EXPECT_NE(what.find("bad.o"), std::string::npos) << what;
  what = error_text([&] { jit().load_object(again.object(), {"nope"}, "dup1"); });
  EXPECT_NE(what.find("nope"), std::string::npos) << what;
}

// load_objects: a graph's stored kernels linked in one JITDylib with one lookup (the kernel cache's
// batch). Equal symbol names in the objects, the same object twice, modules freed one by one,
// and every failure (a damaged object, a missing symbol, an unresolved external) a JitError
// naming the kernel that leaves nothing linked and the JIT usable.
TEST(ClangJit, BatchOfObjectsLinksInOneLookup) {
  CompiledModule one = jit().compile("extern \"C\" int dup() { return 1; }\n", {"dup"}, "one");
  CompiledModule two = jit().compile(
      "extern \"C\" int dup() { return 2; }\nextern \"C\" int other() { return 20; }\n",
      {"dup", "other"}, "two");
  EXPECT_TRUE(jit().load_objects({}).empty());
  std::vector<CompiledModule> batch = jit().load_objects(
      {{one.object(), {"dup"}, "k1"}, {two.object(), {"dup", "other"}, "k2"},
       {one.object(), {"dup"}, "k3"}});
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[0].function<int()>("dup")(), 1);
  EXPECT_EQ(batch[1].function<int()>("dup")(), 2);
  EXPECT_EQ(batch[1].function<int()>("other")(), 20);
  EXPECT_EQ(batch[2].function<int()>("dup")(), 1);
  EXPECT_NE(batch[0].address("dup"), batch[2].address("dup"));  // two copies of one object
  EXPECT_EQ(batch[1].symbols().size(), 2u);
  EXPECT_EQ(batch[1].symbols()[1].first, "other");
  EXPECT_EQ(batch[1].name(), "k2");
  EXPECT_EQ(batch[0].object(), one.object());  // stored again, it links again
  EXPECT_EQ(batch[0].times().frontend_ms, 0);
  // Freed one by one; the others keep running (the shared dylib goes with the last).
  batch[0].reset();
  EXPECT_EQ(batch[2].function<int()>("dup")(), 1);
  one.reset();
  two.reset();
  EXPECT_EQ(batch[1].function<int()>("other")(), 20);
  std::vector<CompiledModule> again =
      jit().load_objects({{batch[1].object(), {"other"}, "k4"}});
  batch.clear();
  EXPECT_EQ(again[0].function<int()>("other")(), 20);

  // Failures: all or nothing, the kernel named, the JIT usable afterwards.
  const std::string good = again[0].object();
  std::string what = error_text(
      [&] { jit().load_objects({{good, {"other"}, "fine"}, {"not an object", {"x"}, "bad"}}); });
  EXPECT_NE(what.find("object of kernel 'bad'"), std::string::npos) << what;
  what = error_text([&] { jit().load_objects({{good, {"other"}, "fine"}, {good, {"nope"}, "k5"}}); });
  EXPECT_NE(what.find("symbol 'nope' of kernel 'k5'"), std::string::npos) << what;
  // An object whose external reference resolves nowhere fails at link time, in the lookup.
  CompiledModule uses_libm = jit().compile(
      "extern \"C\" float cbrtf(float);\nextern \"C\" float root(float x) { return cbrtf(x); }\n",
      {"root"}, "libm");
  std::string broken = uses_libm.object();
  size_t at = broken.find(std::string("cbrtf") + '\0');
  ASSERT_NE(at, std::string::npos);
  broken.replace(at, 5, "cbrtQ");  // no such function in the process
  testing::internal::CaptureStderr();
  what = error_text([&] {
    jit().load_objects({{good, {"other"}, "fine"}, {broken, {"root"}, "unresolved"}});
  });
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_NE(what.find("cbrtQ"), std::string::npos) << what;
  EXPECT_NE(what.find("'unresolved'"), std::string::npos) << what;
  std::vector<CompiledModule> after = jit().load_objects(
      {{good, {"other"}, "fine"}, {uses_libm.object(), {"root"}, "libm"}});
  EXPECT_EQ(after[0].function<int()>("other")(), 20);
  EXPECT_EQ(after[1].function<float(float)>("root")(27.0f), 3.0f);
}

TEST(ClangJit, AddressOfAnUnrequestedSymbolIsAnError) {
  CompiledModule m = jit().compile(kAxpy, {"axpy"});
  const std::string what = error_text([&] { m.address("other"); });
  EXPECT_NE(what.find("'other' was not asked for"), std::string::npos) << what;
}

TEST(ClangJit, ModuleOutlivesItsJit) {
  CompiledModule m;
  {
    ClangJit local(make_options(0, false));
    EXPECT_FALSE(local.sleef_available());
    m = local.compile("extern \"C\" int seven() { return 7; }", {"seven"});
  }
  EXPECT_EQ(m.function<int()>("seven")(), 7);
}

TEST(ClangJit, OptionsAreHonouredAndValidated) {
  ClangJit o0(make_options(0, true, {"-DSCALE=3"}));
  const auto& args = o0.cc1_args();
  EXPECT_NE(std::find(args.begin(), args.end(), "-O0"), args.end());
  EXPECT_NE(std::find(args.begin(), args.end(), "-target-cpu"), args.end());
  EXPECT_FALSE(o0.target_cpu().empty());
  CompiledModule m = o0.compile("extern \"C\" int s(int x) { return SCALE * x; }", {"s"});
  EXPECT_EQ(m.function<int(int)>("s")(5), 15);

  std::string what = error_text([] { ClangJit bad(make_options(5, false)); });
  EXPECT_NE(what.find("opt_level must be 0..3, got 5"), std::string::npos) << what;
  testing::internal::CaptureStderr();
  what = error_text([] { ClangJit bad(make_options(3, false, {"-fstax-no-such-flag"})); });
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_NE(what.find("-fstax-no-such-flag"), std::string::npos) << what;
}

TEST(ClangJit, MarchNativeReachesTheKernel) {
  const char* src = R"(
extern "C" int has_avx2() {
#ifdef __AVX2__
  return 1;
#else
  return 0;
#endif
}
)";
  const int host_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
  CompiledModule native = jit().compile(src, {"has_avx2"}, "native");
  EXPECT_EQ(native.function<int()>("has_avx2")(), host_avx2);
  ClangJitOptions generic_options = make_options(0, false);
  generic_options.native_cpu = false;
  ClangJit generic(generic_options);
  CompiledModule baseline = generic.compile(src, {"has_avx2"}, "generic");
  EXPECT_EQ(baseline.function<int()>("has_avx2")(), 0);
}

TEST(ClangJit, WarningsAreKeptNotPrinted) {
  testing::internal::CaptureStderr();
  CompiledModule m =
      jit().compile("extern \"C\" int w(int x) { int unused_local = 3; return x; }", {"w"}, "warn");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(m.function<int(int)>("w")(4), 4);
  // -Wall is not on for kernels; compile() keeps whatever clang says in diagnostics().
  ClangJit wall(make_options(0, false, {"-Wall"}));
  CompiledModule m2 =
      wall.compile("extern \"C\" int w(int x) { int unused_local = 3; return x; }", {"w"}, "warn");
  EXPECT_NE(m2.diagnostics().find("warn.cpp:1:31: warning: unused variable 'unused_local'"),
            std::string::npos)
      << m2.diagnostics();
}

TEST(ClangJit, ConcurrentCompilesFromTwoThreads) {
  std::vector<int> results(2, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([t, &results] {
      int total = 0;
      for (int i = 0; i < 4; ++i) {
        const std::string fn = "thr_" + std::to_string(t) + "_" + std::to_string(i);
        CompiledModule m = jit().compile(
            "extern \"C\" int " + fn + "(int x) { return x * " + std::to_string(i + 1) + "; }",
            {fn}, fn);
        total += m.function<int(int)>(fn)(t + 1);
      }
      results[t] = total;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(results[0], 1 * (1 + 2 + 3 + 4));
  EXPECT_EQ(results[1], 2 * (1 + 2 + 3 + 4));
}

long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

TEST(ClangJit, ManyCompilesDoNotGrowMemoryUnboundedly) {
  // Resident memory measures nothing under ASan (freed blocks sit in its quarantine, 256 MB by
  // default) or TSan (its shadow grows with every new address). The ASan build checks leaks with
  // LeakSanitizer at exit instead (scripts/sanitize.sh), which reports the frontend leak this
  // test guards against (DisableFree) as unreachable blocks.
  if (test::kAddressSanitizer || test::kThreadSanitizer)
    GTEST_SKIP() << "RSS growth is meaningless under a sanitizer; LeakSanitizer checks leaks";
  ClangJit o0(make_options(0, false));
  auto compile_one = [&](int i) {
    CompiledModule m = o0.compile(kAxpy, {"axpy"}, "leak" + std::to_string(i));
    ASSERT_TRUE(m);
  };
  for (int i = 0; i < 30; ++i) compile_one(i);  // warm up allocator pools
  const long before = resident_kib();
  const int rounds = 200;
  for (int i = 0; i < rounds; ++i) compile_one(i);
  const long grown = resident_kib() - before;
  RecordProperty("rss_growth_kib", std::to_string(grown));
  // A leak of the frontend (DisableFree) costs ~0.2-0.5 MB per compile, ~40 MB here at
  // -O0 (measured: 37 MB with DisableFree left on, 0 KiB without).
  EXPECT_LT(grown, 10 * 1024) << "RSS grew by " << grown << " KiB over " << rounds << " compiles";
}

// STAX_JIT_SLAB=off / STAX_JIT_WARM_UP=off (clang_jit.h) turn the JIT's slab and warm-up off.
bool env_off(const char* name) {
  const char* v = std::getenv(name);
  return v && std::string(v) == "off";
}
bool slab_turned_off() { return env_off("STAX_JIT_SLAB"); }
bool warm_up_turned_off() { return env_off("STAX_JIT_WARM_UP"); }

// The arena the JIT links into (slab_arena.h), by itself.
TEST(SlabArena, CarvesAlignsGrowsCoalescesAndReuses) {
  SlabArena arena(4 * 4096);
  ASSERT_TRUE(arena.init()) << arena.error();
  const size_t page = arena.page_size();
  const size_t first = std::max<size_t>(4 * 4096, page);
  SlabStats st = arena.stats();
  EXPECT_EQ(st.chunks, 1u);
  EXPECT_EQ(st.mapped_bytes, first);
  EXPECT_EQ(st.largest_free, first);

  // A piece written through its RW view reads back through the RX and R views.
  SlabArena::Piece a = arena.allocate(100, 16);
  ASSERT_TRUE(a) << arena.error();
  EXPECT_EQ(a.size, 128u);  // 64-byte granules
  std::memcpy(a.rw, "slab", 5);
  EXPECT_STREQ(a.ro, "slab");
  EXPECT_STREQ(a.rx, "slab");
  EXPECT_NE(a.rw, a.rx);
  SlabArena::Piece b = arena.allocate(10, 256);
  ASSERT_TRUE(b);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.rx) % 256, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.ro) % 256, 0u);
  EXPECT_GE(b.offset, a.offset + a.size);  // no overlap
  SlabArena::Piece own = arena.allocate(1, 8, /*own_pages=*/true);
  ASSERT_TRUE(own);
  EXPECT_EQ(own.offset % page, 0u);
  EXPECT_EQ(own.size, page);

  // Filling the chunk: the next piece maps a second one; a piece larger than a chunk a larger one.
  std::vector<SlabArena::Piece> fill;
  while (arena.stats().chunks == 1) {
    SlabArena::Piece p = arena.allocate(1000, 64);
    ASSERT_TRUE(p) << arena.error();
    fill.push_back(p);
  }
  EXPECT_EQ(fill.back().chunk, 1u);
  SlabArena::Piece big = arena.allocate(first * 3 + 1, 64);
  ASSERT_TRUE(big);
  st = arena.stats();
  EXPECT_EQ(st.chunks, 3u);
  EXPECT_EQ(st.mapped_bytes, 2 * first + (first * 3 + page) / page * page);
  std::memset(big.rw, 0xab, big.size);  // all of it is mapped
  EXPECT_EQ(static_cast<unsigned char>(big.ro[big.size - 1]), 0xab);

  // Bad requests are errors, not pieces.
  EXPECT_FALSE(arena.allocate(0, 16));
  EXPECT_FALSE(arena.allocate(16, 3));
  EXPECT_FALSE(arena.allocate(16, page * 2));
  EXPECT_NE(arena.error().find("aligned to"), std::string::npos) << arena.error();

  // Freed in any order, the extents coalesce: every chunk is one free extent again.
  arena.free(b);
  for (size_t i = 0; i < fill.size(); i += 2) arena.free(fill[i]);
  arena.free(a);
  for (size_t i = 1; i < fill.size(); i += 2) arena.free(fill[i]);
  arena.free(own);
  arena.free(big);
  st = arena.stats();
  EXPECT_EQ(st.pieces, 0u);
  EXPECT_EQ(st.used_bytes, 0u);
  EXPECT_EQ(st.largest_free, (first * 3 + page) / page * page);
  const size_t mapped = st.mapped_bytes;
  SlabArena::Piece whole = arena.allocate(first, 64);  // the first chunk in one piece
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole.chunk, 0u);
  arena.free(whole);
  // Many allocate / free rounds reuse the chunks: nothing more is mapped.
  for (int round = 0; round < 500; ++round) {
    std::vector<SlabArena::Piece> live;
    for (int k = 0; k < 7; ++k) live.push_back(arena.allocate(64 + 200 * k + round % 50, 64));
    for (const auto& p : live) ASSERT_TRUE(p);
    for (size_t k = 0; k < live.size(); k += 2) arena.free(live[k]);
    for (size_t k = 1; k < live.size(); k += 2) arena.free(live[k]);
  }
  EXPECT_EQ(arena.stats().mapped_bytes, mapped);
  EXPECT_EQ(arena.stats().used_bytes, 0u);
}

// The pieces of one link come from one chunk, whose three views lie side by side: every
// PC-relative reference of the small code model (slab_arena.h) reaches. All or nothing.
TEST(SlabArena, GroupsComeFromOneChunkWithinReach) {
  SlabArena arena(4 * 4096);
  ASSERT_TRUE(arena.init()) << arena.error();
  const size_t page = arena.page_size();
  const size_t first = std::max<size_t>(4 * 4096, page);
  // Leave a hole of 1024 bytes in the first chunk.
  SlabArena::Piece most = arena.allocate(first - 1024, 64);
  ASSERT_TRUE(most);
  EXPECT_EQ(most.chunk, 0u);
  // The first request would fit the hole, the second not: both go to a new chunk.
  std::vector<SlabArena::Piece> group;
  ASSERT_TRUE(arena.allocate_group({{512, 16, false}, {4000, 64, false}, {8, 8, true}}, &group))
      << arena.error();
  ASSERT_EQ(group.size(), 3u);
  for (const SlabArena::Piece& p : group) EXPECT_EQ(p.chunk, 1u);
  EXPECT_EQ(group[2].offset % page, 0u);  // own pages
  EXPECT_EQ(group[2].size, page);
  // Within reach: any view of any piece of the group from any other, far below 2 GiB, and the
  // chunk's views side by side (RX, R, RW).
  const auto addr = [](const char* p) { return reinterpret_cast<intptr_t>(p); };
  intptr_t lo = INTPTR_MAX, hi = 0;
  for (const SlabArena::Piece& p : group)
    for (const char* v : {p.rx, p.ro, p.rw}) {
      lo = std::min(lo, addr(v));
      hi = std::max(hi, addr(v) + static_cast<intptr_t>(p.size));
    }
  const size_t chunk1 = arena.stats().mapped_bytes - first;
  EXPECT_LE(static_cast<size_t>(hi - lo), 3 * chunk1);
  EXPECT_EQ(addr(group[0].ro) - addr(group[0].rx), static_cast<intptr_t>(chunk1));
  EXPECT_EQ(addr(group[0].rw) - addr(group[0].ro), static_cast<intptr_t>(chunk1));
  // A group that fits the hole stays in the first chunk.
  std::vector<SlabArena::Piece> small;
  ASSERT_TRUE(arena.allocate_group({{256, 64, false}, {256, 64, false}}, &small));
  for (const SlabArena::Piece& p : small) EXPECT_EQ(p.chunk, 0u);
  // All or nothing: one bad request (or one over the largest chunk) and no piece is taken.
  const SlabStats before = arena.stats();
  std::vector<SlabArena::Piece> bad;
  EXPECT_FALSE(arena.allocate_group({{64, 64, false}, {64, 3, false}}, &bad));
  EXPECT_TRUE(bad.empty());
  EXPECT_FALSE(arena.allocate_group({{64, 64, false}, {SlabArena::kMaxChunkBytes + 1, 64, false}},
                                    &bad));
  EXPECT_NE(arena.error().find("largest code chunk"), std::string::npos) << arena.error();
  EXPECT_EQ(arena.stats().pieces, before.pieces);
  EXPECT_EQ(arena.stats().used_bytes, before.used_bytes);
  EXPECT_EQ(arena.stats().chunks, before.chunks);
  for (const auto* g : {&group, &small})
    for (const SlabArena::Piece& p : *g) arena.free(p);
  arena.free(most);
  EXPECT_EQ(arena.stats().pieces, 0u);
}

// Kernels are compiled for the small code model, position-independent: a loop's constants are
// RIP-relative operands (no 64-bit absolute address in the code), and code, constants, data and
// the stubs to the process's libraries reach each other once linked, on the slab and on LLVM's
// own manager.
TEST(ClangJit, SmallCodeModel) {
  const char* src = R"(
static const float table[5] = {0.5f, 0.25f, 0.125f, 2.0f, 3.0f};
static int calls;  // writable data
extern "C" float expf(float);
extern "C" int poly(const float* x, float* y, long n) {
  for (long i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = ((1.75f * v + 0.3125f) * v + table[i % 5]) * v + expf(v * 0.0625f) - 1.125f;
  }
  return ++calls;
}
)";
  for (bool slab : {true, false}) {
    ClangJitOptions options;
    options.slab_memory = slab;
    ClangJit j(options);
    EXPECT_NE(j.identity().find("code model small pic 1"), std::string::npos) << j.identity();
    CompiledModule m = j.compile(src, {"poly"}, "code_model");
    // No large-model sections, and no 64-bit absolute relocation in the code.
    const std::string& obj = m.object();
    ASSERT_GE(obj.size(), sizeof(Elf64_Ehdr));
    Elf64_Ehdr eh;
    std::memcpy(&eh, obj.data(), sizeof eh);
    ASSERT_LE(eh.e_shoff + eh.e_shnum * sizeof(Elf64_Shdr), obj.size());
    std::vector<Elf64_Shdr> sh(eh.e_shnum);
    std::memcpy(sh.data(), obj.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
    const char* names = obj.data() + sh.at(eh.e_shstrndx).sh_offset;
    int relocations = 0;
    for (const Elf64_Shdr& s : sh) {
      const std::string name = names + s.sh_name;
      EXPECT_EQ(name.rfind(".l", 0), std::string::npos) << "large-model section " << name;
      if (s.sh_type != SHT_RELA) continue;
      for (size_t k = 0; k < s.sh_size / sizeof(Elf64_Rela); ++k) {
        Elf64_Rela r;
        std::memcpy(&r, obj.data() + s.sh_offset + k * sizeof r, sizeof r);
        EXPECT_NE(ELF64_R_TYPE(r.r_info), static_cast<unsigned>(R_X86_64_64)) << "in " << name;
        ++relocations;
      }
    }
    EXPECT_GT(relocations, 0);  // the constants, the table, `calls` and expf
    EXPECT_EQ(j.memory_stats().slab, slab && !slab_turned_off());
    auto* poly = m.function<int(const float*, float*, long)>("poly");
    const float table[5] = {0.5f, 0.25f, 0.125f, 2.0f, 3.0f};
    std::vector<float> x(37), y(37);
    for (size_t i = 0; i < x.size(); ++i) x[i] = -2.0f + 0.1f * static_cast<float>(i);
    EXPECT_EQ(poly(x.data(), y.data(), 37), 1);
    EXPECT_EQ(poly(x.data(), y.data(), 37), 2);
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      const double want =
          ((1.75 * v + 0.3125) * v + table[i % 5]) * v + std::exp(v * 0.0625) - 1.125;
      ASSERT_NEAR(y[i], want, 1e-5 * std::max(1.0, std::abs(want))) << "i=" << i;
    }
  }
}

// The JIT on the arena: modules take pieces and give them back (freed, or after a failed link),
// recycled memory runs the new code, and loading and freeing many graphs maps nothing new.
TEST(ClangJit, SlabMemoryIsReturnedAndReused) {
  if (slab_turned_off()) GTEST_SKIP() << "STAX_JIT_SLAB=off";
  ClangJit j;
  ASSERT_TRUE(j.memory_stats().slab) << "memfd_create unavailable?";
  if (!warm_up_turned_off())
    EXPECT_EQ(j.warm_up_error(), "");  // the constructor's warm-up linked, and was freed:
  const JitMemoryStats empty = j.memory_stats();
  EXPECT_EQ(empty.used_bytes, 0u);
  EXPECT_GE(empty.chunks, 1u);
  CompiledModule one = j.compile(
      "static const float c[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
      "extern \"C\" float get(int i) { return c[i & 7] * 2.0f; }\n",
      {"get"}, "one");
  CompiledModule two = j.compile("extern \"C\" float get(int i) { return i * 10.0f; }\n",
                                 {"get"}, "two");
  const JitMemoryStats live = j.memory_stats();
  EXPECT_GT(live.used_bytes, 0u);
  EXPECT_GE(live.pieces, 2u);
  const std::string obj1 = one.object(), obj2 = two.object();
  one.reset();
  two.reset();
  EXPECT_EQ(j.memory_stats().used_bytes, 0u);
  EXPECT_EQ(j.memory_stats().pieces, 0u);

  // Recycled pieces: object 1, freed, then object 2 in its memory runs object 2's code.
  for (int round = 0; round < 3; ++round) {
    CompiledModule a = j.load_object(obj1, {"get"}, "a");
    EXPECT_EQ(a.function<float(int)>("get")(3), 8.0f);
    a.reset();
    CompiledModule b = j.load_object(obj2, {"get"}, "b");
    EXPECT_EQ(b.function<float(int)>("get")(3), 30.0f);
  }
  EXPECT_EQ(j.memory_stats().used_bytes, 0u);

  // A failed link (an external that resolves nowhere) gives its pieces back.
  CompiledModule uses_libm = j.compile(
      "extern \"C\" float cbrtf(float);\nextern \"C\" float root(float x) { return cbrtf(x); }\n",
      {"root"}, "libm");
  const JitMemoryStats before_fail = j.memory_stats();
  std::string broken = uses_libm.object();
  const size_t at = broken.find(std::string("cbrtf") + '\0');
  ASSERT_NE(at, std::string::npos);
  broken.replace(at, 5, "cbrtQ");
  testing::internal::CaptureStderr();
  for (int i = 0; i < 20; ++i) {
    EXPECT_NE(error_text([&] { j.load_object(broken, {"root"}, "unresolved"); }).find("cbrtQ"),
              std::string::npos);
    EXPECT_NE(error_text([&] {
                j.load_objects({{obj1, {"get"}, "fine"}, {broken, {"root"}, "unresolved"}});
              }).find("cbrtQ"),
              std::string::npos);
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(j.memory_stats().used_bytes, before_fail.used_bytes);
  EXPECT_EQ(j.memory_stats().pieces, before_fail.pieces);
  // ... and the JIT links and runs after it, in that memory.
  CompiledModule after = j.load_object(uses_libm.object(), {"root"}, "libm again");
  EXPECT_EQ(after.function<float(float)>("root")(27.0f), 3.0f);
  after.reset();
  uses_libm.reset();

  // Many graphs (batches of 4 kernels) loaded, run and freed, in overlapping lifetimes: the
  // mapped memory stays what the first rounds needed.
  std::vector<std::vector<CompiledModule>> window;
  size_t mapped_after_warmup = 0;
  for (int round = 0; round < 300; ++round) {
    window.push_back(j.load_objects({{obj1, {"get"}, "g1"}, {obj2, {"get"}, "g2"},
                                     {obj1, {"get"}, "g3"}, {obj2, {"get"}, "g4"}}));
    ASSERT_EQ(window.back()[2].function<float(int)>("get")(1), 4.0f);
    ASSERT_EQ(window.back()[3].function<float(int)>("get")(2), 20.0f);
    if (window.size() > 5) window.erase(window.begin());
    if (round == 20) mapped_after_warmup = j.memory_stats().mapped_bytes;
  }
  EXPECT_EQ(j.memory_stats().mapped_bytes, mapped_after_warmup);
  window.clear();
  EXPECT_EQ(j.memory_stats().used_bytes, 0u);
}

// The slab's chunks are shared mappings: after fork() the child must get its own copy, or a kernel
// it links into a piece it freed would overwrite the parent's code there (and the reverse).
TEST(ClangJit, ForkedChildGetsItsOwnCodeMemory) {
  if (test::kThreadSanitizer) GTEST_SKIP() << "fork() in a TSan process";
  if (slab_turned_off()) GTEST_SKIP() << "STAX_JIT_SLAB=off";
  ClangJit j;
  ASSERT_TRUE(j.memory_stats().slab);
  CompiledModule one = j.compile("extern \"C\" int v() { return 1; }\n", {"v"}, "one");
  CompiledModule two = j.compile("extern \"C\" int v() { return 2; }\n", {"v"}, "two");
  const std::string obj2 = two.object();
  two.reset();
  CompiledModule parent = j.load_object(one.object(), {"v"}, "parent");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child frees the parent's module and links the other kernel into the same piece.
    void* at = parent.address("v");
    parent.reset();
    CompiledModule child = j.load_object(obj2, {"v"}, "child");
    const bool same_piece = child.address("v") == at;
    const bool runs = child.function<int()>("v")() == 2;
    ::_exit(!same_piece ? 2 : !runs ? 3 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: the child did not reuse the piece, 3: it ran wrong";
  EXPECT_EQ(parent.function<int()>("v")(), 1);  // the child's link did not reach it
  // And the parent still links into its own arena.
  CompiledModule again = j.load_object(obj2, {"v"}, "again");
  EXPECT_EQ(again.function<int()>("v")(), 2);
  EXPECT_EQ(parent.function<int()>("v")(), 1);
}

TEST(ClangJit, WithoutTheSlabLLVMsManagerLinks) {
  ClangJitOptions options;
  options.slab_memory = false;
  options.load_sleef = false;
  ClangJit j(options);
  EXPECT_FALSE(j.memory_stats().slab);
  CompiledModule m = j.compile(kAxpy, {"axpy"}, "plain");
  std::vector<CompiledModule> batch = j.load_objects({{m.object(), {"axpy"}, "again"}});
  float x[3] = {1, 2, 3}, y[3] = {1, 1, 1}, out[3];
  batch[0].function<void(const float*, const float*, float*, long, float)>("axpy")(x, y, out, 3,
                                                                                   2.0f);
  EXPECT_EQ(out[2], 7.0f);
}

TEST(ClangJit, NumberSourceLines) {
  EXPECT_EQ(number_source_lines("a\nb"), "   1 | a\n   2 | b\n");
  EXPECT_EQ(number_source_lines("a\n"), "   1 | a\n");
  EXPECT_EQ(number_source_lines(""), "   1 | \n");
}

}  // namespace
}  // namespace stax::cpu
