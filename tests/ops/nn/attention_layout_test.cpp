// The strides of the internal attention forms (issue 29 item 5) are torch 2.15's, measured on its
// CPU kernels (the efficient forms': its meta functions), since traces view them: the flash
// output is empty_like(query), its logsumexp (B, L, H) memory seen as (B, H, L), the gradients
// of the backward forms (B, L, H, E) memory seen as (B, H, L, E). Values: tests/aten/core_ops.py
// (sdpa_flash_cpu_heads_split views the output and the gradients as GPT-2's trace does).
#include <gtest/gtest.h>

#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax {
namespace {

using Ints = std::vector<int64_t>;
constexpr int64_t B = 2, H = 4, L = 8, S = 6, E = 8;

struct Attention {
  Graph g;
  Node* k = g.placeholder("k", {B, H, S, E});
  Node* v = g.placeholder("v", {B, H, S, E});

  Node* flash(Node* q) { return g.call("_scaled_dot_product_flash_attention_for_cpu", {q, k, v}); }
  Node* out(Node* q) { return g.call("getitem", {flash(q), int64_t{0}}); }
};

TEST(AttentionLayout, FlashOutputFollowsTheQuerysDimOrder) {
  Attention a;
  Node* contiguous = a.g.placeholder("q", {B, H, L, E});
  Node* f = a.flash(contiguous);
  EXPECT_EQ(f->tuple_metas()[0].strides, (Shape{256, 64, 8, 1}));
  EXPECT_EQ(f->tuple_metas()[1].sizes, (Shape{B, H, L}));
  EXPECT_EQ(f->tuple_metas()[1].strides, (Shape{32, 1, 4}));
  // (B, L, H, E) memory: the heads of one projection (GPT-2), split from (B, L, 3 * H * E).
  Node* x = a.g.placeholder("x", {B, L, 3 * H * E});
  Node* q = a.g.call("transpose.int",
                     {a.g.call("view", {a.g.call("slice.Tensor", {x, 2, 0, H * E}), Ints{B, L, H, E}}),
                      1, 2});
  EXPECT_EQ(q->meta().strides, (Shape{768, 8, 96, 1}));
  EXPECT_EQ(a.out(q)->meta().strides, (Shape{256, 8, 32, 1}));
  // (H, B, L, E) memory and a query expanded over the heads.
  Node* hb = a.g.call("permute", {a.g.placeholder("hb", {H, B, L, E}), Ints{1, 0, 2, 3}});
  EXPECT_EQ(a.out(hb)->meta().strides, (Shape{64, 128, 8, 1}));
  Node* ex = a.g.call("expand", {a.g.placeholder("one", {B, 1, L, E}), Ints{B, H, L, E}});
  EXPECT_EQ(a.out(ex)->meta().strides, (Shape{256, 64, 8, 1}));
}

TEST(AttentionLayout, MergingTheHeadsIsAViewExactlyWhereTorchsIs) {
  Attention a;
  Node* x = a.g.placeholder("x", {B, L, H, E});
  Node* split = a.out(a.g.call("transpose.int", {x, 1, 2}));
  Node* merged = a.g.call("view", {a.g.call("transpose.int", {split, 1, 2}), Ints{B, L, H * E}});
  EXPECT_EQ(merged->shape(), (Shape{B, L, H * E}));
  Node* plain = a.out(a.g.placeholder("q", {B, H, L, E}));
  EXPECT_THROW(a.g.call("view", {a.g.call("transpose.int", {plain, 1, 2}), Ints{B, L, H * E}}),
               Error);  // torch: "view size is not compatible with input tensor's size and stride"
}

TEST(AttentionLayout, BackwardGradientsAndEfficientOutputAreHeadsInner) {
  Attention a;
  Node* q = a.g.placeholder("q", {B, H, L, E});
  Node* f = a.flash(q);
  Node* o = a.g.call("getitem", {f, int64_t{0}});
  Node* lse = a.g.call("getitem", {f, int64_t{1}});
  Node* bw = a.g.call("_scaled_dot_product_flash_attention_for_cpu_backward",
                      {a.g.placeholder("go", {B, H, L, E}), q, a.k, a.v, o, lse, 0.0, false});
  EXPECT_EQ(bw->tuple_metas()[0].strides, (Shape{256, 8, 32, 1}));
  EXPECT_EQ(bw->tuple_metas()[1].strides, (Shape{192, 8, 32, 1}));
  EXPECT_EQ(bw->tuple_metas()[2].strides, (Shape{192, 8, 32, 1}));
  Node* eff = a.g.call("_scaled_dot_product_efficient_attention", {q, a.k, a.v, Arg(), false});
  EXPECT_EQ(eff->tuple_metas()[0].strides, (Shape{256, 8, 32, 1}));
}

}  // namespace
}  // namespace stax
