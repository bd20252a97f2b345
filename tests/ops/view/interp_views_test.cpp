// View ops: shape inference (the meta strides are the view's own strides), must-fail errors, and
// the interpreter's kernels (results share storage; values checked by hand and against numpy).
#include <gtest/gtest.h>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "tests/support/interp_helpers.h"

using namespace stax;
using namespace stax::test;

TEST(ViewInference, StridesAreTheViewsOwn) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3, 4});
  Node* p = g.call("permute", {x, std::vector<int64_t>{2, 0, 1}});
  EXPECT_EQ(p->shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p->meta().strides, (Shape{1, 12, 4}));
  Node* tr = g.call("transpose.int", {x, 0, -1});
  EXPECT_EQ(tr->shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(tr->meta().strides, (Shape{1, 4, 12}));
  Node* v = g.call("view", {x, std::vector<int64_t>{6, -1}});
  EXPECT_EQ(v->shape(), (Shape{6, 4}));
  EXPECT_EQ(v->meta().strides, (Shape{4, 1}));
  Node* s = g.call("slice.Tensor", {x, 2, 1, Arg(), 2});
  EXPECT_EQ(s->shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(s->meta().strides, (Shape{12, 4, 2}));
  Node* sel = g.call("select.int", {x, 1, -1});
  EXPECT_EQ(sel->shape(), (Shape{2, 4}));
  EXPECT_EQ(sel->meta().strides, (Shape{12, 1}));
  Node* u = g.call("unsqueeze", {x, -1});
  EXPECT_EQ(u->shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(u->meta().strides, (Shape{12, 4, 1, 1}));
  Node* u0 = g.call("unsqueeze", {x, 1});
  EXPECT_EQ(u0->meta().strides, (Shape{12, 12, 4, 1}));
  Node* e = g.call("expand", {g.call("unsqueeze", {x, 0}), std::vector<int64_t>{5, -1, 3, 4}});
  EXPECT_EQ(e->shape(), (Shape{5, 2, 3, 4}));
  EXPECT_EQ(e->meta().strides, (Shape{0, 12, 4, 1}));
  Node* t = g.call("t", {g.call("view", {x, std::vector<int64_t>{6, 4}})});
  EXPECT_EQ(t->meta().strides, (Shape{1, 4}));
  Node* a = g.call("as_strided", {x, std::vector<int64_t>{3, 3}, std::vector<int64_t>{5, 1}, 2});
  EXPECT_EQ(a->shape(), (Shape{3, 3}));
  EXPECT_EQ(a->meta().strides, (Shape{5, 1}));
  EXPECT_EQ(g.call("alias", {x})->meta(), x->meta());
  EXPECT_EQ(g.registry().get("view").category, OpCategory::View);
}

TEST(ViewInference, SqueezeVariants) {
  Graph g;
  Node* x = g.placeholder("x", {1, 3, 1, 2});
  EXPECT_EQ(g.call("squeeze", {x})->shape(), (Shape{3, 2}));
  EXPECT_EQ(g.call("squeeze.dim", {x, 2})->shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(g.call("squeeze.dim", {x, 1})->shape(), (Shape{1, 3, 1, 2}));  // size 3: no-op
  Node* sd = g.call("squeeze.dims", {x, std::vector<int64_t>{0, -2}});
  EXPECT_EQ(sd->shape(), (Shape{3, 2}));
  EXPECT_EQ(sd->meta().strides, (Shape{2, 1}));
  Node* s0 = g.placeholder("s0", Shape{});
  EXPECT_EQ(g.call("squeeze.dim", {s0, 0})->shape(), Shape{});
  EXPECT_EQ(g.call("unsqueeze", {s0, 0})->shape(), (Shape{1}));
}

TEST(ViewInference, SliceClampsLikePython) {
  Graph g;
  Node* x = g.placeholder("x", {10});
  auto slice = [&](Arg start, Arg end, int64_t step) {
    return g.call("slice.Tensor", {x, 0, start, end, step})->shape()[0];
  };
  EXPECT_EQ(slice(-100, 100, 1), 10);
  EXPECT_EQ(slice(2, 7, 2), 3);       // 2 4 6
  EXPECT_EQ(slice(-3, Arg(), 1), 3);  // 7 8 9
  EXPECT_EQ(slice(Arg(), -2, 3), 3);  // 0 3 6
  EXPECT_EQ(slice(8, 3, 1), 0);
  EXPECT_EQ(slice(20, 30, 1), 0);
  EXPECT_EQ(slice(0, int64_t{9223372036854775807}, 4), 3);  // 0 4 8: torch's "end=None" spelling
}

TEST(ViewInference, ReshapeViewsWhenPossibleElseCopies) {
  Graph g;
  Node* x = g.placeholder("x", {4, 6});
  Node* t = g.call("t", {x});                                        // (6, 4) strides (1, 6)
  Node* r1 = g.call("reshape", {t, std::vector<int64_t>{3, 2, 4}});  // splits the stride-1 dim
  EXPECT_EQ(r1->meta().strides, (Shape{2, 1, 6}));
  Node* r2 = g.call("reshape", {t, std::vector<int64_t>{-1}});  // merges non-contiguous dims
  EXPECT_EQ(r2->shape(), (Shape{24}));
  EXPECT_EQ(r2->meta().strides, (Shape{1}));
  Node* r3 = g.call("reshape", {x, std::vector<int64_t>{2, 2, 3, 2}});
  EXPECT_EQ(r3->meta().strides, (Shape{12, 6, 2, 1}));
}

TEST(ViewErrors, BadViewNamesBothShapesAndNode) {
  Graph g;
  Node* x = g.placeholder("x", {3, 4});
  std::string m = error_of([&] { g.call("view", {x, std::vector<int64_t>{5, 2}}, {}, "bad"); });
  EXPECT_TRUE(has(m, "%bad")) << m;
  EXPECT_TRUE(has(m, "[5, 2]")) << m;
  EXPECT_TRUE(has(m, "(3, 4)")) << m;
  m = error_of([&] { g.call("view", {g.call("t", {x}), std::vector<int64_t>{12}}, {}, "v2"); });
  EXPECT_TRUE(has(m, "%v2")) << m;
  EXPECT_TRUE(has(m, "[12]")) << m;
  EXPECT_TRUE(has(m, "(4, 3)")) << m;
  EXPECT_TRUE(has(m, "reshape")) << m;
  m = error_of([&] { g.call("reshape", {x, std::vector<int64_t>{-1, -1}}, {}, "r"); });
  EXPECT_TRUE(has(m, "%r") && has(m, "only one dimension")) << m;
  m = error_of([&] { g.call("reshape", {x, std::vector<int64_t>{5, -1}}, {}, "r5"); });
  EXPECT_TRUE(has(m, "%r5") && has(m, "[5, -1]") && has(m, "(3, 4)")) << m;
}

TEST(ViewErrors, OtherMustFails) {
  Graph g;
  Node* x = g.placeholder("x", {3, 4});
  std::string m = error_of([&] { g.call("select.int", {x, 0, 3}, {}, "sel"); });
  EXPECT_TRUE(has(m, "%sel") && has(m, "index 3 is out of range") && has(m, "(3, 4)")) << m;
  m = error_of([&] { g.call("permute", {x, std::vector<int64_t>{0, 0}}, {}, "p"); });
  EXPECT_TRUE(has(m, "%p") && has(m, "repeats")) << m;
  m = error_of([&] { g.call("permute", {x, std::vector<int64_t>{0}}, {}, "p1"); });
  EXPECT_TRUE(has(m, "%p1") && has(m, "(3, 4)")) << m;
  m = error_of([&] { g.call("transpose.int", {x, 0, 2}, {}, "tr"); });
  EXPECT_TRUE(has(m, "%tr") && has(m, "dimension 2 out of range")) << m;
  m = error_of([&] { g.call("slice.Tensor", {x, 0, 0, 2, 0}, {}, "sl"); });
  EXPECT_TRUE(has(m, "%sl") && has(m, "step must be positive")) << m;
  m = error_of([&] { g.call("expand", {x, std::vector<int64_t>{2, 4}}, {}, "ex"); });
  EXPECT_TRUE(has(m, "%ex") && has(m, "(3, 4)") && has(m, "[2, 4]")) << m;
  m = error_of([&] { g.call("t", {g.placeholder("y", {2, 2, 2})}, {}, "tt"); });
  EXPECT_TRUE(has(m, "%tt") && has(m, "(2, 2, 2)")) << m;
}

TEST(ViewInterp, ResultsShareStorageAndMatchMetaStrides) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3, 4});
  std::vector<Node*> outs = {
      g.call("permute", {x, std::vector<int64_t>{2, 0, 1}}),
      g.call("transpose.int", {x, 1, 2}),
      g.call("view", {x, std::vector<int64_t>{4, 6}}),
      g.call("reshape", {g.call("t", {g.call("view", {x, std::vector<int64_t>{6, 4}})}),
                         std::vector<int64_t>{2, 3, 4}}),  // a copy
      g.call("slice.Tensor", {x, 2, 1, Arg(), 2}),
      g.call("select.int", {x, 1, -1}),
      g.call("expand", {g.call("unsqueeze", {x, 0}), std::vector<int64_t>{2, 2, 3, 4}}),
      g.call("squeeze", {g.call("unsqueeze", {x, 1})}),
      g.call("as_strided", {x, std::vector<int64_t>{3, 3}, std::vector<int64_t>{5, 1}, 2}),
      g.call("alias", {x}),
      g.call("clone", {x}),
      g.call("contiguous", {g.call("t", {g.call("view", {x, std::vector<int64_t>{6, 4}})})}),
  };
  g.output(outs);
  Tensor in = iota({2, 3, 4});
  std::vector<Tensor> r = interpret(g, {in});
  ASSERT_EQ(r.size(), outs.size());
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].sizes(), outs[i]->shape()) << i;
    EXPECT_EQ(r[i].strides(), outs[i]->meta().strides)
        << "output " << i << " " << outs[i]->target();
    bool shares = r[i].storage() == in.storage();
    bool copies = i == 3 || i == 10 || i == 11;
    EXPECT_EQ(shares, !copies) << "output " << i << " " << outs[i]->target();
  }
  EXPECT_EQ(r[0].to_vector<int>()[0], 0);
  EXPECT_EQ(r[0].to_vector<int>()[1], 4);  // permute (4, 2, 3): [0][0][1] = x[0][1][0]
  EXPECT_EQ(r[4].to_vector<int>(), (std::vector<int>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}));
  EXPECT_EQ(r[5].to_vector<int>(), (std::vector<int>{8, 9, 10, 11, 20, 21, 22, 23}));
  EXPECT_EQ(r[8].to_vector<int>(), (std::vector<int>{2, 3, 4, 7, 8, 9, 12, 13, 14}));
  EXPECT_EQ(r[8].storage_offset(), 2);
  // reshape of the transposed (6, 4) view: row-major order of t(view(x, 6, 4)).
  std::vector<int> tr = r[3].to_vector<int>();
  EXPECT_EQ((std::vector<int>(tr.begin(), tr.begin() + 6)),
            (std::vector<int>{0, 4, 8, 12, 16, 20}));
  EXPECT_EQ(r[3].to_vector<int>(), r[11].to_vector<int>());
  EXPECT_TRUE(r[10].equal(in));
}

