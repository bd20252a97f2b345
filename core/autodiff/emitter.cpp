#include "core/autodiff/emitter.h"

#include <algorithm>

#include "core/graph/op_traits.h"

namespace stax {

namespace {

// The op playing `r` (core/ops/roles.cpp names them).
const std::string& role(OpRole r) { return default_op_traits().op(r); }

}  // namespace

Node* Emitter::call(std::string_view target, std::vector<Arg> args, Kwargs kwargs) const {
  Node* n = g_.call(target, std::move(args), std::move(kwargs));
  n->set_phase(phase_);
  return n;
}

Node* Emitter::add(Node* a, Node* b) const { return call(role(OpRole::kAdd), {a, b}); }
Node* Emitter::sub(Node* a, Node* b) const { return call(role(OpRole::kSub), {a, b}); }
Node* Emitter::mul(Node* a, Node* b) const { return call(role(OpRole::kMul), {a, b}); }
Node* Emitter::mul(Node* a, const Arg& s) const { return call(role(OpRole::kMulScalar), {a, s}); }
Node* Emitter::div(Node* a, Node* b) const { return call(role(OpRole::kDiv), {a, b}); }
Node* Emitter::div(Node* a, const Arg& s) const { return call(role(OpRole::kDivScalar), {a, s}); }
Node* Emitter::add(Node* a, const Arg& s) const { return call(role(OpRole::kAddScalar), {a, s}); }
Node* Emitter::neg(Node* a) const { return call(role(OpRole::kNeg), {a}); }

Node* Emitter::sum_to_shape(Node* x, const Shape& shape) const {
  const Shape& in = x->shape();
  if (in == shape) return x;
  int64_t lead = static_cast<int64_t>(in.size()) - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < static_cast<int64_t>(in.size()); ++i) {
    if (i < lead || (shape[i - lead] == 1 && in[i] != 1)) dims.push_back(i);
  }
  Node* s = x;
  // An empty dim list would mean "all dims" to sum.dim_IntList; only reduce when there are dims.
  if (!dims.empty()) s = call(role(OpRole::kSumDims), {x, Arg(dims), true});
  if (s->shape() != shape) s = call(role(OpRole::kView), {s, Arg(shape)});
  return s;
}

Node* Emitter::expand_to(Node* x, const Shape& shape) const {
  if (x->shape() == shape) return x;
  return call(role(OpRole::kExpand), {x, Arg(shape)});
}

Node* Emitter::restore_reduced_dims(Node* x, const Shape& in, const std::vector<int64_t>& dims,
                                    bool keepdim) const {
  // A 0-d result (every dim reduced) broadcasts against anything already: expand takes it as is.
  if (keepdim || in.empty() || x->meta().dim() == 0) return x;
  Node* r = x;
  for (int64_t d : dims) r = call(role(OpRole::kUnsqueeze), {r, d});  // ascending: each lands at its place
  return r;
}

Node* Emitter::reshape(Node* x, const Shape& shape) const {
  if (x->shape() == shape) return x;
  return call(role(OpRole::kReshape), {x, Arg(shape)});
}

Node* Emitter::mT(Node* x) const {
  if (x->meta().dim() == 2) return call(role(OpRole::kTranspose2d), {x});
  return call(role(OpRole::kTranspose), {x, -2, -1});
}

Node* Emitter::zeros(const Shape& shape, DType dtype, const std::string& device) const {
  Kwargs kw{{"dtype", dtype}};
  if (device != "cpu") kw.emplace_back("device", device);
  return call(role(OpRole::kZeros), {Arg(shape)}, std::move(kw));
}

Node* Emitter::zeros_like(const Node* x) const {
  return zeros(x->shape(), x->dtype(), x->meta().device);
}

Node* Emitter::cast(Node* x, DType dtype) const {
  if (x->dtype() == dtype) return x;
  return call(role(OpRole::kCast), {x, dtype});
}

std::vector<int64_t> reduced_dims(const Arg& dim, int64_t rank) {
  std::vector<int64_t> dims;
  if (rank == 0) return dims;
  std::vector<int64_t> given;
  if (!dim.is_absent()) given = dim.to_int_list();
  if (given.empty()) {
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
    return dims;
  }
  for (int64_t d : given) dims.push_back(wrap_dim(d, rank, "reduction"));
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

int64_t reduced_numel(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[d];
  return n;
}

}  // namespace stax
