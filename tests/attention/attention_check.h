// Helpers of the fused-attention tests (tests/attention, tests/plugins/cuda): the cases, the sdpa
// graph, their inputs, a compiler with and without fuse_attention, and the error bound of two attentions whose sums run in
// different orders (docs/attention.md "Order and error bound").
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/driver/compiled_function.h"
#include "core/driver/compiler.h"
#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "tests/support/compiled_check.h"
#include "tests/support/strings.h"

namespace stax::attention_test {

enum class MaskKind { None, Bool, Additive };

struct Case {
  std::string name;
  int64_t b, h, l, s, e, ev;
  bool causal;
  MaskKind mask = MaskKind::None;
  double scale = 0;  // 0: 1/sqrt(e)
};

inline std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

// The graph sdpa(q, k, v, mask?, dropout_p, causal, scale) with the given dtype.
inline std::unique_ptr<Graph> sdpa_graph(const Case& c, DType t, double dropout_p = 0.0) {
  auto g = std::make_unique<Graph>();
  Node* q = g->placeholder("q", {c.b, c.h, c.l, c.e}, t);
  Node* k = g->placeholder("k", {c.b, c.h, c.s, c.e}, t);
  Node* v = g->placeholder("v", {c.b, c.h, c.s, c.ev}, t);
  Arg mask;
  if (c.mask == MaskKind::Bool) mask = g->placeholder("m", {c.l, c.s}, DType::Bool);
  if (c.mask == MaskKind::Additive) mask = g->placeholder("m", {c.h, c.l, c.s}, t);
  Kwargs kw;
  if (c.scale != 0) kw.push_back({"scale", Arg(c.scale)});
  Node* out = g->call("scaled_dot_product_attention", {q, k, v, mask, dropout_p, c.causal}, kw);
  g->output({out});
  return g;
}

inline std::vector<Tensor> inputs_for(const Case& c, DType t, uint64_t seed) {
  std::vector<Tensor> in{Tensor::randn({c.b, c.h, c.l, c.e}, t, seed),
                         Tensor::randn({c.b, c.h, c.s, c.e}, t, seed + 1),
                         Tensor::randn({c.b, c.h, c.s, c.ev}, t, seed + 2)};
  if (c.mask == MaskKind::Bool) {
    Tensor m = Tensor::empty({c.l, c.s}, DType::Bool);
    // Every row keeps its first key (no fully masked row); others drop about a third.
    for (int64_t i = 0; i < c.l; ++i)
      for (int64_t j = 0; j < c.s; ++j) m.set_int(i * c.s + j, j == 0 || (i * 7 + j * 3) % 3 != 0);
    in.push_back(m);
  }
  if (c.mask == MaskKind::Additive) in.push_back(Tensor::randn({c.h, c.l, c.s}, t, seed + 3));
  return in;
}

inline Compiler& compiler(bool fuse_attention) {
  static Compiler fused(test::cpu_config());
  static Compiler plain(test::cpu_config(), [] {
    CompileOptions o;
    o.fuse_attention = false;
    return o;
  }());
  return fuse_attention ? fused : plain;
}

inline double unit_roundoff_of(DType t) { return t == DType::Float64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24); }

