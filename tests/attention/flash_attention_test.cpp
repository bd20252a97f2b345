// Fused attention (issue 27 item 3, docs/attention.md): scaled_dot_product_attention compiled on
// cpu_cpp runs as one flash_attention extern (forward) and one flash_attention_backward extern
// (backward), and its values agree with the reference interpreter's decomposed attention
// (matmul, softmax, matmul) within the bound of the reordered sums; gradients agree with the
// decomposed gradients and with finite differences. Each test also checks that the fused path
// ran (the schedule names the extern, no fallback), so a silent fallback to the decomposition
// fails it; with fuse_attention off the same checks see the decomposed form.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/driver/compiled_function.h"
#include "core/functional/functional.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/nn/attention_fusion.h"
#include "stax/sdk/flash_attention.hpp"
#include "tests/attention/attention_check.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

using test::contains;
using namespace attention_test;

// ---- forward ------------------------------------------------------------------------------------

class FlashForward : public ::testing::TestWithParam<Case> {};

TEST_P(FlashForward, MatchesTheDecomposedInterpreterWithinTheBound) {
  const Case& c = GetParam();
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = sdpa_graph(c, t);
    std::vector<Tensor> in = inputs_for(c, t, 7);
    CompiledGraph cg = compiler(true).compile(*g);
    // The fused path ran: one extern step named flash_attention, nothing on the interpreter.
    EXPECT_TRUE(contains(cg.schedule().str(), "extern flash_attention ->")) << cg.schedule().str();
    EXPECT_EQ(cg.num_fallbacks(), 0u) << cg.summary();
    EXPECT_FALSE(contains(cg.schedule().str(), "extern matmul")) << cg.schedule().str();
    EXPECT_TRUE(contains(cg.schedule().str(), "attention:\n  %scaled_dot_product_attention: fused"))
        << cg.schedule().str();
    Tensor got = cg.run(in).at(0);
    Tensor want = interpret(*g, in).at(0);  // the decomposition: matmul, softmax, matmul
    EXPECT_TRUE(within(got, want, attention_bound(c, in, t)));
  }
}

const Case kCases[] = {
    {"causal_odd_t", 2, 3, 67, 67, 32, 32, true},
    {"plain_odd_t", 1, 4, 67, 67, 32, 32, false},
    {"t1", 2, 2, 1, 1, 32, 32, true},
    {"t1_plain", 1, 3, 1, 5, 64, 64, false},
    {"head64_causal", 1, 2, 130, 130, 64, 64, true},
    {"head80", 2, 2, 70, 70, 80, 80, false},
    {"head80_causal", 1, 2, 129, 129, 80, 80, true},
    {"cross_l_ne_s", 2, 2, 33, 90, 32, 48, false},
    {"causal_l_lt_s", 1, 2, 40, 100, 32, 32, true},
    {"bool_mask", 2, 2, 50, 70, 32, 32, false, MaskKind::Bool},
    {"additive_mask", 1, 3, 65, 65, 32, 32, false, MaskKind::Additive, 0.3},
    // head dim 16, and 33 / 20 (a partial vector of the register tiles' columns)
    {"head16_causal_odd_t", 2, 2, 75, 75, 16, 16, true},
    {"head16_additive_mask", 1, 2, 45, 77, 16, 16, false, MaskKind::Additive},
    {"head33_bool_mask", 1, 2, 41, 53, 33, 20, false, MaskKind::Bool},
};

