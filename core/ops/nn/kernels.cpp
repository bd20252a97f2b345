// Interpreter kernels of the neural-network ops (core/ops/nn/schemas.cpp).
//
// convolution, max_poolNd, avg_poolNd and batch_norm are written directly as loops over the
// definition (accumulating in double, one rounding to the result dtype; integer convolution in
// wrapping 64-bit integers): they are the oracle the
// compiled paths (cpu_cpp's im2col + gemm extern, the pooling decompositions) are compared against,
// and convolution's kernel is also what runs a convolution on a backend without that extern. The
// other ops run their decomposition (kernels::run_decomposition), checked against hand-computed
// and numpy values in tests/nn_ops_test.cpp.
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>

#include "core/ops/nn/params.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/nn/derivatives.h"
#include "core/ops/registration.h"
#include "core/ops/special/functions.h"

namespace stax {

namespace {

using nn::Ints;

// A tensor's elements in row-major order as doubles.
std::vector<double> values(const Tensor& t) {
  kernels::Reader<double> rd(t);
  std::vector<double> v;
  v.reserve(static_cast<size_t>(t.numel()));
  for (int64_t o : kernels::element_offsets(t.sizes(), t.strides())) v.push_back(rd(o));
  return v;
}

Tensor from_values(const TensorMeta& m, const std::vector<double>& v) {
  Tensor out = Tensor::empty(m.sizes, m.dtype);
  kernels::Writer<double> wr(out);
  auto offs = kernels::element_offsets(out.sizes(), out.strides());
  for (size_t i = 0; i < offs.size(); ++i) wr(offs[i], v[i]);
  return out;
}

// Spatial extents padded to 3 dims (leading 1s).
struct Spatial3 {
  int64_t d[3] = {1, 1, 1};
  int64_t numel() const { return d[0] * d[1] * d[2]; }
};
Spatial3 spatial3(const Shape& s, size_t first) {
  Spatial3 r;
  size_t sp = s.size() - first;
  for (size_t i = 0; i < sp; ++i) r.d[3 - sp + i] = s[first + i];
  return r;
}
Ints pad3(const Ints& v, int64_t fill) {
  Ints r(3, fill);
  for (size_t i = 0; i < v.size(); ++i) r[3 - v.size() + i] = v[i];
  return r;
}

// A tensor's elements in row-major order as T: double, or uint64_t for the integer dtypes (their
// int64 bits, so sums and products wrap modulo 2^64 and a narrower result keeps its low bits, as
// torch's integer convolution computes in the element type).
template <typename T>
std::vector<T> values_as(const Tensor& t) {
  if constexpr (std::is_same_v<T, double>) {
    return values(t);
  } else {
    kernels::Reader<int64_t> rd(t);
    std::vector<T> v;
    v.reserve(static_cast<size_t>(t.numel()));
    for (int64_t o : kernels::element_offsets(t.sizes(), t.strides()))
      v.push_back(static_cast<T>(rd(o)));
    return v;
  }
}

template <typename T>
Tensor from_values_as(const TensorMeta& m, const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, double>) {
    return from_values(m, v);
  } else {
    Tensor out = Tensor::empty(m.sizes, m.dtype);
    kernels::Writer<int64_t> wr(out);
    auto offs = kernels::element_offsets(out.sizes(), out.strides());
    for (size_t i = 0; i < offs.size(); ++i) wr(offs[i], static_cast<int64_t>(v[i]));
    return out;
  }
}

// convolution straight from its definition, accumulating in T (double for floating dtypes, one
// rounding to the result; uint64_t wrapping for integers).
template <typename T>
Tensor convolution_as(const KernelContext& ctx) {
  const Tensor& x = ctx.tensor("input");
  const Tensor& w = ctx.tensor("weight");
  size_t sp = static_cast<size_t>(x.dim() - 2);
  const Node& n = ctx.node();
  nn::ConvParams p = nn::conv_params([&n](const char* k) -> const Arg& { return n.arg(k); }, sp,
                                     "%" + n.name());
  const TensorMeta& om = ctx.out_meta();
  std::vector<T> xv = values_as<T>(x), wv = values_as<T>(w), out(static_cast<size_t>(shape_numel(om.sizes)), T{0});
  int64_t N = x.sizes()[0], Cin = x.sizes()[1], Cout = om.sizes[1], G = p.groups;
  int64_t Cig = Cin / G, Cog = Cout / G;
  Spatial3 in = spatial3(x.sizes(), 2), ks = spatial3(w.sizes(), 2), os = spatial3(om.sizes, 2);
  Ints s = pad3(p.stride, 1), pd = pad3(p.padding, 0), dl = pad3(p.dilation, 1);
  int64_t in_n = in.numel(), k_n = ks.numel(), o_n = os.numel();
  for (int64_t b = 0; b < N; ++b)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t ci = 0; ci < Cig; ++ci) {
        int64_t cin = g * Cig + ci;
        const T* xp = xv.data() + (b * Cin + cin) * in_n;
        for (int64_t co = 0; co < Cog; ++co) {
          int64_t cout = g * Cog + co;
          // weight: (Cout, Cig, k...) or, transposed, (Cin, Cog, k...)
          const T* wp = wv.data() + (p.transposed ? (cin * Cog + co) : (cout * Cig + ci)) * k_n;
          T* op = out.data() + (b * Cout + cout) * o_n;
          for (int64_t k0 = 0; k0 < ks.d[0]; ++k0)
            for (int64_t k1 = 0; k1 < ks.d[1]; ++k1)
              for (int64_t k2 = 0; k2 < ks.d[2]; ++k2) {
                T wk = wp[(k0 * ks.d[1] + k1) * ks.d[2] + k2];
                int64_t kk[3] = {k0, k1, k2};
                if (!p.transposed) {
                  // out[o] += x[o*s - p + k*d] * w[k]
                  for (int64_t o0 = 0; o0 < os.d[0]; ++o0) {
                    int64_t i0 = o0 * s[0] - pd[0] + kk[0] * dl[0];
                    if (i0 < 0 || i0 >= in.d[0]) continue;
                    for (int64_t o1 = 0; o1 < os.d[1]; ++o1) {
                      int64_t i1 = o1 * s[1] - pd[1] + kk[1] * dl[1];
                      if (i1 < 0 || i1 >= in.d[1]) continue;
                      for (int64_t o2 = 0; o2 < os.d[2]; ++o2) {
                        int64_t i2 = o2 * s[2] - pd[2] + kk[2] * dl[2];
                        if (i2 < 0 || i2 >= in.d[2]) continue;
                        op[(o0 * os.d[1] + o1) * os.d[2] + o2] +=
                            xp[(i0 * in.d[1] + i1) * in.d[2] + i2] * wk;
                      }
                    }
                  }
                } else {
                  // out[i*s - p + k*d] += x[i] * w[k]
                  for (int64_t i0 = 0; i0 < in.d[0]; ++i0) {
                    int64_t o0 = i0 * s[0] - pd[0] + kk[0] * dl[0];
                    if (o0 < 0 || o0 >= os.d[0]) continue;
                    for (int64_t i1 = 0; i1 < in.d[1]; ++i1) {
                      int64_t o1 = i1 * s[1] - pd[1] + kk[1] * dl[1];
                      if (o1 < 0 || o1 >= os.d[1]) continue;
                      for (int64_t i2 = 0; i2 < in.d[2]; ++i2) {
                        int64_t o2 = i2 * s[2] - pd[2] + kk[2] * dl[2];
                        if (o2 < 0 || o2 >= os.d[2]) continue;
                        op[(o0 * os.d[1] + o1) * os.d[2] + o2] +=
                            xp[(i0 * in.d[1] + i1) * in.d[2] + i2] * wk;
                      }
                    }
                  }
                }
              }
        }
      }
  if (ctx.arg("bias").is_node()) {
    std::vector<T> bv = values_as<T>(ctx.tensor("bias"));
    for (int64_t b = 0; b < N; ++b)
      for (int64_t c = 0; c < Cout; ++c)
        for (int64_t o = 0; o < o_n; ++o) out[(b * Cout + c) * o_n + o] += bv[c];
  }
  return from_values_as<T>(om, out);
}

