// The upsampling ops beyond upsample_nearest2d / upsample_bilinear2d (core/ops/nn/decompositions.cpp),
// for F.interpolate's other modes and ranks:
//   upsample_nearest1d / upsample_nearest3d, _upsample_nearest_exact1d / 2d / 3d,
//   upsample_linear1d, upsample_trilinear3d, upsample_bicubic2d
// Each resamples the last 1 to 3 dims of an (N, C, spatial...) input, one dim at a time (the
// innermost first), with torch's CPU source-index arithmetic (UpSample.h):
//   scale      align_corners: (in - 1) / (out - 1) (0 when out == 1); else 1 / scales[d] when
//              given and positive, else in / out; float for every input but double (float64)
//   nearest    src = min(floor(dst * scale), in - 1) (scale in float); exact: floor((dst + 0.5)
//              * scale); torch's shortcuts (out == in, out == 2 in) give the same indices
//   linear     src = align ? dst * scale : max(scale (dst + 0.5) - 0.5, 0); i0 = floor(src),
//              i1 = min(i0 + 1, in - 1), weights 1 - λ and λ = src - i0
//   cubic      src as linear without the clamp at 0; t = src - floor(src); the 4 taps
//              floor(src) - 1 .. + 2, clamped into range, weighted by Keys' cubic convolution
//              with A = -0.75 (torch's get_cubic_upsample_coefficients)
// gathered by index_select along the dim and summed (computed in float32 for float16 / bfloat16,
// as torch's opmath). Composite, one builder each (core/ops/common/built_ops.h): VJP / JVP go
// through the decomposition (index_select's adjoint, index_add), as torch's *_backward kernels.
// nearest takes uint8 too (torch has its kernel); linear and cubic floating inputs only.
#include <cmath>
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/ops/common/built_ops.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

enum class Mode { Nearest, NearestExact, Linear, Cubic };

struct Resample {
  Mode mode;
  int spatial;   // 1, 2 or 3 trailing dims
  bool corners;  // the schema has align_corners
};

// The scales parameter of spatial dim i (of k): scales / scales_h, scales_w / scales_d ...
std::string scale_param(int k, int i) {
  if (k == 1) return "scales";
  static const char* names3[] = {"scales_d", "scales_h", "scales_w"};
  return names3[3 - k + i];
}

Node* arange_of(Graph& g, int64_t n, DType t) {
  return g.call("arange", {n}, {{"dtype", Arg(t)}});
}

Node* clamp_index(Graph& g, Node* i, int64_t in) { return g.call("clamp", {i, int64_t{0}, in - 1}); }

// Keys' cubic convolution weights of the taps at offsets -1, 0, 1, 2 from floor(src).
std::vector<Node*> cubic_weights(Graph& g, Node* t) {
  const double A = -0.75;
  auto conv1 = [&](Node* x) {  // ((A + 2) x - (A + 3)) x x + 1
    Node* a = g.call("sub.Scalar", {g.call("mul.Scalar", {x, A + 2}), A + 3});
    return g.call("add.Scalar", {g.call("mul.Tensor", {g.call("mul.Tensor", {a, x}), x}), 1.0});
  };
  auto conv2 = [&](Node* x) {  // ((A x - 5A) x + 8A) x - 4A
    Node* a = g.call("sub.Scalar", {g.call("mul.Scalar", {x, A}), 5 * A});
    Node* b = g.call("add.Scalar", {g.call("mul.Tensor", {a, x}), 8 * A});
    return g.call("sub.Scalar", {g.call("mul.Tensor", {b, x}), 4 * A});
  };
  Node* u = g.call("rsub.Scalar", {t, 1.0});
  return {conv2(g.call("add.Scalar", {t, 1.0})), conv1(t), conv1(u), conv2(g.call("add.Scalar", {u, 1.0}))};
}

