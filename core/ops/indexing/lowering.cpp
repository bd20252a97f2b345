// Lowering rules of indirect reads and concatenation (seed §6.2, Table 6.1).
//   gather / index_select / index.Tensor: the i-th element reads x at an index read from memory,
//     turned into an index variable with ops.indirect_indexing (bounds are checked; negative
//     indices wrap for index.Tensor only, as in eager mode: gather and index_select reject them,
//     so the compiled graph accepts exactly the inputs the interpreter accepts); an index computed from the loop variables is propagated into the expression
//     instead (Example 6.3).
//   cat: one pointwise node; for every input a read at the clamped local index, merged by
//     conditional selection on the position along the concatenated dimension.
//   scatter_add: the ExternKernel "scatter_add" (self, index, src realized; scalars {dim}) for
//     float32 / float64 / int32 / int64 values and int64 indices (the embedding's gradient): the
//     interpreter's additions in its order, bit for bit (cpu_cpp: plugins/cpu_cpp/
//     scatter_kernel.cpp); on a backend without that extern the executor runs the interpreter's
//     kernel (a counted fallback). Other dtypes decline (FallbackKernel).
//   index_put: the ExternKernel "index_put" (self, the index tensors, values; scalars
//     {accumulate, the indices' count, a flag per position}) for the same value dtypes and int64
//     index tensors (nearest upsampling's gradient); bool masks decline.
// Boolean-mask indexing and the other scatter writes have no rule (FallbackKernel).
#include <algorithm>
#include <string>
#include <vector>

#include "core/graph/op_traits.h"
#include "core/ops/pointwise/formulas.h"
#include "core/ops/common/lowering_helpers.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

Val load_index(OpsBuilder& b, const Loader& index, const Index& at) {
  return b.to_dtype(index(b, at), DType::Int64);
}

IRPtr gather(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self"), index = g.input(n, "index");
  size_t d = static_cast<size_t>(
      wrap_dim(n.arg("dim").to_int(), static_cast<int64_t>(x->size().size()), "%" + n.name()));
  int64_t extent = x->size().empty() ? 1 : x->size()[d];
  Loader xl = x->make_loader(), il = index->make_loader();
  bool scalar = x->size().empty();
  size_t rank = x->size().size();
  Loader inner = [xl, il, d, extent, scalar, rank](OpsBuilder& b, const Index& at) {
    Expr e = b.indirect_indexing(load_index(b, il, at), extent, /*check=*/true,
                                 /*wrap_negative=*/false);
    if (scalar) return xl(b, {});
    // An empty index may have another rank than x (as torch allows): the body never runs then,
    // but its index must still have x's rank.
    Index xi(rank, Expr(0));
    for (size_t k = 0; k < rank && k < at.size(); ++k) xi[k] = at[k];
    xi[d] = e;
    return xl(b, xi);
  };
  const TensorMeta& m = n.meta();
  return g.box(std::make_shared<Pointwise>(m.device, m.dtype, m.sizes, inner), {x, index});
}

IRPtr index_select(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self"), index = g.input(n, "index");
  int64_t rank = static_cast<int64_t>(x->size().size());
  size_t d = static_cast<size_t>(wrap_dim(n.arg("dim").to_int(), rank, "%" + n.name()));
  int64_t extent = rank == 0 ? 1 : x->size()[d];
  bool vector_index = !index->size().empty();
  Loader xl = x->make_loader(), il = index->make_loader();
  Loader inner = [xl, il, d, extent, rank, vector_index](OpsBuilder& b, const Index& at) {
    Index ii;
    // A 0-d x gives a 0-d result: its one-element index is read at 0.
    if (vector_index) ii.push_back(rank == 0 ? (at.empty() ? Expr(0) : at[0]) : at[d]);
    Expr e = b.indirect_indexing(load_index(b, il, ii), extent, /*check=*/true,
                                 /*wrap_negative=*/false);
    if (rank == 0) return xl(b, {});
    Index xi = at;
    xi[d] = e;
    return xl(b, xi);
  };
  const TensorMeta& m = n.meta();
  return g.box(std::make_shared<Pointwise>(m.device, m.dtype, m.sizes, inner), {x, index});
}

