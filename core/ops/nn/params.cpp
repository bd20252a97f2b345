#include "core/ops/nn/params.h"

#include "core/support/error.h"

namespace stax::nn {

bool attention_draws_random(const Node& n) { return n.arg("dropout_p").to_double() != 0.0; }

namespace {

std::string list_str(const Ints& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

Ints expand_list(const Arg& a, size_t n, const std::string& what, const std::string& where,
                 int64_t min_value) {
  Ints v;
  if (a.is_int()) {
    v.assign(n, a.to_int());
  } else if (a.is_list()) {
    v = a.to_int_list();
    if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  } else {
    throw Error("shape", where, what + " must be an int or a list of " + std::to_string(n) + " ints");
  }
  if (v.size() != n)
    throw Error("shape", where,
                what + " must have " + std::to_string(n) + " entries (one per spatial dim), got " +
                    list_str(v));
  for (int64_t x : v)
    if (x < min_value)
      throw Error("shape", where,
                  what + " must be >= " + std::to_string(min_value) + ", got " + list_str(v));
  return v;
}

ConvParams conv_params(const std::function<const Arg&(const char*)>& get, size_t spatial,
                       const std::string& where) {
  ConvParams p;
  p.stride = expand_list(get("stride"), spatial, "stride", where, 1);
  p.padding = expand_list(get("padding"), spatial, "padding", where, 0);
  p.dilation = expand_list(get("dilation"), spatial, "dilation", where, 1);
  p.transposed = get("transposed").to_bool();
  p.output_padding = expand_list(get("output_padding"), spatial, "output_padding", where, 0);
  p.groups = get("groups").to_int();
  if (p.groups < 1) throw Error("shape", where, "groups must be >= 1, got " + std::to_string(p.groups));
  for (size_t i = 0; i < spatial; ++i) {
    if (!p.transposed && p.output_padding[i] != 0)
      throw Error("shape", where, "output_padding is only allowed for a transposed convolution");
    if (p.transposed && p.output_padding[i] >= std::max(p.stride[i], p.dilation[i]))
      throw Error("shape", where,
                  "output_padding " + list_str(p.output_padding) +
                      " must be smaller than either stride or dilation");
  }
  return p;
}

void check_conv_empty_dims(const Shape& x, const Shape& w, int64_t groups, bool transposed,
                           const std::string& where) {
  auto fail = [&](const std::string& m) { throw Error("shape", where, m); };
  if (!w.empty() && w[0] < groups)
    fail("Given groups=" + std::to_string(groups) + ", expected weight to be at least " +
         std::to_string(groups) + " at dimension 0, but got weight of size " + shape_str(w));
  Shape xs = x;
  if (xs.size() + 1 == w.size()) xs.insert(xs.begin(), 1);  // an unbatched input: a batch of 1
  if (xs.size() >= 2 && shape_numel(xs) == 0 && xs[0] != 0 && xs[1] != 0)
    fail("only zero batch or zero channel inputs are supported, but got input shape " +
         shape_str(x) + " (an empty spatial dim)");
  if (transposed && shape_numel(w) == 0)
    fail("weight " + shape_str(w) + " of a transposed convolution must be non-empty");
}

void check_pool_input(const Shape& x, size_t spatial, bool adaptive, const std::string& where) {
  int64_t r = static_cast<int64_t>(spatial), n = static_cast<int64_t>(x.size());
  if (n != r + 1 && n != r + 2)
    throw Error("shape", where, "input must be " + std::to_string(r + 1) + "-D or " +
                                    std::to_string(r + 2) + "-D, got " + shape_str(x));
  int64_t first = adaptive ? (spatial == 3 ? 1 : n - r) : (n == r + 2 ? 1 : 0);
  for (int64_t d = first; d < n; ++d)
    if (x[d] == 0)
      throw Error("shape", where,
                  "expected input to have non-zero size for non-batch dimensions, but input " +
                      shape_str(x) + " has dimension " + std::to_string(d) + " empty");
}

int64_t conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                      bool transposed, int64_t output_padding) {
  if (transposed) return (in - 1) * stride - 2 * pad + dilation * (k - 1) + output_padding + 1;
  int64_t span = in + 2 * pad - dilation * (k - 1) - 1;
  if (span < 0) return 0;
  return span / stride + 1;
}

int64_t pool_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                      bool ceil_mode) {
  // torch's pooling_output_shape: the division rounds toward negative infinity, so in ceil mode
  // one window may start inside the input and reach past its end (and past the padding).
  int64_t num = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (out < 0) return 0;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

PoolParams pool_params(const std::function<const Arg&(const char*)>& get, size_t spatial,
                       bool has_dilation, const std::string& where) {
  PoolParams p;
  p.kernel = expand_list(get("kernel_size"), spatial, "kernel_size", where, 1);
  const Arg& s = get("stride");
  if (s.is_absent() || (s.is_list() && s.to_int_list().empty()))
    p.stride = p.kernel;
  else
    p.stride = expand_list(s, spatial, "stride", where, 1);
  p.padding = expand_list(get("padding"), spatial, "padding", where, 0);
  p.dilation = has_dilation ? expand_list(get("dilation"), spatial, "dilation", where, 1)
                            : Ints(spatial, 1);
  p.ceil_mode = get("ceil_mode").to_bool();
  // torch (pool2d_shape_check / pool3d_shape_check / max_pool1d): at most half the kernel
  // itself, whatever the dilation.
  for (size_t i = 0; i < spatial; ++i)
    if (2 * p.padding[i] > p.kernel[i])
      throw Error("shape", where,
                  "padding " + list_str(p.padding) + " must be at most half of the kernel size " +
                      list_str(p.kernel) + " (the undilated kernel, as torch)");
  return p;
}

}  // namespace stax::nn