INSTANTIATE_TEST_SUITE_P(Cases, FlashForward, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

// With fuse_attention off (or a backend without the externs) the graph decomposes: the check
// above would see "extern matmul" and no flash_attention, and fail.
TEST(FlashAttention, OffMeansTheDecomposition) {
  Case c{"off", 1, 2, 17, 17, 32, 32, true};
  auto g = sdpa_graph(c, DType::Float32);
  CompiledGraph cg = compiler(false).compile(*g);
  EXPECT_FALSE(contains(cg.schedule().str(), "flash_attention")) << cg.schedule().str();
  EXPECT_TRUE(contains(cg.schedule().str(), "extern matmul")) << cg.schedule().str();
}

TEST(FlashAttention, RewriteNotesAndLimits) {
  Case c{"notes", 1, 2, 9, 9, 32, 32, false};
  auto g = sdpa_graph(c, DType::Float32);
  AttentionFusion a = fuse_attention(*g);
  EXPECT_EQ(a.fused, 1);
  EXPECT_TRUE(contains(a.str(), "fused: one flash_attention extern")) << a.str();
  bool has_flash = false;
  for (const Node* n : g->nodes()) has_flash |= n->is_call() && n->target() == "_stax_flash_attention.default";
  EXPECT_TRUE(has_flash);
  auto h = sdpa_graph(c, DType::Float16);  // the fused kernel takes float32 / float64 only
  AttentionFusion b = fuse_attention(*h);
  EXPECT_EQ(b.fused, 0);
  EXPECT_TRUE(contains(b.str(), "not fused: the fused kernel takes float32 / float64")) << b.str();
}

// The kernel's result does not depend on the thread count (fixed order per element).
TEST(FlashAttention, SameBitsOnAnyThreadCount) {
  Case c{"threads", 2, 3, 150, 150, 32, 32, true};
  auto g = sdpa_graph(c, DType::Float32);
  std::vector<Tensor> in = inputs_for(c, DType::Float32, 3);
  std::vector<Tensor> outs;
  for (int threads : {1, 3}) {
    OptionValue o = OptionValue::map();
    o.set("threads", OptionValue::make_scalar(std::to_string(threads)));
    Compiler comp(test::cpu_config(o));
    CompiledGraph cg = comp.compile(*g);
    ASSERT_TRUE(contains(cg.schedule().str(), "extern flash_attention ->"));
    outs.push_back(cg.run(in).at(0));
  }
  EXPECT_TRUE(test::bitwise_equal(outs[0], outs[1]));
}

// ---- backward -----------------------------------------------------------------------------------

class FlashBackward : public ::testing::TestWithParam<Case> {};

// The gradients of q, k, v (and of an additive mask) from the compiled function (flash backward)
// against the interpreter's decomposed gradients: float64 to 1e-10 of the largest, float32 to
// 5e-5 of the largest of the float64 gradients.
TEST_P(FlashBackward, MatchesTheDecomposedGradients) {
  const Case& c = GetParam();
  const GradientReference ref = decomposed_gradients(c);
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = sdpa_graph(c, t);
    CompiledFunction f(*g, ref.wrt, compiler(true));
    ForwardResult r = f.forward(ref.inputs(t));
    std::vector<Tensor> got = f.backward(*r.ctx, {ref.up64.to(t)});
    // The fused forward and backward ran, and the saved values hold no L x S tensor.
    const CompiledGraph* fw = f.compiled_forward();
    const CompiledGraph* bw = f.compiled_backward();
    ASSERT_TRUE(fw && bw);
    EXPECT_TRUE(contains(fw->schedule().str(), "extern flash_attention ->")) << fw->schedule().str();
    EXPECT_TRUE(contains(bw->schedule().str(), "extern flash_attention_backward ->"))
        << bw->schedule().str();
    EXPECT_EQ(fw->num_fallbacks() + bw->num_fallbacks(), 0u);
    EXPECT_TRUE(contains(bw->schedule().str(), ": the flash backward")) << bw->schedule().str();
    const int64_t scores_bytes = c.b * c.h * c.l * c.s * static_cast<int64_t>(dtype_size(t));
    if (c.mask != MaskKind::Additive && c.s > c.ev + 1) EXPECT_LT(f.stats().saved_bytes, scores_bytes) << f.stats_str();
    bool saved_packed = false;
    for (const std::string& s : f.partition().saved) saved_packed |= contains(s, "flash_attention");
    EXPECT_TRUE(saved_packed) << f.stats_str();
    expect_gradients_close(got, ref, t);
  }
}

