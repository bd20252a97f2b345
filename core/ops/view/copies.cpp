// The *_copy ops (view_copy, permute_copy, expand_copy ... unbind_copy, split_with_sizes_copy):
// the functional forms of the view ops that functionalization passes and torch.export emit (and
// OpInfo tests), each with aten's exact schema. Each is its view op followed by a clone, so it
// takes the view op's arguments, checks and inference, a fresh row-major result, and the view
// op's VJP / JVP through that decomposition (clone's derivative is the identity):
//   single results   Composite: one builder (infer_by_building) gives inference and the
//                    decomposition; the interpreter runs the decomposition; compiled, the view
//                    becomes an index transform and the clone a copy kernel
//   lists            unbind_copy / split_copy / split_with_sizes_copy: tuple-valued, expanded by
//                    the view op's own expansion with every element cloned
// The parameters of a *_copy op are its view op's, by name, so the call is forwarded as it is.
// The copies of views that take complex tensors take them too (OpDef::complex; docs/complex.md).
// Here too: unflatten.int, a reshape built the same way.
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/ops/common/built_ops.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

struct ViewCopy {
  const char* schema;  // aten's schema of the *_copy op
  const char* view;    // the view op it copies
  bool complex;        // takes complex tensors (as the view op does)
  bool differentiable = true;
};

const std::vector<ViewCopy>& view_copies() {
  static const std::vector<ViewCopy> table = {
      {"view_copy(Tensor self, SymInt[] size) -> Tensor", "view.default", true},
      {"_reshape_alias_copy(Tensor self, SymInt[] size, SymInt[] stride) -> Tensor",
       "_reshape_alias.default", true},
      {"permute_copy(Tensor self, int[] dims) -> Tensor", "permute.default", true},
      {"expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor",
       "expand.default", true},
      {"transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor", "transpose.int", true},
      {"t_copy(Tensor self) -> Tensor", "t.default", true},
      {"squeeze_copy(Tensor self) -> Tensor", "squeeze.default", true},
      {"squeeze_copy.dim(Tensor self, int dim) -> Tensor", "squeeze.dim", true},
      {"squeeze_copy.dims(Tensor self, int[] dim) -> Tensor", "squeeze.dims", true},
      {"unsqueeze_copy(Tensor self, int dim) -> Tensor", "unsqueeze.default", true},
      {"slice_copy.Tensor(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, "
       "SymInt step=1) -> Tensor",
       "slice.Tensor", true},
      {"select_copy.int(Tensor self, int dim, SymInt index) -> Tensor", "select.int", true},
      {"as_strided_copy(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
       "-> Tensor",
       "as_strided.default", true},
      {"alias_copy(Tensor self) -> Tensor", "alias.default", true},
      {"detach_copy(Tensor self) -> Tensor", "detach.default", true, false},
      {"diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor",
       "diagonal.default", false},
      {"unfold_copy(Tensor self, int dimension, int size, int step) -> Tensor", "unfold.default",
       false},
  };
  return table;
}

const std::vector<ViewCopy>& list_copies() {
  static const std::vector<ViewCopy> table = {
      {"unbind_copy.int(Tensor self, int dim=0) -> Tensor[]", "unbind.int", true},
      {"split_copy.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]",
       "split.Tensor", true},
      {"split_with_sizes_copy(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]",
       "split_with_sizes.default", true},
  };
  return table;
}

// The call's arguments by the schema's parameters: positional ones in order, kwarg-only ones as
// kwargs (the view op declares the same parameters).
std::pair<std::vector<Arg>, Kwargs> forwarded(const ExpandCall& c) {
  std::vector<Arg> args;
  Kwargs kwargs;
  for (const ParamSpec& p : c.op().schema.params) {
    if (p.kwarg_only)
      kwargs.emplace_back(p.name, c.get(p.name));
    else
      args.push_back(c.get(p.name));
  }
  return {std::move(args), std::move(kwargs)};
}

