// Core ATen ops that place or sample values at computed spatial positions (issue 29 item 1), each
// one builder (core/ops/common/infer_by_building.h) giving its inference and its decomposition:
//   grid_sampler_3d    the same one dim up (trilinear over 8 corners, or nearest)
//   col2im (nn.Fold)   the adjoint of im2col: block (i, j) of every column is added into a padded
//                      canvas at rows i * dilation + stride * l (strided slice_scatter), then the
//                      padding is cut off
//   grid_sampler_2d    F.grid_sample: torch's unnormalization (align_corners), padding modes
//                      zeros / border / reflection (torch's reflect_coordinates), bilinear (four
//                      gathered corners, each weighted and zeroed when out of range) and nearest
//                      (round half to even, as nearbyint); bicubic is a clear error
//   im2col (nn.Unfold) and grid_sampler_2d_backward (a tuple: input's and grid's gradients), the
//                      backward ops of the two: the VJP of col2im (linear, so called on zeros) and
//                      of grid_sampler_2d (core/ops/common/forward_vjp.h)
// Both are Composite: the interpreter runs the decomposition and VJP / JVP go through it (the grid's
// gradient flows through the bilinear weights, as torch's does).
#include <cmath>
#include <string>
#include <vector>

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/graph/multi_output.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/forward_vjp.h"
#include "core/ops/common/infer_by_building.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/common/via_decomposition.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {

