// The convolution ops with aten's schemas (issue 14), split from schemas.cpp: convolution (the
// base op, Extern: cpu_cpp runs it as im2col + gemm, any other backend on the interpreter's
// kernel) and its Composite entry points conv1d/2d/3d (also .padding) and conv_transpose1d/2d/3d,
// whose decompositions (core/ops/nn/decompositions.cpp) call convolution.
#include <string>
#include <vector>

#include "core/ops/nn/params.h"
#include "core/ops/common/infer_helpers.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

std::string dt(DType t) { return std::string(dtype_name(t)); }

// The input dtypes of torch's CPU convolutions: floating, or an integer type (not bool, not
// uint16 / uint32 / uint64) through its slow path; a transposed one takes int64 only
// ("slow_conv_transpose2d_out_cpu" not implemented for 'Int').
void need_conv_dtype(const CallArgs& c, const TensorMeta& x, bool transposed) {
  DType t = x.dtype;
  if (is_floating(t)) return;
  bool integer = t == DType::Int64 || t == DType::Int32 || t == DType::Int16 ||
                 t == DType::Int8 || t == DType::UInt8;
  if (!integer) c.fail("input must have a floating or integer dtype (int8 ... int64, uint8), got " + dt(t));
  if (transposed && t != DType::Int64)
    c.fail("a transposed convolution of integers takes int64 only (as torch's CPU kernel), got " +
           dt(t));
}

using infer::getter;
using infer::same_dtype;

// ---- convolution ---------------------------------------------------------------------------

// The checks torch's convolutions make beyond the output shape (issue 28: conv2d accepted any
// bias and failed only when run): the bias, when given, is one value per output channel of the
// input's dtype; every kernel size is positive; a transposed convolution's output padding is
// smaller than its stride or its dilation.
void conv_checks(const CallArgs& c, int64_t c_out) {
  const TensorMeta& x = c.tensor("input");
  const TensorMeta& w = c.tensor("weight");
  for (int64_t i = 2; i < w.dim(); ++i)
    if (w.sizes[i] <= 0)
      c.fail("weight " + shape_str(w.sizes) + ": kernel size should be greater than zero");
  const OpSchema& sc = c.op().schema;
  int64_t g = sc.index_of("groups") >= 0 ? c.get("groups").to_int() : 1;
  bool transposed = sc.index_of("output_padding") >= 0 &&
                    (sc.index_of("transposed") < 0 || c.get("transposed").to_bool());
  nn::check_conv_empty_dims(x.sizes, w.sizes, g, transposed, c.where());
  if (sc.index_of("output_padding") >= 0) {
    if (transposed && g > 0 && w.dim() > 0 && w.sizes[0] % g != 0)
      c.fail("weight " + shape_str(w.sizes) + " of a transposed convolution: its first dim (input "
             "channels) must be divisible by groups " + std::to_string(g));
    size_t sp = static_cast<size_t>(std::max<int64_t>(w.dim() - 2, 0));
    nn::Ints op = nn::expand_list(c.get("output_padding"), sp, "output_padding", c.where(), 0);
    nn::Ints st = nn::expand_list(c.get("stride"), sp, "stride", c.where(), 1);
    nn::Ints dil = nn::expand_list(c.get("dilation"), sp, "dilation", c.where(), 1);
    for (size_t i = 0; transposed && i < sp; ++i)
      if (op[i] >= st[i] && op[i] >= dil[i])
        c.fail("output padding must be smaller than either stride or dilation, but got "
               "output_padding=" + shape_list_str(op) + ", stride=" + shape_list_str(st) +
               ", dilation=" + shape_list_str(dil));
  }
  if (!c.has("bias")) return;
  const TensorMeta& b = c.tensor("bias");
  if (b.sizes != Shape{c_out})
    c.fail("bias " + shape_str(b.sizes) + " must have shape (" + std::to_string(c_out) +
           ",): one value per output channel");
  same_dtype(c, x, b, "input", "bias");
}