// The bound of two computations of attention whose sums run in different orders (computed in
// double from the inputs). For row i: the scores s_ij = scale·(q_i·k_j) (+ mask) carry an error
// of at most δ_i = u·((E + 2)·A_i + 2·max_j |m_ij|), A_i = scale·max_j Σ_e |q_ie k_je| (§6.5's
// (n-1)·u·Σ|a| for the dot, one rounding for the scale and one for the mask); a change δ of
// the scores moves p_ij by at most 2·p_ij·δ, and the softmax's normalisation (S terms), the exps
// (a few u each) and P·V (S terms) add (S + 8)·u relative to W_id = Σ_j p_ij |v_jd|. Both
// computations err by that much at most, so they differ by twice: 2·W_id·(2·δ_i + (S + 8)·u).
inline std::vector<double> attention_bound(const Case& c, const std::vector<Tensor>& in, DType t) {
  const double u = unit_roundoff_of(t);
  const double scale = c.scale != 0 ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.e));
  std::vector<double> bound(static_cast<size_t>(c.b * c.h * c.l * c.ev));
  std::vector<double> s(static_cast<size_t>(c.s)), p(static_cast<size_t>(c.s));
  const double ninf = -std::numeric_limits<double>::infinity();
  for (int64_t n = 0; n < c.b * c.h; ++n)
    for (int64_t i = 0; i < c.l; ++i) {
      double a = 0, mmax = 0, smax = ninf;
      for (int64_t j = 0; j < c.s; ++j) {
        double dot = 0, abs_dot = 0;
        for (int64_t x = 0; x < c.e; ++x) {
          double qv = in[0].get_double((n * c.l + i) * c.e + x), kv = in[1].get_double((n * c.s + j) * c.e + x);
          dot += qv * kv;
          abs_dot += std::fabs(qv * kv);
        }
        a = std::max(a, scale * abs_dot);
        double sj = scale * dot;
        if (c.causal && j > i) sj = ninf;
        if (c.mask == MaskKind::Bool && !in[3].get_double(i * c.s + j)) sj = ninf;
        if (c.mask == MaskKind::Additive) {
          double m = in[3].get_double(((n % c.h) * c.l + i) * c.s + j);
          sj += m;
          mmax = std::max(mmax, std::fabs(m));
        }
        s[static_cast<size_t>(j)] = sj;
        smax = std::max(smax, sj);
      }
      double l = 0;
      for (int64_t j = 0; j < c.s; ++j) l += p[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - smax);
      const double delta = u * ((static_cast<double>(c.e) + 2) * a + 2 * mmax);
      for (int64_t d = 0; d < c.ev; ++d) {
        double w = 0;
        for (int64_t j = 0; j < c.s; ++j)
          w += p[static_cast<size_t>(j)] / l * std::fabs(in[2].get_double((n * c.s + j) * c.ev + d));
        bound[static_cast<size_t>((n * c.l + i) * c.ev + d)] =
            2 * w * (2 * delta + (static_cast<double>(c.s) + 8) * u);
      }
    }
  return bound;
}

// The bound with dropout of the probabilities: attention_bound's with the kept probabilities
// scaled by 1 / (1 - p) (W_id = Σ_j keep_ij p_ij / (1 - p) |v_jd| <= Σ_j p_ij |v_jd| / (1 - p))
// and one rounding more.
inline std::vector<double> dropout_bound(const Case& c, const std::vector<Tensor>& in, DType t,
                                         double rate) {
  std::vector<double> b = attention_bound(c, in, t);
  for (double& x : b) x = x / (1.0 - rate) * (1.0 + 4 * unit_roundoff_of(t));
  return b;
}

