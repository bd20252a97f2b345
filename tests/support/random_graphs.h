// Random valid graphs for differential testing of the compile path (seed §6.9 / Theorem 6.1):
// small graphs of pointwise ops with broadcasting, views, reductions, cat, dtype conversions,
// matmul, softmax; values with several users; non-contiguous inputs; NaN / inf / negative values;
// and the comparison of a compiled run with the reference interpreter (bitwise, or within the
// gemm / softmax rounding bounds). Used by tests/compiled_fuzz_test.cpp (seeded cases) and the
// libFuzzer target fuzz/compile_compare_fuzzer.cpp (cases decoded from the fuzz input).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/driver/compiler.h"
#include "core/graph/graph.h"
#include "core/graph/printer.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "tests/support/aten_names.h"
#include "tests/support/compiled_check.h"

namespace stax::test {

// ---- the generator ---------------------------------------------------------------------------

// How an output is compared: bit for bit, or within an error bound given the interpreter's values
// of other outputs (its operands).
struct Check {
  enum Kind { Bitwise, Gemm, Softmax, LogSoftmax } kind = Bitwise;
  int a = -1, b = -1;  // Gemm: outputs A and B of mm(A, B); (Log)Softmax: a is its input
  int64_t dim = 0;     // (Log)Softmax
};

struct FuzzCase {
  Graph g;
  std::vector<Tensor> inputs;
  std::vector<Check> checks;  // one per output
  bool has_reduction = false;
};

class Gen {
 public:
  // Seeded: the mt19937_64 stream of `seed` (compiled_fuzz_test's seeds).
  explicit Gen(uint64_t seed) : mt_(seed), rng_{[this] { return mt_(); }} {}
  // Decoded from bytes (the libFuzzer target fuzz/compile_compare_fuzzer.cpp): each draw takes the
  // next 8 bytes (little-endian). Past the end the draws go on from a splitmix64 sequence (not a
  // constant: the standard distributions reject some draws and would retry a constant forever).
  Gen(const uint8_t* data, size_t size)
      : rng_{[this, data, size] {
          if (pos_ >= size) {
            uint64_t z = (pos_++ - size + 1) * 0x9e3779b97f4a7c15ULL;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            return z ^ (z >> 31);
          }
          uint64_t v = 0;
          for (int k = 0; k < 8 && pos_ < size; ++k) v |= uint64_t{data[pos_++]} << (8 * k);
          return v;
        }} {}
  Gen(const Gen&) = delete;
  Gen& operator=(const Gen&) = delete;

  int64_t uniform(int64_t lo, int64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(uniform(0, static_cast<int64_t>(v.size()) - 1))];
  }
  double normal() { return std::normal_distribution<double>(0, 1)(rng_); }

  Shape shape() {
    Shape s;
    int64_t rank = uniform(1, 3);
    for (int64_t i = 0; i < rank; ++i) s.push_back(chance(0.2) ? 1 : uniform(2, 5));
    return s;
  }

