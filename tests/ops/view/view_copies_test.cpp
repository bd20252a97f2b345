// The *_copy ops (core/ops/view/copies.cpp): each equals its view op made contiguous, with the
// view op's checks; fresh row-major results; the list forms (unbind_copy, split_copy,
// split_with_sizes_copy) element by element. Interpreted and compiled on cpu_cpp (bit for bit).
// Their gradients: tests/ops/functional_form_cases.h (autodiff_vjp_test / autodiff_functional_test).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/graph/multi_output.h"
#include "core/support/error.h"
#include "tests/support/op_check.h"

using namespace stax;
using namespace stax::test;

namespace {

Tensor seq(const Shape& s, DType t = DType::Float64) {
  std::vector<double> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::from_vector(s, v, t);
}

std::vector<double> values_of(const Tensor& t) {
  Tensor c = t.contiguous();
  std::vector<double> v;
  for (int64_t i = 0; i < c.numel(); ++i) v.push_back(c.get_double(i));
  return v;
}

struct Pair {
  const char* copy;
  const char* view;
  std::vector<Arg> args;
};

}  // namespace

TEST(ViewCopies, EqualTheirViewMadeContiguous) {
  Tensor x = seq({2, 3, 4});
  const std::vector<Pair> pairs = {
      {"view_copy", "view", {std::vector<int64_t>{4, -1}}},
      {"permute_copy", "permute", {std::vector<int64_t>{2, 0, 1}}},
      {"transpose_copy.int", "transpose.int", {0, 2}},
      {"squeeze_copy.dim", "squeeze.dim", {0}},
      {"unsqueeze_copy", "unsqueeze", {1}},
      {"slice_copy.Tensor", "slice.Tensor", {2, 1, 4, 2}},
      {"select_copy.int", "select.int", {1, -1}},
      {"as_strided_copy", "as_strided", {std::vector<int64_t>{3, 2}, std::vector<int64_t>{5, 2}, 1}},
      {"alias_copy", "alias", {}},
      {"detach_copy", "detach", {}},
      {"diagonal_copy", "diagonal", {1, 1, 2}},
      {"unfold_copy", "unfold", {2, 2, 1}},
      {"expand_copy", "expand", {std::vector<int64_t>{3, 2, 3, 4}}},
  };
  for (const Pair& p : pairs) {
    SCOPED_TRACE(p.copy);
    OpRun copy = run({x}, op(p.copy, p.args));
    Graph g;
    Node* in = g.placeholder("x", x.meta());
    std::vector<Arg> args{Arg(in)};
    args.insert(args.end(), p.args.begin(), p.args.end());
    Node* v = g.call(p.view, args);
    g.output({v});
    Tensor want = interpret(g, {x}).at(0);
    EXPECT_EQ(copy.out.sizes(), want.sizes());
    EXPECT_TRUE(copy.out.is_contiguous());
    expect_values(copy.out, values_of(want), 0, p.copy);
  }
  // t_copy / squeeze_copy / squeeze_copy.dims on their own shapes
  expect_values(run({seq({2, 3})}, op("t_copy")).out, {0, 3, 1, 4, 2, 5}, 0, "t_copy");
  EXPECT_EQ(run({seq({1, 3, 1})}, op("squeeze_copy")).out.sizes(), (Shape{3}));
  EXPECT_EQ(run({seq({1, 3, 1})}, op("squeeze_copy.dims", {std::vector<int64_t>{0, 2}})).out.sizes(),
            (Shape{3}));
  expect_values(run({seq({2, 3})}, op("_reshape_alias_copy", {std::vector<int64_t>{3, 2},
                                                                std::vector<int64_t>{2, 1}}))
                    .out,
                {0, 1, 2, 3, 4, 5}, 0, "_reshape_alias_copy");
}

TEST(ViewCopies, ResultIsContiguousInference) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3, 4});
  Node* p = g.call("permute_copy", {x, std::vector<int64_t>{2, 0, 1}});
  EXPECT_EQ(p->shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p->meta().strides, (Shape{6, 3, 1}));
  EXPECT_EQ(g.registry().get("view_copy").category, OpCategory::Composite);
  EXPECT_EQ(g.registry().get("view_copy").schema.text, "view_copy(Tensor self, SymInt[] size) -> Tensor");
}

