// Decompositions of the Composite ops that complex arithmetic extends (docs/complex.md): their
// real entries are written for real values (scatters through arange indices, atan2 of real
// parts ...), so a node touching complex values gets the form below, built from ops that take
// complex values. The interpreter runs these too (the ops' kernels run their decompositions), so
// compiled and interpreted results stay equal bit for bit.
//   the movement ops       on the real view (view_as_real: one more trailing dim of 2)
//   constant_pad_nd        complex(pad(real z, v), pad(imag z, 0))
//   copy                   _to_copy(expand(src))
//   new_zeros / new_empty  zeros
//   rsub.Scalar            -alpha·self + other
//   angle, sgn             atan2(imag z, real z); complex(re/|z|, im/|z|), 0 at 0 (torch's)
#include <functional>
#include <string>
#include <vector>

#include "core/graph/decompositions.h"
#include "core/graph/op_registry.h"
#include "core/ops/complex/complex_ops.h"
#include "core/support/error.h"

namespace stax {

Node* complex_ops::vector_norm_of_complex(Graph& g, Node* z,
                                          const std::function<Arg(const char*)>& arg) {
  auto given = [&](const char* p) {
    Arg a = arg(p);
    return !a.is_absent() && !a.is_none();
  };
  if (given("dtype")) z = g.call("_to_copy", {z}, {{"dtype", arg("dtype")}});
  Kwargs kwargs;
  for (const char* p : {"ord", "dim", "keepdim"})
    if (given(p)) kwargs.emplace_back(p, arg(p));
  return g.call("linalg_vector_norm", {g.call("abs", {z})}, std::move(kwargs));
}

namespace {

using complex_ops::touches_complex;

Node* real_view(Graph& g, Node* z) { return g.call("view_as_real", {z}); }
Node* complex_view(Graph& g, Node* r) { return g.call("view_as_complex", {r}); }

// dim as a non-negative index (it then names the same dim of the real view).
Arg dim_of(const Node& n, const Node* of) {
  return Arg(wrap_dim(n.arg("dim").to_int(), of->meta().dim(), "%" + n.name()));
}

// The op itself on the real views of its complex tensor arguments (`tensors`), dim wrapped.
Node* on_real_views(Graph& g, const Node& n, std::vector<Arg> args) {
  return complex_view(g, g.call(n.target(), std::move(args)));
}

Node* slice_scatter(Graph& g, const Node& n) {
  Node* self = n.input(0);
  return on_real_views(g, n, {real_view(g, self), real_view(g, n.arg("src").node()),
                              dim_of(n, self), n.arg("start"), n.arg("end"), n.arg("step")});
}

Node* select_scatter(Graph& g, const Node& n) {
  Node* self = n.input(0);
  return on_real_views(g, n, {real_view(g, self), real_view(g, n.arg("src").node()),
                              dim_of(n, self), n.arg("index")});
}

std::vector<int64_t> with_pair(std::vector<int64_t> sizes) {
  sizes.push_back(2);
  return sizes;
}

Node* slice_backward(Graph& g, const Node& n) {
  return on_real_views(g, n, {real_view(g, n.input(0)), with_pair(n.arg("input_sizes").to_int_list()),
                              dim_of(n, &n), n.arg("start"), n.arg("end"), n.arg("step")});
}

Node* select_backward(Graph& g, const Node& n) {
  return on_real_views(g, n, {real_view(g, n.input(0)), with_pair(n.arg("input_sizes").to_int_list()),
                              dim_of(n, &n), n.arg("index")});
}

Node* constant_pad(Graph& g, const Node& n) {
  Node* z = g.call("_to_copy", {n.input(0)}, {{"dtype", n.dtype()}});
  const Arg& pad = n.arg("pad");
  Arg value = n.arg("value").is_absent() ? Arg(0.0) : n.arg("value");
  return g.call("complex", {g.call("constant_pad_nd", {g.call("real", {z}), pad, value}),
                            g.call("constant_pad_nd", {g.call("imag", {z}), pad, 0.0})});
}

Node* copy(Graph& g, const Node& n) {
  Node* src = n.arg("src").node();
  if (src->shape() != n.shape()) src = g.call("expand", {src, n.shape()});
  return g.call("_to_copy", {src}, {{"dtype", n.dtype()}});
}

Node* zeros(Graph& g, const Node& n) {
  return g.call("zeros", {Arg(n.shape())}, {{"dtype", n.dtype()}});
}

Node* rsub(Graph& g, const Node& n) {
  double alpha = n.arg("alpha").is_absent() ? 1.0 : n.arg("alpha").to_double();
  return g.call("add.Scalar", {g.call("mul.Scalar", {n.input(0), -alpha}), n.arg("other")});
}

// vdot(a, b) = Σ conj(a_k) b_k (torch conjugates the first argument).
Node* vdot(Graph& g, const Node& n) {
  return g.call("dot", {g.call("conj_physical", {n.input(0)}), n.input(1)});
}

Node* vector_norm(Graph& g, const Node& n) {
  return complex_ops::vector_norm_of_complex(g, n.input(0),
                                             [&n](const char* p) { return n.arg(p); });
}

Node* angle(Graph& g, const Node& n) {
  Node* z = n.input(0);
  return g.call("atan2", {g.call("imag", {z}), g.call("real", {z})});
}

Node* sgn(Graph& g, const Node& n) {
  Node* z = n.input(0);
  Node* r = g.call("abs", {z});
  Node* s = g.call("complex", {g.call("div.Tensor", {g.call("real", {z}), r}),
                               g.call("div.Tensor", {g.call("imag", {z}), r})});
  return g.call("where.self", {g.call("eq.Scalar", {r, 0}), g.call("zeros_like", {s}), s});
}

}  // namespace

void register_complex_decompositions(DecompositionTable& t) {
  struct Entry {
    const char* op;
    Node* (*fn)(Graph&, const Node&);
  };
  for (const Entry& e : {Entry{"slice_scatter.default", slice_scatter},
                         Entry{"select_scatter.default", select_scatter},
                         Entry{"slice_backward.default", slice_backward},
                         Entry{"select_backward.default", select_backward},
                         Entry{"constant_pad_nd.default", constant_pad},
                         Entry{"copy.default", copy}, Entry{"new_zeros.default", zeros},
                         Entry{"new_empty.default", zeros}, Entry{"rsub.Scalar", rsub},
                         Entry{"angle.default", angle}, Entry{"sgn.default", sgn},
                         Entry{"vdot.default", vdot},
                         Entry{"linalg_vector_norm.default", vector_norm}}) {
    auto cx = e.fn;
    std::function<DecompositionFn(DecompositionFn)> wrap = [cx](DecompositionFn real) {
      return DecompositionFn([real = std::move(real), cx](Graph& g, const Node& n) {
        return touches_complex(n) ? cx(g, n) : real(g, n);
      });
    };
    t.extend(e.op, wrap, [op = std::string(e.op)](Graph&, const Node& n) -> Node* {
      throw Error("decompose", "%" + n.name(), "no decomposition of " + op);
    });
  }
}

}  // namespace stax
