// Functionalization as graphs are built (core/graph/functionalize.h): in-place and out= ops
// become functional nodes, later reads see the written values, written placeholders are returned
// as marked updates (`value -> input`), printed and parsed back; writes through views scatter
// into the base; batch norm in training writes its running statistics; the joint graph gives
// updates no tangent; bad input gets an error naming the node.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
#include "core/autodiff/vjp.h"
#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "core/tensor/tensor.h"

using namespace stax;

namespace {

std::string graph_text(const std::string& body) {
  return "graph(\n"
         "    %x shape=(2, 3) = placeholder[target=x]\n"
         "    %y shape=(2, 3) = placeholder[target=y]\n" +
         body + ")\n";
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

std::string error_of(const std::string& text) {
  try {
    parse_graph(text, "f.stax");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Functionalize, InPlaceOnAnInputIsReturnedAsItsUpdate) {
  Graph g = parse_graph(graph_text(
      "    %add_ = call_function[target=torch.ops.aten.add_.Tensor](args = (%x, %y))\n"
      "    %mul = call_function[target=torch.ops.aten.mul.Tensor](args = (%x, %y))\n"
      "    return mul\n"));
  verify(g);
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.output_updates(), (std::vector<std::string>{"", "x"}));
  EXPECT_EQ(g.num_returned(), 1u);
  // mul reads x's new value (add_'s result), not the placeholder.
  Node* mul = g.find("mul");
  EXPECT_EQ(mul->input(0)->name(), "add_");
  EXPECT_EQ(mul->input(0)->target(), "add.Tensor");
  for (const Node* n : g.nodes())
    if (n->is_call()) {
      EXPECT_NE(n->op()->category, OpCategory::Mutating) << n->name();
    }

  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = Tensor::from_vector<float>({2, 3}, {10, 20, 30, 40, 50, 60});
  std::vector<Tensor> out = interpret(g, {x, y});
  EXPECT_EQ(values(out[0]), (std::vector<float>{110, 440, 990, 1760, 2750, 3960}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{11, 22, 33, 44, 55, 66}));

  // The printed form marks the update and parses back to the same graph.
  std::string printed = print_graph(g);
  EXPECT_NE(printed.find("return (mul, add_ -> x)"), std::string::npos) << printed;
  EXPECT_EQ(print_graph(parse_graph(printed)), printed);
}

TEST(Functionalize, CopyFillZeroAndOutForms) {
  Graph g = parse_graph(graph_text(
      "    %z shape=(3,) = placeholder[target=z]\n"
      "    %copy_ = call_function[target=aten.copy_.default](args = (%x, %z))\n"
      "    %fill_ = call_function[target=aten.fill_.Scalar](args = (%y, 2.5))\n"
      "    %sum_1 = call_function[target=aten.sum.default](args = (%x,))\n"
      "    %o shape=(3,) = placeholder[target=o]\n"
      "    %mul_out = call_function[target=aten.mul.out](args = (%z, %z), kwargs = {out: %o})\n"
      "    %zero_ = call_function[target=aten.zero_.default](args = (%z,))\n"
      "    return (sum_1, mul_out)\n"));
  EXPECT_EQ(g.output_updates(), (std::vector<std::string>{"", "", "x", "y", "z", "o"}));
  Tensor x = Tensor::zeros({2, 3});
  Tensor y = Tensor::zeros({2, 3});
  Tensor z = Tensor::from_vector<float>({3}, {1, 2, 3});
  Tensor o = Tensor::zeros({3});
  std::vector<Tensor> out = interpret(g, {x, y, z, o});
  EXPECT_FLOAT_EQ(out[0].item(), 12);                              // sum of z broadcast
  EXPECT_EQ(values(out[1]), (std::vector<float>{1, 4, 9}));         // mul.out's value
  EXPECT_EQ(values(out[2]), (std::vector<float>{1, 2, 3, 1, 2, 3}));  // x after copy_
  EXPECT_EQ(values(out[3]), std::vector<float>(6, 2.5f));           // y after fill_
  EXPECT_EQ(values(out[4]), std::vector<float>(3, 0.f));            // z after zero_
  EXPECT_EQ(values(out[5]), (std::vector<float>{1, 4, 9}));         // o, written by mul.out
}

TEST(Functionalize, WritesThroughViewsScatterIntoTheBase) {
  Graph g = parse_graph(graph_text(
      "    %slice_1 = call_function[target=aten.slice.Tensor](args = (%x, 1, 1, 3))\n"
      "    %t = call_function[target=aten.t.default](args = (%x,))\n"
      "    %mul_ = call_function[target=aten.mul_.Scalar](args = (%slice_1, 10))\n"
      "    %select = call_function[target=aten.select.int](args = (%t, 0, 0))\n"
      "    %add_ = call_function[target=aten.add_.Scalar](args = (%select, 100))\n"
      "    %sum_1 = call_function[target=aten.sum.default](args = (%slice_1,))\n"
      "    return (sum_1, add_)\n"));
  verify(g);
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> out = interpret(g, {x, Tensor::zeros({2, 3})});
  ASSERT_EQ(out.size(), 3u);
  // x = [[101, 20, 30], [104, 50, 60]]: slice_1 (made before both writes) reads them.
  EXPECT_FLOAT_EQ(out[0].item(), 160);
  EXPECT_EQ(values(out[1]), (std::vector<float>{101, 104}));  // the select view's new value
  EXPECT_EQ(values(out[2]), (std::vector<float>{101, 20, 30, 104, 50, 60}));
  EXPECT_EQ(g.output_updates()[2], "x");
}

// transpose_ / unsqueeze_ (nn.GRU's trace ends in transpose_ on the stacked outputs): the call
// makes the view, and self's name means the view from then on; a view made before keeps its shape;
// a later write through the renamed tensor reaches the base.
TEST(Functionalize, InPlaceViewOpsRebindTheirSelf) {
  Graph g = parse_graph(graph_text(
      "    %mul = call_function[target=aten.mul.Scalar](args = (%x, 2))\n"
      "    %slice_1 = call_function[target=aten.slice.Tensor](args = (%mul, 1, 0, 2))\n"
      "    %transpose_ = call_function[target=aten.transpose_.default](args = (%mul, 0, 1))\n"
      "    %unsqueeze_ = call_function[target=aten.unsqueeze_.default](args = (%mul, 0))\n"
      "    %add_ = call_function[target=aten.add_.Scalar](args = (%mul, 100))\n"
      "    %clone = call_function[target=aten.clone.default](args = (%mul,))\n"
      "    return (clone, transpose_, slice_1)\n"));
  verify(g);
  EXPECT_EQ(g.find("clone")->shape(), (Shape{1, 3, 2}));
  for (const Node* n : g.nodes())
    if (n->is_call()) EXPECT_NE(n->op()->category, OpCategory::Mutating) << n->name();
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> out = interpret(g, {x, Tensor::zeros({2, 3})});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{102, 108, 104, 110, 106, 112}));
  // transpose_ is the (3, 2) view of mul, written by add_ afterwards (one storage)
  EXPECT_EQ(out[1].sizes(), (Shape{3, 2}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{102, 108, 104, 110, 106, 112}));
  EXPECT_EQ(out[2].sizes(), (Shape{2, 2}));
  EXPECT_EQ(values(out[2]), (std::vector<float>{102, 104, 108, 110}));
}