// x resampled along dim d (size in) to size out.
Node* resample_dim(Graph& g, const ExpandCall& c, const Resample& r, Node* x, int64_t d,
                   int64_t out, const Arg& scales, DType acc) {
  int64_t in = x->shape()[d];
  bool dbl = acc == DType::Float64;
  double sc;
  if (r.corners && c.get("align_corners").to_bool())
    sc = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  else
    sc = !scales.is_absent() && scales.to_double() > 0 ? 1.0 / scales.to_double()
                                                       : static_cast<double>(in) / static_cast<double>(out);
  if (r.mode == Mode::Nearest || r.mode == Mode::NearestExact) {
    Node* dst = arange_of(g, out, DType::Float32);
    if (r.mode == Mode::NearestExact) dst = g.call("add.Scalar", {dst, 0.5});
    Node* src = g.call("mul.Scalar", {dst, static_cast<double>(static_cast<float>(sc))});
    Node* idx = g.call("clamp", {g.call("to.dtype", {g.call("floor", {src}), DType::Int64}), Arg(), in - 1});
    return g.call("index_select", {x, d, idx});
  }
  if (!dbl) sc = static_cast<float>(sc);
  bool align = r.corners && c.get("align_corners").to_bool();
  Node* dst = arange_of(g, out, acc);
  Node* src = align ? g.call("mul.Scalar", {dst, sc})
                    : g.call("sub.Scalar", {g.call("mul.Scalar", {g.call("add.Scalar", {dst, 0.5}), sc}), 0.5});
  // the weights broadcast over the dims after d
  Shape wshape(static_cast<size_t>(x->meta().dim() - d), 1);
  wshape[0] = out;
  auto weighted = [&](Node* idx, Node* w) {
    return g.call("mul.Tensor", {g.call("reshape", {w, Arg(wshape)}), g.call("index_select", {x, d, idx})});
  };
  if (r.mode == Mode::Linear) {
    if (!align) src = g.call("clamp", {src, 0.0});
    Node* i0 = g.call("clamp", {g.call("to.dtype", {g.call("floor", {src}), DType::Int64}), Arg(), in - 1});
    Node* lam1 = g.call("clamp", {g.call("sub.Tensor", {src, g.call("to.dtype", {i0, acc})}), 0.0, 1.0});
    Node* lam0 = g.call("rsub.Scalar", {lam1, 1.0});
    Node* i1 = clamp_index(g, g.call("add.Scalar", {i0, 1}), in);
    return g.call("add.Tensor", {weighted(i0, lam0), weighted(i1, lam1)});
  }
  Node* f = g.call("floor", {src});
  std::vector<Node*> w = cubic_weights(g, g.call("sub.Tensor", {src, f}));
  Node* base = g.call("to.dtype", {f, DType::Int64});
  Node* sum = nullptr;
  for (int k = 0; k < 4; ++k) {
    Node* term = weighted(clamp_index(g, g.call("add.Scalar", {base, k - 1}), in), w[k]);
    sum = sum ? g.call("add.Tensor", {sum, term}) : term;
  }
  return sum;
}

BuildFn resample(Resample r) {
  return [r](Graph& g, const ExpandCall& c) {
    Node* x = c.tensor("self");
    int64_t rank = x->meta().dim();
    if (rank != r.spatial + 2)
      c.fail("expected a " + std::to_string(r.spatial + 2) + "-D input (N, C, " +
             std::to_string(r.spatial) + " spatial dims), got " + shape_str(x->shape()));
    bool nearest = r.mode == Mode::Nearest || r.mode == Mode::NearestExact;
    if (!is_floating(x->dtype()) && !(nearest && x->dtype() == DType::UInt8))
      c.fail(std::string("expected a floating-point input") + (nearest ? " (or uint8)" : "") +
             ", got " + std::string(dtype_name(x->dtype())));
    std::vector<int64_t> os = c.get("output_size").to_int_list();
    if (static_cast<int>(os.size()) != r.spatial)
      c.fail("output_size must have " + std::to_string(r.spatial) + " elements, got " + shape_list_str(os));
    for (int64_t d = 1; d < rank; ++d)
      if (x->shape()[d] == 0 || (d >= 2 && os[d - 2] <= 0))
        c.fail("input and output sizes should be greater than 0 (input " + shape_str(x->shape()) +
               ", output_size " + shape_list_str(os) + ")");
    DType in_t = x->dtype();
    DType acc = nearest ? in_t : in_t == DType::Float64 ? DType::Float64 : DType::Float32;
    if (acc != in_t) x = g.call("to.dtype", {x, acc});
    for (int i = r.spatial - 1; i >= 0; --i)
      x = resample_dim(g, c, r, x, 2 + i, os[i], c.get(scale_param(r.spatial, i)), acc);
    return acc != in_t ? g.call("to.dtype", {x, in_t}) : x;
  };
}