const Case kBackwardCases[] = {
    {"causal_odd_t", 2, 2, 67, 67, 32, 32, true},
    {"plain", 1, 3, 70, 70, 64, 64, false},
    {"t1", 1, 2, 1, 1, 32, 32, true},
    {"head80_causal", 1, 2, 66, 66, 80, 80, true},
    {"cross", 2, 1, 20, 75, 32, 16, false},
    {"bool_mask", 1, 2, 30, 70, 32, 32, false, MaskKind::Bool},
    {"causal_scale", 1, 2, 40, 40, 32, 32, true, MaskKind::None, 0.2},
    {"additive_mask_grad", 1, 2, 24, 30, 32, 32, false, MaskKind::Additive},
    // b·h >= kOnePassBatch: one backward task per batch entry (entry_grads)
    {"one_pass_causal", 2, 4, 67, 67, 32, 32, true},
    {"one_pass_cross_causal", 3, 3, 40, 100, 32, 16, true},
    {"head16_causal_odd_t", 1, 2, 75, 75, 16, 16, true},
    {"one_pass_head33_bool_mask", 2, 4, 41, 53, 33, 20, false, MaskKind::Bool},
};

INSTANTIATE_TEST_SUITE_P(Cases, FlashBackward, ::testing::ValuesIn(kBackwardCases),
                         [](const auto& info) { return info.param.name; });

// The backward's two schedules (one task per batch entry from kOnePassBatch entries on; tasks
// per block of keys and of queries below) give the same bits: the batch run at once against each
// entry run alone.
TEST(FlashAttention, OnePassAndTwoPassBackwardsAgreeBitForBit) {
  namespace attn = sdk::attention;
  for (const Case& c : {Case{"causal", 1, 9, 67, 67, 32, 32, true}, Case{"cross", 1, 8, 40, 100, 16, 24, true},
                        Case{"plain", 1, 8, 130, 70, 32, 32, false}}) {
    SCOPED_TRACE(c.name);
    const int64_t n = c.b * c.h;
    ASSERT_GE(n, attn::kOnePassBatch);
    std::vector<Tensor> in = inputs_for(c, DType::Float32, 3);
    Tensor out = Tensor::randn({n * c.l * (c.ev + 1)}, DType::Float32, 8);
    Tensor dout = Tensor::randn({n * c.l * (c.ev + 1)}, DType::Float32, 9);
    auto run = [&](int64_t first, int64_t count, float* grads) {
      std::vector<int64_t> oq(count), ok(count), ov(count);
      for (int64_t x = 0; x < count; ++x)
        oq[x] = (first + x) * c.l * c.e, ok[x] = (first + x) * c.s * c.e, ov[x] = (first + x) * c.s * c.ev;
      attn::Backward<float> p;
      p.batch = count, p.l = c.l, p.s = c.s, p.e = c.e, p.ev = c.ev, p.causal = c.causal, p.scale = 0.3f;
      p.q = {in[0].data<float>(), oq.data(), c.e, 1};
      p.k = {in[1].data<float>(), ok.data(), c.e, 1};
      p.v = {in[2].data<float>(), ov.data(), c.ev, 1};
      const float* o = out.data<float>();
      const float* g = dout.data<float>();
      p.out = o + first * c.l * c.ev, p.lse = o + n * c.l * c.ev + first * c.l;
      p.dout = g + first * c.l * c.ev, p.dlse = g + n * c.l * c.ev + first * c.l;
      p.dq = grads, p.dk = grads + count * c.l * c.e, p.dv = p.dk + count * c.s * c.e;
      attn::backward(p);
    };
    const int64_t per = c.l * c.e + c.s * c.e + c.s * c.ev;
    std::vector<float> all(static_cast<size_t>(n * per)), one(static_cast<size_t>(per));
    run(0, n, all.data());
    for (int64_t x = 0; x < n; ++x) {
      run(x, 1, one.data());
      const float* dq = all.data() + x * c.l * c.e;
      const float* dk = all.data() + n * c.l * c.e + x * c.s * c.e;
      const float* dv = all.data() + n * (c.l * c.e + c.s * c.e) + x * c.s * c.ev;
      EXPECT_EQ(std::vector<float>(dq, dq + c.l * c.e), std::vector<float>(one.data(), one.data() + c.l * c.e)) << x;
      EXPECT_EQ(std::vector<float>(dk, dk + c.s * c.e),
                std::vector<float>(one.data() + c.l * c.e, one.data() + c.l * c.e + c.s * c.e)) << x;
      EXPECT_EQ(std::vector<float>(dv, dv + c.s * c.ev), std::vector<float>(one.data() + c.l * c.e + c.s * c.e,
                                                                            one.data() + per)) << x;
    }
  }
}