TensorMeta convolution_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("input");
  const TensorMeta& w = c.tensor("weight");
  need_conv_dtype(c, x, c.get("transposed").to_bool());
  same_dtype(c, x, w, "input", "weight");
  if (x.dim() < 3 || x.dim() > 5)
    c.fail("input must be 3-D, 4-D or 5-D (batch, channels, spatial...), got " + shape_str(x.sizes));
  if (w.dim() != x.dim())
    c.fail("weight " + shape_str(w.sizes) + " must have the rank of input " + shape_str(x.sizes));
  size_t sp = static_cast<size_t>(x.dim() - 2);
  nn::ConvParams p = nn::conv_params(getter(c), sp, c.where());
  int64_t g = p.groups;
  int64_t c_in = x.sizes[1];
  int64_t c_out;
  if (c_in % g != 0) c.fail("input channels " + std::to_string(c_in) + " are not divisible by groups " + std::to_string(g));
  if (!p.transposed) {
    if (w.sizes[0] % g != 0)
      c.fail("weight " + shape_str(w.sizes) + ": output channels not divisible by groups " +
             std::to_string(g));
    if (w.sizes[1] * g != c_in)
      c.fail("weight " + shape_str(w.sizes) + " expects " + std::to_string(w.sizes[1] * g) +
             " input channels (groups " + std::to_string(g) + "), but input " + shape_str(x.sizes) +
             " has " + std::to_string(c_in));
    c_out = w.sizes[0];
  } else {
    if (w.sizes[0] != c_in)
      c.fail("weight " + shape_str(w.sizes) + " of a transposed convolution must have " +
             std::to_string(c_in) + " (input channels) as its first dim");
    c_out = w.sizes[1] * g;
  }
  if (c.has("bias")) same_dtype(c, x, c.tensor("bias"), "input", "bias");
  conv_checks(c, c_out);
  Shape out{x.sizes[0], c_out};
  for (size_t i = 0; i < sp; ++i) {
    int64_t k = w.sizes[2 + i];
    int64_t o = nn::conv_out_size(x.sizes[2 + i], k, p.stride[i], p.padding[i], p.dilation[i],
                                  p.transposed, p.output_padding[i]);
    if (o <= 0)
      c.fail("the output would be empty: input " + shape_str(x.sizes) + " is smaller than the " +
             "(dilated) kernel " + shape_str(w.sizes) + " plus padding");
    out.push_back(o);
  }
  return TensorMeta::contiguous(out, x.dtype, x.device);
}

using P = Promotion;
constexpr OpCategory K = OpCategory::Composite;

// The entry points as torch 2.x prints their schemas: every int[N] default a list of N
// values (stride=[1, 1]; torch 1.13 printed int[2] / int[3] defaults as one int).
std::string repeat_default(int value, int sp) {
  std::string s = "[";
  for (int i = 0; i < sp; ++i) s += (i ? ", " : "") + std::to_string(value);
  return s + "]";
}

// convolution (the base op, Extern) and its entry points conv1d ... conv_transpose3d.
void add_convolution_ops(OpRegistry& r) {
  // convolution: the base op (Extern).
  r.add(
      "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
      "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
      OpCategory::Extern, P::None, convolution_rule);
  auto conv_entry = [&](const std::string& name, int sp, bool transposed) {
    std::string L = repeat_default(1, sp), Z = repeat_default(0, sp);
    std::string T = "int[" + std::to_string(sp) + "]";
    std::string s = name + "(Tensor input, Tensor weight, Tensor? bias=None, " + T +
                    " stride=" + L + ", " + T + " padding=" + Z + ", ";
    s += transposed ? T + " output_padding=" + Z + ", int groups=1, " + T + " dilation=" + L
                    : T + " dilation=" + L + ", int groups=1";
    s += ") -> Tensor";
    r.add(s, K, P::None, [sp, transposed](const CallArgs& c) {
      const TensorMeta& x = c.tensor("input");
      if (x.dim() != sp + 2 && x.dim() != sp + 1)
        c.fail("input must be " + std::to_string(sp + 1) + "-D (unbatched) or " +
               std::to_string(sp + 2) + "-D, got " + shape_str(x.sizes));
      const TensorMeta& w = c.tensor("weight");
      if (w.dim() != sp + 2)
        c.fail("weight must be " + std::to_string(sp + 2) + "-D, got " + shape_str(w.sizes));
      // Shape of the batched call, the batch dim dropped again for an unbatched input.
      bool unbatched = x.dim() == sp + 1;
      Shape xs = x.sizes;
      if (unbatched) xs.insert(xs.begin(), 1);
      size_t usp = static_cast<size_t>(sp);
      nn::Ints stride = nn::expand_list(c.get("stride"), usp, "stride", c.where(), 1);
      nn::Ints pad = nn::expand_list(c.get("padding"), usp, "padding", c.where(), 0);
      nn::Ints dil = nn::expand_list(c.get("dilation"), usp, "dilation", c.where(), 1);
      nn::Ints op = transposed
                        ? nn::expand_list(c.get("output_padding"), usp, "output_padding", c.where(), 0)
                        : nn::Ints(usp, 0);
      int64_t g = c.get("groups").to_int();
      if (g < 1) c.fail("groups must be >= 1");
      int64_t c_out = transposed ? w.sizes[1] * g : w.sizes[0];
      if (xs[1] != (transposed ? w.sizes[0] : w.sizes[1] * g))
        c.fail("input " + shape_str(x.sizes) + " and weight " + shape_str(w.sizes) +
               " disagree on the input channels (groups " + std::to_string(g) + ")");
      Shape out{xs[0], c_out};
      for (size_t i = 0; i < usp; ++i) {
        int64_t o = nn::conv_out_size(xs[2 + i], w.sizes[2 + i], stride[i], pad[i], dil[i],
                                      transposed, op[i]);
        if (o <= 0)
          c.fail("the output would be empty: input " + shape_str(x.sizes) + ", weight " +
                 shape_str(w.sizes) + " and padding " + shape_list_str(pad) + " give spatial size " +
                 std::to_string(o) + " in dim " + std::to_string(i + 2));
        out.push_back(o);
      }
      if (unbatched) out.erase(out.begin());
      need_conv_dtype(c, x, transposed);
      same_dtype(c, x, w, "input", "weight");
      conv_checks(c, c_out);
      return TensorMeta::contiguous(out, x.dtype, x.device);
    });
  };
  conv_entry("conv1d", 1, false);
  conv_entry("conv2d", 2, false);
  conv_entry("conv3d", 3, false);
  conv_entry("conv_transpose1d", 1, true);
  conv_entry("conv_transpose2d.input", 2, true);
  conv_entry("conv_transpose3d.input", 3, true);
}

