// Bad input to the Core ATen ops of issue 29 (col2im / im2col, grid_sampler_2d, _embedding_bag,
// the internal attention forms, mkldnn_rnn_layer, lstm.input / gru.input): a clear error naming the cause when the node is created, never
// a crash or a wrong shape. Their values against torch: tests/aten/core_ops.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"
#include "tests/support/strings.h"

namespace stax {
namespace {

using Ints = std::vector<int64_t>;

template <typename F>
void expect_error(F&& make, const std::string& cause) {
  try {
    make();
    FAIL() << "expected an error saying '" << cause << "'";
  } catch (const Error& e) {
    EXPECT_TRUE(test::contains(e.what(), cause)) << e.what();
  }
}

TEST(CoreAtenErrors, Col2imBlockCountAndParameters) {
  Graph g;
  Node* x = g.placeholder("x", {2, 12, 17});  // (5, 6) with a 2 x 3 kernel, pad 1, stride (1, 2): 18 blocks
  expect_error([&] { g.call("col2im", {x, Ints{5, 6}, Ints{2, 3}, Ints{1, 1}, Ints{1, 1}, Ints{1, 2}}); },
               "expected 18 blocks");
  Node* y = g.placeholder("y", {2, 13, 18});
  expect_error([&] { g.call("col2im", {y, Ints{5, 6}, Ints{2, 3}, Ints{1, 1}, Ints{1, 1}, Ints{1, 2}}); },
               "divisible by the kernel size product");
  Node* ok = g.placeholder("ok", {2, 12, 18});
  expect_error([&] { g.call("col2im", {ok, Ints{5, 6}, Ints{2, 3}, Ints{1, 1}, Ints{1, 1}, Ints{0, 2}}); },
               "must be positive");
  EXPECT_EQ(g.call("col2im", {ok, Ints{5, 6}, Ints{2, 3}, Ints{1, 1}, Ints{1, 1}, Ints{1, 2}})->shape(),
            (Shape{2, 2, 5, 6}));
  Node* img = g.placeholder("img", {2, 2, 5, 6});
  EXPECT_EQ(g.call("im2col", {img, Ints{2, 3}, Ints{1, 1}, Ints{1, 1}, Ints{1, 2}})->shape(),
            (Shape{2, 12, 18}));
}

TEST(CoreAtenErrors, GridSampler) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3, 4, 5});
  Node* grid = g.placeholder("grid", {2, 4, 3, 2});
  expect_error([&] { g.call("grid_sampler_2d", {x, grid, 2, 0, false}); }, "bicubic");
  expect_error([&] { g.call("grid_sampler_2d", {x, grid, 0, 3, false}); }, "padding_mode");
  Node* bad = g.placeholder("bad", {2, 4, 3, 3});
  expect_error([&] { g.call("grid_sampler_2d", {x, bad, 0, 0, false}); }, "grid (N, H_out, W_out, 2)");
  EXPECT_EQ(g.call("grid_sampler_2d", {x, grid, 0, 0, false})->shape(), (Shape{2, 3, 4, 3}));
}

TEST(CoreAtenErrors, EmbeddingBag) {
  Graph g;
  Node* w = g.placeholder("w", {10, 3});
  Node* i = g.placeholder("i", TensorMeta::contiguous({9}, DType::Int64));
  Node* o = g.placeholder("o", TensorMeta::contiguous({4}, DType::Int64));
  Node* s = g.placeholder("s", {9});
  expect_error([&] { g.call("_embedding_bag", {w, i, o, false, 1, false, s}); },
               "per_sample_weights are only supported for mode sum");
  expect_error([&] { g.call("_embedding_bag", {w, i, o, false, 3}); }, "mode must be");
  Node* i2 = g.placeholder("i2", TensorMeta::contiguous({3, 3}, DType::Int64));
  expect_error([&] { g.call("_embedding_bag", {w, i2, o}); }, "indices must be 1-D");
  Node* bag = g.call("_embedding_bag", {w, i, o, false, 2});
  ASSERT_TRUE(bag->is_tuple());
  EXPECT_EQ(bag->tuple_metas()[0].sizes, (Shape{4, 3}));
  EXPECT_EQ(bag->tuple_metas()[3].sizes, (Shape{4, 3}));  // max mode: a row index per column
  Node* grad = g.placeholder("grad", {4, 3});
  expect_error([&] { g.call("_embedding_bag_backward", {grad, i, o, i, o, o, 10, false, 0, true, Arg()}); },
               "sparse");
}