TEST(Functionalize, BatchNormTrainingWritesRunningStatistics) {
  Graph g;
  Node* x = g.placeholder("x", Shape{2, 2, 1, 2});
  Node* mean = g.placeholder("mean", Shape{2});
  Node* var = g.placeholder("var", Shape{2});
  Node* n = g.placeholder("n", Shape{}, DType::Int64);
  g.call("add_.Tensor", {n, Arg(int64_t{1})});
  Node* bn = g.call("native_batch_norm.default",
                    {x, Arg(), Arg(), mean, var, Arg(true), Arg(0.5), Arg(1e-5)});
  g.output({g.call("getitem.default", {bn, Arg(int64_t{0})})});
  EXPECT_EQ(g.output_updates(), (std::vector<std::string>{"", "mean", "var", "n"}));
  // Channel 0 holds 1, 2, 5, 6 (mean 3.5, unbiased var 17/3); channel 1 holds 3, 4, 7, 8.
  Tensor xs = Tensor::from_vector<float>({2, 2, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  std::vector<Tensor> out = interpret(g, {xs, Tensor::from_vector<float>({2}, {1, 1}),
                                          Tensor::from_vector<float>({2}, {1, 3}),
                                          Tensor::scalar(4, DType::Int64)});
  ASSERT_EQ(out.size(), 4u);
  std::vector<float> m = values(out[1]), v = values(out[2]);
  EXPECT_FLOAT_EQ(m[0], 0.5f * 3.5f + 0.5f);
  EXPECT_FLOAT_EQ(m[1], 0.5f * 5.5f + 0.5f);
  EXPECT_FLOAT_EQ(v[0], 0.5f * 17.f / 3.f + 0.5f);
  EXPECT_FLOAT_EQ(v[1], 0.5f * 17.f / 3.f + 1.5f);
  EXPECT_EQ(out[3].item_as_int({}), 5);

  // In eval mode nothing is written.
  Graph e;
  Node* ex = e.placeholder("x", Shape{2, 2, 1, 2});
  Node* em = e.placeholder("mean", Shape{2});
  Node* ev = e.placeholder("var", Shape{2});
  Node* ebn = e.call("native_batch_norm.default",
                     {ex, Arg(), Arg(), em, ev, Arg(false), Arg(0.5), Arg(1e-5)});
  e.output({e.call("getitem.default", {ebn, Arg(int64_t{0})})});
  EXPECT_EQ(e.outputs().size(), 1u);
  EXPECT_EQ(e.num_returned(), 1u);
}

TEST(Functionalize, UpdatesHaveNoTangent) {
  Graph g = parse_graph(graph_text(
      "    %mul_ = call_function[target=aten.mul_.Tensor](args = (%x, %y))\n"
      "    %sum_1 = call_function[target=aten.sum.default](args = (%mul_,))\n"
      "    return sum_1\n"));
  JointGraph j = build_joint_graph(g, {"y"}, default_vjp_table());
  EXPECT_EQ(j.tangents.size(), 1u);
  EXPECT_EQ(j.output_tangent, (std::vector<int>{0, -1}));
}

TEST(Functionalize, Errors) {
  // An update of something that is no placeholder.
  EXPECT_NE(error_of(graph_text("    %add = call_function[target=aten.add.Tensor](args = (%x, %y))\n"
                                "    return (add, add -> add)\n"))
                .find("is no placeholder"),
            std::string::npos);
  // An update of another shape.
  EXPECT_NE(error_of(graph_text("    %s = call_function[target=aten.sum.default](args = (%x,))\n"
                                "    return (s, s -> y)\n"))
                .find("differs from it"),
            std::string::npos);
  // A returned value after an update.
  EXPECT_NE(error_of(graph_text("    %add = call_function[target=aten.add.Tensor](args = (%x, %y))\n"
                                "    return (add -> x, add)\n"))
                .find("updates come last"),
            std::string::npos);
  // An update of an input an in-place op writes too.
  EXPECT_NE(error_of(graph_text("    %add_ = call_function[target=aten.add_.Tensor](args = (%x, %y))\n"
                                "    return (add_, add_ -> x)\n"))
                .find("an in-place op writes it too"),
            std::string::npos);
  // An in-place op cannot change its argument's dtype the way torch refuses to.
  EXPECT_NE(error_of("graph(\n"
                     "    %i shape=(2,) dtype=int64 = placeholder[target=i]\n"
                     "    %m = call_function[target=aten.mul_.Scalar](args = (%i, 0.5))\n"
                     "    return i\n)\n")
                .find("can't be cast to the desired output type int64"),
            std::string::npos);
  // Writing through an expand view.
  EXPECT_NE(error_of(graph_text(
                         "    %z shape=(3,) = placeholder[target=z]\n"
                         "    %e = call_function[target=aten.expand.default](args = (%z, [2, 3]))\n"
                         "    %a = call_function[target=aten.add_.Tensor](args = (%e, %y))\n"
                         "    return a\n"))
                .find("Stax cannot write it back"),
            std::string::npos);
  // With in-place ops, values must be defined before their use.
  EXPECT_NE(error_of(graph_text(
                         "    %m = call_function[target=aten.mul.Tensor](args = (%a, %y))\n"
                         "    %a = call_function[target=aten.add_.Tensor](args = (%x, %y))\n"
                         "    return m\n"))
                .find("must define every value before its use"),
            std::string::npos);
}

TEST(Functionalize, FxPlaceholderNamesDifferingFromTheirTarget) {
  // FX prints an argument W as %w_1 = placeholder[target=W_1]: the node's name is what counts.
  Graph g = parse_graph(
      "graph():\n"
      "    %w_1 : [num_users=1] = placeholder[target=W_1]\n"
      "    %relu : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = "
      "(%w_1,), kwargs = {})\n"
      "    return relu\n",
      "fx.stax", [] {
        ParseOptions o;
        o.placeholder_meta["w_1"] = TensorMeta::contiguous({2}, DType::Float32);
        return o;
      }());
  EXPECT_NE(g.find("w_1"), nullptr);
}

}  // namespace
