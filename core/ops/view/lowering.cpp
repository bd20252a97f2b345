// Lowering rules of view ops (seed §6.4, Prop. 6.2): no node of their own. Each rule states its
// index transform π (result index -> input index); GraphLowering::view() turns it into new
// strides and offset over fixed storage (a ReinterpretView, Listing 6.3's `i0 + 256*i1`) or keeps
// π (a View) over anything else. Result sizes are the node's inferred ones.
#include <algorithm>
#include <vector>

#include "core/ops/common/lowering_helpers.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

int64_t rank_of(const IRPtr& x) { return static_cast<int64_t>(x->size().size()); }

// Row-major reinterpretation: the result's flat position addresses the input's flat position.
IRPtr reshape(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  Shape in = x->size(), out = n.meta().sizes;
  if (in == out) return x;
  Shape out_strides = contiguous_strides(out), in_strides = contiguous_strides(in);
  return g.view(x, out, [in, in_strides, out_strides](const Index& idx) {
    Expr flat(0);
    for (size_t k = 0; k < idx.size(); ++k) flat = flat + idx[k] * Expr(out_strides[k]);
    Index r;
    for (size_t j = 0; j < in.size(); ++j)
      r.push_back(mod(floordiv(flat, Expr(in_strides[j])), Expr(in[j])));
    return r;
  });
}

IRPtr permute_dims(GraphLowering& g, const IRPtr& x, const std::vector<int64_t>& dims) {
  Shape in = x->size(), out;
  for (int64_t d : dims) out.push_back(in[static_cast<size_t>(d)]);
  return g.view(x, out, [dims](const Index& idx) {
    Index r(idx.size());
    for (size_t k = 0; k < dims.size(); ++k) r[static_cast<size_t>(dims[k])] = idx[k];
    return r;
  });
}

IRPtr permute(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  std::vector<int64_t> dims = n.arg("dims").to_int_list();
  for (int64_t& d : dims) d = wrap_dim(d, rank_of(x), "%" + n.name());
  return permute_dims(g, x, dims);
}

IRPtr transpose(GraphLowering& g, const IRPtr& x, int64_t a, int64_t b) {
  std::vector<int64_t> dims(static_cast<size_t>(rank_of(x)));
  for (size_t k = 0; k < dims.size(); ++k) dims[k] = static_cast<int64_t>(k);
  if (dims.empty()) return x;
  std::swap(dims[static_cast<size_t>(a)], dims[static_cast<size_t>(b)]);
  return permute_dims(g, x, dims);
}

IRPtr expand(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  Shape in = x->size(), out = n.meta().sizes;
  if (in == out) return x;
  size_t off = out.size() - in.size();
  return g.view(x, out, [in, out, off](const Index& idx) {
    Index r;
    for (size_t k = 0; k < in.size(); ++k)
      r.push_back(in[k] == 1 && out[off + k] != 1 ? Expr(0) : idx[off + k]);
    return r;
  });
}

// squeeze / squeeze.dim / squeeze.dims: the flagged size-1 dims are read at 0.
IRPtr squeeze(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  Shape in = x->size();
  std::vector<bool> removed(in.size(), false);
  if (n.op()->schema.index_of("dim") < 0) {
    for (size_t d = 0; d < in.size(); ++d) removed[d] = in[d] == 1;
  } else {
    for (int64_t d : n.arg("dim").to_int_list()) {
      size_t w = static_cast<size_t>(wrap_dim(d, rank_of(x), "%" + n.name()));
      if (w < in.size()) removed[w] = in[w] == 1;
    }
  }
  if (std::none_of(removed.begin(), removed.end(), [](bool b) { return b; })) return x;
  return g.view(x, n.meta().sizes, [removed](const Index& idx) {
    Index r;
    size_t j = 0;
    for (bool rm : removed) r.push_back(rm ? Expr(0) : idx[j++]);
    return r;
  });
}

IRPtr unsqueeze(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  size_t d = static_cast<size_t>(wrap_dim(n.arg("dim").to_int(), rank_of(x) + 1, "%" + n.name()));
  return g.view(x, n.meta().sizes, [d](const Index& idx) {
    Index r;
    for (size_t k = 0; k < idx.size(); ++k)
      if (k != d) r.push_back(idx[k]);
    return r;
  });
}

// slice.Tensor(dim, start, end, step): input index start + step*i along dim (torch clamping).
IRPtr slice(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  size_t d = static_cast<size_t>(wrap_dim(n.arg("dim").to_int(), rank_of(x), "%" + n.name()));
  int64_t size = x->size()[d];
  const Arg& s = n.arg("start");
  int64_t start = s.is_absent() ? 0 : s.to_int();
  if (start < 0) start += size;
  start = std::clamp<int64_t>(start, 0, size);
  int64_t step = n.arg("step").to_int();
  if (n.meta().sizes == x->size() && start == 0 && step == 1) return x;
  return g.view(x, n.meta().sizes, [d, start, step](const Index& idx) {
    Index r = idx;
    r[d] = Expr(start) + idx[d] * Expr(step);
    return r;
  });
}

IRPtr select(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  size_t d = static_cast<size_t>(wrap_dim(n.arg("dim").to_int(), rank_of(x), "%" + n.name()));
  int64_t index = n.arg("index").to_int();
  if (index < 0) index += x->size()[d];
  return g.view(x, n.meta().sizes, [d, index](const Index& idx) {
    Index r = idx;
    r.insert(r.begin() + static_cast<std::ptrdiff_t>(d), Expr(index));
    return r;
  });
}

// as_strided addresses storage directly: the input is realized (its storage and layout fixed).
IRPtr as_strided(GraphLowering& g, const Node& n) {
  IRPtr x = g.input(n, "self");
  KernelInput in = g.realize_input(x);
  const Arg& off = n.arg("storage_offset");
  Layout l = Layout::fixed(in.layout.device, in.layout.dtype, n.arg("size").to_int_list(),
                           n.arg("stride").to_int_list(),
                           off.is_absent() ? in.layout.offset : off.to_int());
  IRPtr v = std::make_shared<ReinterpretView>(in.buffer, std::move(l));
  v->add_origins(g.origins_for({x}));
  return v;
}

}  // namespace

void register_view_rules(LoweringTable& t) {
  for (const char* name :
       {"view.default", "_unsafe_view.default", "reshape.default", "_reshape_alias.default"})
    t.add(name, reshape);
  t.add("permute.default", permute);
  t.add("t.default", [](GraphLowering& g, const Node& n) {
    IRPtr x = g.input(n, "self");
    return rank_of(x) < 2 ? x : transpose(g, x, 0, 1);
  });
  t.add("transpose.int", [](GraphLowering& g, const Node& n) {
    IRPtr x = g.input(n, "self");
    if (rank_of(x) == 0) return x;
    std::string where = "%" + n.name();
    return transpose(g, x, wrap_dim(n.arg("dim0").to_int(), rank_of(x), where),
                     wrap_dim(n.arg("dim1").to_int(), rank_of(x), where));
  });
  t.add("expand.default", expand);
  for (const char* name : {"squeeze.default", "squeeze.dim", "squeeze.dims"}) t.add(name, squeeze);
  t.add("unsqueeze.default", unsqueeze);
  t.add("slice.Tensor", slice);
  t.add("select.int", select);
  t.add("as_strided.default", as_strided);
  for (const char* name : {"alias.default", "detach.default"})
    t.add(name, [](GraphLowering& g, const Node& n) { return g.input(n, "self"); });
}

}  // namespace stax