// The kernels write every element of out, lse, dq, dk and dv whatever the buffers held: since
// 2026-12-06 the backward sums into its outputs without filling them first (each element's first
// term as x + 0) and fills only what no block reaches (keys no causal query sees, L < S). Buffers
// full of NaN give the bits of zeroed ones, both backward schedules, float32 and float64.
template <class T>
void expect_outputs_written(const Case& c) {
  namespace attn = sdk::attention;
  SCOPED_TRACE(c.name + (sizeof(T) == 8 ? " float64" : " float32"));
  const int64_t n = c.b * c.h, rows = n * c.l;
  const DType t = sizeof(T) == 8 ? DType::Float64 : DType::Float32;
  std::vector<Tensor> in = inputs_for(c, t, 31);
  std::vector<int64_t> oq(n), ok(n), ov(n);
  for (int64_t x = 0; x < n; ++x) oq[x] = x * c.l * c.e, ok[x] = x * c.s * c.e, ov[x] = x * c.s * c.ev;
  auto fill = [&](attn::Problem<T>& p) {
    p.batch = n, p.l = c.l, p.s = c.s, p.e = c.e, p.ev = c.ev, p.scale = T(0.3), p.causal = c.causal;
    p.q = {in[0].data<T>(), oq.data(), c.e, 1};
    p.k = {in[1].data<T>(), ok.data(), c.e, 1};
    p.v = {in[2].data<T>(), ov.data(), c.ev, 1};
  };
  const T nan = std::numeric_limits<T>::quiet_NaN();
  Tensor dout = Tensor::randn({rows * (c.ev + 1)}, t, 33);
  const int64_t packed = rows * c.ev + rows, grads = rows * c.e + n * c.s * (c.e + c.ev);
  std::vector<T> out[2], g[2];
  for (int pass = 0; pass < 2; ++pass) {  // 0: zeroed buffers, 1: NaN
    out[pass].assign(static_cast<size_t>(packed), pass ? nan : T(0));
    g[pass].assign(static_cast<size_t>(grads), pass ? nan : T(0));
    attn::Forward<T> f;
    fill(f);
    f.out = out[pass].data(), f.lse = out[pass].data() + rows * c.ev;
    attn::forward(f);
    attn::Backward<T> p;
    fill(p);
    p.out = out[pass].data(), p.lse = out[pass].data() + rows * c.ev;
    p.dout = dout.data<T>(), p.dlse = dout.data<T>() + rows * c.ev;
    p.dq = g[pass].data(), p.dk = p.dq + rows * c.e, p.dv = p.dk + n * c.s * c.e;
    attn::backward(p);
  }
  EXPECT_EQ(out[0], out[1]) << "out, lse";
  EXPECT_EQ(g[0], g[1]) << "dq, dk, dv";
  for (size_t x = 0; x < g[1].size(); ++x) ASSERT_FALSE(std::isnan(g[1][x])) << x;
  // Keys past the last causal query get exactly 0.
  if (c.causal && c.s > c.l)
    for (int64_t j = c.l; j < c.s; ++j) EXPECT_EQ(g[1][static_cast<size_t>(rows * c.e + j * c.e)], T(0)) << j;
}

TEST(FlashAttention, EveryOutputElementIsWritten) {
  for (const Case& c : {Case{"causal_l40_s100_one_pass", 1, 8, 40, 100, 16, 24, true},
                        Case{"causal_l40_s130_two_pass", 1, 2, 40, 130, 16, 24, true},
                        Case{"causal_t67_one_pass", 1, 9, 67, 67, 32, 32, true},
                        Case{"plain_l130_s70_two_pass", 1, 3, 130, 70, 32, 32, false},
                        Case{"plain_l100_s20_one_pass", 2, 4, 100, 20, 8, 8, false}}) {
    expect_outputs_written<float>(c);
    expect_outputs_written<double>(c);
  }
}

