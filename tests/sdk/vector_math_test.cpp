// Vector math (issue 9, docs/vector_math.md): scalar_ops.hpp's transcendentals are SLEEF's
// deterministic scalar functions; they must return the same bits as the SLEEF vector forms that
// cpu_cpp's vectorised loops call, stay within SLEEF's documented 1.0-ULP bound, and compiled
// kernels that use them must be vectorised (the vector form in the object code) and bit-identical
// to the interpreter. Also seed Listing 5.3: the compiled backward of Example 5.1 is one fused
// loop that recomputes erf / exp from the saved matmul, vectorised (SLEEF's vector expf).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/driver/compiled_function.h"
#include "core/driver/compiler.h"
#include "core/interpreter/interpreter.h"
#include "stax/sdk/scalar_ops.hpp"

using namespace stax;

// Calls a SLEEF AVX-512 vector function on 16 floats / 8 doubles (one or two operands; b may be
// null): tests/support/sleef_vector_calls.cpp, compiled with -mavx512f, so that the calls pass
// their vectors in zmm registers as SLEEF expects. (A `target("avx512f")` function here did not
// suffice: clang-19 in build-fuzz passed the operands of the indirect call on the stack, so pow's
// second operand was garbage.)
void call_vf(void* fn, const float* a, const float* b, float* out);
void call_vd(void* fn, const double* a, const double* b, double* out);

namespace {

struct Fn {
  const char* name;
  float (*f)(float);
  double (*d)(double);
  double (*ref)(double);            // float32 reference, in double
  long double (*refl)(long double);  // float64 reference, in long double
};

const std::vector<Fn>& functions() {
  static const std::vector<Fn> fns = {
      {"exp", stax_scalar::exp<float>, stax_scalar::exp<double>, [](double x) { return std::exp(x); }, [](long double x) { return expl(x); }},
      {"exp2", stax_scalar::exp2<float>, stax_scalar::exp2<double>, [](double x) { return std::exp2(x); }, [](long double x) { return exp2l(x); }},
      {"expm1", stax_scalar::expm1<float>, stax_scalar::expm1<double>, [](double x) { return std::expm1(x); }, [](long double x) { return expm1l(x); }},
      {"log", stax_scalar::log<float>, stax_scalar::log<double>, [](double x) { return std::log(x); }, [](long double x) { return logl(x); }},
      {"log2", stax_scalar::log2<float>, stax_scalar::log2<double>, [](double x) { return std::log2(x); }, [](long double x) { return log2l(x); }},
      {"log10", stax_scalar::log10<float>, stax_scalar::log10<double>, [](double x) { return std::log10(x); }, [](long double x) { return log10l(x); }},
      {"log1p", stax_scalar::log1p<float>, stax_scalar::log1p<double>, [](double x) { return std::log1p(x); }, [](long double x) { return log1pl(x); }},
      {"sin", stax_scalar::sin<float>, stax_scalar::sin<double>, [](double x) { return std::sin(x); }, [](long double x) { return sinl(x); }},
      {"cos", stax_scalar::cos<float>, stax_scalar::cos<double>, [](double x) { return std::cos(x); }, [](long double x) { return cosl(x); }},
      {"tan", stax_scalar::tan<float>, stax_scalar::tan<double>, [](double x) { return std::tan(x); }, [](long double x) { return tanl(x); }},
      {"tanh", stax_scalar::tanh<float>, stax_scalar::tanh<double>, [](double x) { return std::tanh(x); }, [](long double x) { return tanhl(x); }},
      {"erf", stax_scalar::erf<float>, stax_scalar::erf<double>, [](double x) { return std::erf(x); }, [](long double x) { return erfl(x); }},
  };
  return fns;
}

bool same_bits(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}
bool same_bits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// Inputs: edge values, random bit patterns, random finite values of moderate size.
std::vector<float> float_inputs(size_t n, uint32_t seed) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 1e-45f, -1e-45f, 1e-38f,
                          3.4e38f, -3.4e38f, INFINITY, -INFINITY, NAN, 88.7f, -103.9f, 1e28f,
                          1e-7f, 9.0f, -9.0f, 0.99999994f};
  std::mt19937 rng(seed);
  while (v.size() < n) {
    uint32_t u = rng();
    float x;
    if (v.size() % 3 == 0) {
      std::memcpy(&x, &u, sizeof x);
    } else {
      x = std::uniform_real_distribution<float>(-1, 1)(rng) * (v.size() % 3 == 1 ? 100.0f : 3.0f);
    }
    v.push_back(x);
  }
  while (v.size() % 16) v.push_back(1.25f);
  return v;
}
std::vector<double> double_inputs(size_t n, uint32_t seed) {
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 5e-324, -5e-324, 1e-308, 1.7e308,
                           -1.7e308, INFINITY, -INFINITY, NAN, 709.7, -745.0, 1e299, 1e-16, 9.0};
  std::mt19937_64 rng(seed);
  while (v.size() < n) {
    uint64_t u = rng();
    double x;
    if (v.size() % 3 == 0) {
      std::memcpy(&x, &u, sizeof x);
    } else {
      x = std::uniform_real_distribution<double>(-1, 1)(rng) * (v.size() % 3 == 1 ? 700.0 : 3.0);
    }
    v.push_back(x);
  }
  while (v.size() % 8) v.push_back(1.25);
  return v;
}