// ---- _upsample_bilinear2d_aa (F.interpolate(..., mode='bilinear', antialias=True)) ----------
// torch's CPU kernel (UpSampleKernel.cpp, _compute_weights_aa with the triangle filter) per
// spatial dim, in the computation type T (float32, float64; half types in float32):
//   scale     align_corners: (in - 1) / (out - 1) (0 when out == 1); else 1 / scales[d] when
//             given and positive, else in / out
//   support   scale >= 1 ? scale : 1;  invscale = scale >= 1 ? 1 / scale : 1
//   center_i  scale (i + 0.5);  xmin = max(trunc(center - support + 0.5), 0);
//             xsize = min(trunc(center + support + 0.5), in) - xmin, clamped to [0, 2 ceil(support) + 1]
//   w_ik      filter((k - center + 0.5) invscale) for xmin <= k < xmin + xsize (filter(x) =
//             1 - |x| for |x| < 1, else 0), divided by the row's sum when it is not 0
// As a dense (out, in) weight matrix W built from aranges, applied by matmul (the last dim first,
// then the one before, as torch; a dim whose size does not change is skipped, as torch), so the
// compiled path runs the mm extern and the VJP / JVP go through the decomposition (W^T).
// _upsample_bilinear2d_aa_backward is that VJP: W_h^T grad W_w. uint8 (torch's fixed-point AVX
// path) is refused.
Node* aa_weights(Graph& g, int64_t in, int64_t out, bool align, const Arg& scales, DType acc) {
  bool dbl = acc == DType::Float64;
  auto round_t = [dbl](double v) { return dbl ? v : static_cast<double>(static_cast<float>(v)); };
  double sc;
  if (align)
    sc = out > 1 ? round_t(round_t(static_cast<double>(in - 1)) / round_t(static_cast<double>(out - 1)))
                 : 0.0;
  else if (!scales.is_absent() && scales.to_double() > 0)
    sc = round_t(1.0 / scales.to_double());
  else
    sc = round_t(round_t(static_cast<double>(in)) / round_t(static_cast<double>(out)));
  double support = sc >= 1.0 ? sc : 1.0;
  double invscale = sc >= 1.0 ? round_t(1.0 / sc) : 1.0;
  int64_t max_size = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  Node* i = g.call("reshape", {arange_of(g, out, acc), Arg(Shape{out, 1})});
  Node* k = g.call("reshape", {arange_of(g, in, acc), Arg(Shape{1, in})});
  Node* center = g.call("mul.Scalar", {g.call("add.Scalar", {i, 0.5}), sc});
  Node* xmin = g.call("clamp_min",
                      {g.call("trunc", {g.call("add.Scalar", {g.call("sub.Scalar", {center, support}), 0.5})}),
                       0.0});
  Node* xmax = g.call("clamp_max",
                      {g.call("trunc", {g.call("add.Scalar", {g.call("add.Scalar", {center, support}), 0.5})}),
                       static_cast<double>(in)});
  Node* xsize = g.call("clamp", {g.call("sub.Tensor", {xmax, xmin}), 0.0, static_cast<double>(max_size)});
  Node* upper = g.call("add.Tensor", {xmin, xsize});
  Node* inside = g.call("logical_and", {g.call("ge.Tensor", {k, xmin}), g.call("lt.Tensor", {k, upper})});
  Node* arg = g.call("mul.Scalar", {g.call("add.Scalar", {g.call("sub.Tensor", {k, center}), 0.5}), invscale});
  Node* a = g.call("abs", {arg});
  Node* zero = g.call("zeros", {Arg(Shape{})}, {{"dtype", Arg(acc)}});
  Node* tri = g.call("where.self", {g.call("lt.Scalar", {a, 1.0}), g.call("rsub.Scalar", {a, 1.0}), zero});
  Node* w = g.call("where.self", {inside, tri, zero});
  Node* total = g.call("sum.dim_IntList", {w, Arg(std::vector<int64_t>{1}), true});
  return g.call("where.self", {g.call("ne.Scalar", {total, 0.0}), g.call("div.Tensor", {w, total}), w});
}