// Causal attention computes the blocks its diagonal crosses in groups of sub_rows rows against
// only the keys they see (3/4 of a 64 x 64 block's products), skipping terms whose probabilities
// and score gradients are exactly 0. So it gives the bits of the same attention with the causal
// pattern as a boolean mask (every block's products whole, masked lanes 0, blocks past the
// diagonal visited too): forward (out, lse) and backward (dq, dk, dv), both backward schedules
// (one task per entry from kOnePassBatch entries on, tasks per block below), float32 and
// float64, T not a multiple of the block, L != S, the default kSubRows and other group sizes,
// and with dropout (its keep mask is drawn per query and key, whatever the blocks).
template <class T>
void expect_causal_equals_masked(const Case& c, DType t, int64_t sub_rows, bool dropout) {
  namespace attn = sdk::attention;
  SCOPED_TRACE(c.name + (t == DType::Float64 ? " float64" : " float32") + " sub_rows " +
               std::to_string(sub_rows) + (dropout ? " dropout 0.3" : ""));
  const int64_t n = c.b * c.h, rows = n * c.l;
  std::vector<Tensor> in = inputs_for(c, t, 21);
  std::vector<uint8_t> mask(static_cast<size_t>(c.l * c.s));
  for (int64_t i = 0; i < c.l; ++i)
    for (int64_t j = 0; j < c.s; ++j) mask[static_cast<size_t>(i * c.s + j)] = j <= i;
  std::vector<int64_t> oq(n), ok(n), ov(n), om(n, 0);
  for (int64_t x = 0; x < n; ++x) oq[x] = x * c.l * c.e, ok[x] = x * c.s * c.e, ov[x] = x * c.s * c.ev;
  auto fill = [&](attn::Problem<T>& p, bool causal) {
    p.batch = n, p.l = c.l, p.s = c.s, p.e = c.e, p.ev = c.ev, p.scale = T(0.3);
    p.q = {in[0].data<T>(), oq.data(), c.e, 1};
    p.k = {in[1].data<T>(), ok.data(), c.e, 1};
    p.v = {in[2].data<T>(), ov.data(), c.ev, 1};
    p.causal = causal;
    p.sub_rows = sub_rows;
    if (dropout) p.dropout = true, p.drop_seed = 1234, p.drop_threshold = T(0.3), p.drop_scale = T(1 / 0.7);
    if (!causal) p.mask_bool = {mask.data(), om.data(), c.s, 1};
  };
  const int64_t packed = rows * c.ev + rows;
  std::vector<T> out_c(packed), out_m(packed);
  for (bool causal : {true, false}) {
    attn::Forward<T> p;
    fill(p, causal);
    p.out = causal ? out_c.data() : out_m.data();
    p.lse = p.out + rows * c.ev;
    attn::forward(p);
  }
  EXPECT_EQ(out_c, out_m) << "forward";
  Tensor dout = Tensor::randn({packed}, t, 23);
  const int64_t grads = rows * c.e + n * c.s * (c.e + c.ev);
  std::vector<T> g_c(grads), g_m(grads);
  for (bool causal : {true, false}) {
    attn::Backward<T> p;
    fill(p, causal);
    p.out = out_c.data(), p.lse = out_c.data() + rows * c.ev;
    p.dout = dout.data<T>(), p.dlse = dout.data<T>() + rows * c.ev;
    p.dq = causal ? g_c.data() : g_m.data();
    p.dk = p.dq + rows * c.e, p.dv = p.dk + n * c.s * c.e;
    attn::backward(p);
  }
  EXPECT_EQ(std::vector<T>(g_c.begin(), g_c.begin() + rows * c.e),
            std::vector<T>(g_m.begin(), g_m.begin() + rows * c.e)) << "dq";
  EXPECT_EQ(std::vector<T>(g_c.begin() + rows * c.e, g_c.end()),
            std::vector<T>(g_m.begin() + rows * c.e, g_m.end())) << "dk, dv";
  // And the causal result is not the unmasked one (the diagonal was applied).
  std::vector<T> out_u(packed);
  attn::Forward<T> u;
  fill(u, false);
  u.mask_bool = {};
  u.out = out_u.data(), u.lse = out_u.data() + rows * c.ev;
  attn::forward(u);
  EXPECT_NE(out_c, out_u);
}

