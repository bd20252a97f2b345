// The size queries torch.export and make_fx(tracing_mode="symbolic") record: sym_size.int,
// sym_stride.int, sym_numel and sym_storage_offset. Stax compiles static shapes, so each is a
// number known when the graph is built, folded into every int / float / Scalar argument it feeds
// (OpDef::static_value, bound by bind_call): `view(%x, [%sym_size_int, -1])` binds as
// `view(%x, [4, -1])`, and the query node is left without users. Read as a tensor (returned by
// the graph) it is a 0-d int64 tensor: its decomposition is scalar_tensor of the value.
//
// Values are those of Stax's layout: sizes and strides of the input's TensorMeta (a view's own
// strides, core/ops/view/layout.h), the storage offset accumulated along the input's chain of
// views (0 for a placeholder or any computed value, which Stax stores densely from element 0).
#include <algorithm>
#include <string>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"
#include "core/ops/view/layout.h"
#include "core/support/error.h"

namespace stax {

namespace {

const TensorMeta& input_meta(const Node& n) { return n.input(0)->meta(); }

int64_t dim_of(const Node& n) {
  return wrap_dim(n.arg("dim").to_int(), std::max<int64_t>(input_meta(n).dim(), 1),
                  "%" + n.name());
}

// The storage offset (in elements) of a value: accumulated through the views that produced it.
int64_t storage_offset(const Node& x) {
  if (!x.is_call() || x.op()->category != OpCategory::View || !is_view_layout_op(x.target()))
    return 0;
  const Node* base = x.input(0);
  StridedLayout in{base->shape(), base->meta().strides, storage_offset(*base), false};
  ViewCall call{[&x](std::string_view p) -> const Arg& { return x.arg(p); },
                [&x](const std::string& m) { throw Error("shape", "%" + x.name(), m); }};
  StridedLayout out = view_layout(x.target(), in, call);
  return out.copy ? 0 : out.offset;
}

int64_t query_value(const Node& n) {
  const TensorMeta& m = input_meta(n);
  const std::string& base = n.op()->schema.base;
  if (base == "sym_size") return m.dim() == 0 ? 1 : m.sizes[static_cast<size_t>(dim_of(n))];
  if (base == "sym_stride") return m.dim() == 0 ? 1 : m.strides[static_cast<size_t>(dim_of(n))];
  if (base == "sym_numel") return m.numel();
  return storage_offset(*n.input(0));
}

TensorMeta query_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  if (c.op().schema.index_of("dim") >= 0) {
    if (in.dim() == 0)  // as torch: a 0-d tensor has no size or stride to ask for
      c.fail("dimension specified as " + std::to_string(c.get("dim").to_int()) +
             " but tensor has no dimensions");
    int64_t rank = in.dim();
    int64_t d = c.get("dim").to_int();
    if (d < -rank || d >= rank)
      c.fail("Dimension out of range (expected to be in range of [" + std::to_string(-rank) +
             ", " + std::to_string(rank - 1) + "], but got " + std::to_string(d) + ")");
  }
  return TensorMeta::contiguous({}, DType::Int64, in.device);
}

constexpr const char* kQueries[] = {
    "sym_size.int(Tensor self, int dim) -> SymInt",
    "sym_stride.int(Tensor self, int dim) -> SymInt",
    "sym_numel(Tensor self) -> SymInt",
    "sym_storage_offset(Tensor self) -> SymInt",
};

}  // namespace

void register_size_query_ops(OpRegistry& r) {
  for (const char* schema : kQueries) {
    OpDef& d = r.add(schema, OpCategory::Composite, Promotion::None, query_rule);
    d.differentiable = false;
    d.static_value = [](const Node& n) { return Arg(query_value(n)); };
  }
}

void register_size_query_decompositions(DecompositionTable& t) {
  for (const char* schema : kQueries)
    t.add(parse_schema(schema).name, [](Graph& g, const Node& n) {
      return g.call("scalar_tensor", {query_value(n)}, {{"dtype", DType::Int64}});
    });
}

void register_size_query_kernels(InterpreterTable& t) {
  for (const char* schema : kQueries) t.add(parse_schema(schema).name, kernels::run_decomposition);
}

}  // namespace stax
