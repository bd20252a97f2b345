// Creation ops (full, zeros, ones, *_like, arange, scalar_tensor) and random ops (rand, randn,
// randint, *_like, bernoulli.p, dropout). Results are row-major contiguous (the *_like ops do not
// preserve their input's strides; torch's preserve_format would). layout / pin_memory /
// memory_format are accepted and ignored; a string `device` names the result's device.
//
// Default dtypes follow torch: full infers from the fill value (bool -> bool, int -> int64,
// float -> float32); zeros / ones / rand / randn give float32; randint gives int64; arange gives
// int64 when start, end and step are all integers and float32 otherwise; *_like keep self's dtype.
// Random ops draw from a per-node seed (KernelContext::seed()), see core/tensor/random.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/ops/common/infer_helpers.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

constexpr const char* kFactoryKw =
    "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";
constexpr const char* kLikeKw =
    "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, "
    "MemoryFormat? memory_format=None";

DType dtype_or(const CallArgs& c, DType fallback) {
  const Arg& a = c.get("dtype");
  return a.is_dtype() ? a.dtype() : fallback;
}

std::string device_or(const CallArgs& c, const std::string& fallback) {
  const Arg& a = c.get("device");
  return a.is_string() ? a.str() : fallback;
}

Shape checked_size(const CallArgs& c, const char* param = "size") {
  auto size = c.get(param).to_int_list();
  for (int64_t s : size)
    if (s < 0) c.fail("negative dimension in size " + shape_list_str(size));
  return Shape(size.begin(), size.end());
}

void need_floating(const CallArgs& c, DType t) {
  if (!is_floating(t)) c.fail("needs a floating dtype, got " + std::string(dtype_name(t)));
}

TensorMeta full_rule(const CallArgs& c) {
  const Arg& v = c.get("fill_value");
  DType fallback = v.is_bool() ? DType::Bool : v.is_int() ? kDefaultInt : kDefaultFloat;
  DType t = dtype_or(c, fallback);
  infer::check_scalar_fits(c, "fill_value", t);
  return TensorMeta::contiguous(checked_size(c), t, device_or(c, "cpu"));
}

TensorMeta factory_rule(const CallArgs& c) {
  return TensorMeta::contiguous(checked_size(c), dtype_or(c, kDefaultFloat), device_or(c, "cpu"));
}

TensorMeta random_factory_rule(const CallArgs& c) {
  TensorMeta m = factory_rule(c);
  need_floating(c, m.dtype);
  return m;
}

TensorMeta like_rule(const CallArgs& c) {
  const TensorMeta& self = c.tensor("self");
  return TensorMeta::contiguous(self.sizes, dtype_or(c, self.dtype), device_or(c, self.device));
}

// full_like: like_rule, the fill value converting to the result's dtype (as torch's fill_).
TensorMeta full_like_rule(const CallArgs& c) {
  TensorMeta m = like_rule(c);
  infer::check_scalar_fits(c, "fill_value", m.dtype);
  return m;
}

TensorMeta random_like_rule(const CallArgs& c) {
  TensorMeta m = like_rule(c);
  need_floating(c, m.dtype);
  return m;
}

TensorMeta randint_rule(const CallArgs& c) {
  int64_t low = c.op().schema.index_of("low") >= 0 ? c.get("low").to_int() : 0;
  int64_t high = c.get("high").to_int();
  if (low >= high)
    c.fail("expects low < high, got low=" + std::to_string(low) +
           " and high=" + std::to_string(high));
  // The schema's default is long; a dtype spelled None is torch's default float (as its meta).
  DType fallback = c.get("dtype").is_none() ? kDefaultFloat : kDefaultInt;
  return TensorMeta::contiguous(checked_size(c), dtype_or(c, fallback), device_or(c, "cpu"));
}