TEST(FlashAttention, CausalBlocksGiveTheBitsOfTheCausalMask) {
  ASSERT_EQ(sdk::attention::kRows % sdk::attention::kSubRows, 0);
  for (const Case& c : {Case{"gpt_t64_one_pass", 2, 4, 64, 64, 32, 32, true},
                        Case{"t64_two_pass", 1, 2, 64, 64, 32, 32, true},
                        Case{"t67_one_pass", 1, 9, 67, 67, 16, 24, true},
                        Case{"t130_two_pass", 1, 3, 130, 130, 32, 32, true},
                        Case{"t256_one_pass", 1, 8, 256, 256, 32, 32, true},
                        Case{"l100_s128", 1, 8, 100, 128, 16, 16, true},
                        Case{"l100_s70_two_pass", 1, 2, 100, 70, 8, 8, true}}) {
    for (int64_t sub : {sdk::attention::kSubRows, int64_t{16}, int64_t{7}}) {
      expect_causal_equals_masked<float>(c, DType::Float32, sub, false);
      expect_causal_equals_masked<double>(c, DType::Float64, sub, false);
    }
    expect_causal_equals_masked<float>(c, DType::Float32, sdk::attention::kSubRows, true);
    expect_causal_equals_masked<double>(c, DType::Float64, sdk::attention::kSubRows, true);
  }
}

