// cpu_cpp's extern "convolution" (plugins/cpu_cpp/conv_kernel.cpp, conv_gemm.h;
// docs/convolution.md), every form it picks, with real values:
//   * non-transposed and stride-1 transposed convolutions are, per output, one fused
//     multiply-add chain over (ci, k) in order from +0 (terms outside the input read 0), then the
//     bias added: checked bit for bit against that definition computed here with std::fma, in
//     float32 and float64, for the "columns" form (many output positions, panels of 64 and a
//     rest), the "patches" form (few output positions: a weight gradient's shape), the 1x1 form,
//     1-D / 2-D / 3-D, strides, padding, dilation, groups, output padding, and the direct form
//     (one output channel per group: depthwise convolutions and their gradients);
//   * strided transposed convolutions (col2im) within the gemm bound of the exact value;
//   * 1, 2 and 3 threads give the same bits; the interpreter's direct loop agrees within the
//     bound;
//   * gradients (the VJP's convolutions, compiled) against central finite differences of the
//     interpreter in float64, and the compiled gradients against the interpreter's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/driver/compiled_function.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

using Ints = std::vector<int64_t>;

struct ConvCase {
  std::string name;
  Shape x, w;  // w: (Cout, Cin/G, k...), transposed (Cin, Cout/G, k...)
  Ints s, p, d;
  bool transposed = false;
  Ints op;  // output padding (transposed)
  int64_t groups = 1;
  bool bias = false;
};

std::ostream& operator<<(std::ostream& os, const ConvCase& c) { return os << c.name; }