TEST(ViewInterp, ViewOfAViewKeepsOffsets) {
  Graph g;
  Node* x = g.placeholder("x", {4, 5});
  Node* s = g.call("slice.Tensor", {x, 0, 1, 3});          // rows 1, 2
  Node* s2 = g.call("slice.Tensor", {s, 1, 2, Arg(), 1});  // cols 2..4
  Node* v = g.call("view", {g.call("select.int", {s2, 0, 1}), std::vector<int64_t>{3, 1}});
  Node* a =
      g.call("as_strided", {s, std::vector<int64_t>{2}, std::vector<int64_t>{1}});  // offset kept
  g.output({s2, v, a});
  std::vector<Tensor> r = interpret(g, {iota({4, 5})});
  EXPECT_EQ(r[0].to_vector<int>(), (std::vector<int>{7, 8, 9, 12, 13, 14}));
  EXPECT_EQ(r[1].to_vector<int>(), (std::vector<int>{12, 13, 14}));
  EXPECT_EQ(r[1].storage_offset(), 12);
  EXPECT_EQ(r[2].to_vector<int>(), (std::vector<int>{5, 6}));
}

TEST(ViewInterp, AsStridedOutsideStorageIsAnError) {
  Graph g;
  Node* x = g.placeholder("x", {2, 2});
  // Known when the graph is built: the storage is x's (4 elements).
  std::string built = error_of([&] {
    g.call("as_strided", {x, std::vector<int64_t>{3}, std::vector<int64_t>{2}, 0}, {}, "big");
  });
  EXPECT_TRUE(has(built, "%big")) << built;
  EXPECT_TRUE(has(built, "out of bounds")) << built;
  // Known only when it runs: a view of a slice keeps the slice's offset (2), unknown to the rule.
  Node* s = g.call("slice.Tensor", {x, 0, 1, 2});
  g.output({g.call("as_strided", {s, std::vector<int64_t>{2}, std::vector<int64_t>{2}}, {},
                   "late")});
  std::string m = error_of([&] { interpret(g, {iota({2, 2})}); });
  EXPECT_TRUE(has(m, "%late")) << m;
}