// The block products are register tiles reading the blocks in place (since 2026-12-06; before,
// Stax's packing GEMM, kept as Problem::gemm_products): each product element is the same chain
// of fused multiply-adds from +0 in increasing term order, so the two give the same bits:
// forward (out, lse) and backward (dq, dk, dv), both backward schedules, float32 and float64,
// head dims 16 / 24 / 32 / 33 / 64 / 80 (33, 20 and 24 leave a partial vector of columns), T
// not a multiple of the tile, L != S, causal or not, boolean and additive masks, dropout, on 3
// threads; with the operands contiguous and in transposed layouts (Q and K stored transposed, as
// the GPT block's Kᵀ; V rows inside a wider buffer; the additive mask transposed), so every
// product meets both a B read in place and one transposed into the task's buffer. Each
// instruction set (AVX-512, AVX2, portable; one the CPU lacks runs the best it has) against the
// GEMM, and all sets against each other. The operands are copied into buffers of their exact
// size (a Tensor's storage is rounded up to 64 bytes), so that under ASan a tile's load or store
// past a partial vector of columns or the last row reaches the allocation's redzone.
template <class T>
void expect_tiles_give_the_gemm_bits(const Case& c, int layout, bool dropout, sdk::gemm::InstructionSet set,
                                     std::vector<T>* out_tiles, std::vector<T>* grads_tiles) {
  namespace attn = sdk::attention;
  SCOPED_TRACE(c.name + (sizeof(T) == 8 ? " float64" : " float32") + " layout " + std::to_string(layout) +
               (dropout ? " dropout" : "") + " set " + sdk::gemm::instruction_set_name(set));
  const DType t = sizeof(T) == 8 ? DType::Float64 : DType::Float32;
  const int64_t n = c.b * c.h, rows = n * c.l, vpad = layout ? c.ev + 5 : c.ev;
  auto exact = [](const Tensor& x) { return std::vector<T>(x.data<T>(), x.data<T>() + x.numel()); };
  const std::vector<T> qt = exact(Tensor::randn({n * c.l * c.e}, t, 41));
  const std::vector<T> kt = exact(Tensor::randn({n * c.s * c.e}, t, 42));
  const std::vector<T> vt = exact(Tensor::randn({n * c.s * vpad}, t, 43));
  const std::vector<T> mt = exact(Tensor::randn({c.l * c.s}, t, 44));
  std::vector<uint8_t> mb(static_cast<size_t>(c.l * c.s));
  for (int64_t i = 0; i < c.l; ++i)
    for (int64_t j = 0; j < c.s; ++j) mb[static_cast<size_t>(i * c.s + j)] = j == 0 || (i * 7 + j * 3) % 3 != 0;
  std::vector<int64_t> oq(n), ok(n), ov(n), om(n, 0);
  for (int64_t x = 0; x < n; ++x) oq[x] = x * c.l * c.e, ok[x] = x * c.s * c.e, ov[x] = x * c.s * vpad;
  auto fill = [&](attn::Problem<T>& p, bool gemm) {
    p.batch = n, p.l = c.l, p.s = c.s, p.e = c.e, p.ev = c.ev, p.scale = T(0.3), p.causal = c.causal;
    p.gemm_products = gemm;
    if (layout == 0) {
      p.q = {qt.data(), oq.data(), c.e, 1};
      p.k = {kt.data(), ok.data(), c.e, 1};
    } else {
      p.q = {qt.data(), oq.data(), 1, c.l};
      p.k = {kt.data(), ok.data(), 1, c.s};
    }
    p.v = {vt.data(), ov.data(), vpad, 1};
    if (c.mask == MaskKind::Bool) p.mask_bool = {mb.data(), om.data(), c.s, 1};
    if (c.mask == MaskKind::Additive)
      p.mask_add = layout ? attn::Operand<T>{mt.data(), om.data(), 1, c.l} : attn::Operand<T>{mt.data(), om.data(), c.s, 1};
    if (dropout) p.dropout = true, p.drop_seed = 77, p.drop_threshold = T(0.25), p.drop_scale = T(1 / 0.75);
  };
  attn::Context ctx;
  ctx.instruction_set = set;
  ctx.parallel_for = [](int64_t tasks, const std::function<void(int64_t)>& task) {
    std::vector<std::thread> pool;
    for (int w = 0; w < 3; ++w)
      pool.emplace_back([&, w] {
        for (int64_t x = w; x < tasks; x += 3) task(x);
      });
    for (std::thread& th : pool) th.join();
  };
  const int64_t packed = rows * c.ev + rows, grads = rows * c.e + n * c.s * (c.e + c.ev);
  std::vector<T> out[2], g[2];
  for (int gemm = 0; gemm < 2; ++gemm) {
    out[gemm].assign(static_cast<size_t>(packed), std::numeric_limits<T>::quiet_NaN());
    attn::Forward<T> f;
    fill(f, gemm);
    f.out = out[gemm].data(), f.lse = f.out + rows * c.ev;
    attn::forward(f, ctx);
  }
  EXPECT_EQ(out[0], out[1]) << "forward: out, lse";
  const std::vector<T> dout = exact(Tensor::randn({packed}, t, 45));
  for (int gemm = 0; gemm < 2; ++gemm) {
    g[gemm].assign(static_cast<size_t>(grads), std::numeric_limits<T>::quiet_NaN());
    attn::Backward<T> p;
    fill(p, gemm);
    p.out = out[1].data(), p.lse = out[1].data() + rows * c.ev;
    p.dout = dout.data(), p.dlse = dout.data() + rows * c.ev;
    p.dq = g[gemm].data(), p.dk = p.dq + rows * c.e, p.dv = p.dk + n * c.s * c.e;
    attn::backward(p, ctx);
  }
  EXPECT_EQ(std::vector<T>(g[0].begin(), g[0].begin() + rows * c.e),
            std::vector<T>(g[1].begin(), g[1].begin() + rows * c.e)) << "dq";
  EXPECT_EQ(std::vector<T>(g[0].begin() + rows * c.e, g[0].end()),
            std::vector<T>(g[1].begin() + rows * c.e, g[1].end())) << "dk, dv";
  // Real values: finite, and not all zero.
  size_t nonzero = 0;
  for (T x : g[0]) {
    ASSERT_TRUE(std::isfinite(x));
    nonzero += x != T(0);
  }
  EXPECT_GT(nonzero, g[0].size() / 2);
  *out_tiles = out[0];
  *grads_tiles = g[0];
}

template <class T>
void expect_tiles_give_the_gemm_bits(const Case& c, int layout, bool dropout) {
  using sdk::gemm::InstructionSet;
  std::vector<T> out[3], grads[3];
  const InstructionSet sets[] = {InstructionSet::Avx512, InstructionSet::Avx2, InstructionSet::Portable};
  for (int x = 0; x < 3; ++x) expect_tiles_give_the_gemm_bits<T>(c, layout, dropout, sets[x], &out[x], &grads[x]);
  for (int x = 1; x < 3; ++x) {
    EXPECT_EQ(out[x], out[0]) << c.name << " set " << x << " forward";
    EXPECT_EQ(grads[x], grads[0]) << c.name << " set " << x << " backward";
  }
}