struct AaDims {
  int64_t in_h, in_w, out_h, out_w;
};

// x (N, C, H, W) in the computation type; backward: x is the gradient (N, C, out_h, out_w).
Node* aa_apply(Graph& g, const ExpandCall& c, Node* x, const AaDims& d, DType acc, bool backward) {
  bool align = c.get("align_corners").to_bool();
  auto t = [&](Node* m) { return g.call("permute", {m, Arg(std::vector<int64_t>{1, 0})}); };
  if (d.in_w != d.out_w) {
    Node* ww = aa_weights(g, d.in_w, d.out_w, align, c.get("scales_w"), acc);  // (out_w, in_w)
    x = g.call("matmul", {x, backward ? ww : t(ww)});
  }
  if (d.in_h != d.out_h) {
    Node* wh = aa_weights(g, d.in_h, d.out_h, align, c.get("scales_h"), acc);  // (out_h, in_h)
    x = g.call("matmul", {backward ? t(wh) : wh, x});
  }
  return x;
}

DType aa_compute_type(const ExpandCall& c, DType t) {
  if (!is_floating(t))
    c.fail("_upsample_bilinear2d_aa: expected a floating-point input, got " +
           std::string(dtype_name(t)) + " (torch's uint8 path, fixed-point weights, is not supported)");
  return t == DType::Float64 ? DType::Float64 : DType::Float32;
}

Node* upsample_bilinear2d_aa(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  if (x->meta().dim() != 4)
    c.fail("expected a 4-D input (N, C, H, W), got " + shape_str(x->shape()));
  std::vector<int64_t> os = c.get("output_size").to_int_list();
  if (os.size() != 2) c.fail("output_size must have 2 elements, got " + shape_list_str(os));
  for (int64_t d = 1; d < 4; ++d)
    if (x->shape()[d] == 0 || (d >= 2 && os[d - 2] <= 0))
      c.fail("input and output sizes should be greater than 0 (input " + shape_str(x->shape()) +
             ", output_size " + shape_list_str(os) + ")");
  DType in_t = x->dtype(), acc = aa_compute_type(c, in_t);
  if (acc != in_t) x = g.call("to.dtype", {x, acc});
  Node* y = aa_apply(g, c, x, {x->shape()[2], x->shape()[3], os[0], os[1]}, acc, false);
  if (y == x) y = g.call("clone", {y});
  return acc != in_t ? g.call("to.dtype", {y, in_t}) : y;
}

Node* upsample_bilinear2d_aa_vec(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("input");
  if (x->meta().dim() != 4)
    c.fail("expected a 4-D input (N, C, H, W), got " + shape_str(x->shape()));
  const Arg& osize = c.get("output_size");
  const Arg& sf = c.get("scale_factors");
  if (osize.is_absent() == sf.is_absent())
    c.fail("must specify exactly one of output_size and scale_factors");
  std::vector<int64_t> os;
  Kwargs kw;
  if (!osize.is_absent()) {
    os = osize.to_int_list();
  } else {
    if (sf.list().size() != 2) c.fail("scale_factors must have 2 elements");
    const char* names[] = {"scales_h", "scales_w"};
    for (size_t i = 0; i < 2; ++i) {
      double f = sf.list()[i].to_double();
      os.push_back(static_cast<int64_t>(static_cast<double>(x->shape()[2 + i]) * f));
      kw.emplace_back(names[i], Arg(f));
    }
  }
  return g.call("_upsample_bilinear2d_aa", {x, Arg(os), c.get("align_corners")}, std::move(kw));
}