// x[i_0, ..., i_k] with index tensors (None keeps a dimension). Declines (FallbackKernel) for
// boolean masks.
IRPtr index_tensor(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  Shape in = x->size();
  std::vector<Node*> idx_nodes = n.arg("indices").to_node_list();
  std::vector<IRPtr> idx(in.size());
  std::vector<size_t> indexed;
  std::vector<Shape> shapes;
  std::vector<IRPtr> inputs{x};
  for (size_t k = 0; k < idx_nodes.size() && k < in.size(); ++k) {
    if (!idx_nodes[k]) continue;
    DType t = idx_nodes[k]->dtype();
    if (t == DType::Bool || t == DType::UInt8) return nullptr;
    idx[k] = g.value(idx_nodes[k]);
    indexed.push_back(k);
    shapes.push_back(idx[k]->size());
    inputs.push_back(idx[k]);
  }
  if (indexed.empty()) return x;
  Shape bshape = broadcast_sizes(shapes);
  bool adjacent = indexed.back() - indexed.front() + 1 == indexed.size();
  size_t bstart = adjacent ? indexed.front() : 0;
  // The result position of every non-indexed input dimension: adjacent index tensors put their
  // broadcast dims where they stand, separated ones put them first (NumPy rules).
  std::vector<int64_t> pos(in.size(), -1);
  size_t nb = bshape.size(), rank_among_rest = 0;
  for (size_t dd = 0; dd < in.size(); ++dd) {
    if (idx[dd]) continue;
    if (!adjacent)
      pos[dd] = static_cast<int64_t>(nb + rank_among_rest++);
    else if (dd < indexed.front())
      pos[dd] = static_cast<int64_t>(dd);
    else
      pos[dd] = static_cast<int64_t>(dd - indexed.size() + nb);
  }
  std::vector<Loader> loaders(in.size());
  for (size_t k : indexed) loaders[k] = broadcast_loader(idx[k], bshape);
  Loader xl = x->make_loader();
  Loader inner = [xl, loaders, pos, in, bstart, nb](OpsBuilder& b, const Index& at) {
    Index bi(at.begin() + static_cast<std::ptrdiff_t>(bstart),
             at.begin() + static_cast<std::ptrdiff_t>(bstart + nb));
    Index xi(in.size());
    for (size_t dd = 0; dd < in.size(); ++dd) {
      if (loaders[dd])
        xi[dd] = b.indirect_indexing(load_index(b, loaders[dd], bi), in[dd]);
      else
        xi[dd] = at[static_cast<size_t>(pos[dd])];
    }
    return xl(b, xi);
  };
  const TensorMeta& m = n.meta();
  return g.box(std::make_shared<Pointwise>(m.device, m.dtype, m.sizes, inner), inputs);
}

IRPtr cat(GraphLowering& g, const Node& n) {
  const TensorMeta& m = n.meta();
  size_t d = static_cast<size_t>(
      wrap_dim(n.arg("dim").to_int(), static_cast<int64_t>(m.sizes.size()), "%" + n.name()));
  struct Part {
    Loader load;
    int64_t offset, size;
  };
  std::vector<Part> parts;
  std::vector<IRPtr> inputs;
  int64_t offset = 0;
  for (Node* t : n.arg("tensors").to_node_list()) {
    IRPtr v = g.value(t);
    // torch skips legacy empty 1-D tensors and empty slices.
    if (v->size().size() != m.sizes.size() || v->size()[d] == 0) continue;
    parts.push_back({v->make_loader(), offset, v->size()[d]});
    inputs.push_back(v);
    offset += v->size()[d];
  }
  if (parts.size() == 1 && inputs[0]->dtype() == m.dtype) return inputs[0];
  DType out = m.dtype, dt = computation_dtype(out);
  if (parts.empty()) {  // every input is empty, and so is the result: nothing is ever read
    Loader zero = [out](OpsBuilder& b, const Index&) {
      return b.constant(ScalarValue::integer(0), out);
    };
    return g.box(std::make_shared<Pointwise>(m.device, out, m.sizes, zero), {});
  }
  Loader inner = [parts, d, dt, out](OpsBuilder& b, const Index& at) {
    std::vector<Val> values;
    for (const Part& p : parts) {
      Index local = at;
      local[d] = min(max(at[d] - Expr(p.offset), Expr(0)), Expr(p.size - 1));
      values.push_back(b.to_dtype(p.load(b, local), dt));
    }
    Val result = values.back();
    for (size_t k = parts.size() - 1; k-- > 0;) {
      Val position = b.index_expr(at[d], DType::Int64);
      Val end = b.constant(ScalarValue::integer(parts[k + 1].offset), DType::Int64);
      Val inside = b.lt(position, end);
      result = b.where(inside, values[k], result);
    }
    return b.to_dtype(result, out);
  };
  return g.box(std::make_shared<Pointwise>(m.device, out, m.sizes, inner), inputs);
}

