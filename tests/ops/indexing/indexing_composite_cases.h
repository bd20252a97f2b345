// Autodiff cases of the shape and indexing Composite ops of issue 14: trace, diagonal, diag,
// diag_embed, take, put, index_fill / copy / reduce, rot90, narrow_copy, unfold, the scatters,
// masked_scatter, linalg_cross, block_diag.
// (Included by tests/autodiff/autodiff_cases.h, which says how they are checked.)
#pragma once

#include <vector>

namespace stax::testing {

inline std::vector<Case> indexing_composite_cases() {
  std::vector<Case> out;
  auto add = case_adder(out);
  add("trace", {U({4, 3})}, op1("trace"));
  add("diagonal", {U({2, 4, 3})}, op1("diagonal", {1, 2, 1}));
  add("diag_1d", {U({3})}, op1("diag", {-1}));
  add("diag_embed", {U({2, 3})}, op1("diag_embed", {1, 0, 2}));
  add("take", {U({3, 4}), Idx({5}, 12)}, op2("take"));
  add("index_fill", {U({3, 4}), Idx({2}, 4, 0)}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("index_fill.int_Scalar", {x[0], 1, x[1], 2.5});
  });
  add("rot90", {U({2, 3, 4})}, op1("rot90", {3, L({0, 2})}));
  add("narrow_copy", {U({4, 5})}, op1("narrow_copy", {1, -3, 2}));
  add("linalg_cross", {U({2, 3}), U({2, 3})}, op2("linalg_cross"));
  add("index_copy", {U({4, 3}), Idx({2}, 4, 0), U({2, 3})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("index_copy", {x[0], 0, x[1], x[2]});
      });
  add("masked_scatter", {U({3, 4}), Const(Fixed({4}, {1, 0, 1, 1})), U({12})},
      [](Graph& g, const std::vector<Node*>& x) {
        Node* m = g.call("ne.Scalar", {x[1], 0});
        return g.call("masked_scatter", {x[0], m, x[2]});
      });
  add("unfold", {U({3, 7})}, op1("unfold", {1, 3, 2}));
  add("slice_scatter", {U({5, 3}), U({2, 3})}, op2("slice_scatter", {0, 1, 5, 2}));
  add("select_scatter", {U({5, 3}), U({3})}, op2("select_scatter", {0, -2}));
  add("index_fill_tensor", {U({3, 4}), Idx({2}, 4, 0), U({})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("index_fill.int_Tensor", {x[0], 1, x[1], x[2]});
      });
  add("index_reduce_mean", {U({4, 3}), Idx({5}, 4), U({5, 3})},
      [](Graph& g, const std::vector<Node*>& x) {
        return g.call("index_reduce", {x[0], 0, x[1], x[2], "mean"});
      });
  add("put", {U({3, 4}), Idx({3}, 12, 0), U({3})}, op3("put"));
  add("block_diag", {U({2, 3}), U({2}), U({})}, [](Graph& g, const std::vector<Node*>& x) {
    return g.call("block_diag", {Arg(std::vector<Node*>{x[0], x[1], x[2]})});
  });
  return out;
}

}  // namespace stax::testing