  // A permutation of 0..n-1.
  std::vector<int64_t> perm(int64_t n) {
    std::vector<int64_t> p(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = i;
    std::shuffle(p.begin(), p.end(), rng_);
    return p;
  }

  // An input value for a floating tensor: mostly normal, sometimes special.
  double float_value() {
    if (chance(0.12)) {
      static const std::vector<double> special = {
          std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
          -std::numeric_limits<double>::infinity(), 0.0, -0.0, 1e30, -1e-30, 0.5, -2.5, 100.0};
      return pick(special);
    }
    return normal() * (chance(0.2) ? 10.0 : 1.0);
  }

  Arg scalar() {
    static const std::vector<double> d = {2.0, -1.5, 0.5, 3.25, -0.0, 1e-3};
    static const std::vector<int64_t> i = {2, -1, 3, 0, 1};
    if (chance(0.5)) return Arg(pick(d));
    return Arg(pick(i));
  }

 private:
  // A uniform random bit generator over 64-bit draws: the distributions give the same values as
  // on the mt19937_64 itself (same range), so seeded cases did not change with the byte source.
  struct Bits {
    using result_type = uint64_t;
    static constexpr uint64_t min() { return 0; }
    static constexpr uint64_t max() { return ~uint64_t{0}; }
    std::function<uint64_t()> next;
    uint64_t operator()() { return next(); }
  };
  std::mt19937_64 mt_;
  size_t pos_ = 0;
  Bits rng_;
};

inline Tensor make_input(Gen& r, const TensorMeta& m, Shape strides) {
  Tensor t = Tensor::empty_strided(m.sizes, strides, m.dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (is_floating(m.dtype))
      t.set_double(i, r.float_value());
    else if (m.dtype == DType::Bool)
      t.set_int(i, r.uniform(0, 1));
    else
      t.set_int(i, r.uniform(-5, 5));
  }
  return t;
}

inline const std::vector<std::string> kUnary = {
    "exp",  "exp2",  "expm1", "log",   "log2",  "log10",      "log1p", "sqrt",  "rsqrt",
    "sin",  "cos",   "tanh",  "sigmoid", "erf", "reciprocal", "abs",   "relu",  "neg",
    "sign", "floor", "ceil",  "round", "trunc", "logical_not", "isnan", "gelu", "silu",
    "clone"};
inline const std::vector<std::string> kBinary = {"add", "sub", "mul", "div", "pow", "remainder",
                                          "floor_divide", "eq", "lt", "ge", "ne"};
inline const std::vector<DType> kDTypes = {DType::Float32, DType::Float64, DType::Int64,
                                    DType::Float16, DType::BFloat16, DType::Bool};

// One random op on values of `pool`; throws stax::Error when the random arguments do not type
// check (the caller retries).
inline Node* random_op(Gen& r, Graph& g, std::vector<Node*>& pool, bool& reduction) {
  Node* a = r.pick(pool);
  int64_t rank = a->meta().dim();
  auto dim = [&](int64_t n) { return n == 0 ? int64_t{0} : r.uniform(-n, n - 1); };
  switch (r.uniform(0, 13)) {
    case 0:
    case 1:
      return g.call(r.pick(kUnary), {a});
    case 2:
    case 3: {
      Node* b = r.pick(pool);
      std::string op = r.pick(kBinary);
      // An integer floor_divide / remainder by zero raises ZeroDivisionError (as torch): integer
      // divisors are made non-zero (the random draws stay those of every seed before).
      const bool division = op == "remainder" || op == "floor_divide";
      const bool integer_a = !is_floating(a->dtype());
      if (r.chance(0.3)) {
        Arg s = r.scalar();
        if (division && integer_a && s.is_int() && s.to_int() == 0) s = Arg(int64_t{1});
        return g.call(test::scalar_overload(op), {a, s});
      }
      if ((op == "add" || op == "sub") && r.chance(0.3))
        return g.call(op + ".Tensor", {a, b}, {{"alpha", r.scalar()}});
      if (division && integer_a && !is_floating(b->dtype()))
        b = g.call("where.ScalarSelf", {g.call("eq.Scalar", {b, 0}), 1, b});
      return g.call(test::tensor_overload(op), {a, b});
    }
    case 4: {
      Node* b = r.pick(pool);
      return g.call(r.chance(0.5) ? "maximum" : "minimum", {a, b});
    }
    case 5: {
      Node* b = r.pick(pool);
      Node* c = r.pick(pool);
      Node* cond = g.call(r.chance(0.5) ? "gt.Tensor" : "le.Scalar",
                          {c, r.chance(0.5) ? Arg(b) : r.scalar()});
      if (r.chance(0.3)) return g.call("where.ScalarOther", {cond, a, r.scalar()});
      return g.call("where.self", {cond, a, b});
    }
    case 6: {
      switch (r.uniform(0, 4)) {
        case 0:
          return g.call("permute", {a, r.perm(rank)});
        case 1:
          return g.call("transpose.int", {a, dim(rank), dim(rank)});
        case 2:
          return g.call("unsqueeze", {a, r.uniform(-rank - 1, rank)});
        case 3:
          return g.call("squeeze.dim", {a, dim(rank)});
        default: {
          Shape s = a->shape();
          for (auto& x : s)
            if (x == 1 && r.chance(0.7)) x = r.uniform(2, 4);
          if (r.chance(0.3)) s.insert(s.begin(), r.uniform(1, 3));
          return g.call("expand", {a, s});
        }
      }
    }
    case 7: {
      if (rank == 0) return g.call("neg", {a});
      int64_t d = r.uniform(0, rank - 1);
      int64_t n = a->shape()[static_cast<size_t>(d)];
      if (r.chance(0.4)) return g.call("select.int", {a, d, r.uniform(-n, n - 1)});
      int64_t start = r.uniform(0, std::max<int64_t>(0, n - 1));
      int64_t end = r.uniform(start + 1, n + 1);
      return g.call("slice.Tensor", {a, d, start, end, r.uniform(1, 2)});
    }
    case 8: {
      Shape s = a->shape();
      Shape to;
      if (r.chance(0.5) || s.size() < 2) {
        to = {a->meta().numel()};
        if (r.chance(0.5)) to = {-1};
      } else {
        to = s;
        size_t i = static_cast<size_t>(r.uniform(0, static_cast<int64_t>(s.size()) - 2));
        to[i] *= to[i + 1];
        to.erase(to.begin() + static_cast<int64_t>(i) + 1);
      }
      return g.call(r.chance(0.5) ? "reshape" : "view", {a, to});
    }
    case 9:
    case 10: {
      reduction = true;
      bool keep = r.chance(0.5);
      int64_t d = dim(rank);
      switch (r.uniform(0, 7)) {
        case 0:
          return g.call("sum.dim_IntList", {a, std::vector<int64_t>{d}, keep});
        case 1:
          return g.call("amax", {a, std::vector<int64_t>{d}, keep});
        case 2:
          return g.call("amin", {a, std::vector<int64_t>{d}, keep});
        case 3:
          return g.call("mean.dim", {a, std::vector<int64_t>{d}, keep});
        case 4:
          return g.call("prod.dim_int", {a, d, keep});
        case 5:
          return g.call(r.chance(0.5) ? "argmax" : "argmin", {a, d, keep});
        case 6:
          return g.call("sum.default", {a});
        default:
          return g.call("mean.default", {a});
      }
    }
    case 11: {
      Node* b = r.pick(pool);
      return g.call("cat", {std::vector<Node*>{a, b}, dim(rank)});
    }
    case 12:
      return g.call("to.dtype", {a, r.pick(kDTypes)});
    default:
      return g.call("clamp", {a, r.scalar(), r.chance(0.5) ? Arg(Undefined{}) : r.scalar()});
  }
}

inline FuzzCase generate(Gen& r) {
  FuzzCase fc;
  Graph& g = fc.g;
  std::vector<Node*> pool;
  int64_t n_in = r.uniform(1, 3);
  Shape base = r.shape();
  for (int64_t i = 0; i < n_in; ++i) {
    // Shapes related to the first one (equal, or with size-1 dims) so broadcasting succeeds often.
    Shape s = base;
    if (i > 0 && r.chance(0.5))
      for (auto& x : s)
        if (r.chance(0.4)) x = 1;
    if (i > 0 && r.chance(0.2)) s = r.shape();
    DType dt = r.chance(0.7) ? DType::Float32 : r.pick(std::vector<DType>{
                                                     DType::Float64, DType::Int64, DType::Bool});
    TensorMeta m = TensorMeta::contiguous(s, dt);
    if (s.size() >= 2 && r.chance(0.3)) {  // a non-contiguous (permuted) placeholder layout
      std::vector<int64_t> p = r.perm(static_cast<int64_t>(s.size()));
      Shape ps(s.size());
      for (size_t k = 0; k < s.size(); ++k) ps[k] = s[static_cast<size_t>(p[k])];
      Shape pst = contiguous_strides(ps);
      for (size_t k = 0; k < s.size(); ++k) m.strides[static_cast<size_t>(p[k])] = pst[k];
    }
    Node* ph = g.placeholder("in" + std::to_string(i), m);
    pool.push_back(ph);
    // The runtime tensor: the placeholder's layout, or (sometimes) a contiguous one.
    fc.inputs.push_back(make_input(r, m, r.chance(0.8) ? m.strides : contiguous_strides(s)));
  }
  std::vector<Node*> outs;
  if (r.chance(0.12)) {  // matmul family: A (m x k) and B (k x n) from pointwise preludes
    int64_t m = r.uniform(1, 6), k = r.uniform(1, 9), n = r.uniform(1, 6);
    DType dt = r.chance(0.7) ? DType::Float32 : DType::Float64;
    Node* a = g.placeholder("ma", {m, k}, dt);
    Node* b = g.placeholder("mb", {n, k}, dt);
    fc.inputs.push_back(make_input(r, a->meta(), a->meta().strides));
    fc.inputs.push_back(make_input(r, b->meta(), b->meta().strides));
    Node* a2 = g.call(r.chance(0.5) ? "tanh" : "sigmoid", {a});
    Node* bt = g.call("t", {b});
    Node* b2 = r.chance(0.5) ? g.call("mul.Scalar", {bt, 0.5}) : bt;
    Node* mm = g.call(r.chance(0.5) ? "mm" : "matmul", {a2, b2});
    outs = {a2, b2, mm};
    fc.checks = {Check{}, Check{}, Check{Check::Gemm, 0, 1}};
  }
  int64_t n_ops = r.uniform(3, 12);
  for (int64_t i = 0, tries = 0; i < n_ops && tries < 200; ++tries) {
    try {
      bool red = false;
      Node* n = random_op(r, g, pool, red);
      fc.has_reduction |= red;
      pool.push_back(n);
      ++i;
    } catch (const Error&) {
      // ill-typed random arguments: try another op
    }
  }
  // softmax / log_softmax: the interpreter computes them in double, rounding once (the accurate
  // oracle, core/interpreter/kernels/composite_kernels.cpp); the compiled decomposition rounds after
  // every op, so they are compared within a bound, as the last op of a case.
  if (r.chance(0.15)) {
    std::vector<Node*> floats;
    for (Node* n : pool)
      if (is_floating(n->dtype())) floats.push_back(n);
    if (!floats.empty()) {
      Node* x = r.pick(floats);
      bool log = r.chance(0.5);
      int64_t d = x->meta().dim() == 0 ? 0 : r.uniform(0, x->meta().dim() - 1);
      Node* y = g.call(log ? "log_softmax.int" : "softmax.int", {x, d});
      fc.has_reduction = true;
      outs.push_back(x);
      fc.checks.resize(outs.size());
      outs.push_back(y);
      fc.checks.push_back(Check{log ? Check::LogSoftmax : Check::Softmax,
                                static_cast<int>(outs.size()) - 2, -1, d});
    }
  }
  // Outputs: the last value, plus a few others (values with several users, views, inputs).
  outs.push_back(pool.back());
  int64_t extra = r.uniform(0, 2);
  for (int64_t i = 0; i < extra; ++i) {
    Node* o = r.pick(pool);
    if (std::find(outs.begin(), outs.end(), o) == outs.end()) outs.push_back(o);
  }
  fc.checks.resize(outs.size());
  g.output(outs);
  return fc;
}

// The case of compiled_fuzz_test's seed `seed`.
inline FuzzCase generate(uint64_t seed) {
  Gen r(seed * 7919 + 17);
  return generate(r);
}

// ---- the comparison --------------------------------------------------------------------------

// |got - want|_ij <= k·u/(1 - k·u) · (|A|·|B|)_ij (Higham's bound for a dot product of length k
// in any summation order), with A and B the interpreter's operand values.
inline ::testing::AssertionResult within_gemm_bound(const Tensor& got, const Tensor& want,
                                             const Tensor& a, const Tensor& b) {
  int64_t m = a.sizes()[0], k = a.sizes()[1], n = b.sizes()[1];
  double u = test::unit_roundoff(want.dtype());
  double gamma = static_cast<double>(k) * u / (1 - static_cast<double>(k) * u);
  std::vector<double> bound(static_cast<size_t>(m * n));
  Tensor ac = a.contiguous(), bc = b.contiguous();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += std::fabs(ac.get_double(i * k + p)) * std::fabs(bc.get_double(p * n + j));
      bound[static_cast<size_t>(i * n + j)] = gamma * s;
    }
  return test::within_bound(got, want, bound);
}