// The value dtypes of the externs "scatter_add" and "index_put".
bool extern_values(DType dt) {
  return dt == DType::Float32 || dt == DType::Float64 || dt == DType::Int32 || dt == DType::Int64;
}

IRPtr scatter_add(GraphLowering& g, const Node& n) {
  const TensorMeta& m = n.meta();
  const DType dt = m.dtype;
  if (!extern_values(dt)) return nullptr;
  if (!n.arg("index").is_node() || n.arg("index").node()->dtype() != DType::Int64) return nullptr;
  std::vector<IRPtr> values;
  std::vector<KernelInput> inputs;
  for (const char* p : {"self", "index", "src"}) {
    values.push_back(g.input(n, p));
    inputs.push_back(g.realize_input(values.back()));
  }
  std::vector<double> scalars{static_cast<double>(n.arg("dim").to_int())};
  auto k = std::make_shared<ExternKernel>(g.new_buffer_name(),
                                          Layout::fixed_contiguous(m.device, m.dtype, m.sizes),
                                          "scatter_add", std::move(inputs), std::move(scalars), &n);
  k->add_origins(g.origins_for(values));
  g.register_buffer(k);
  return std::make_shared<StorageBox>(k);
}

IRPtr index_put(GraphLowering& g, const Node& n) {
  const TensorMeta& m = n.meta();
  if (!extern_values(m.dtype) || m.dim() == 0) return nullptr;
  std::vector<Node*> idx = n.arg("indices").to_node_list();
  if (static_cast<int64_t>(idx.size()) > m.dim()) return nullptr;
  std::vector<double> scalars{n.arg("accumulate").to_bool() ? 1.0 : 0.0,
                              static_cast<double>(idx.size())};
  // The inputs in argument order (self, the index tensors, values), as the runtime's interpreter
  // path binds them on a backend without the extern.
  std::vector<IRPtr> values{g.input(n, "self")};
  for (Node* i : idx) {
    scalars.push_back(i ? 1.0 : 0.0);
    if (!i) continue;
    if (i->dtype() != DType::Int64) return nullptr;  // bool / uint8 masks, int32 indices
    values.push_back(g.value(i));
  }
  if (values.size() == 1) return nullptr;
  values.push_back(g.input(n, "values"));
  std::vector<KernelInput> inputs;
  for (const IRPtr& v : values) inputs.push_back(g.realize_input(v));
  auto k = std::make_shared<ExternKernel>(g.new_buffer_name(),
                                          Layout::fixed_contiguous(m.device, m.dtype, m.sizes),
                                          "index_put", std::move(inputs), std::move(scalars), &n);
  k->add_origins(g.origins_for(values));
  g.register_buffer(k);
  return std::make_shared<StorageBox>(k);
}

}  // namespace

void register_indexing_rules(LoweringTable& t) {
  t.add("scatter_add.default", scatter_add, true);
  t.add("index_put.default", index_put, true);
  t.add("gather.default", gather);
  t.add("index_select.default", index_select);
  t.add("index.Tensor", index_tensor);
  t.add("cat.default", cat);
}

// The scatter writes (no rule above) write their whole output buffer: the partitioner never
// recomputes them and materializes their inputs (core/graph/op_traits.h).
void register_indexing_traits(OpTraitTable& t) {
  for (const char* op : {"index_put", "scatter", "scatter_add"}) t.add_traits(op, kTraitOpaque);
}

}  // namespace stax