void* sleef(const std::string& name) {
  void* p = dlsym(RTLD_DEFAULT, name.c_str());
  if (!p) p = dlsym(dlopen("libsleef.so.3", RTLD_NOW | RTLD_GLOBAL), name.c_str());
  return p;
}

bool has_avx512f() { return __builtin_cpu_supports("avx512f"); }

}  // namespace

// Lane i of Sleef_cinz_<f>f16_u10avx512fnofma(v) == Sleef_cinz_<f>f1_u10purec(v[i]), bit for bit
// (NaN: any NaN), for every transcendental scalar_ops.hpp takes from SLEEF, float and double: the
// contract the vectorised kernels rest on (scalar_ops.hpp's pow special forms, log1p's and erf's
// edge selects are plain code that the kernels run too: the compiled test below checks those).
TEST(VectorMath, ScalarSemanticsEqualSleefVectorFormsBitwise) {
  if (!has_avx512f()) GTEST_SKIP() << "no AVX-512F on this CPU";
  std::vector<float> xf = float_inputs(40000, 7);
  std::vector<double> xd = double_inputs(20000, 8);
  std::vector<float> outf(16);
  std::vector<double> outd(8);
  for (const Fn& fn : functions()) {
    void* vf = sleef(std::string("Sleef_cinz_") + fn.name + "f16_u10avx512fnofma");
    void* vd = sleef(std::string("Sleef_cinz_") + fn.name + "d8_u10avx512fnofma");
    auto sf = reinterpret_cast<float (*)(float)>(
        sleef(std::string("Sleef_cinz_") + fn.name + "f1_u10purec"));
    auto sd = reinterpret_cast<double (*)(double)>(
        sleef(std::string("Sleef_cinz_") + fn.name + "d1_u10purec"));
    ASSERT_TRUE(vf && vd && sf && sd) << fn.name;
    size_t bad = 0;
    for (size_t i = 0; i < xf.size(); i += 16) {
      call_vf(vf, &xf[i], nullptr, outf.data());
      for (size_t l = 0; l < 16; ++l)
        if (!same_bits(outf[l], sf(xf[i + l])) && bad++ < 3)
          ADD_FAILURE() << fn.name << "f(" << xf[i + l] << "): vector " << outf[l] << " scalar "
                        << sf(xf[i + l]);
    }
    for (size_t i = 0; i < xd.size(); i += 8) {
      call_vd(vd, &xd[i], nullptr, outd.data());
      for (size_t l = 0; l < 8; ++l)
        if (!same_bits(outd[l], sd(xd[i + l])) && bad++ < 3)
          ADD_FAILURE() << fn.name << "(" << xd[i + l] << "): vector " << outd[l] << " scalar "
                        << sd(xd[i + l]);
    }
    EXPECT_EQ(bad, 0u) << fn.name;
  }
  // pow (the general case: operands that none of scalar_ops' special forms catches)
  void* pf = sleef("Sleef_cinz_powf16_u10avx512fnofma");
  void* pd = sleef("Sleef_cinz_powd8_u10avx512fnofma");
  ASSERT_TRUE(pf && pd);
  std::vector<float> bf = float_inputs(40000, 9);
  std::vector<double> bd = double_inputs(20000, 10);
  size_t bad = 0;
  for (size_t i = 0; i < xf.size(); i += 16) {
    std::vector<float> a(xf.begin() + i, xf.begin() + i + 16), b(16);
    for (size_t l = 0; l < 16; ++l) {
      a[l] = std::fabs(a[l]);
      b[l] = std::fmod(bf[i + l], 40.0f);
      if (b[l] == 2.0f || b[l] == -1.0f || b[l] == 0.5f) b[l] = 1.5f;
      if (a[l] == 2.0f) a[l] = 1.5f;
    }
    call_vf(pf, a.data(), b.data(), outf.data());
    for (size_t l = 0; l < 16; ++l)
      if (!same_bits(outf[l], Sleef_cinz_powf1_u10purec(a[l], b[l])) && bad++ < 3)
        ADD_FAILURE() << "powf(" << a[l] << ", " << b[l] << ")";
  }
  for (size_t i = 0; i < xd.size(); i += 8) {
    std::vector<double> a(xd.begin() + i, xd.begin() + i + 8), b(8);
    for (size_t l = 0; l < 8; ++l) {
      a[l] = std::fabs(a[l]);
      b[l] = std::fmod(bd[i + l], 300.0);
      if (b[l] == 2.0 || b[l] == -1.0 || b[l] == 0.5) b[l] = 1.5;
      if (a[l] == 2.0) a[l] = 1.5;
    }
    call_vd(pd, a.data(), b.data(), outd.data());
    for (size_t l = 0; l < 8; ++l)
      if (!same_bits(outd[l], Sleef_cinz_powd1_u10purec(a[l], b[l])) && bad++ < 3)
        ADD_FAILURE() << "pow(" << a[l] << ", " << b[l] << ")";
  }
  EXPECT_EQ(bad, 0u) << "pow";
}