TEST(ViewCopies, KeepTheViewsChecks) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3});
  EXPECT_THROW(g.call("view_copy", {x, std::vector<int64_t>{4, 2}}), Error);
  EXPECT_THROW(g.call("permute_copy", {x, std::vector<int64_t>{0, 0}}), Error);
  EXPECT_THROW(g.call("select_copy.int", {x, 0, 2}), Error);
  EXPECT_THROW(g.call("expand_copy", {x, std::vector<int64_t>{3, 3}}), Error);
  try {
    g.call("transpose_copy.int", {x, 0, 5});
    FAIL() << "transpose_copy accepted dim 5";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
}

TEST(ViewCopies, ListFormsCopyEveryElement) {
  Tensor x = seq({3, 4});
  Graph g;
  Node* in = g.placeholder("x", x.meta());
  Node* u = g.call("unbind_copy.int", {in, 1});
  Node* s = g.call("split_copy.Tensor", {in, 3, 1});
  Node* w = g.call("split_with_sizes_copy", {in, std::vector<int64_t>{1, 2}, 0});
  std::vector<Node*> outs;
  for (int64_t i = 0; i < 4; ++i) outs.push_back(g.call("getitem", {u, i}));
  for (int64_t i = 0; i < 2; ++i) outs.push_back(g.call("getitem", {s, i}));
  for (int64_t i = 0; i < 2; ++i) outs.push_back(g.call("getitem", {w, i}));
  g.output(outs);
  std::vector<Tensor> r = interpret(g, {x});
  expect_values(r[0], {0, 4, 8}, 0, "unbind_copy 0");
  expect_values(r[3], {3, 7, 11}, 0, "unbind_copy 3");
  expect_values(r[4], {0, 1, 2, 4, 5, 6, 8, 9, 10}, 0, "split_copy 0");
  expect_values(r[5], {3, 7, 11}, 0, "split_copy 1");
  expect_values(r[6], {0, 1, 2, 3}, 0, "split_with_sizes_copy 0");
  expect_values(r[7], {4, 5, 6, 7, 8, 9, 10, 11}, 0, "split_with_sizes_copy 1");
  for (const Tensor& t : r) EXPECT_TRUE(t.is_contiguous());
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> c = cg.run({x});
  for (size_t i = 0; i < r.size(); ++i) EXPECT_TRUE(bitwise_equal(c[i], r[i])) << "output " << i;
}

// unflatten.int (kept by torch.export's training IR): dim split into sizes, one -1 inferred, the
// values in row-major order (a reshape); torch's errors for sizes that do not multiply up.
TEST(ViewCopies, UnflattenSplitsOneDim) {
  Tensor x = seq({2, 12});
  OpRun r = run({x}, op("unflatten.int", {-1, std::vector<int64_t>{2, -1, 3}}));
  EXPECT_EQ(r.out.sizes(), (Shape{2, 2, 2, 3}));
  expect_values(r.out, values_of(x), 0, "unflatten.int");
  Graph g;
  Node* p = g.placeholder("p", {2, 12});
  EXPECT_EQ(g.call("unflatten.int", {p, 0, std::vector<int64_t>{1, 2}})->shape(), (Shape{1, 2, 12}));
  try {  // a 0-d tensor has no dim to split (torch: "tensor has no dimensions")
    g.call("unflatten.int", {g.placeholder("s", Shape{}), -1, std::vector<int64_t>{1}});
    ADD_FAILURE() << "unflatten accepted a 0-d tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no dimensions"), std::string::npos) << e.what();
  }
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{5, 2}, std::vector<int64_t>{-1, -1},
                                         std::vector<int64_t>{5, -1}, std::vector<int64_t>{}}) {
    try {
      g.call("unflatten.int", {p, 1, bad});
      ADD_FAILURE() << "unflatten accepted sizes of " << bad.size() << " elements";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("unflatten"), std::string::npos) << e.what();
    }
  }
}