inline ::testing::AssertionResult within(const Tensor& got, const Tensor& want, const std::vector<double>& bound) {
  if (got.sizes() != want.sizes()) return ::testing::AssertionFailure() << "shapes differ";
  int64_t worst = -1;
  double worst_ratio = 0;
  for (int64_t x = 0; x < want.numel(); ++x) {
    double d = std::fabs(got.get_double(x) - want.get_double(x));
    if (!(d <= bound[static_cast<size_t>(x)])) {
      double r = d / bound[static_cast<size_t>(x)];
      if (worst < 0 || !(r <= worst_ratio)) worst = x, worst_ratio = r;
    }
  }
  if (worst < 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "element " << worst << ": got " << got.get_double(worst)
                                       << ", want " << want.get_double(worst) << ", bound "
                                       << bound[static_cast<size_t>(worst)];
}

// |got - want| <= rel · max|want| elementwise (gradients: a plain relative check).
inline ::testing::AssertionResult close(const Tensor& got, const Tensor& want, double rel) {
  if (got.sizes() != want.sizes()) return ::testing::AssertionFailure() << "shapes differ";
  double scale = 0;
  for (int64_t x = 0; x < want.numel(); ++x) scale = std::max(scale, std::fabs(want.get_double(x)));
  for (int64_t x = 0; x < want.numel(); ++x)
    if (!(std::fabs(got.get_double(x) - want.get_double(x)) <= rel * (scale + 1e-30)))
      return ::testing::AssertionFailure() << "element " << x << ": got " << got.get_double(x)
                                           << ", want " << want.get_double(x) << " (max |want| "
                                           << scale << ")";
  return ::testing::AssertionSuccess();
}

// The backward tests' reference: sdpa's decomposed gradients on the interpreter in float64, for
// q, k, v (and an additive mask), with a random upstream gradient.
struct GradientReference {
  std::vector<std::string> wrt;
  std::vector<Tensor> in64;
  Tensor up64;
  std::vector<Tensor> want;

  // The inputs in dtype t (a bool mask stays bool).
  std::vector<Tensor> inputs(DType t) const {
    std::vector<Tensor> in;
    for (const Tensor& x : in64) in.push_back(x.dtype() == DType::Bool ? x : x.to(t));
    return in;
  }
};

// `g64`: the float64 graph of case c (sdpa_graph, or a decomposed form written out).
inline GradientReference decomposed_gradients(const Case& c, const Graph& g64) {
  GradientReference r;
  r.wrt = {"q", "k", "v"};
  if (c.mask == MaskKind::Additive) r.wrt.push_back("m");
  r.in64 = inputs_for(c, DType::Float64, 11);
  r.up64 = Tensor::randn({c.b, c.h, c.l, c.ev}, DType::Float64, 99);
  CompiledFunctionOptions interp;
  interp.interpret = true;
  CompiledFunction ref(g64, r.wrt, test::cpu_config(), interp);  // no compiler: no fusion
  ForwardResult fr = ref.forward(r.in64);
  r.want = ref.backward(*fr.ctx, {r.up64});
  return r;
}

inline GradientReference decomposed_gradients(const Case& c) {
  return decomposed_gradients(c, *sdpa_graph(c, DType::Float64));
}

// Gradients of dtype t against the reference: float64 to 1e-10 of the largest, float32 to 5e-5.
inline void expect_gradients_close(const std::vector<Tensor>& got, const GradientReference& ref,
                                   DType t) {
  const double rel = t == DType::Float64 ? 1e-10 : 5e-5;
  ASSERT_EQ(got.size(), ref.want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(ref.wrt[i]);
    EXPECT_TRUE(close(got[i].to(DType::Float64), ref.want[i], rel));
  }
}

// Finite differences (float64, central, step 1e-6; agreement within 1e-6 · (1 + |fd|)).
// Gradients: grads[a] of the scalar `loss` at `in` against the central difference along element
// x of in[a], for each a < grads.size(); `elements`: the elements checked (every one when empty).
inline void expect_gradients_match_fd(const std::function<double(const std::vector<Tensor>&)>& loss,
                                      const std::vector<Tensor>& in, const std::vector<Tensor>& grads,
                                      const std::vector<std::string>& wrt,
                                      const std::function<std::vector<int64_t>(const Tensor&)>& elements = {}) {
  const double h = 1e-6;
  for (size_t a = 0; a < grads.size(); ++a) {
    SCOPED_TRACE(wrt.at(a));
    std::vector<int64_t> xs;
    if (elements) {
      xs = elements(in[a]);
    } else {
      for (int64_t x = 0; x < in[a].numel(); ++x) xs.push_back(x);
    }
    for (int64_t x : xs) {
      std::vector<Tensor> plus = in, minus = in;
      plus[a] = in[a].clone();
      minus[a] = in[a].clone();
      plus[a].set_double(x, in[a].get_double(x) + h);
      minus[a].set_double(x, in[a].get_double(x) - h);
      const double fd = (loss(plus) - loss(minus)) / (2 * h);
      EXPECT_NEAR(grads[a].get_double(x), fd, 1e-6 * (1 + std::fabs(fd))) << "element " << x;
    }
  }
}

// Four elements of t spread over it (first, an early one, the middle, last): the gradient checks
// whose loss is a whole compiled run.
inline std::vector<int64_t> sample_elements(const Tensor& t) {
  return {0, 37, t.numel() / 2 + 3, t.numel() - 1};
}

// Tangents: `tangent` (of output 0 of `f`) against (f(in + h·dir) − f(in − h·dir)) / 2h. Returns
// how many tangent elements are exactly 0.
inline int64_t expect_tangent_matches_fd(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                         const std::vector<Tensor>& in, const std::vector<Tensor>& dir,
                                         const Tensor& tangent) {
  const double h = 1e-6;
  std::vector<Tensor> plus, minus;
  for (size_t i = 0; i < in.size(); ++i) {
    plus.push_back(in[i].clone());
    minus.push_back(in[i].clone());
    for (int64_t x = 0; x < in[i].numel(); ++x) {
      plus[i].set_double(x, in[i].get_double(x) + h * dir[i].get_double(x));
      minus[i].set_double(x, in[i].get_double(x) - h * dir[i].get_double(x));
    }
  }
  Tensor hi = f(plus), lo = f(minus);
  int64_t zeros = 0;
  for (int64_t x = 0; x < tangent.numel(); ++x) {
    const double fd = (hi.get_double(x) - lo.get_double(x)) / (2 * h);
    EXPECT_NEAR(tangent.get_double(x), fd, 1e-6 * (1 + std::fabs(fd))) << "element " << x;
    zeros += tangent.get_double(x) == 0.0;
  }
  return zeros;
}

// The gradients of q, k, v through sdpa graph g (case c, dtype t, dropout_p > 0) compiled by
// `gpu` (its backward runs flash_attention_dropout_backward, redrawing the mask) against cpu_cpp's
// fused ones from the same forward seed: float64 to 1e-10, float32 to 5e-5 of the largest (the
// GPU plugins' dropout tests).
inline void expect_dropout_gradients_match_cpu_cpp(const Graph& g, const Case& c, DType t,
                                                   const std::vector<Tensor>& in, Compiler& gpu) {
  const std::vector<std::string> wrt{"q", "k", "v"};
  Tensor up = Tensor::randn({c.b, c.h, c.l, c.ev}, t, 11);
  CompiledFunction fg(g, wrt, gpu);
  CompiledFunction fc(g, wrt, compiler(true));
  ForwardResult rg = fg.forward(in, 9), rc = fc.forward(in, 9);
  std::vector<Tensor> gg = fg.backward(*rg.ctx, {up}), gc = fc.backward(*rc.ctx, {up});
  ASSERT_TRUE(fg.compiled_forward() && fg.compiled_backward());
  EXPECT_TRUE(test::contains(fg.compiled_forward()->schedule().str(), "extern flash_attention_dropout ->"));
  EXPECT_TRUE(test::contains(fg.compiled_backward()->schedule().str(),
                       "extern flash_attention_dropout_backward ->"))
      << fg.compiled_backward()->schedule().str();
  EXPECT_FALSE(test::contains(fg.compiled_backward()->summary(), "flash_attention_dropout_backward (extern"))
      << fg.compiled_backward()->summary();
  ASSERT_EQ(gg.size(), 3u);
  ASSERT_EQ(gc.size(), 3u);
  const double rel = t == DType::Float64 ? 1e-10 : 5e-5;
  for (size_t a = 0; a < 3; ++a) {
    SCOPED_TRACE(wrt[a]);
    EXPECT_TRUE(close(gg[a], gc[a], rel));
  }
}

// The dropout mask itself, on `gpu`: q = k = 0 makes row i's probabilities equal (1 / S, causal
// 1 / (i + 1)), v = the identity makes the output those probabilities after dropout, so an output
// element is non-zero exactly where the mask keeps it. The kernel keeps exactly the elements the
// interpreter's decomposition keeps (rand_like's u > p under the sdpa node's seed), each kept
// value is the interpreter's within a few roundings, and the kept share is within 5 standard
// deviations of 1 - p; causal and not, odd T (67), p = 0.1 and 0.5, float32 and float64, head
// dim e, each of `seeds`.
inline void expect_dropout_mask_is_the_interpreters(Compiler& gpu, int64_t e,
                                                    const std::vector<uint64_t>& seeds) {
  const int64_t b = 1, h = 2, l = 67, s = 67;
  for (bool causal : {false, true})
    for (double rate : {0.1, 0.5})
      for (DType t : {DType::Float64, DType::Float32}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + (causal ? " causal" : "") + " p=" + std::to_string(rate));
        const Case c{"mask", b, h, l, s, e, s, causal, MaskKind::None, 0};
        auto g = sdpa_graph(c, t, rate);
        std::vector<Tensor> in{Tensor::zeros({b, h, l, e}, t), Tensor::zeros({b, h, s, e}, t),
                               Tensor::zeros({b, h, s, s}, t)};
        for (int64_t n = 0; n < b * h; ++n)
          for (int64_t j = 0; j < s; ++j) in[2].set_double((n * s + j) * s + j, 1.0);
        CompiledGraph cg = gpu.compile(*g);
        ASSERT_TRUE(test::contains(cg.schedule().str(), "extern flash_attention_dropout ->"));
        for (uint64_t seed : seeds) {
          SCOPED_TRACE(seed);
          InterpreterOptions io;
          io.seed = seed;
          GraphRunOptions ro;
          ro.seed = seed;
          Tensor want = interpret(*g, in, io).at(0);
          Tensor got = cg.run(in, ro).at(0);
          int64_t kept = 0, seen = 0;
          for (int64_t x = 0; x < want.numel(); ++x) {
            const bool keep = want.get_double(x) != 0.0;
            ASSERT_EQ(got.get_double(x) != 0.0, keep) << "element " << x;
            if (keep) {
              ASSERT_NEAR(got.get_double(x), want.get_double(x), 8 * unit_roundoff_of(t) * want.get_double(x));
            }
            const int64_t i = x / s % l, j = x % s;
            if (!causal || j <= i) {
              ++seen;
              kept += keep;
            }
          }
          const double sd = std::sqrt(static_cast<double>(seen) * rate * (1 - rate));
          EXPECT_NEAR(static_cast<double>(kept), static_cast<double>(seen) * (1 - rate), 5 * sd);
        }
      }
}

}  // namespace stax::attention_test