TensorMeta arange_rule(const CallArgs& c) {
  const auto& sc = c.op().schema;
  Arg start = sc.index_of("start") >= 0 ? c.get("start") : Arg(int64_t{0});
  Arg end = c.get("end");
  Arg step = sc.index_of("step") >= 0 ? c.get("step") : Arg(int64_t{1});
  bool floating = start.is_double() || end.is_double() || step.is_double();
  DType dtype = dtype_or(c, floating ? kDefaultFloat : kDefaultInt);
  int64_t n = 0;
  if (!floating) {
    int64_t s = start.to_int(), e = end.to_int(), st = step.to_int();
    if (st == 0) c.fail("step must be nonzero");
    if ((st > 0 && e < s) || (st < 0 && e > s))
      c.fail("upper bound " + std::to_string(e) + " and lower bound " + std::to_string(s) +
             " are inconsistent with step sign " + std::to_string(st));
    // In 128 bits: e - s overflows int64 for e.g. arange(-2**62, 2**62) or end = INT64_MAX.
    __int128 len = st > 0 ? (__int128(e) - s + st - 1) / st : (__int128(s) - e - st - 1) / -__int128(st);
    if (len > std::numeric_limits<int64_t>::max())
      c.fail("the length of the range from " + std::to_string(s) + " to " + std::to_string(e) +
             " overflows a 64-bit integer");
    n = static_cast<int64_t>(len);
  } else {
    double s = start.to_double(), e = end.to_double(), st = step.to_double();
    if (!std::isfinite(s) || !std::isfinite(e)) c.fail("start and end must be finite");
    if (st == 0 || std::isnan(st)) c.fail("step must be nonzero");
    if ((st > 0 && e < s) || (st < 0 && e > s))
      c.fail("upper bound " + double_repr(e) + " and lower bound " + double_repr(s) +
             " are inconsistent with step sign " + double_repr(st));
    double len = std::ceil((e - s) / st);
    if (!(len < 0x1p63))
      c.fail("the length of the range from " + double_repr(s) + " to " + double_repr(e) +
             " step " + double_repr(st) + " overflows a 64-bit integer");
    n = static_cast<int64_t>(len);
  }
  return TensorMeta::contiguous({n}, dtype, device_or(c, "cpu"));
}

TensorMeta bernoulli_rule(const CallArgs& c) {
  double p = c.get("p").to_double();
  if (!(p >= 0 && p <= 1)) c.fail("p must be in [0, 1], got " + double_repr(p));
  const TensorMeta& self = c.tensor("self");
  return TensorMeta::contiguous(self.sizes, self.dtype, self.device);
}

TensorMeta dropout_rule(const CallArgs& c) {
  double p = c.get("p").to_double();
  if (!(p >= 0 && p <= 1)) c.fail("dropout probability must be in [0, 1], got " + double_repr(p));
  const TensorMeta& in = c.tensor("input");
  need_floating(c, in.dtype);
  return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
}

using P = Promotion;
using C = OpCategory;

TensorMeta new_rule(const CallArgs& c) {
  const TensorMeta& in = c.tensor("self");
  Shape s = c.get("size").to_int_list();
  for (int64_t v : s)
    if (v < 0) c.fail("Trying to create tensor with negative dimension " + std::to_string(v));
  DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : in.dtype;
  if (c.op().schema.index_of("fill_value") >= 0) infer::check_scalar_fits(c, "fill_value", t);
  if (c.op().schema.index_of("stride") >= 0 &&
      c.get("stride").to_int_list().size() != s.size())
    c.fail("dimensionality of sizes (" + std::to_string(s.size()) +
           ") must match dimensionality of strides (" +
           std::to_string(c.get("stride").to_int_list().size()) + ")");
  return TensorMeta::contiguous(s, t, in.device);
}

std::string dt(DType t) { return std::string(dtype_name(t)); }

DType factory_dtype(const CallArgs& c) {
  return c.get("dtype").is_dtype() ? c.get("dtype").dtype() : DType::Float32;
}

TensorMeta eye_rule(const CallArgs& c) {
  int64_t n = c.get("n").to_int();
  int64_t m = c.op().schema.index_of("m") >= 0 ? c.get("m").to_int() : n;
  if (n < 0) c.fail("n must be greater or equal to 0, got " + std::to_string(n));
  if (m < 0) c.fail("m must be greater or equal to 0, got " + std::to_string(m));
  return TensorMeta::contiguous({n, m}, factory_dtype(c), "cpu");
}

TensorMeta linspace_rule(const CallArgs& c) {
  int64_t steps = c.get("steps").to_int();
  if (steps < 0) c.fail("number of steps must be non-negative");
  DType t = factory_dtype(c);
  if (!is_floating(t)) c.fail("linspace / logspace: only floating-point dtypes are supported here, "
                              "got " + dt(t));
  return TensorMeta::contiguous({steps}, t, "cpu");
}