BuildFn copy_of(std::string view) {
  return [view](Graph& g, const ExpandCall& c) {
    auto [args, kwargs] = forwarded(c);
    return g.call("clone", {g.call(view, std::move(args), std::move(kwargs))});
  };
}

ExpandFn list_copy_of(std::string view) {
  return [view](Graph& g, const ExpandCall& c) {
    const ExpandFn* expand = default_expansions().find(view);
    if (!expand) c.fail("no expansion of " + view);
    auto [args, kwargs] = forwarded(c);
    ExpandCall inner(default_registry().get(view, c.where()), std::move(args), std::move(kwargs),
                     c.where());
    std::vector<Node*> out = (*expand)(g, inner);
    for (Node*& e : out) e = g.call("clone", {e});
    return out;
  };
}

std::string name_of(const ViewCopy& v) { return parse_schema(v.schema).name; }

// unflatten.int (torch.export's training IR keeps it: nn.MultiheadAttention's in-projection):
// dim split into `sizes` (one of them may be -1), as a reshape.
Node* unflatten(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  const Shape& s = x->shape();
  if (s.empty())  // torch: "Dimension specified as 0 but tensor has no dimensions"
    c.fail("unflatten: dimension " + std::to_string(c.get("dim").to_int()) +
           " specified but the tensor has no dimensions");
  int64_t d = wrap_dim(c.get("dim").to_int(), static_cast<int64_t>(s.size()), c.where());
  std::vector<int64_t> sizes = c.get("sizes").to_int_list();
  if (sizes.empty()) c.fail("unflatten: sizes must be non-empty");
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (infer >= 0) c.fail("unflatten: only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else if (sizes[i] < 0) {
      c.fail("unflatten: invalid size " + std::to_string(sizes[i]));
    } else {
      known *= sizes[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || s[d] % known != 0)
      c.fail("unflatten: cannot infer the size -1 of " + shape_list_str(sizes) + " for dim " +
             std::to_string(d) + " of size " + std::to_string(s[d]));
    sizes[static_cast<size_t>(infer)] = s[d] / known;
  } else if (known != s[d]) {
    c.fail("unflatten: Provided sizes " + shape_list_str(sizes) + " don't multiply up to the size "
           "of dim " + std::to_string(d) + " (" + std::to_string(s[d]) + ") in the input tensor");
  }
  Shape out(s.begin(), s.begin() + d);
  out.insert(out.end(), sizes.begin(), sizes.end());
  out.insert(out.end(), s.begin() + d + 1, s.end());
  return g.call("reshape", {x, Arg(out)});
}

const std::vector<BuiltOp>& built_copies() {
  static const std::vector<BuiltOp> table = [] {
    std::vector<BuiltOp> ops;
    for (const ViewCopy& v : view_copies())
      ops.push_back({v.schema, copy_of(v.view), v.differentiable, v.complex});
    ops.push_back({"unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)", unflatten,
                   true, true});
    return ops;
  }();
  return table;
}

}  // namespace

void register_view_copy_ops(OpRegistry& r) {
  add_built_ops(r, built_copies());
  for (const ViewCopy& v : list_copies())
    r.add_multi(v.schema, OpCategory::Composite, infer_by_expansion(name_of(v))).complex = v.complex;
}

void register_view_copy_expansions(ExpansionTable& t) {
  for (const ViewCopy& v : list_copies()) t.add(name_of(v), list_copy_of(v.view));
}

void register_view_copy_decompositions(DecompositionTable& t) {
  add_built_decompositions(t, built_copies());
}

void register_view_copy_kernels(InterpreterTable& t) { add_built_kernels(t, built_copies()); }

void register_view_copy_vjps(VjpTable& t) { add_built_vjps(t, built_copies()); }

void register_view_copy_jvps(JvpTable& t) { add_built_jvps(t, built_copies()); }

}  // namespace stax