Node* upsample_bilinear2d_aa_backward(Graph& g, const ExpandCall& c) {
  Node* grad = c.tensor("grad_output");
  std::vector<int64_t> os = c.get("output_size").to_int_list();
  std::vector<int64_t> is = c.get("input_size").to_int_list();
  if (os.size() != 2 || is.size() != 4)
    c.fail("output_size must have 2 elements and input_size 4, got " + shape_list_str(os) +
           " and " + shape_list_str(is));
  if (grad->shape() != Shape{is[0], is[1], os[0], os[1]})
    c.fail("grad_output " + shape_str(grad->shape()) + " must have shape (" +
           std::to_string(is[0]) + ", " + std::to_string(is[1]) + ", " + std::to_string(os[0]) +
           ", " + std::to_string(os[1]) + ")");
  DType in_t = grad->dtype(), acc = aa_compute_type(c, in_t);
  if (acc != in_t) grad = g.call("to.dtype", {grad, acc});
  Node* y = aa_apply(g, c, grad, {is[2], is[3], os[0], os[1]}, acc, true);
  if (y == grad) y = g.call("clone", {y});
  return acc != in_t ? g.call("to.dtype", {y, in_t}) : y;
}

const std::vector<BuiltOp>& resampling_ops() {
  static const std::vector<BuiltOp> table = {
      {"upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor",
       resample({Mode::Nearest, 1, false})},
      {"upsample_nearest3d(Tensor self, SymInt[3] output_size, float? scales_d=None, "
       "float? scales_h=None, float? scales_w=None) -> Tensor",
       resample({Mode::Nearest, 3, false})},
      {"_upsample_nearest_exact1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor",
       resample({Mode::NearestExact, 1, false})},
      {"_upsample_nearest_exact2d(Tensor self, SymInt[2] output_size, float? scales_h=None, "
       "float? scales_w=None) -> Tensor",
       resample({Mode::NearestExact, 2, false})},
      {"_upsample_nearest_exact3d(Tensor self, SymInt[3] output_size, float? scales_d=None, "
       "float? scales_h=None, float? scales_w=None) -> Tensor",
       resample({Mode::NearestExact, 3, false})},
      {"upsample_linear1d(Tensor self, SymInt[1] output_size, bool align_corners, "
       "float? scales=None) -> Tensor",
       resample({Mode::Linear, 1, true})},
      {"upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, "
       "float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor",
       resample({Mode::Linear, 3, true})},
      {"upsample_bicubic2d(Tensor self, SymInt[2] output_size, bool align_corners, "
       "float? scales_h=None, float? scales_w=None) -> Tensor",
       resample({Mode::Cubic, 2, true})},
      {"_upsample_bilinear2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, "
       "float? scales_h=None, float? scales_w=None) -> Tensor",
       upsample_bilinear2d_aa},
      {"_upsample_bilinear2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
       "float[]? scale_factors) -> Tensor",
       upsample_bilinear2d_aa_vec},
      {"_upsample_bilinear2d_aa_backward(Tensor grad_output, SymInt[2] output_size, SymInt[4] "
       "input_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor",
       upsample_bilinear2d_aa_backward},
  };
  return table;
}

}  // namespace

void register_resampling_ops(OpRegistry& r) { add_built_ops(r, resampling_ops()); }

void register_resampling_decompositions(DecompositionTable& t) {
  add_built_decompositions(t, resampling_ops());
}

void register_resampling_kernels(InterpreterTable& t) { add_built_kernels(t, resampling_ops()); }

void register_resampling_vjps(VjpTable& t) { add_built_vjps(t, resampling_ops()); }

void register_resampling_jvps(JvpTable& t) { add_built_jvps(t, resampling_ops()); }

}  // namespace stax