TEST(CoreAtenErrors, AttentionForms) {
  Graph g;
  Node* q = g.placeholder("q", {2, 3, 5, 4});
  Node* k = g.placeholder("k", {2, 3, 6, 4});
  expect_error([&] { g.call("_scaled_dot_product_flash_attention_for_cpu", {q, k, k, 1.0}); },
               "dropout_p must be in [0, 1)");
  expect_error([&] { g.call("_scaled_dot_product_flash_attention_for_cpu", {q, k, k, -0.1}); },
               "dropout_p must be in [0, 1)");
  // dropout_p > 0: the flash form runs (sdpa's dropout); the forms handing torch's RNG state on
  // refuse it.
  Node* fd = g.call("_scaled_dot_product_flash_attention_for_cpu", {q, k, k, 0.1});
  EXPECT_EQ(fd->tuple_metas()[0].sizes, (Shape{2, 3, 5, 4}));
  expect_error([&] { g.call("_scaled_dot_product_efficient_attention", {q, k, k, Arg(), true, 0.1}); },
               "torch's CUDA generator state");
  Node* out = g.placeholder("out", {2, 3, 5, 4});
  Node* lse = g.placeholder("lse", {2, 3, 5});
  expect_error([&] {
    g.call("_scaled_dot_product_flash_attention_for_cpu_backward", {out, q, k, k, out, lse, 0.1, false});
  }, "cannot redraw the dropout mask of its forward form");
  Node* q3 = g.placeholder("q3", {3, 5, 4});
  expect_error([&] { g.call("_scaled_dot_product_flash_attention_for_cpu", {q3, q3, q3}); },
               "4-D");
  Node* f = g.call("_scaled_dot_product_efficient_attention", {q, k, k, Arg(), true});
  EXPECT_EQ(f->tuple_metas()[1].sizes, (Shape{2, 3, 32}));  // logsumexp padded to 32 rows
  EXPECT_EQ(f->tuple_metas()[1].dtype, DType::Float32);
}

TEST(CoreAtenErrors, LstmLayer) {
  Graph g;
  Node* x = g.placeholder("x", {3, 2, 4});
  Node* w_ih = g.placeholder("w_ih", {20, 4});
  Node* w_hh = g.placeholder("w_hh", {20, 5});
  Node* b = g.placeholder("b", {20});
  Node* h = g.placeholder("h", {2, 5});
  auto layer = [&](int64_t mode, Ints batch_sizes, Node* hx) {
    return g.call("mkldnn_rnn_layer", {x, w_ih, w_hh, b, b, hx, h, false, Arg(batch_sizes), mode,
                                       5, 1, true, false, false, true});
  };
  expect_error([&] { layer(3, {}, h); }, "(2: LSTM)");
  expect_error([&] { layer(2, {2, 2, 2}, h); }, "packed sequences");
  Node* bad = g.placeholder("bad", {3, 5});
  expect_error([&] { layer(2, {}, bad); }, "hx and cx must be");
  Node* ok = layer(2, {}, h);
  EXPECT_EQ(ok->tuple_metas()[0].sizes, (Shape{3, 2, 5}));
  EXPECT_EQ(ok->tuple_metas()[3].dtype, DType::UInt8);  // the workspace: empty, as torch's meta
}

// lstm.input / gru.input (torch.export's training IR): the parameter count per layer and
// direction, no projections, no dropout between layers in training; shapes as torch's.
TEST(CoreAtenErrors, LstmAndGruInput) {
  Graph g;
  Node* x = g.placeholder("x", {3, 2, 4});  // (T, B, I)
  Node* w_ih = g.placeholder("w_ih", {20, 4});
  Node* w_hh = g.placeholder("w_hh", {20, 5});
  Node* b = g.placeholder("b", {20});
  Node* h0 = g.placeholder("h0", {1, 2, 5});
  Node* w_hr = g.placeholder("w_hr", {3, 5});
  auto lstm = [&](std::vector<Node*> params, double dropout, int64_t layers) {
    return g.call("lstm.input", {x, Arg(std::vector<Node*>{h0, h0}), Arg(params), true, layers,
                                 dropout, true, false, false});
  };
  expect_error([&] { lstm({w_ih, w_hh, b, b, w_hr}, 0.0, 1); }, "proj_size");
  expect_error([&] { lstm({w_ih, w_hh, b, b, w_ih, w_hh, b, b}, 0.5, 2); }, "dropout");
  Node* ok = lstm({w_ih, w_hh, b, b}, 0.5, 1);  // one layer: dropout does not apply
  EXPECT_EQ(ok->tuple_metas()[0].sizes, (Shape{3, 2, 5}));
  EXPECT_EQ(ok->tuple_metas()[2].sizes, (Shape{1, 2, 5}));
  Node* gw_ih = g.placeholder("gw_ih", {15, 4});
  Node* gw_hh = g.placeholder("gw_hh", {15, 5});
  Node* gb = g.placeholder("gb", {15});
  auto gru = [&](Node* hx, std::vector<Node*> params, bool batch_first) {
    return g.call("gru.input", {x, hx, Arg(params), true, 1, 0.0, true, false, batch_first});
  };
  expect_error([&] { gru(h0, {gw_ih, gw_hh, gb}, false); }, "expected 4 parameters");
  expect_error([&] { gru(h0, {w_ih, w_hh, b, b}, false); }, "(3 * hidden_size, input)");
  Node* h0b = g.placeholder("h0b", {1, 3, 5});
  expect_error([&] { gru(h0b, {gw_ih, gw_hh, gb, gb}, false); }, "hx must be");
  Node* bf = gru(h0b, {gw_ih, gw_hh, gb, gb}, true);  // batch_first: (B, T, I) = (3, 2, 4)
  EXPECT_EQ(bf->tuple_metas()[0].sizes, (Shape{3, 2, 5}));
  EXPECT_EQ(bf->tuple_metas()[1].sizes, (Shape{1, 3, 5}));
}

}  // namespace
}  // namespace stax