void add_padded_convolution_ops(OpRegistry& r) {
  // conv1d/2d/3d.padding: padding="valid" (none) or "same" (stride 1; the output has the
  // input's size, an odd total padding puts the extra element on the right, as torch does).
  for (int sp = 1; sp <= 3; ++sp) {
    std::string n = std::to_string(sp), T = "int[" + n + "]";
    std::string L = repeat_default(1, sp);
    r.add("conv" + n + "d.padding(Tensor input, Tensor weight, Tensor? bias=None, " + T +
              " stride=" + L + ", str padding=\"valid\", " + T + " dilation=" + L +
              ", int groups=1) -> Tensor",
          K, P::None, [sp](const CallArgs& c) {
            const TensorMeta& x = c.tensor("input");
            const TensorMeta& w = c.tensor("weight");
            std::string mode = c.get("padding").str();
            if (mode != "valid" && mode != "same")
              c.fail("padding must be 'valid' or 'same', got '" + mode + "'");
            size_t usp = static_cast<size_t>(sp);
            nn::Ints stride = nn::expand_list(c.get("stride"), usp, "stride", c.where(), 1);
            nn::Ints dil = nn::expand_list(c.get("dilation"), usp, "dilation", c.where(), 1);
            if (x.dim() != sp + 1 && x.dim() != sp + 2)
              c.fail("input must be " + std::to_string(sp + 1) + "-D or " + std::to_string(sp + 2) +
                     "-D, got " + shape_str(x.sizes));
            if (w.dim() != sp + 2) c.fail("weight must be " + std::to_string(sp + 2) + "-D");
            need_conv_dtype(c, x, false);
            same_dtype(c, x, w, "input", "weight");
            int64_t g = c.get("groups").to_int();
            bool unbatched = x.dim() == sp + 1;
            Shape xs = x.sizes;
            if (unbatched) xs.insert(xs.begin(), 1);
            if (g < 1 || xs[1] != w.sizes[1] * g)
              c.fail("input " + shape_str(x.sizes) + " and weight " + shape_str(w.sizes) +
                     " disagree on the input channels (groups " + std::to_string(g) + ")");
            Shape out{xs[0], w.sizes[0]};
            for (size_t i = 0; i < usp; ++i) {
              if (mode == "same") {
                if (stride[i] != 1) c.fail("padding='same' is not supported for strided convolutions");
                out.push_back(xs[2 + i]);
              } else {
                int64_t o = nn::conv_out_size(xs[2 + i], w.sizes[2 + i], stride[i], 0, dil[i], false, 0);
                if (o <= 0) c.fail("input " + shape_str(x.sizes) + " is smaller than the kernel");
                out.push_back(o);
              }
            }
            if (unbatched) out.erase(out.begin());
            conv_checks(c, w.sizes[0]);
            return TensorMeta::contiguous(out, x.dtype, x.device);
          });
  }
}

}  // namespace

void register_nn_convolution_ops(OpRegistry& r) {
  add_convolution_ops(r);
  add_padded_convolution_ops(r);
}

}  // namespace stax