Tensor convolution_kernel(const KernelContext& ctx) {
  return is_floating(ctx.out_meta().dtype) ? convolution_as<double>(ctx) : convolution_as<uint64_t>(ctx);
}

// max_poolNd / avg_poolNd over the last sp dims, straight from torch's definition.
Tensor pool_kernel(const KernelContext& ctx, size_t sp, bool max) {
  const Tensor& x = ctx.tensor("self");
  const Node& n = ctx.node();
  nn::PoolParams p = nn::pool_params([&n](const char* k) -> const Arg& { return n.arg(k); }, sp, max,
                                     "%" + n.name());
  const TensorMeta& om = ctx.out_meta();
  std::vector<double> xv = values(x), out(static_cast<size_t>(shape_numel(om.sizes)));
  size_t first = x.sizes().size() - sp;
  Spatial3 in = spatial3(x.sizes(), first), os = spatial3(om.sizes, first);
  Ints k = pad3(p.kernel, 1), s = pad3(p.stride, 1), pd = pad3(p.padding, 0), dl = pad3(p.dilation, 1);
  int64_t planes = in.numel() == 0 ? 0 : x.numel() / in.numel();
  bool count_pad = !max && n.arg("count_include_pad").to_bool();
  Arg over = !max && n.op()->schema.index_of("divisor_override") >= 0 ? n.arg("divisor_override") : Arg();
  for (int64_t pl = 0; pl < planes; ++pl) {
    const double* xp = xv.data() + pl * in.numel();
    double* op = out.data() + pl * os.numel();
    for (int64_t o0 = 0; o0 < os.d[0]; ++o0)
      for (int64_t o1 = 0; o1 < os.d[1]; ++o1)
        for (int64_t o2 = 0; o2 < os.d[2]; ++o2) {
          int64_t o[3] = {o0, o1, o2};
          double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t inside = 0, padded = 1;
          for (int d = 0; d < 3; ++d) {  // torch's pool_size: the window clipped to input + pad
            int64_t start = o[d] * s[d] - pd[d];
            int64_t end = std::min(start + k[d], in.d[d] + pd[d]);
            padded *= end - start;
          }
          for (int64_t k0 = 0; k0 < k[0]; ++k0)
            for (int64_t k1 = 0; k1 < k[1]; ++k1)
              for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                int64_t i0 = o0 * s[0] - pd[0] + k0 * dl[0], i1 = o1 * s[1] - pd[1] + k1 * dl[1],
                        i2 = o2 * s[2] - pd[2] + k2 * dl[2];
                if (i0 < 0 || i0 >= in.d[0] || i1 < 0 || i1 >= in.d[1] || i2 < 0 || i2 >= in.d[2])
                  continue;
                double v = xp[(i0 * in.d[1] + i1) * in.d[2] + i2];
                ++inside;
                if (max) {
                  if (std::isnan(v) || v > acc) acc = v;
                  if (std::isnan(acc)) break;
                } else {
                  acc += v;
                }
              }
          if (!max) {
            double div = !over.is_absent() ? static_cast<double>(over.to_int())
                         : count_pad       ? static_cast<double>(padded)
                                           : static_cast<double>(inside);
            // int64 (torch's integer kernel): the exact window sum divided with truncation
            acc = x.dtype() == DType::Int64
                      ? static_cast<double>(static_cast<int64_t>(acc) / static_cast<int64_t>(div))
                      : acc / div;
          }
          op[(o0 * os.d[1] + o1) * os.d[2] + o2] = acc;
        }
  }
  return from_values(om, out);
}