std::vector<ConvCase> cases() {
  return {
      // 12 x 11 = 132 output positions: two panels of 64 and a rest of 4
      {"columns_3x3", {3, 8, 12, 11}, {6, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {"columns_strided_dilated_groups", {2, 6, 20, 17}, {9, 2, 3, 2}, {2, 1}, {1, 2}, {2, 3},
       false, {0, 0}, 3, true},
      {"patches_small_output", {4, 5, 7, 7}, {3, 5, 3, 3}, {2, 2}, {0, 0}, {1, 1}},
      // a weight gradient's shape: few output positions, a long reduction over a large kernel
      {"patches_large_kernel_groups", {6, 4, 12, 12}, {8, 2, 10, 10}, {1, 1}, {1, 1}, {1, 1},
       false, {0, 0}, 2},
      {"pointwise_1x1_groups_bias", {3, 6, 9, 10}, {4, 3, 1, 1}, {1, 1}, {0, 0}, {1, 1}, false,
       {0, 0}, 2, true},
      {"strided_1x1", {2, 4, 9, 9}, {5, 4, 1, 1}, {2, 2}, {0, 0}, {1, 1}},
      // the ResNet block's weight gradient as the VJP writes it (x as (C, N, 32, 32), the output
      // gradient as the kernel): 19 MB of patches, gathered and multiplied in two chunks
      {"patches_chunked_weight_gradient", {64, 8, 32, 32}, {64, 8, 32, 32}, {1, 1}, {1, 1},
       {1, 1}},
      {"conv1d_bias", {2, 3, 100}, {4, 3, 5}, {1}, {2}, {1}, false, {0}, 1, true},
      {"conv3d", {2, 3, 5, 6, 7}, {4, 3, 2, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
      // stride 1: a correlation with the weight flipped (output padding from the dilation)
      {"transposed_unit_stride", {2, 6, 9, 8}, {6, 4, 3, 3}, {1, 1}, {1, 1}, {2, 2}, true,
       {1, 1}, 2},
      {"transposed_unit_stride_1d_bias", {3, 4, 70}, {4, 5, 3}, {1}, {0}, {1}, true, {0}, 1, true},
      // with a stride: col2im
      {"transposed_strided_bias", {2, 4, 5, 6}, {4, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, true,
       {1, 1}, 1, true},
      {"transposed_strided_groups_1d", {3, 4, 11}, {4, 2, 4}, {3}, {2}, {1}, true, {0}, 2},
      // one output channel per group: the direct form (conv_direct.h). ConvNeXt's depthwise 7x7
      // (rows in tiles of 8 and a rest of 3, columns in vectors and a rest), its input gradient
      // (a stride-1 transposed depthwise convolution) and its weight gradient as the VJP writes
      // it (x as (1, G*N, ...), the output gradient as a (G, N, 16, 13) kernel: 7x7 outputs)
      {"direct_depthwise_7x7_bias", {2, 6, 19, 37}, {6, 1, 7, 7}, {1, 1}, {3, 3}, {1, 1}, false,
       {0, 0}, 6, true},
      {"direct_depthwise_strided_rows_dilated", {2, 4, 15, 20}, {4, 1, 3, 3}, {2, 1}, {1, 2},
       {2, 3}, false, {0, 0}, 4},
      {"direct_transposed_depthwise", {2, 5, 9, 8}, {5, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, true,
       {0, 0}, 5},
      // four or more output channels per group: the blocked form (conv_direct.h); a rest of
      // channels (6 = 4 + 2), of rows (13 = 6 + 6 + 1) and of columns (21 = 16 + 5)
      {"blocked_3x3_rests_bias", {2, 5, 13, 21}, {6, 5, 3, 3}, {1, 1}, {1, 1}, {1, 1}, false,
       {0, 0}, 1, true},
      {"blocked_strided_rows_dilated_groups", {2, 8, 20, 19}, {8, 4, 3, 3}, {2, 1}, {2, 1},
       {2, 1}, false, {0, 0}, 2},
      {"blocked_1d", {2, 3, 90}, {5, 3, 3}, {1}, {1}, {1}, false, {0}},
      // the UNet block's 3x3 convolution (64 channels, 16 x 16; 2 samples) and an input gradient
      {"blocked_unet_3x3_bias", {2, 64, 16, 16}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, false,
       {0, 0}, 1, true},
      {"blocked_transposed_unit_stride", {2, 16, 32, 32}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1},
       true, {0, 0}},
      // few output positions, output channels a multiple of a vector: the patches form read
      // straight from padded planes (conv_direct.h): groups, strides, dilation, a rest of rows
      // (40 = 6 * 6 + 4), 80 channels (4 vectors + 1), two blocks of terms (88 runs of 10)
      {"patches_direct_groups_strided", {5, 6, 13, 12}, {32, 3, 9, 8}, {2, 1}, {1, 2}, {1, 2},
       false, {0, 0}, 2},
      {"patches_direct_80_channels_two_blocks", {5, 8, 11, 10}, {80, 8, 11, 10}, {1, 1}, {1, 1},
       {1, 1}, false, {0, 0}},
      {"direct_depthwise_weight_gradient", {1, 12, 16, 13}, {4, 3, 16, 13}, {1, 1}, {3, 3},
       {1, 1}, false, {0, 0}, 4},
      {"direct_depthwise_1d_dilated_bias", {3, 4, 50}, {4, 1, 5}, {1}, {2}, {3}, false, {0}, 4,
       true},
      // padding beyond d*(k-1): the correlation it runs has a negative padding (input cropped)
      {"direct_transposed_negative_padding", {2, 3, 9, 10}, {3, 1, 3, 3}, {1, 1}, {3, 2},
       {1, 1}, true, {0, 0}, 3},
      // groups = 1 with one output channel: direct too (no group structure needed)
      {"direct_one_output_channel", {2, 3, 10, 21}, {1, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, false,
       {0, 0}},
  };
}

Graph conv_graph(const ConvCase& c, DType dt) {
  Graph g;
  Node* x = g.placeholder("x", c.x, dt);
  Node* w = g.placeholder("w", c.w, dt);
  int64_t cout = c.transposed ? c.w[1] * c.groups : c.w[0];
  Arg b = c.bias ? Arg(g.placeholder("b", {cout}, dt)) : Arg();
  Ints op = c.op.empty() ? Ints(c.s.size(), 0) : c.op;
  g.output({g.call("convolution", {x, w, b, Arg(c.s), Arg(c.p), Arg(c.d), c.transposed,
                                   Arg(op), c.groups})});
  return g;
}

// Spatial extents and parameters padded to 3 dims.
struct Geom {
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
};

Geom geometry(const ConvCase& c, const Shape& out) {
  Geom g;
  size_t sp = c.x.size() - 2, off = 3 - sp;
  for (size_t i = 0; i < sp; ++i) {
    g.in[off + i] = c.x[2 + i];
    g.k[off + i] = c.w[2 + i];
    g.out[off + i] = out[2 + i];
    g.s[off + i] = c.s[i];
    g.p[off + i] = c.p[i];
    g.d[off + i] = c.d[i];
  }
  return g;
}

// out[b, gr*Cog + co, o] = chain over (ci, k) of fma(w[gr*Cog + co][ci][k], x[...], acc) from
// +0, + bias: the documented semantics (non-transposed; a stride-1 transposed convolution is this
// with w flipped and padding d*(k-1) - p).
template <class T>
std::vector<T> chain(const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>* b,
                     int64_t N, int64_t Cin, int64_t Cout, int64_t G, const Geom& g) {
  const int64_t Cig = Cin / G, Cog = Cout / G, K = g.k[0] * g.k[1] * g.k[2];
  const int64_t I = g.in[0] * g.in[1] * g.in[2], O = g.out[0] * g.out[1] * g.out[2];
  std::vector<T> out(static_cast<size_t>(N * Cout * O));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t co = 0; co < Cout; ++co)
      for (int64_t o = 0; o < O; ++o) {
        const int64_t o2 = o % g.out[2], o1 = o / g.out[2] % g.out[1], o0 = o / g.out[2] / g.out[1];
        const int64_t gr = co / Cog;
        T acc = T(0);
        for (int64_t ci = 0; ci < Cig; ++ci)
          for (int64_t k = 0; k < K; ++k) {
            const int64_t k2 = k % g.k[2], k1 = k / g.k[2] % g.k[1], k0 = k / g.k[2] / g.k[1];
            const int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
            const int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
            const int64_t i2 = o2 * g.s[2] - g.p[2] + k2 * g.d[2];
            const bool in = i0 >= 0 && i0 < g.in[0] && i1 >= 0 && i1 < g.in[1] && i2 >= 0 &&
                            i2 < g.in[2];
            const T xv = in ? x[static_cast<size_t>((n * Cin + gr * Cig + ci) * I +
                                                    (i0 * g.in[1] + i1) * g.in[2] + i2)]
                            : T(0);
            acc = std::fma(w[static_cast<size_t>((co * Cig + ci) * K + k)], xv, acc);
          }
        out[static_cast<size_t>((n * Cout + co) * O + o)] =
            b ? acc + (*b)[static_cast<size_t>(co)] : acc;
      }
  return out;
}

template <class T>
std::vector<T> values(const Tensor& t) {
  std::vector<T> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<T>(t.get_double(i));
  return v;
}

// The definition for `c` (non-transposed, or transposed with stride 1).
template <class T>
std::vector<T> definition(const ConvCase& c, const std::vector<Tensor>& in, const Shape& out) {
  std::vector<T> x = values<T>(in[0]), w = values<T>(in[1]), b;
  if (c.bias) b = values<T>(in[2]);
  const int64_t N = c.x[0], Cin = c.x[1], Cout = out[1], G = c.groups;
  Geom g = geometry(c, out);
  if (!c.transposed) return chain(x, w, c.bias ? &b : nullptr, N, Cin, Cout, G, g);
  const int64_t Cig = Cin / G, Cog = Cout / G, K = g.k[0] * g.k[1] * g.k[2];
  std::vector<T> flipped(static_cast<size_t>(Cout * Cig * K));
  for (int64_t gr = 0; gr < G; ++gr)
    for (int64_t co = 0; co < Cog; ++co)
      for (int64_t ci = 0; ci < Cig; ++ci)
        for (int64_t k = 0; k < K; ++k)
          flipped[static_cast<size_t>(((gr * Cog + co) * Cig + ci) * K + k)] =
              w[static_cast<size_t>(((gr * Cig + ci) * Cog + co) * K + K - 1 - k)];
  for (int i = 0; i < 3; ++i) g.p[i] = g.d[i] * (g.k[i] - 1) - g.p[i];
  return chain(x, flipped, c.bias ? &b : nullptr, N, Cin, Cout, G, g);
}

// Calls term(out_index, x_index, w_index) for every product a convolution sums (either kind).
template <class F>
void for_each_term(const ConvCase& c, const Shape& out, F&& term) {
  const int64_t N = c.x[0], Cin = c.x[1], Cout = out[1], G = c.groups;
  const int64_t Cig = Cin / G, Cog = Cout / G;
  Geom g = geometry(c, out);
  const int64_t K = g.k[0] * g.k[1] * g.k[2], I = g.in[0] * g.in[1] * g.in[2];
  const int64_t O = g.out[0] * g.out[1] * g.out[2];
  // small side a (output for a convolution, input for a transposed one), large side b
  const int64_t* a_ext = c.transposed ? g.in : g.out;
  const int64_t* b_ext = c.transposed ? g.out : g.in;
  const int64_t A = c.transposed ? I : O;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < Cin; ++ci)
      for (int64_t co = 0; co < Cog; ++co)
        for (int64_t k = 0; k < K; ++k)
          for (int64_t a = 0; a < A; ++a) {
            const int64_t gr = ci / Cig, cout = gr * Cog + co;
            const int64_t kk[3] = {k / g.k[2] / g.k[1], k / g.k[2] % g.k[1], k % g.k[2]};
            const int64_t aa[3] = {a / a_ext[2] / a_ext[1], a / a_ext[2] % a_ext[1], a % a_ext[2]};
            int64_t bb[3];
            bool in = true;
            for (int j = 0; j < 3; ++j) {
              bb[j] = aa[j] * g.s[j] - g.p[j] + kk[j] * g.d[j];
              in = in && bb[j] >= 0 && bb[j] < b_ext[j];
            }
            if (!in) continue;
            const int64_t b = (bb[0] * b_ext[1] + bb[1]) * b_ext[2] + bb[2];
            const int64_t o = c.transposed ? b : a, i = c.transposed ? a : b;
            const int64_t wi = c.transposed ? (ci * Cog + co) * K + k : (cout * Cig + ci % Cig) * K + k;
            term((n * Cout + cout) * O + o, (n * Cin + ci) * I + i, wi);
          }
}

// |got - exact| <= 2 k u sum|terms| + 2 u |exact| per output (k: the terms of one output's
// chain), the exact value and sum|terms| accumulated in long double.
void expect_within_gemm_bound(const ConvCase& c, const std::vector<Tensor>& in, const Tensor& got,
                              double u) {
  const Shape& out = got.sizes();
  std::vector<long double> exact(static_cast<size_t>(got.numel()), 0), mag(exact.size(), 0);
  for_each_term(c, out, [&](int64_t o, int64_t i, int64_t w) {
    const long double t = static_cast<long double>(in[0].get_double(i)) * in[1].get_double(w);
    exact[static_cast<size_t>(o)] += t;
    mag[static_cast<size_t>(o)] += std::fabs(t);
  });
  const int64_t O = got.numel() / (out[0] * out[1]);
  const int64_t k = c.transposed ? c.x[1] / c.groups : c.w[1];  // channels per chain
  int64_t taps = 1;
  for (size_t j = 2; j < c.w.size(); ++j) taps *= c.w[j];
  for (size_t e = 0; e < exact.size(); ++e) {
    const int64_t co = static_cast<int64_t>(e) / O % out[1];
    const long double want = exact[e] + (c.bias ? in[2].get_double(co) : 0.0);
    const double bound = 2.0 * static_cast<double>(k * taps) * u * static_cast<double>(mag[e]) +
                         2 * u * std::fabs(static_cast<double>(want)) + 1e-300;
    ASSERT_LE(std::fabs(static_cast<double>(got.get_double(static_cast<int64_t>(e)) - want)), bound)
        << c.name << " element " << e;
  }
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t e = 0; e < a.numel(); ++e) m = std::max(m, std::fabs(a.get_double(e) - b.get_double(e)));
  return m;
}

double max_abs(const Tensor& a) {
  double m = 0;
  for (int64_t e = 0; e < a.numel(); ++e) m = std::max(m, std::fabs(a.get_double(e)));
  return m;
}

Compiler& compiler_with(int threads) {
  static Compiler one(test::cpu_config(test::cpu_options(test::Order::Segmented, 1)));
  static Compiler two(test::cpu_config(test::cpu_options(test::Order::Segmented, 2)));
  static Compiler three(test::cpu_config(test::cpu_options(test::Order::Segmented, 3)));
  return threads == 1 ? one : threads == 2 ? two : three;
}

class ConvExtern : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvExtern, TheDefinitionOnOneTwoAndThreeThreads) {
  const ConvCase& c = GetParam();
  // A large case (~300M terms) is checked against the definition in float32 only (the slow
  // long-double bound and the interpreter's loop take minutes there).
  int64_t terms = 1;
  for (int64_t v : c.x) terms *= v;
  for (size_t j = 0; j < c.w.size(); ++j) terms *= j == 1 ? 1 : c.w[j];
  const bool large = terms > (int64_t{50} << 20);
  for (DType dt : {DType::Float32, DType::Float64}) {
    if (large && dt == DType::Float64) continue;
    SCOPED_TRACE(dtype_name(dt));
    Graph g = conv_graph(c, dt);
    std::vector<Tensor> in = test::random_inputs(g, 11);
    Tensor first;
    for (int threads : {1, 2, 3}) {
      CompiledGraph cg = compiler_with(threads).compile(g);
      EXPECT_EQ(cg.num_externs(), 1u) << cg.summary();
      EXPECT_EQ(cg.num_fallbacks(), 0u) << cg.summary();
      Tensor got = cg.run(in)[0];
      if (threads == 1) {
        first = got;
        const double u = dt == DType::Float32 ? 0x1p-24 : 0x1p-53;
        const bool defined = !c.transposed || std::all_of(c.s.begin(), c.s.end(),
                                                          [](int64_t v) { return v == 1; });
        if (defined && dt == DType::Float32) {
          std::vector<float> want = definition<float>(c, in, got.sizes());
          for (int64_t e = 0; e < got.numel(); ++e)
            ASSERT_EQ(static_cast<float>(got.get_double(e)), want[static_cast<size_t>(e)])
                << "element " << e;
        } else if (defined) {
          std::vector<double> want = definition<double>(c, in, got.sizes());
          for (int64_t e = 0; e < got.numel(); ++e)
            ASSERT_EQ(got.get_double(e), want[static_cast<size_t>(e)]) << "element " << e;
        }
        if (large) continue;
        expect_within_gemm_bound(c, in, got, u);
        // The interpreter's direct loop (double accumulation, one rounding) is near exact.
        expect_within_gemm_bound(c, in, interpret(g, in)[0], u);
      } else {
        EXPECT_TRUE(test::bitwise_equal(got, first)) << threads << " threads";
      }
    }
    // Every form computes the same chains: with the blocked form off (the GEMM forms run what it
    // would have taken) the bits are the same.
    ::setenv("STAX_CPU_CONV_BLOCKED", "0", 1);
    Tensor gemm_forms = compiler_with(2).compile(g).run(in)[0];
    ::unsetenv("STAX_CPU_CONV_BLOCKED");
    EXPECT_TRUE(test::bitwise_equal(gemm_forms, first)) << "blocked form off";
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, ConvExtern, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// `t` permuted by `perm` (out dim i is t's dim perm[i]), as a contiguous tensor.
Tensor permuted_copy(const Tensor& t, const Ints& perm) {
  const Shape& s = t.sizes();
  Shape ps(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) ps[i] = s[static_cast<size_t>(perm[i])];
  Tensor out = Tensor::zeros(ps, t.dtype());
  std::vector<int64_t> src_stride(s.size(), 1);
  for (size_t d = s.size() - 1; d-- > 0;) src_stride[d] = src_stride[d + 1] * s[d + 1];
  for (int64_t e = 0; e < out.numel(); ++e) {
    int64_t rest = e, src = 0;
    for (size_t i = perm.size(); i-- > 0;) {
      src += rest % ps[i] * src_stride[static_cast<size_t>(perm[i])];
      rest /= ps[i];
    }
    out.set_double(e, t.get_double(src));
  }
  return out;
}

// The extern reads strided operands as they come from the graph: a weight gradient's two
// permuted views plane by plane where they lie (the direct patches form), others (a
// channels-last input has no contiguous run at all) copied on the pool into contiguous values.
// Either way they give the bits of the same convolution of contiguous placeholders holding the
// permuted values, on 1, 2 and 3 threads, in float32, float64 and float16 (widened on a copy).
TEST(ConvExternStrided, PermutedOperandsGiveTheContiguousBits) {
  struct Perm {
    std::string name;
    Shape x, w;   // the placeholders, before the permutation
    Ints px, pw;  // the permutations that make them (N, C, H, W) and (Cout, Cin, kh, kw)
    bool large = false;  // float32 only, no interpreter check
  };
  const std::vector<Perm> perms = {
      // a ResNet weight gradient's operands: (N, C, H, W) seen as (C, N, H, W), padding 1;
      // runs of 576 elements, copied in 3 and 2 tasks
      {"weight_gradient", {8, 32, 24, 24}, {8, 16, 24, 24}, {1, 0, 2, 3}, {1, 0, 2, 3}},
      // planes of 13 x 11 taps: W_gᵀ's 16 x 16 blocks cross the planes of the strided kernel
      {"weight_gradient_odd_planes", {4, 8, 13, 11}, {4, 16, 13, 11}, {1, 0, 2, 3},
       {1, 0, 2, 3}},
      // channels-last input and weight: runs of one element, the input in 3 tasks
      {"channels_last", {2, 40, 40, 48}, {32, 3, 3, 48}, {0, 3, 1, 2}, {0, 3, 1, 2}},
      // a copy over the 16 MB kept between calls (freed after the call instead)
      {"channels_last_large", {1, 260, 260, 64}, {4, 3, 3, 64}, {0, 3, 1, 2}, {0, 3, 1, 2},
       true},
  };
  for (const Perm& pc : perms) {
    SCOPED_TRACE(pc.name);
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16}) {
      if (pc.large && dt != DType::Float32) continue;
      SCOPED_TRACE(dtype_name(dt));
      Graph strided;
      Node* x = strided.placeholder("x", pc.x, dt);
      Node* w = strided.placeholder("w", pc.w, dt);
      Node* xp = strided.call("permute", {x, Arg(pc.px)});
      Node* wp = strided.call("permute", {w, Arg(pc.pw)});
      strided.output({strided.call("convolution", {xp, wp, Arg(), Arg(Ints{1, 1}), Arg(Ints{1, 1}),
                                                   Arg(Ints{1, 1}), false, Arg(Ints{0, 0}),
                                                   int64_t{1}})});
      std::vector<Tensor> in = test::random_inputs(strided, 21);
      std::vector<Tensor> cin = {permuted_copy(in[0], pc.px), permuted_copy(in[1], pc.pw)};
      Graph contiguous;
      Node* xc = contiguous.placeholder("x", cin[0].sizes(), dt);
      Node* wc = contiguous.placeholder("w", cin[1].sizes(), dt);
      contiguous.output({contiguous.call(
          "convolution", {xc, wc, Arg(), Arg(Ints{1, 1}), Arg(Ints{1, 1}), Arg(Ints{1, 1}), false,
                          Arg(Ints{0, 0}), int64_t{1}})});
      const Tensor want = compiler_with(1).compile(contiguous).run(cin)[0];
      for (int threads : {1, 2, 3}) {
        CompiledGraph cg = compiler_with(threads).compile(strided);
        EXPECT_EQ(cg.num_externs(), 1u) << cg.summary();
        EXPECT_EQ(cg.num_fallbacks(), 0u) << cg.summary();
        const Tensor got = cg.run(in)[0];
        EXPECT_TRUE(test::bitwise_equal(got, want)) << threads << " threads";
      }
      if (pc.large) continue;
      // and the values are the convolution's (the interpreter's, within the gemm bound's order)
      const Tensor ref = interpret(contiguous, cin)[0];
      const double tol = dt == DType::Float64 ? 1e-12 : dt == DType::Float32 ? 1e-5 : 2e-3;
      EXPECT_LE(max_abs_diff(want, ref), tol * max_abs(ref));
    }
  }
}

// <y(x, w, b), gy> differentiated by the compiled VJP (convolutions again: a transposed one for
// the input, a patches-form one for the weight) against central differences of the interpreter,
// in float64.
class ConvGradient : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvGradient, FiniteDifferencesAndTheInterpreter) {
  const ConvCase& c = GetParam();
  Graph g = conv_graph(c, DType::Float64);
  std::vector<std::string> wrt{"x", "w"};
  if (c.bias) wrt.push_back("b");
  CompiledFunction f(g, wrt, compiler_with(2));
  std::vector<Tensor> in = test::random_inputs(g, 5);
  ForwardResult r = f.forward(in);
  Tensor gy = Tensor::randn(r.outputs[0].sizes(), DType::Float64, 9);
  std::vector<Tensor> grads = f.backward(*r.ctx, {gy});
  std::vector<Tensor> ref = f.reference(in, {gy});
  ASSERT_EQ(grads.size(), wrt.size());
  auto loss = [&](const std::vector<Tensor>& v) {
    Tensor y = interpret(g, v)[0];
    long double s = 0;
    for (int64_t e = 0; e < y.numel(); ++e) s += static_cast<long double>(y.get_double(e)) * gy.get_double(e);
    return static_cast<double>(s);
  };
  for (size_t a = 0; a < wrt.size(); ++a) {
    SCOPED_TRACE(wrt[a]);
    EXPECT_LE(max_abs_diff(grads[a], ref[1 + a]), 1e-10 * (1 + max_abs(ref[1 + a])));
    const int64_t n = in[a].numel();
    for (int64_t e : {int64_t{0}, n / 3, n / 2, n - 1}) {
      std::vector<Tensor> plus = in, minus = in;
      plus[a] = in[a].clone();
      minus[a] = in[a].clone();
      const double h = 1e-5;
      plus[a].set_double(e, in[a].get_double(e) + h);
      minus[a].set_double(e, in[a].get_double(e) - h);
      const double fd = (loss(plus) - loss(minus)) / (2 * h);
      EXPECT_NEAR(grads[a].get_double(e), fd, 1e-6 * (1 + std::fabs(fd))) << "element " << e;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, ConvGradient,
                         ::testing::Values(cases()[0], cases()[1], cases()[7], cases()[9],
                                           cases()[11], cases()[12], cases()[13], cases()[14],
                                           cases()[15], cases()[16], cases()[17],
                                           cases()[21]),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace stax