TEST(FlashAttention, RegisterTileProductsGiveTheGemmBits) {
  const Case cases[] = {
      {"gpt_t64_one_pass", 2, 4, 64, 64, 32, 32, true},
      {"t64_two_pass", 1, 2, 64, 64, 32, 32, true},
      {"t67_d16_one_pass", 1, 9, 67, 67, 16, 16, true},
      {"t130_d64_bool_two_pass", 1, 2, 130, 130, 64, 64, false, MaskKind::Bool},
      {"l70_s100_d80_additive", 1, 3, 70, 100, 80, 80, false, MaskKind::Additive},
      {"t37_d33_ev20_causal_bool", 1, 8, 37, 37, 33, 20, true, MaskKind::Bool},
      {"l100_s45_causal_d24_ev40", 1, 8, 100, 45, 24, 40, true},
      {"t1_d32", 1, 2, 1, 1, 32, 32, true},
      {"l5_s200_d16_additive", 1, 8, 5, 200, 16, 16, false, MaskKind::Additive},
  };
  int x = 0;
  for (const Case& c : cases) {
    for (int layout : {0, 1}) {
      const bool dropout = (x++ % 3) == 1;
      expect_tiles_give_the_gemm_bits<float>(c, layout, dropout);
      expect_tiles_give_the_gemm_bits<double>(c, layout, dropout);
    }
  }
}

// Gradients against central finite differences of Σ out · w (float64, small shapes).
TEST(FlashAttention, GradientsMatchFiniteDifferences) {
  for (const Case& c : {Case{"fd_causal", 1, 2, 5, 5, 4, 3, true},
                        Case{"fd_mask", 1, 2, 4, 6, 3, 2, false, MaskKind::Additive}}) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> wrt{"q", "k", "v"};
    if (c.mask == MaskKind::Additive) wrt.push_back("m");
    auto g = sdpa_graph(c, DType::Float64);
    std::vector<Tensor> in = inputs_for(c, DType::Float64, 5);
    Tensor w = Tensor::randn({c.b, c.h, c.l, c.ev}, DType::Float64, 17);
    CompiledFunction f(*g, wrt, compiler(true));
    ForwardResult r = f.forward(in);
    std::vector<Tensor> grads = f.backward(*r.ctx, {w});
    ASSERT_TRUE(contains(f.compiled_backward()->schedule().str(), "flash_attention_backward"));
    CompiledGraph fw = compiler(true).compile(*g);
    auto loss = [&](const std::vector<Tensor>& x) {
      Tensor o = fw.run(x).at(0);
      double s = 0;
      for (int64_t i = 0; i < o.numel(); ++i) s += o.get_double(i) * w.get_double(i);
      return s;
    };
    expect_gradients_match_fd(loss, in, grads, wrt);
  }
}

// Forward mode: the fused op's JVP rule against central differences along a random direction
// (float64; the graph fused as the compiler fuses it, run on the interpreter).
TEST(FlashAttention, TangentsMatchFiniteDifferences) {
  for (const Case& c : {Case{"jvp_causal", 1, 2, 5, 5, 4, 3, true},
                        Case{"jvp_mask", 1, 2, 4, 6, 3, 2, false, MaskKind::Additive}}) {
    SCOPED_TRACE(c.name);
    auto g = sdpa_graph(c, DType::Float64);
    ASSERT_EQ(fuse_attention(*g).fused, 1);
    std::vector<Tensor> in = inputs_for(c, DType::Float64, 23), dir;
    for (size_t i = 0; i < in.size(); ++i) dir.push_back(Tensor::randn(in[i].sizes(), DType::Float64, 40 + i));
    Tensor tangent = jvp(*g, in, dir).tangents.at(0);
    expect_tangent_matches_fd([&](const std::vector<Tensor>& x) { return interpret(*g, x).at(0); },
                              in, dir, tangent);
  }
}

}  // namespace
}  // namespace stax