// SLEEF's documented bound for its u10 functions: at most 1.0 ULP from the exact result (sin,
// cos, tan: for |x| <= 1e28 in float, 1e299 in double). Measured against a wider reference
// (float: glibc's double function; double: glibc's long double one), whose own error is far
// below the float / double ULP.
TEST(VectorMath, TranscendentalsWithinSleefUlpBound) {
  std::vector<float> xf = float_inputs(60000, 11);
  std::vector<double> xd = double_inputs(30000, 12);
  for (const Fn& fn : functions()) {
    double worst_f = 0, worst_d = 0;
    float worst_x = 0;
    for (float x : xf) {
      if (std::isnan(x)) continue;
      double ref = fn.ref(static_cast<double>(x));
      float got = fn.f(x);
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(got)) << fn.name << "f(" << x << ")";
        continue;
      }
      float rounded = static_cast<float>(ref);
      if (std::isinf(rounded)) {
        // overflow: inf, or the largest finite float when the exact value is just below the
        // rounding threshold (within 1 ULP of it)
        EXPECT_TRUE(std::isinf(got) || std::fabs(got) == 3.40282347e38f) << fn.name << "f(" << x << ")";
        continue;
      }
      int e = std::max(std::ilogb(rounded == 0 ? 1e-45f : rounded), -126);
      double ulp = std::ldexp(1.0, e - 23);
      double err = std::fabs(static_cast<double>(got) - ref) / ulp;
      if (err > worst_f) worst_f = err, worst_x = x;
    }
    for (double x : xd) {
      if (std::isnan(x)) continue;
      if ((!std::strcmp(fn.name, "sin") || !std::strcmp(fn.name, "cos") ||
           !std::strcmp(fn.name, "tan")) &&
          std::fabs(x) > 1e299)
        continue;
      long double ref = fn.refl(static_cast<long double>(x));
      double got = fn.d(x);
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(got)) << fn.name << "(" << x << ")";
        continue;
      }
      double rounded = static_cast<double>(ref);
      if (std::isinf(rounded)) {
        EXPECT_TRUE(std::isinf(got) || std::fabs(got) == 1.7976931348623157e308) << fn.name << "(" << x << ")";
        continue;
      }
      int e = std::max(std::ilogb(rounded == 0 ? 5e-324 : rounded), -1022);
      long double ulp = std::ldexp(1.0L, e - 52);
      double err = static_cast<double>(std::fabs(static_cast<long double>(got) - ref) / ulp);
      worst_d = std::max(worst_d, err);
    }
    std::printf("[ ulp ] %-6s float32 max %.3f ULP (at %g), float64 max %.3f ULP\n", fn.name,
                worst_f, static_cast<double>(worst_x), worst_d);
    EXPECT_LE(worst_f, 1.0 + 1e-6) << fn.name << "f at " << worst_x;
    EXPECT_LE(worst_d, 1.0 + 1e-3) << fn.name;
  }
}

