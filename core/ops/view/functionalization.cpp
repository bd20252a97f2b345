// The view ops for functionalization (core/graph/functionalize.h): which ops alias their input,
// and how a view's new value goes back into its base when an in-place op writes through it.
// reshape is not listed: torch copies a non-contiguous input, so its result is no alias then.
#include <numeric>

#include "core/graph/functionalize.h"
#include "core/graph/op_registry.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

// Same elements in the same (row-major) order: the base is the value reshaped back.
Node* reshape_back(Graph& g, const Node&, Node* base, Node* value) {
  if (value->shape() == base->shape()) return value;
  return g.call("reshape.default", {value, Arg(base->shape())});
}

Node* permute_back(Graph& g, const Node& view, Node* base, Node* value) {
  std::vector<int64_t> dims = view.arg("dims").to_int_list();
  int64_t rank = base->meta().dim();
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[static_cast<size_t>(wrap_dim(dims[i], rank, "%" + view.name()))] =
        static_cast<int64_t>(i);
  return g.call("permute.default", {value, Arg(inverse)});
}

Node* transpose_back(Graph& g, const Node& view, Node*, Node* value) {
  return g.call("transpose.int", {value, view.arg("dim0"), view.arg("dim1")});
}

Node* t_back(Graph& g, const Node&, Node*, Node* value) { return g.call("t.default", {value}); }

Node* select_back(Graph& g, const Node& view, Node* base, Node* value) {
  return g.call("select_scatter.default", {base, value, view.arg("dim"), view.arg("index")});
}

Node* slice_back(Graph& g, const Node& view, Node* base, Node* value) {
  return g.call("slice_scatter.default", {base, value, view.arg("dim"), view.arg("start"),
                                          view.arg("end"), view.arg("step")});
}

// An element of split / chunk / tensor_split: a slice along `dim` starting after the elements
// before it.
Node* split_element_back(Graph& g, const Node& item, Node* base, Node* value) {
  const Node& tuple = *item.input(0);
  int64_t k = item.args()[1].to_int();
  int64_t dim = wrap_dim(tuple.arg("dim").to_int(), base->meta().dim(), "%" + tuple.name());
  int64_t start = 0;
  for (int64_t i = 0; i < k; ++i)
    start += tuple.tuple_metas()[static_cast<size_t>(i)].sizes[static_cast<size_t>(dim)];
  int64_t len = tuple.tuple_metas()[static_cast<size_t>(k)].sizes[static_cast<size_t>(dim)];
  return g.call("slice_scatter.default",
                {base, value, Arg(dim), Arg(start), Arg(start + len), Arg(int64_t{1})});
}

Node* unbind_element_back(Graph& g, const Node& item, Node* base, Node* value) {
  const Node& tuple = *item.input(0);
  return g.call("select_scatter.default", {base, value, tuple.arg("dim"), item.args()[1]});
}

}  // namespace

void register_view_functionalization(FunctionalizationTable& t, const OpRegistry& r) {
  auto add = [&](const char* op, ViewScatterFn fn) {
    if (r.find(op)) t.add_view(op, std::move(fn));
  };
  for (const char* op : {"view.default", "_unsafe_view.default", "_reshape_alias.default",
                         "alias.default", "detach.default", "squeeze.default", "squeeze.dim",
                         "squeeze.dims", "unsqueeze.default"})
    add(op, reshape_back);
  add("permute.default", permute_back);
  add("transpose.int", transpose_back);
  add("t.default", t_back);
  add("select.int", select_back);
  add("slice.Tensor", slice_back);
  for (const char* op : {"split.Tensor", "split.sizes", "split_with_sizes.default",
                         "chunk.default", "tensor_split.indices", "tensor_split.sections",
                         "unsafe_split.Tensor", "unsafe_split_with_sizes.default"})
    add(op, split_element_back);
  add("unbind.int", unbind_element_back);
  // Views Stax reads but cannot write back: several view elements are one base element (expand,
  // unfold, as_strided), or Stax lacks the scatter op (diagonal: diagonal_scatter).
  for (const char* op : {"expand.default", "as_strided.default", "unfold.default"})
    add(op, nullptr);
  if (r.find("diagonal_scatter.default"))
    add("diagonal.default", [](Graph& g, const Node& view, Node* base, Node* value) {
      return g.call("diagonal_scatter.default", {base, value, view.arg("offset"),
                                                 view.arg("dim1"), view.arg("dim2")});
    });
  else
    add("diagonal.default", nullptr);
}

}  // namespace stax