TEST(ViewInterp, MatchesNumpy) {
  Graph g;
  Node* x = g.placeholder("x", {3, 4, 5}, DType::Float64);
  Node* p = g.call("permute", {x, std::vector<int64_t>{1, 2, 0}});  // (4, 5, 3)
  Node* s = g.call("slice.Tensor", {p, 1, -4, Arg(), 2});           // (4, 2, 3)
  Node* r = g.call("reshape", {s, std::vector<int64_t>{-1, 3}});    // (8, 3)
  Node* t = g.call("t", {r});                                       // (3, 8)
  Node* e = g.call("expand", {g.call("unsqueeze", {t, 1}), std::vector<int64_t>{3, 2, 8}});
  Node* sel = g.call("select.int", {e, 2, -3});  // (3, 2)
  g.output({e, sel});
  Tensor in = Tensor::randn({3, 4, 5}, DType::Float64, 7);
  std::vector<Tensor> out = interpret(g, {in});
  const std::string views = R"(x = ins[0]
p = x.transpose(1, 2, 0)
s = p[:, -4::2, :]
r = s.reshape(-1, 3)
t = r.T
e = np.broadcast_to(t[:, None, :], (3, 2, 8))
)";
  auto want_e = numpy_eval({in}, views + "out = e");
  auto want_sel = numpy_eval({in}, views + "out = e[:, :, -3]");
  if (!want_e || !want_sel) GTEST_SKIP() << "python3 with numpy is not available";
  EXPECT_TRUE(out[0].equal(*want_e)) << out[0].to_string();
  EXPECT_TRUE(out[1].equal(*want_sel)) << out[1].to_string();
}
