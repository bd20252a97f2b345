// Schemas of the random ops.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/ops/common/infer_helpers.h"
#include "core/ops/nn/params.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using P = Promotion;
using C = OpCategory;

std::string dt(DType t) { return std::string(dtype_name(t)); }

TensorMeta normal_rule(const CallArgs& c) {
  bool mt = c.get("mean").is_node(), st = c.get("std").is_node();
  Shape s = mt && st ? broadcast_shapes(c.tensor("mean").sizes, c.tensor("std").sizes, c.where())
                     : mt ? c.tensor("mean").sizes : c.tensor("std").sizes;
  // As torch: the result has the mean's dtype when the mean is a tensor (else the std's).
  DType t = mt ? c.tensor("mean").dtype : c.tensor("std").dtype;
  if (!is_floating(t)) c.fail("normal expects a floating-point " + std::string(mt ? "mean" : "std") +
                              ", got " + dt(t));
  if (!st && c.get("std").to_double() < 0)
    c.fail("normal expects std >= 0.0, but found std " + double_repr(c.get("std").to_double()));
  return TensorMeta::contiguous(s, t, "cpu");
}

}  // namespace

void register_random_ops(OpRegistry& r) {
  {
    const std::string fk =
        "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

    // Random ops (interpreter kernels drawing from the run's seed; compared by shape and dtype).
    auto random = [&](const std::string& schema, InferFn f) {
      r.add(schema, C::Random, P::None, std::move(f)).differentiable = false;
    };

    auto randint_like = [](const CallArgs& c) {
      const TensorMeta& in = c.tensor("self");
      int64_t lo = c.op().schema.index_of("low") >= 0 ? c.get("low").to_int() : 0;
      if (c.get("high").to_int() <= lo && shape_numel(in.sizes) > 0)  // torch: empty is fine
        c.fail("random_ expects 'from' to be less than 'to', but got from=" + std::to_string(lo) +
               " >= to=" + std::to_string(c.get("high").to_int()));
      DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : in.dtype;
      return TensorMeta::contiguous(in.sizes, t, in.device);
    };

    const std::string lk = fk + ", MemoryFormat? memory_format=None";

    random("normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor",
           normal_rule);

    random("normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor",
           normal_rule);

    random("normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor",
           normal_rule);

    random("bernoulli(Tensor self, *, Generator? generator=None) -> Tensor", [](const CallArgs& c) {
      const TensorMeta& in = c.tensor("self");
      if (!is_floating(in.dtype)) c.fail("bernoulli expects a floating-point tensor of "
                                         "probabilities, got " + dt(in.dtype));
      return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
    });

    random("randint_like(Tensor self, int high, " + lk + ") -> Tensor", randint_like);

    // The functional forms of aten's in-place samplers (cauchy_ exponential_ geometric_
    // log_normal_, registered from inplace_forms.def): self's shape and dtype, torch's checks.
    auto sampler = [](const char* name, bool floating_only, auto check) {
      return [=](const CallArgs& c) {
        const TensorMeta& in = c.tensor("self");
        if (floating_only && !is_floating(in.dtype))
          c.fail(std::string(name) + "_ expects a floating point tensor, got " + dt(in.dtype));
        check(c);
        return TensorMeta::contiguous(in.sizes, in.dtype, in.device);
      };
    };
    random("cauchy(Tensor self, float median=0., float sigma=1., *, Generator? generator=None) "
           "-> Tensor",
           sampler("cauchy", true, [](const CallArgs& c) {
             if (c.get("sigma").to_double() <= 0)
               c.fail("cauchy_ expects sigma > 0.0, but found sigma=" +
                      double_repr(c.get("sigma").to_double()));
           }));
    random("exponential(Tensor self, float lambd=1., *, Generator? generator=None) -> Tensor",
           sampler("exponential", true, [](const CallArgs& c) {
             if (c.get("lambd").to_double() <= 0)
               c.fail("exponential_ expects lambda > 0.0, but found lambda=" +
                      double_repr(c.get("lambd").to_double()));
           }));
    random("geometric(Tensor self, float p, *, Generator? generator=None) -> Tensor",
           sampler("geometric", false, [](const CallArgs& c) {
             if (c.tensor("self").dtype == DType::Bool) c.fail("geometric not implemented for torch.bool");
             double p = c.get("p").to_double();
             if (!(p > 0 && p < 1))
               c.fail("geometric_ expects p to be in (0, 1), but got p=" + double_repr(p));
           }));
    random("log_normal(Tensor self, float mean=1., float std=2., *, Generator? generator=None) "
           "-> Tensor",
           sampler("log_normal", true, [](const CallArgs& c) {
             if (c.get("std").to_double() <= 0)
               c.fail("log_normal_ expects std > 0.0, but found std=" +
                      double_repr(c.get("std").to_double()));
           }));
    // multinomial: num_samples category indices per row of (unnormalized) probabilities
    random("multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, "
           "Generator? generator=None) -> Tensor",
           [](const CallArgs& c) {
             const TensorMeta& p = c.tensor("self");
             int64_t k = c.get("num_samples").to_int();
             if (!is_floating(p.dtype))
               c.fail("multinomial only supports floating-point dtypes for input, got: " + dt(p.dtype));
             if (p.dim() < 1 || p.dim() > 2) c.fail("prob_dist must be 1 or 2 dim");
             if (k <= 0) c.fail("cannot sample n_sample <= 0 samples");
             int64_t cats = p.sizes.back();
             if (!c.get("replacement").to_bool() && k > cats)
               c.fail("cannot sample n_sample > prob_dist.size(-1) samples without replacement");
             Shape out = p.dim() == 1 ? Shape{k} : Shape{p.sizes[0], k};
             return TensorMeta::contiguous(out, DType::Int64, p.device);
           });
    random("normal.float_float(float mean, float std, SymInt[] size, " +
               std::string("*, Generator? generator=None, ScalarType? dtype=None, Layout? layout=None, "
                           "Device? device=None, bool? pin_memory=None) -> Tensor"),
           [](const CallArgs& c) {
             if (c.get("std").to_double() < 0)
               c.fail("normal expects std >= 0.0, but found std " +
                      double_repr(c.get("std").to_double()));
             DType t = c.get("dtype").is_dtype() ? c.get("dtype").dtype() : kDefaultFloat;
             if (!is_floating(t)) c.fail("normal expects a floating-point dtype, got " + dt(t));
             auto size = c.get("size").to_int_list();
             return TensorMeta::contiguous(Shape(size.begin(), size.end()), t, "cpu");
           });

    random("randint_like.low_dtype(Tensor self, int low, int high, " + lk + ") -> Tensor",
           randint_like);
  }
}

}  // namespace stax