// batch_norm: batch statistics (biased variance) when training or without running stats.
Tensor batch_norm_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.tensor("input");
  std::vector<double> xv = values(x), out(xv.size());
  int64_t N = x.sizes()[0], C = x.sizes()[1];
  int64_t inner = C == 0 || N == 0 ? 0 : x.numel() / (N * C);
  auto opt = [&](const char* p) {
    return ctx.arg(p).is_node() ? values(ctx.tensor(p)) : std::vector<double>();
  };
  std::vector<double> w = opt("weight"), b = opt("bias"), rm = opt("running_mean"), rv = opt("running_var");
  bool batch = ctx.arg("training").to_bool() || rm.empty() || rv.empty();
  double eps = ctx.arg("eps").to_double();
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0, var = 0, cnt = static_cast<double>(N * inner);
    if (batch) {
      for (int64_t b0 = 0; b0 < N; ++b0)
        for (int64_t i = 0; i < inner; ++i) mean += xv[(b0 * C + c) * inner + i];
      mean /= cnt;
      for (int64_t b0 = 0; b0 < N; ++b0)
        for (int64_t i = 0; i < inner; ++i) {
          double d = xv[(b0 * C + c) * inner + i] - mean;
          var += d * d;
        }
      var /= cnt;
    } else {
      mean = rm[c];
      var = rv[c];
    }
    double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t b0 = 0; b0 < N; ++b0)
      for (int64_t i = 0; i < inner; ++i) {
        size_t k = static_cast<size_t>((b0 * C + c) * inner + i);
        double y = (xv[k] - mean) * rstd;
        if (!w.empty()) y *= w[c];
        if (!b.empty()) y += b[c];
        out[k] = y;
      }
  }
  return from_values(ctx.out_meta(), out);
}

using namespace kernels;

}  // namespace

void register_nn_kernels(InterpreterTable& t) {
  t.add("convolution.default", convolution_kernel);
  t.add("batch_norm.default", batch_norm_kernel);
  for (size_t sp = 1; sp <= 3; ++sp) {
    std::string s = std::to_string(sp);
    t.add("max_pool" + s + "d.default", [sp](const KernelContext& c) { return pool_kernel(c, sp, true); });
    t.add("avg_pool" + s + "d.default", [sp](const KernelContext& c) { return pool_kernel(c, sp, false); });
    t.add("adaptive_avg_pool" + s + "d.default", kernels::run_decomposition);
  }
  for (const char* op :
       {"conv1d.default", "conv2d.default", "conv3d.default", "conv1d.padding", "conv2d.padding",
        "conv3d.padding", "conv_transpose1d.default",
        "conv_transpose2d.input", "conv_transpose3d.input", "group_norm.default",
        "embedding.default", "embedding_dense_backward.default", "constant_pad_nd.default",
        "reflection_pad1d.default", "reflection_pad2d.default", "replication_pad1d.default",
        "replication_pad2d.default", "reflection_pad3d.default", "replication_pad3d.default",
        "upsample_nearest2d.default", "upsample_bilinear2d.default",
        "nll_loss.default", "nll_loss2d.default", "nll_loss_backward.default", "mse_loss.default",
        "smooth_l1_loss.default", "binary_cross_entropy_with_logits.default",
        "cross_entropy_loss.default", "scaled_dot_product_attention.default"})
    t.add(op, kernels::run_decomposition);
  // ---- Composite ops: their decomposition
  // The nn.functional ops composed from other ops (functional_decompositions.cpp).
  for (const std::string& op : nn_functional_ops()) t.add(op, kernels::run_decomposition);
}

}  // namespace stax