namespace {

using Ints = std::vector<int64_t>;

Ints pair_of(const ExpandCall& c, const char* p) {
  Ints v = c.get(p).to_int_list();
  if (v.size() != 2) c.fail(std::string(p) + " must have 2 elements, got " + shape_list_str(v));
  return v;
}

Node* zeros(Graph& g, const Shape& s, DType t) {
  return g.call("zeros", {Arg(s)}, {{"dtype", Arg(t)}});
}

Node* col2im(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  Ints out = pair_of(c, "output_size"), k = pair_of(c, "kernel_size"), d = pair_of(c, "dilation"),
       p = pair_of(c, "padding"), s = pair_of(c, "stride");
  for (int i = 0; i < 2; ++i)
    if (k[i] <= 0 || d[i] <= 0 || s[i] <= 0 || p[i] < 0)
      c.fail("kernel_size, dilation and stride must be positive and padding non-negative");
  bool batched = x->meta().dim() == 3;
  if (!batched && x->meta().dim() != 2)
    c.fail("expected a 2-D or 3-D input (N, C * kH * kW, L), got " + shape_str(x->shape()));
  if (!batched) x = g.call("unsqueeze", {x, 0});
  const Shape& xs = x->shape();
  int64_t N = xs[0], CK = xs[1], L = xs[2], kk = k[0] * k[1];
  if (CK % kk != 0)
    c.fail("input dim 1 (" + std::to_string(CK) + ") must be divisible by the kernel size product " +
           std::to_string(kk));
  Ints blocks(2);
  for (int i = 0; i < 2; ++i) {
    blocks[i] = (out[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
    if (blocks[i] <= 0) c.fail("output_size " + shape_list_str(out) + " is too small for the kernel");
  }
  if (blocks[0] * blocks[1] != L)
    c.fail("expected " + std::to_string(blocks[0] * blocks[1]) + " blocks (" +
           std::to_string(blocks[0]) + " x " + std::to_string(blocks[1]) + ") in input dim 2, got " +
           std::to_string(L));
  int64_t C = CK / kk, Hp = out[0] + 2 * p[0], Wp = out[1] + 2 * p[1];
  Node* cols = g.call("reshape", {x, Arg(Shape{N, C, k[0], k[1], blocks[0], blocks[1]})});
  Node* acc = nullptr;
  for (int64_t i = 0; i < k[0]; ++i)
    for (int64_t j = 0; j < k[1]; ++j) {
      Node* blk = g.call("select.int", {g.call("select.int", {cols, 2, i}), 2, j});
      int64_t h0 = i * d[0], w0 = j * d[1];
      Node* rows = g.call("slice_scatter", {zeros(g, {N, C, Hp, blocks[1]}, x->dtype()), blk, 2, h0,
                                            h0 + (blocks[0] - 1) * s[0] + 1, s[0]});
      Node* placed = g.call("slice_scatter", {zeros(g, {N, C, Hp, Wp}, x->dtype()), rows, 3, w0,
                                              w0 + (blocks[1] - 1) * s[1] + 1, s[1]});
      acc = acc ? g.call("add.Tensor", {acc, placed}) : placed;
    }
  Node* r = g.call("slice.Tensor", {g.call("slice.Tensor", {acc, 2, p[0], p[0] + out[0], 1}), 3,
                                    p[1], p[1] + out[1], 1});
  return batched ? r : g.call("squeeze.dim", {r, 0});
}

// torch's reflect_coordinates: reflects c into [low2 / 2, high2 / 2] (bounds given doubled).
Node* reflect(Graph& g, Node* c, int64_t low2, int64_t high2) {
  if (low2 == high2) return g.call("mul.Scalar", {c, 0});
  double mn = static_cast<double>(low2) / 2, span = static_cast<double>(high2 - low2) / 2;
  Node* a = g.call("abs", {g.call("sub.Scalar", {c, mn})});
  Node* extra = g.call("fmod.Scalar", {a, span});
  Node* flips = g.call("floor", {g.call("div.Scalar", {a, span})});
  Node* even = g.call("eq.Scalar", {g.call("fmod.Scalar", {flips, 2}), 0});
  return g.call("where.self", {even, g.call("add.Scalar", {extra, mn}),
                               g.call("rsub.Scalar", {extra, span + mn})});
}

// The source coordinate of grid coordinate `c` in a dim of `size`, after the padding mode.
Node* source_coordinate(Graph& g, Node* c, int64_t size, int64_t padding, bool corners) {
  Node* u = corners ? g.call("mul.Scalar", {g.call("add.Scalar", {c, 1}), 0.5 * static_cast<double>(size - 1)})
                    : g.call("div.Scalar", {g.call("sub.Scalar", {g.call("mul.Scalar", {g.call("add.Scalar", {c, 1}), size}), 1}), 2});
  auto clip = [&](Node* v) {
    return g.call("clamp", {v, 0.0, static_cast<double>(size - 1)});
  };
  if (padding == 1) return clip(u);
  if (padding == 2) {
    u = corners ? reflect(g, u, 0, 2 * (size - 1)) : reflect(g, u, -1, 2 * size - 1);
    return clip(u);
  }
  return u;
}

Node* grid_sampler_2d(Graph& g, const ExpandCall& c) {
  Node* in = c.tensor("input");
  Node* grid = c.tensor("grid");
  int64_t mode = c.get("interpolation_mode").to_int(), padding = c.get("padding_mode").to_int();
  bool corners = c.get("align_corners").to_bool();
  if (mode == 2) c.fail("interpolation_mode 2 (bicubic) is not supported (bilinear 0, nearest 1)");
  if (mode < 0 || mode > 2) c.fail("interpolation_mode must be 0, 1 or 2, got " + std::to_string(mode));
  if (padding < 0 || padding > 2)
    c.fail("padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got " + std::to_string(padding));
  const Shape& is = in->shape();
  const Shape& gs = grid->shape();
  if (is.size() != 4 || gs.size() != 4 || gs[3] != 2 || gs[0] != is[0])
    c.fail("expected input (N, C, H, W) and grid (N, H_out, W_out, 2), got " + shape_str(is) +
           " and " + shape_str(gs));
  if (!is_floating(in->dtype()) || grid->dtype() != in->dtype())
    c.fail("input and grid must be floating point of one dtype");
  int64_t N = is[0], C = is[1], H = is[2], W = is[3], P = gs[1] * gs[2];
  Node* ix = source_coordinate(g, g.call("select.int", {grid, 3, 0}), W, padding, corners);
  Node* iy = source_coordinate(g, g.call("select.int", {grid, 3, 1}), H, padding, corners);
  Node* flat = g.call("reshape", {in, Arg(Shape{N, C, H * W})});
  // The input at integer coordinates (x, y) (N, Ho, Wo) times `w`, zero where out of range.
  auto corner = [&](Node* x, Node* y, Node* w) {
    Node* ok = g.call("logical_and", {g.call("logical_and", {g.call("ge.Scalar", {x, 0}), g.call("le.Scalar", {x, W - 1})}),
                                      g.call("logical_and", {g.call("ge.Scalar", {y, 0}), g.call("le.Scalar", {y, H - 1})})});
    Node* xi = g.call("to.dtype", {g.call("clamp", {x, 0.0, static_cast<double>(W - 1)}), DType::Int64});
    Node* yi = g.call("to.dtype", {g.call("clamp", {y, 0.0, static_cast<double>(H - 1)}), DType::Int64});
    Node* idx = g.call("add.Tensor", {g.call("mul.Scalar", {yi, W}), xi});
    idx = g.call("expand", {g.call("reshape", {idx, Arg(Shape{N, 1, P})}), Arg(Shape{N, C, P})});
    Node* v = g.call("gather", {flat, 2, idx});
    Node* wz = g.call("where.ScalarOther", {ok, w, 0.0});
    return g.call("mul.Tensor", {v, g.call("reshape", {wz, Arg(Shape{N, 1, P})})});
  };
  Node* r;
  if (mode == 1) {
    Node* one = g.call("full_like", {ix, 1.0});
    r = corner(g.call("round", {ix}), g.call("round", {iy}), one);
  } else {
    Node* x0 = g.call("floor", {ix});
    Node* y0 = g.call("floor", {iy});
    Node* x1 = g.call("add.Scalar", {x0, 1});
    Node* y1 = g.call("add.Scalar", {y0, 1});
    Node* wx1 = g.call("sub.Tensor", {ix, x0});
    Node* wy1 = g.call("sub.Tensor", {iy, y0});
    Node* wx0 = g.call("rsub.Scalar", {wx1, 1});
    Node* wy0 = g.call("rsub.Scalar", {wy1, 1});
    r = g.call("add.Tensor",
               {g.call("add.Tensor", {corner(x0, y0, g.call("mul.Tensor", {wx0, wy0})),
                                      corner(x1, y0, g.call("mul.Tensor", {wx1, wy0}))}),
                g.call("add.Tensor", {corner(x0, y1, g.call("mul.Tensor", {wx0, wy1})),
                                      corner(x1, y1, g.call("mul.Tensor", {wx1, wy1}))})});
  }
  return g.call("reshape", {r, Arg(Shape{N, C, gs[1], gs[2]})});
}

// grid_sampler_3d: grid_sampler_2d one dim up: input (N, C, D, H, W), grid (N, Do, Ho, Wo, 3)
// holding (x, y, z) for (W, H, D); trilinear over the 8 corners or nearest; the same padding
// modes and unnormalization.
Node* grid_sampler_3d(Graph& g, const ExpandCall& c) {
  Node* in = c.tensor("input");
  Node* grid = c.tensor("grid");
  int64_t mode = c.get("interpolation_mode").to_int(), padding = c.get("padding_mode").to_int();
  bool corners = c.get("align_corners").to_bool();
  if (mode < 0 || mode > 1)
    c.fail("grid_sampler_3d: interpolation_mode must be 0 (bilinear) or 1 (nearest), got " +
           std::to_string(mode));
  if (padding < 0 || padding > 2)
    c.fail("padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got " + std::to_string(padding));
  const Shape& is = in->shape();
  const Shape& gs = grid->shape();
  if (is.size() != 5 || gs.size() != 5 || gs[4] != 3 || gs[0] != is[0])
    c.fail("expected input (N, C, D, H, W) and grid (N, D_out, H_out, W_out, 3), got " +
           shape_str(is) + " and " + shape_str(gs));
  if (!is_floating(in->dtype()) || grid->dtype() != in->dtype())
    c.fail("input and grid must be floating point of one dtype");
  int64_t N = is[0], C = is[1], P = gs[1] * gs[2] * gs[3];
  const int64_t size[3] = {is[4], is[3], is[2]};  // x: W, y: H, z: D
  Node* coord[3];
  for (int k = 0; k < 3; ++k)
    coord[k] = source_coordinate(g, g.call("select.int", {grid, 4, k}), size[k], padding, corners);
  Node* flat = g.call("reshape", {in, Arg(Shape{N, C, is[2] * is[3] * is[4]})});
  // The input at integer coordinates p[0..2] (N, Do, Ho, Wo) times `w`, zero out of range.
  auto corner = [&](Node* const* p, Node* w) {
    Node* ok = nullptr;
    Node* idx = nullptr;
    for (int k = 2; k >= 0; --k) {
      Node* in_range = g.call("logical_and", {g.call("ge.Scalar", {p[k], 0}), g.call("le.Scalar", {p[k], size[k] - 1})});
      ok = ok ? g.call("logical_and", {ok, in_range}) : in_range;
      Node* i = g.call("to.dtype", {g.call("clamp", {p[k], 0.0, static_cast<double>(size[k] - 1)}), DType::Int64});
      idx = idx ? g.call("add.Tensor", {g.call("mul.Scalar", {idx, size[k]}), i}) : i;
    }
    idx = g.call("expand", {g.call("reshape", {idx, Arg(Shape{N, 1, P})}), Arg(Shape{N, C, P})});
    Node* v = g.call("gather", {flat, 2, idx});
    Node* wz = g.call("where.ScalarOther", {ok, w, 0.0});
    return g.call("mul.Tensor", {v, g.call("reshape", {wz, Arg(Shape{N, 1, P})})});
  };
  Node* r = nullptr;
  if (mode == 1) {
    Node* p[3] = {g.call("round", {coord[0]}), g.call("round", {coord[1]}), g.call("round", {coord[2]})};
    r = corner(p, g.call("full_like", {coord[0], 1.0}));
  } else {
    Node* lo[3];
    Node* w1[3];
    Node* w0[3];
    for (int k = 0; k < 3; ++k) {
      lo[k] = g.call("floor", {coord[k]});
      w1[k] = g.call("sub.Tensor", {coord[k], lo[k]});
      w0[k] = g.call("rsub.Scalar", {w1[k], 1});
    }
    for (int bits = 0; bits < 8; ++bits) {
      Node* p[3];
      Node* w = nullptr;
      for (int k = 0; k < 3; ++k) {
        bool up = (bits >> k) & 1;
        p[k] = up ? g.call("add.Scalar", {lo[k], 1}) : lo[k];
        Node* wk = up ? w1[k] : w0[k];
        w = w ? g.call("mul.Tensor", {w, wk}) : wk;
      }
      Node* t = corner(p, w);
      r = r ? g.call("add.Tensor", {r, t}) : t;
    }
  }
  return g.call("reshape", {r, Arg(Shape{N, C, gs[1], gs[2], gs[3]})});
}

// im2col(x): the VJP of col2im with x as the gradient of its output.
Node* im2col(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  Ints k = pair_of(c, "kernel_size"), d = pair_of(c, "dilation"), p = pair_of(c, "padding"),
       s = pair_of(c, "stride");
  int64_t r = x->meta().dim();
  if (r != 3 && r != 4) c.fail("expected a 3-D or 4-D input (N, C, H, W), got " + shape_str(x->shape()));
  const Shape& xs = x->shape();
  for (int64_t i = r - 3; i < r; ++i)  // as torch: only the batch dim may be empty
    if (xs[i] == 0)
      c.fail("expected a 3-D or 4-D input with possibly 0 batch size and non-zero dimensions, "
             "got " + shape_str(xs));
  Ints blocks(2);
  for (int i = 0; i < 2; ++i) {
    if (k[i] <= 0 || d[i] <= 0 || s[i] <= 0 || p[i] < 0)
      c.fail("kernel_size, dilation and stride must be positive and padding non-negative");
    blocks[i] = (xs[r - 2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
    if (blocks[i] <= 0) c.fail("input " + shape_str(xs) + " is too small for the kernel");
  }
  Shape cols(xs.begin(), xs.end() - 3);
  cols.push_back(xs[r - 3] * k[0] * k[1]);
  cols.push_back(blocks[0] * blocks[1]);
  Node* z = zeros(g, cols, x->dtype());
  Ints out{xs[r - 2], xs[r - 1]};
  std::vector<Node*> gs = gradients_by_vjp(g, "col2im", {z, Arg(out), Arg(k), Arg(d), Arg(p), Arg(s)},
                                           {}, x, {z});
  return or_zeros(g, gs[0], z);
}

std::vector<Node*> grid_sampler_2d_backward(Graph& g, const ExpandCall& c) {
  Node* in = c.tensor("input");
  Node* grid = c.tensor("grid");
  std::vector<bool> mask;
  for (const auto& e : c.get("output_mask").list()) mask.push_back(e.to_bool());
  if (mask.size() != 2) c.fail("output_mask must have 2 entries");
  std::vector<Node*> gs = gradients_by_vjp(
      g, "grid_sampler_2d",
      {in, grid, c.get("interpolation_mode"), c.get("padding_mode"), c.get("align_corners")}, {},
      c.tensor("grad_output"), {in, grid});
  // An unwanted gradient is None in torch: an empty tensor FX never reads.
  return {mask[0] ? or_zeros(g, gs[0], in) : zeros(g, {0}, in->dtype()),
          mask[1] ? or_zeros(g, gs[1], grid) : zeros(g, {0}, grid->dtype())};
}

constexpr const char* kGridSamplerBackward =
    "grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid, int "
    "interpolation_mode, int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, "
    "Tensor)";

struct SpatialOp {
  const char* schema;
  BuildFn build;
};

std::vector<SpatialOp> spatial_ops() {
  return {
      {"col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] "
       "padding, int[2] stride) -> Tensor",
       col2im},
      {"grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool "
       "align_corners) -> Tensor",
       grid_sampler_2d},
      {"grid_sampler_3d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool "
       "align_corners) -> Tensor",
       grid_sampler_3d},
      {"im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> "
       "Tensor",
       im2col},
  };
}

}  // namespace

void register_nn_spatial_ops(OpRegistry& r) {
  for (auto& op : spatial_ops())
    r.add(op.schema, OpCategory::Composite, Promotion::None, infer_by_building(op.build));
  r.add_multi(kGridSamplerBackward, OpCategory::Composite,
              infer_by_expansion(parse_schema(kGridSamplerBackward).name));
}

void register_nn_spatial_expansions(ExpansionTable& t) {
  t.add(parse_schema(kGridSamplerBackward).name, grid_sampler_2d_backward);
}

void register_nn_spatial_decompositions(DecompositionTable& t) {
  for (auto& op : spatial_ops()) t.add(parse_schema(op.schema).name, decomposition_by_building(op.build));
}

void register_nn_spatial_kernels(InterpreterTable& t) {
  for (auto& op : spatial_ops()) t.add(parse_schema(op.schema).name, kernels::run_decomposition);
}

void register_nn_spatial_vjps(VjpTable& t) {
  for (auto& op : spatial_ops()) t.add(parse_schema(op.schema).name, vjp_via_decomposition);
}

void register_nn_spatial_jvps(JvpTable& t) {
  for (auto& op : spatial_ops()) t.add(parse_schema(op.schema).name, jvp_via_decomposition);
}

}  // namespace stax