// The factories (full zeros ones empty* *_like arange) and the random ones (rand randn randint
// randperm bernoulli dropout).
void add_factory_ops(OpRegistry& r) {
  const auto C = OpCategory::Creation;
  const auto R = OpCategory::Random;
  const std::string fk = kFactoryKw, lk = kLikeKw;
  auto add = [&](const std::string& schema, OpCategory cat, InferFn fn) -> OpDef& {
    OpDef& d = r.add(schema, cat, P::None, std::move(fn));
    d.differentiable = false;
    return d;
  };
  add("full(SymInt[] size, Scalar fill_value, *, " + fk + ") -> Tensor", C, full_rule);
  // The zero-filled factories take complex dtypes too (Tensor::zeros is any element size;
  // autodiff's zero gradients of complex values, docs/complex.md).
  add("zeros(SymInt[] size, *, " + fk + ") -> Tensor", C, factory_rule).complex = true;
  add("ones(SymInt[] size, *, " + fk + ") -> Tensor", C, factory_rule);
  add("scalar_tensor(Scalar s, *, " + fk + ") -> Tensor", C, [](const CallArgs& c) {
    DType t = dtype_or(c, kDefaultFloat);
    infer::check_scalar_fits(c, "s", t);
    return TensorMeta::contiguous({}, t, device_or(c, "cpu"));
  });
  // Uninitialized memory in torch: Stax's values are zeros (deterministic; a program reading them
  // has no defined result in torch). The strides of empty_strided are not kept: Stax's values are
  // row-major.
  add("empty.memory_format(SymInt[] size, *, " + fk + ", MemoryFormat? memory_format=None) -> Tensor",
      C, factory_rule).complex = true;
  add("empty_strided(SymInt[] size, SymInt[] stride, *, " + fk + ") -> Tensor", C,
      [](const CallArgs& c) {
        if (c.get("stride").to_int_list().size() != c.get("size").to_int_list().size())
          c.fail("mismatch in length of strides and shape");
        return factory_rule(c);
      });
  add("empty_like(Tensor self, *, " + lk + ") -> Tensor", C, like_rule).complex = true;
  add("full_like(Tensor self, Scalar fill_value, *, " + lk + ") -> Tensor", C, full_like_rule);
  add("zeros_like(Tensor self, *, " + lk + ") -> Tensor", C, like_rule).complex = true;
  add("ones_like(Tensor self, *, " + lk + ") -> Tensor", C, like_rule);
  add("arange(Scalar end, *, " + fk + ") -> Tensor", C, arange_rule);
  add("arange.start(Scalar start, Scalar end, *, " + fk + ") -> Tensor", C, arange_rule);
  add("arange.start_step(Scalar start, Scalar end, Scalar step=1, *, " + fk + ") -> Tensor", C,
      arange_rule);

  add("rand(SymInt[] size, *, " + fk + ") -> Tensor", R, random_factory_rule);
  add("randn(SymInt[] size, *, " + fk + ") -> Tensor", R, random_factory_rule);
  add("rand_like(Tensor self, *, " + lk + ") -> Tensor", R, random_like_rule);
  add("randn_like(Tensor self, *, " + lk + ") -> Tensor", R, random_like_rule);
  // aten: randint's dtype defaults to long.
  const std::string ik =
      "ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None";
  add("randint(SymInt high, SymInt[] size, *, " + ik + ") -> Tensor", R, randint_rule);
  add("randint.low(SymInt low, SymInt high, SymInt[] size, *, " + ik + ") -> Tensor", R,
      randint_rule);
  // randperm: a permutation of 0..n-1 (dtype int64 unless given), drawn from the node's seed.
  add("randperm(SymInt n, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, "
      "bool? pin_memory=None) -> Tensor",
      R, [](const CallArgs& c) {
        int64_t n = c.get("n").to_int();
        if (n < 0) c.fail("n must be non-negative, got" + std::to_string(n));
        // A dtype spelled None is torch's default float (the schema's default is long).
        DType t = dtype_or(c, c.get("dtype").is_none() ? kDefaultFloat : kDefaultInt);
        if (t == DType::Bool) c.fail("randperm is not implemented for bool");
        if (!is_floating(t) && n > 0) {
          int bits = static_cast<int>(dtype_size(t)) * 8 - (t == DType::UInt8 ? 0 : 1);
          if (bits < 63 && n - 1 > (int64_t{1} << bits) - 1)
            c.fail("n is too large for result tensor type: '" + std::string(dtype_name(t)) + "'");
        }
        return TensorMeta::contiguous({n}, t, device_or(c, "cpu"));
      });
  add("bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor", R,
      bernoulli_rule);
  // Single-output dropout: train ? input * (rand_like(input) > p) * (1 / (1 - p)) : input.
  r.add("dropout(Tensor input, float p, bool train) -> Tensor", R, P::None, dropout_rule);
}

