// VJP rules of the spectral ops: torch's formulas (tools/autograd/derivatives.yaml,
// fft_r2c_backward / fft_c2r_backward). The complex cotangent's zero padding and the doubling of
// the entries conjugate symmetry folds are done on its real view (view_as_real), with real ops.
// Limitation (docs/complex.md): a complex value used by several ops would need a complex add to
// sum its gradient contributions, which Stax does not have; autodiff then fails naming add.Tensor.
#include <vector>

#include "core/autodiff/vjp.h"
#include "core/graph/op_registry.h"
#include "core/ops/registration.h"
#include "core/ops/spectral/fft_args.h"

namespace stax {
namespace {

std::vector<int64_t> dims_of(VjpContext& c, const Node* x) {
  return fft::dims_of(c.arg("dim"), x->meta().dim(), "%" + c.node()->name(), true);
}

// The complex tensor z with dim d cut or zero-padded to `size` entries (through its real view).
Node* resize_complex_dim(VjpContext& c, Node* z, int64_t d, int64_t size) {
  int64_t have = z->shape()[static_cast<size_t>(d)];
  if (have == size) return z;
  Node* r = c.call("view_as_real", {z});
  if (have > size) {
    r = c.call("slice.Tensor", {r, d, int64_t{0}, size});
  } else {
    int64_t rank = r->meta().dim();
    std::vector<int64_t> pad(static_cast<size_t>(2 * (rank - d)), 0);  // last dim first
    pad.back() = size - have;
    r = c.call("constant_pad_nd", {r, pad, 0.0});
  }
  return c.call("view_as_complex", {r});
}

// r2c: pad the onesided cotangent to the full length with zeros, inverse c2c, real part.
void r2c_vjp(VjpContext& c) {
  Node* x = c.in("self");
  if (!c.needs(x)) return;
  std::vector<int64_t> dims = dims_of(c, x);
  int64_t last = dims.back();
  Node* g = resize_complex_dim(c, c.grad(), last, x->shape()[static_cast<size_t>(last)]);
  Node* full = c.call("_fft_c2c", {g, dims, c.arg("normalization"), false});
  c.give(x, c.call("real", {full}));
}

// c2r: r2c of the cotangent, the entries 1 .. n - (n/2 + 1) of the last dim doubled (their
// mirror images, which the forward filled by conjugate symmetry, fold onto them).
void c2r_vjp(VjpContext& c) {
  Node* z = c.in("self");
  if (!c.needs(z)) return;
  std::vector<int64_t> dims = dims_of(c, z);
  int64_t last = dims.back();
  int64_t n = c.node()->shape()[static_cast<size_t>(last)];
  Node* gi = c.call("_fft_r2c", {c.grad(), dims, c.arg("normalization"), true});
  int64_t half = n / 2 + 1, twice = n - half;
  if (twice > 0) {
    Node* r = c.call("view_as_real", {gi});
    Node* head = c.call("slice.Tensor", {r, last, int64_t{0}, int64_t{1}});
    Node* mid = c.mul(c.call("slice.Tensor", {r, last, int64_t{1}, 1 + twice}), Arg(2.0));
    std::vector<Node*> pieces{head, mid};
    if (1 + twice < half) pieces.push_back(c.call("slice.Tensor", {r, last, 1 + twice, half}));
    gi = c.call("view_as_complex", {c.call("cat", {pieces, last})});
  }
  c.give(z, resize_complex_dim(c, gi, last, z->shape()[static_cast<size_t>(last)]));
}

void c2c_vjp(VjpContext& c) {
  Node* z = c.in("self");
  if (!c.needs(z)) return;
  c.give(z, c.call("_fft_c2c", {c.grad(), c.arg("dim"), c.arg("normalization"),
                                !c.arg("forward").to_bool()}));
}

// torch's convention for complex z = a + ib under a real loss L: z̄ = ∂L/∂a + i ∂L/∂b, so that
// view_as_real(z̄) is the gradient of view_as_real(z).
void real_vjp(VjpContext& c) {
  Node* z = c.in("self");
  if (!c.needs(z)) return;
  Node* g = c.grad();
  c.give(z, is_complex(z->meta().dtype) ? c.call("complex", {g, c.zeros_like(g)}) : g);
}

void imag_vjp(VjpContext& c) {
  Node* g = c.grad();
  if (c.needs("self")) c.give("self", c.call("complex", {c.zeros_like(g), g}));
}

void complex_vjp(VjpContext& c) {
  Node* g = c.grad();
  for (const char* p : {"real", "imag"})
    if (c.needs(p))
      c.give(p, c.sum_to_shape(c.call(p, {g}), c.in(p)->shape()));  // the op named as the part
}

}  // namespace

void register_spectral_vjps(VjpTable& t) {
  t.add("_fft_r2c.default", r2c_vjp);
  t.add("_fft_c2r.default", c2r_vjp);
  t.add("_fft_c2c.default", c2c_vjp);
  t.add("view_as_real.default",
        [](VjpContext& c) { c.give("self", c.call("view_as_complex", {c.grad()})); });
  t.add("view_as_complex.default",
        [](VjpContext& c) { c.give("self", c.call("view_as_real", {c.grad()})); });
  t.add("real.default", real_vjp);
  t.add("imag.default", imag_vjp);
  t.add("complex.default", complex_vjp);
  for (const char* op : {"conj_physical.default", "_conj.default", "_conj_physical.default"})
    t.add(op, [](VjpContext& c) { c.give("self", c.call("conj_physical", {c.grad()})); });
}

}  // namespace stax
