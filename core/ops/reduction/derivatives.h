// Derivative pieces shared by the reductions' VJP and JVP rules (vjp.cpp, jvp.cpp): cumprod's
// exact terms with zeros, std's and the p-norms' masked formulas.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/autodiff/emitter.h"
#include "core/graph/op_registry.h"

namespace stax::reduction_derivatives {

// Whether a reduction keeps its reduced dims, and which dims it reduces (all dims for the
// .default overloads), for a VjpContext or a JvpContext.
template <class Context>
bool keepdim_of(const Context& c) {
  const auto& schema = c.node()->op()->schema;
  return schema.index_of("keepdim") >= 0 && c.arg("keepdim").to_bool();
}

template <class Context>
std::vector<int64_t> dims_of(const Context& c) {
  const auto& schema = c.node()->op()->schema;
  Arg dim = schema.index_of("dim") >= 0 ? c.arg("dim") : Arg();
  return reduced_dims(dim, c.in("self")->meta().dim());
}

// cumprod along dim d (length n), written with the dim moved last: C[..., j, k] =
// prod_{i <= k, i != j} x_i is the cumprod of x with x_j replaced by 1, so zeros in x need no
// division. x̄_j = Σ_{k >= j} ḡ_k C[j, k];  ẏ_k = Σ_{j <= k} ẋ_j C[j, k]. O(n²) memory per row.
struct CumprodTerms {
  Node* c;      // [..., n(j), n(k)]
  Node* upper;  // [n, n] bool: k >= j
  int64_t d;
};

inline CumprodTerms cumprod_terms(const Emitter& e, const Node& node) {
  Node* x = node.arg("self").node();
  int64_t rank = x->meta().dim();
  int64_t d = wrap_dim(node.arg("dim").to_int(), rank, "%" + node.name());
  int64_t n = x->shape()[d];
  Node* xt = e.call("transpose.int", {x, d, rank - 1});
  Node* j = e.call("unsqueeze", {e.call("arange", {n}), 1});
  Node* k = e.call("arange", {n});
  Node* eye = e.call("eq.Tensor", {j, k});
  Node* y = e.call("where.ScalarSelf", {eye, 1.0, e.call("unsqueeze", {xt, rank - 1})});
  Node* c = e.call("cumprod", {y, rank});
  return {c, e.call("ge.Tensor", {k, j}), d};
}

// ---- std and p-norms: torch's masked formulas (a zero std or norm gives a zero gradient, where
// the decomposition's sqrt / pow would give 0 * inf = NaN).

struct Reduced {
  std::vector<int64_t> dims;
  bool keepdim = false;
};

inline Reduced reduced_of(const Node& n) {
  const Node* x = n.arg("self").node();
  Reduced r;
  int64_t rank = x->meta().dim();
  Arg dims = n.op()->schema.index_of("dim") >= 0 ? n.arg("dim") : Arg();
  if (!dims.is_absent())
    for (int64_t d : dims.to_int_list())
      if (rank > 0) r.dims.push_back(wrap_dim(d, rank, "%" + n.name()));
  if (r.dims.empty())
    for (int64_t d = 0; d < rank; ++d) r.dims.push_back(d);
  r.keepdim = n.op()->schema.index_of("keepdim") >= 0 && n.arg("keepdim").to_bool();
  return r;
}

inline double std_denominator(const Node& n, const Reduced& r) {
  const Node* x = n.arg("self").node();
  double correction = 1;
  if (n.op()->schema.index_of("correction") >= 0 && !n.arg("correction").is_absent())
    correction = n.arg("correction").to_double();
  if (n.op()->schema.index_of("unbiased") >= 0) correction = n.arg("unbiased").to_bool() ? 1 : 0;
  double count = 1;
  for (int64_t d : r.dims) count *= static_cast<double>(x->shape()[d]);
  return std::max(0.0, count - correction);
}

// where(y == 0, 0, v)
inline Node* zero_where_zero(const Emitter& e, Node* y, Node* v) {
  return e.call("where.ScalarSelf", {e.call("eq.Scalar", {y, 0}), 0.0, v});
}

inline double norm_p(const Node& n) {
  const char* param = n.op()->schema.index_of("ord") >= 0 ? "ord" : "p";
  const Arg& a = n.arg(param);
  return a.is_absent() ? 2.0 : a.to_double();
}

inline bool plain_p(double p) { return p != 0 && p != 1 && !std::isinf(p); }

// aten's name of pow(Tensor, Scalar) once the registry has it (it was pow.Scalar here).
inline const char* pow_tensor_scalar() {
  return default_registry().find("pow.Tensor_Scalar") ? "pow.Tensor_Scalar" : "pow.Scalar";
}

// sgn(x) |x|^(p-1) (x for p = 2), zero where x == 0.
inline Node* norm_scaled(const Emitter& e, Node* x, double p) {
  if (p == 2) return x;
  Node* s = e.mul(e.call("sign", {x}), e.call(pow_tensor_scalar(), {e.call("abs", {x}), p - 1}));
  return zero_where_zero(e, x, s);
}

// y^(p-1) (y for p = 2)
inline Node* norm_power(const Emitter& e, Node* y, double p) {
  return p == 2 ? y : e.call(pow_tensor_scalar(), {y, p - 1});
}

}  // namespace stax::reduction_derivatives