namespace {

Config cpu_config(const std::filesystem::path& cache_dir) {
  Config c = Config::default_cpu();
  c.plugin_path = {STAX_PLUGIN_DIR};
  c.cache = true;
  c.cache_dir = cache_dir;
  return c;
}

// A fresh directory for the kernel cache: its stored objects are the machine code the JIT made.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    ::unsetenv("STAX_CACHE_DIR");  // ctest sets it to off; this test reads the objects it stores
    std::string tmpl = (std::filesystem::temp_directory_path() / "stax_vecmath_XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::set<std::filesystem::path> files() const {
    std::set<std::filesystem::path> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(path))
      if (e.is_regular_file()) out.insert(e.path());
    return out;
  }
  // Every byte the kernel cache stored (objects and sources), but for the files in `except`.
  std::string stored(const std::set<std::filesystem::path>& except = {}) const {
    std::string all;
    for (const auto& e : std::filesystem::recursive_directory_iterator(path)) {
      if (!e.is_regular_file() || except.count(e.path())) continue;
      std::ifstream f(e.path(), std::ios::binary);
      std::stringstream s;
      s << f.rdbuf();
      all += s.str();
    }
    return all;
  }
};

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// The machine code of the objects the cache stored in `dir` (its .entry files from their ELF
// header on), but for the files in `except`: what the object calls, not what the source declares.
std::vector<std::string> stored_objects(const TempDir& dir,
                                        const std::set<std::filesystem::path>& except = {}) {
  std::vector<std::string> out;
  for (const auto& p : dir.files()) {
    if (except.count(p) || p.extension() != ".entry") continue;
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    const std::string all = s.str();
    const size_t at = all.find("\x7f" "ELF");
    if (at != std::string::npos) out.push_back(all.substr(at));
  }
  return out;
}

// objdump's disassembly of an object (binutils, which the host compiler brings); empty when
// objdump is not there.
std::string disassemble(const TempDir& dir, const std::string& object) {
  const std::filesystem::path o = dir.path / "disassemble.o";
  {
    std::ofstream f(o, std::ios::binary);
    f << object;
  }
  std::string text;
  if (FILE* p = ::popen(("objdump -d --no-show-raw-insn '" + o.string() + "' 2>/dev/null").c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    ::pclose(p);
  }
  std::filesystem::remove(o);
  return text;
}

}  // namespace