// The new_* factories, fill and copy (Composite).
void add_new_and_fill_ops(OpRegistry& r) {
  {
    // ---- pointwise formulas (Composite)
    auto comp = [&](const std::string& schema, Promotion p, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, p, std::move(f));
    };

    const std::string nk =
        "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

    comp("new_full(Tensor self, SymInt[] size, Scalar fill_value, " + nk + ") -> Tensor", P::None,
         new_rule)
        .differentiable = false;

    comp("new_zeros(Tensor self, SymInt[] size, " + nk + ") -> Tensor", P::None, new_rule)
        .differentiable = false;

    comp("new_ones(Tensor self, SymInt[] size, " + nk + ") -> Tensor", P::None, new_rule)
        .differentiable = false;

    comp("new_empty(Tensor self, SymInt[] size, " + nk + ") -> Tensor", P::None, new_rule)
        .differentiable = false;

    comp("new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, " + nk + ") -> Tensor",
         P::None, new_rule)
        .differentiable = false;

    // fill: self's shape and dtype, every element the value (a 0-d tensor for fill.Tensor).
    comp("fill.Scalar(Tensor self, Scalar value) -> Tensor", P::None, [](const CallArgs& c) {
      const TensorMeta& in = c.tensor("self");
      infer::check_scalar_fits(c, "value", in.dtype);
      return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
    }).differentiable = false;

    comp("fill.Tensor(Tensor self, Tensor value) -> Tensor", P::None, [](const CallArgs& c) {
      const TensorMeta& in = c.tensor("self");
      if (c.tensor("value").dim() != 0)
        c.fail("fill_ only supports 0-dimension value tensor but got tensor with " +
               std::to_string(c.tensor("value").dim()) + " dimensions.");
      return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
    });

    // copy(self, src): src broadcast to self's shape and converted to self's dtype (the
    // functional form of self.copy_(src)).
    comp("copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor", P::None,
         [](const CallArgs& c) {
           const TensorMeta& in = c.tensor("self");
           const TensorMeta& src = c.tensor("src");
           if (broadcast_shapes(in.sizes, src.sizes, c.where()) != in.sizes)
             c.fail("the source of shape " + shape_str(src.sizes) +
                    " does not broadcast to the destination's shape " + shape_str(in.sizes));
           return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
         });
  }
}

// eye, linspace / logspace, tril_indices / triu_indices (Composite).
void add_sequence_ops(OpRegistry& r) {
  {
    auto comp = [&](const std::string& schema, InferFn f) -> OpDef& {
      return r.add(schema, C::Composite, P::None, std::move(f));
    };

    const std::string fk =
        "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

    auto tri_indices = [](const CallArgs& c) {
      int64_t row = c.get("row").to_int(), col = c.get("col").to_int(), off = c.get("offset").to_int();
      if (row < 0) c.fail("row must be non-negative, got" + std::to_string(row));
      if (col < 0) c.fail("col must be non-negative, got" + std::to_string(col));
      bool lower = c.op().schema.base == "tril_indices";
      int64_t n = 0;
      for (int64_t r = 0; r < row; ++r) {
        int64_t lo = lower ? 0 : std::max<int64_t>(0, r + off);
        int64_t hi = lower ? std::min(col, r + off + 1) : col;
        n += std::max<int64_t>(0, hi - lo);
      }
      // The schema's default is long; torch has no kernel for a dtype spelled None.
      if (c.get("dtype").is_none())
        c.fail("dtype=None is not supported (\"" + c.op().schema.base +
               "\" not implemented for 'None', as in torch); give int32 or int64");
      DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : DType::Int64;
      if (t != DType::Int64 && t != DType::Int32) c.fail("tril/triu_indices: dtype must be int32 or int64");
      return TensorMeta::contiguous({2, n}, t, "cpu");
    };

    comp("eye(int n, " + fk + ") -> Tensor", eye_rule).differentiable = false;

    comp("eye.m(int n, int m, " + fk + ") -> Tensor", eye_rule).differentiable = false;

    comp("linspace(Scalar start, Scalar end, int steps, " + fk + ") -> Tensor", linspace_rule)
        .differentiable = false;

    comp("logspace(Scalar start, Scalar end, int steps, float base=10., " + fk + ") -> Tensor",
         linspace_rule)
        .differentiable = false;

    // The overloads with 0-d tensor bounds (torch reads their values: start.item())
    auto tensor_bounds = [](const CallArgs& c) {
      for (const char* p : {"start", "end"})
        if (c.get(p).is_node() && c.tensor(p).dim() != 0)
          c.fail("linspace only supports 0-dimensional start and end tensors, but got " +
                 std::string(p) + " with " + std::to_string(c.tensor(p).dim()) + " dimension(s).");
      return linspace_rule(c);
    };
    for (const char* o : {"Tensor_Tensor(Tensor start, Tensor end", "Tensor_Scalar(Tensor start, Scalar end",
                          "Scalar_Tensor(Scalar start, Tensor end"}) {
      comp(std::string("linspace.") + o + ", int steps, " + fk + ") -> Tensor", tensor_bounds)
          .differentiable = false;
      comp(std::string("logspace.") + o + ", int steps, float base=10., " + fk + ") -> Tensor",
           tensor_bounds)
          .differentiable = false;
    }

    for (const char* n : {"tril_indices", "triu_indices"})
      comp(std::string(n) + "(int row, int col, int offset=0, *, ScalarType? dtype=long, "
           "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
           tri_indices)
          .differentiable = false;
  }
}

}  // namespace

void register_creation_ops(OpRegistry& r) {
  add_factory_ops(r);
  add_new_and_fill_ops(r);
  add_sequence_ops(r);
}

}  // namespace stax