// Softmax along `dim` of x computed with float ops of unit roundoff u (x - max, exp, a sequential
// sum, a division or log and subtraction), against the exact value: with s_i = x_i - max,
//   softmax:     |dy_j| <= y_j u (|s_j| + max_i |s_i| + n + 6)
//   log_softmax: |dy_j| <= u (|s_j| + max_i |s_i| + n + 6 + |log z| + |y_j|)
// (exp within 2 ulp), 1% slack for second-order terms, the final rounding to a half type, and a
// few subnormals' worth absolutely.
inline ::testing::AssertionResult within_softmax_bound(const Tensor& got, const Tensor& want,
                                                const Tensor& x_in, int64_t dim, bool log) {
  Tensor x = x_in.contiguous();
  DType dt = want.dtype();
  double u = dt == DType::Float64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  double u_out = dt == DType::Float16 ? std::ldexp(1.0, -11)
                 : dt == DType::BFloat16 ? std::ldexp(1.0, -8) : 0.0;
  double tiny = dt == DType::Float64 ? 4e-323 : 1e-44;
  int64_t n = x.dim() == 0 ? 1 : x.sizes()[static_cast<size_t>(dim)];
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.sizes()[static_cast<size_t>(d)];
  int64_t outer = x.numel() / (n * inner);
  std::vector<double> bound(static_cast<size_t>(x.numel()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return o * n * inner + j * inner + i; };
      double m = -INFINITY, smax = 0, z = 0;
      for (int64_t j = 0; j < n; ++j) m = std::max(m, x.get_double(at(j)));
      for (int64_t j = 0; j < n; ++j) {
        smax = std::max(smax, std::fabs(x.get_double(at(j)) - m));
        z += std::exp(x.get_double(at(j)) - m);
      }
      for (int64_t j = 0; j < n; ++j) {
        double s = std::fabs(x.get_double(at(j)) - m), y = std::fabs(want.get_double(at(j)));
        double k = s + smax + static_cast<double>(n) + 6;
        double b = log ? u * (k + std::fabs(std::log(z)) + y) : y * u * k;
        bound[static_cast<size_t>(at(j))] = 1.01 * b + y * u_out + tiny;
      }
    }
  return test::within_bound(got, want, bound);
}