// A pointwise graph of every SLEEF-backed op, float32 and float64, 37 x 100 (rows not a multiple
// of 16: the vector loop and its scalar remainder both run): bit-identical to the interpreter,
// and the machine code calls the AVX-512 vector forms.
TEST(VectorMath, CompiledTranscendentalsAreVectorisedAndBitwise) {
  if (!has_avx512f()) GTEST_SKIP() << "no AVX-512F on this CPU";
  for (DType dt : {DType::Float32, DType::Float64}) {
    Graph g;
    Node* x = g.placeholder("x", {37, 100}, dt);
    Node* y = g.placeholder("y", {37, 100}, dt);
    Node* ax = g.call("abs", {x});
    std::vector<Node*> outs;
    for (const char* op : {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
                           "tan", "tanh", "erf", "sigmoid"})
      outs.push_back(g.call(op, {std::string(op).rfind("log", 0) == 0 ? ax : x}));
    outs.push_back(g.call("pow.Tensor_Tensor", {ax, y}));
    g.output(outs);
    TempDir dir;
    Compiler compiler(cpu_config(dir.path));
    CompiledGraph cg = compiler.compile(g);
    // normal values, and edge values / random bit patterns (NaN, inf, subnormals, huge: the
    // selects of log1p and erf, SLEEF's special cases)
    std::vector<std::vector<Tensor>> inputs = {
        {Tensor::randn({37, 100}, dt, 1), Tensor::randn({37, 100}, dt, 2)}};
    if (dt == DType::Float32) {
      std::vector<float> a = float_inputs(3700, 3), b = float_inputs(3700, 4);
      a.resize(3700), b.resize(3700);
      inputs.push_back({Tensor::from_vector({37, 100}, a), Tensor::from_vector({37, 100}, b)});
    } else {
      std::vector<double> a = double_inputs(3700, 3), b = double_inputs(3700, 4);
      a.resize(3700), b.resize(3700);
      inputs.push_back({Tensor::from_vector({37, 100}, a), Tensor::from_vector({37, 100}, b)});
    }
    for (const std::vector<Tensor>& in : inputs) {
      std::vector<Tensor> got = cg.run(in);
      std::vector<Tensor> want = interpret(g, in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(got[i].equal(want[i])) << dtype_name(dt) << " output " << i << "\n"
                                           << got[i].summary() << "\n" << want[i].summary();
    }
    std::string objects = dir.stored();
    const char* t = dt == DType::Float32 ? "f16" : "d8";
    for (const char* op : {"exp", "log", "log1p", "sin", "tanh", "erf", "pow", "expm1", "exp2"}) {
      // float32 exp and erf are Stax's own inline formulas (DECISIONS items 34, 37, 38): no
      // SLEEF call for either
      if (dt == DType::Float32 && (std::string(op) == "erf" || std::string(op) == "exp")) {
        EXPECT_FALSE(contains(objects, std::string("Sleef_cinz_") + op + "f"))
            << "float32 " << op << " calls SLEEF";
        continue;
      }
      EXPECT_TRUE(contains(objects, std::string("Sleef_cinz_") + op + t + "_u10avx512fnofma"))
          << dtype_name(dt) << ": no vector call of " << op;
    }
  }
}

// Seed Listing 5.3: the backward of Example 5.1 (gelu(x @ W).sum(), x 32x64, W 64x64, gradient
// of W) saves only the matmul; its compiled form is one pointwise loop that recomputes the gelu
// derivative — erf and exp of the saved matmul — times the broadcast tangent, then the matmul
// extern. The loop is vectorised (the object holds 16-lane fmas: erf and exp inline), and the
// gradient agrees with the joint graph in the interpreter (within the matmul bound: the extern is
// OpenBLAS).
TEST(Listing53, BackwardIsOneVectorLoopRecomputingErfExpFromSavedMatmul) {
  if (!has_avx512f()) GTEST_SKIP() << "no AVX-512F on this CPU";
  Graph g;
  Node* x = g.placeholder("", {32, 64});
  Node* w = g.placeholder("", {64, 64});
  g.output({g.call("sum", {g.call("gelu", {g.call("matmul", {x, w})})})});
  TempDir dir;
  Compiler compiler(cpu_config(dir.path));
  CompiledFunction f(g, {"primals_2"}, compiler);
  std::vector<Tensor> in = {Tensor::randn({32, 64}, DType::Float32, 5),
                            Tensor::randn({64, 64}, DType::Float32, 6)};
  ForwardResult r = f.forward(in);
  std::set<std::filesystem::path> forward_files = dir.files();
  std::vector<Tensor> grads = f.backward(*r.ctx, {Tensor::scalar(0.75)});
  ASSERT_NE(f.compiled_backward(), nullptr);
  const CompiledGraph& bw = *f.compiled_backward();
  ASSERT_EQ(bw.kernels().size(), 1u) << "the backward's pointwise part is one kernel";
  const std::string& src = bw.kernels()[0].source;
  std::string body = src.substr(src.find("void kernel0_body("));
  EXPECT_TRUE(contains(body, "stax_scalar::erf(")) << body;
  EXPECT_TRUE(contains(body, "stax_scalar::exp(")) << body;
  // one loop over the 32 x 64 elements (a flat loop or two nested ones), no reduction
  EXPECT_FALSE(contains(body, "r0_0")) << body;
  EXPECT_FALSE(contains(body, "acc")) << body;
  // the backward's object (stored after the forward's) calls nothing: float32 exp (the gelu
  // density) and erf are Stax's own inline formulas (DECISIONS items 34, 37, 38), and the loop
  // is vectorised (its disassembly holds fused multiply-adds on zmm registers)
  std::vector<std::string> objects = stored_objects(dir, forward_files);
  ASSERT_EQ(objects.size(), 1u) << "the backward's kernel object";
  EXPECT_FALSE(contains(objects[0], "Sleef_")) << "the backward calls SLEEF";
  const std::string code = disassemble(dir, objects[0]);
  if (code.empty()) {
    std::printf("[ listing 5.3 ] objdump is not installed: the vector fma check is skipped\n");
  } else {
    bool zmm_fma = false;  // one instruction: a vfmadd on zmm registers
    std::istringstream lines(code);
    for (std::string line; std::getline(lines, line);)
      zmm_fma = zmm_fma || (contains(line, "vfmadd") && contains(line, "%zmm"));
    EXPECT_TRUE(zmm_fma) << code;
  }
  // values: the compiled gradient against the reference (the joint graph in the interpreter)
  std::vector<Tensor> ref = f.reference(in, {Tensor::scalar(0.75)});
  ASSERT_EQ(ref.size(), 2u);
  EXPECT_TRUE(grads[0].allclose(ref[1], kGradientRtol, kGradientAtol))
      << grads[0].summary() << "\n" << ref[1].summary();
}