// Compiles and runs fc in `order`, comparing with the interpreter in the same order, and with the
// schedule variants (all of them, or only variant `variant` when >= 0). Returns "" or the failure.
inline std::string check_case(const FuzzCase& fc, test::Order order, int variant = -1) {
  std::vector<Tensor> want;
  std::string interp_error;
  try {
    want = test::reference(fc.g, fc.inputs, order);
  } catch (const Error& e) {
    interp_error = e.what();
  }
  std::vector<Tensor> got;
  try {
    CompiledGraph cg = cpu_compiler(order).compile(fc.g);
    got = cg.run(fc.inputs);
  } catch (const Error& e) {
    if (!interp_error.empty()) return "";  // both reject the inputs
    return std::string("compiled path threw: ") + e.what();
  }
  if (!interp_error.empty()) return "interpreter threw but the compiled graph ran: " + interp_error;
  if (got.size() != want.size()) return "output count differs";
  std::string msg;
  // Theorem 6.1: fusion off and other realization thresholds give the same bytes.
  const std::vector<test::CompilerVariant>& variants = test::schedule_variants(order);
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    if (variant >= 0 && vi != static_cast<size_t>(variant) % variants.size()) continue;
    const test::CompilerVariant& v = variants[vi];
    std::vector<Tensor> other;
    try {
      other = v.compiler->compile(fc.g).run(fc.inputs);
    } catch (const Error& e) {
      msg += std::string(v.name) + ": threw " + e.what() + "\n";
      continue;
    }
    for (size_t i = 0; i < got.size(); ++i)
      if (::testing::AssertionResult ok = bitwise_equal(other[i], got[i]); !ok)
        msg += std::string(v.name) + ", output " + std::to_string(i) + ": " + ok.message() + "\n";
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const Check& c = fc.checks[i];
    auto operand = [&](int k) { return want[static_cast<size_t>(k)]; };
    ::testing::AssertionResult ok =
        c.kind == Check::Gemm ? within_gemm_bound(got[i], want[i], operand(c.a), operand(c.b))
        : c.kind == Check::Bitwise
            ? bitwise_equal(got[i], want[i])
            : within_softmax_bound(got[i], want[i], operand(c.a), c.dim,
                                   c.kind == Check::LogSoftmax);
    if (!ok) msg += "output " + std::to_string(i) + ": " + ok.message() + "\n";
  }
  return msg;
}

inline std::string describe(const FuzzCase& fc) {
  std::string s = print_graph(fc.g);
  for (size_t i = 0; i < fc.inputs.size(); ++i)
    s += "input " + std::to_string(i) + ": " + fc.inputs[i].summary() + " strides " +
         shape_str(fc.inputs[i].strides()) + "\n";
  return s;
}

}  // namespace stax::test
