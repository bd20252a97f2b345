// Helpers of the compiled-path tests (cpu_cpp_test, compiled_e2e_test): a Compiler on this build
// tree's cpu_cpp plugin, and comparisons of compiled results with the reference interpreter.
// cpu_cpp runs reductions in one of two orders (plugins/cpu_cpp/cpu_backend.cpp, `strict_order`):
// Order::Segmented (its default) is the interpreter's ReductionOrder::Segmented bit for bit, and
// Order::Strict its default ReductionOrder::Sequential; reference() runs the matching one.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/driver/compiler.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"

#include "tests/support/strings.h"

namespace stax::test {

// cpu -> cpu_cpp from this build tree's plugin directory, with `options` as its YAML options.
inline Config cpu_config(OptionValue options = OptionValue::map()) {
  Config c;
  c.source = "<test>";
  c.plugin_path = {STAX_PLUGIN_DIR};
  DeviceConfig cpu;
  cpu.backend = "cpu_cpp";
  cpu.options = std::move(options);
  cpu.location = "<test>";
  c.devices["cpu"] = std::move(cpu);
  return c;
}

// The reduction order a compiler runs (see above).
enum class Order { Segmented, Strict };
inline const char* order_name(Order o) { return o == Order::Strict ? "strict_order" : "segmented"; }

// cpu_cpp options for `order` (`strict_order: true` for Order::Strict), plus `threads` when > 0.
inline OptionValue cpu_options(Order order, int threads = 0) {
  OptionValue o = OptionValue::map();
  if (order == Order::Strict) o.set("strict_order", OptionValue::make_scalar("true"));
  if (threads > 0) o.set("threads", OptionValue::make_scalar(std::to_string(threads)));
  return o;
}

// One Compiler per order and test binary (the JIT's cold start is paid once per order); the
// default options give Order::Segmented.
inline Compiler& cpu_compiler(Order order = Order::Segmented) {
  static Compiler segmented(cpu_config());
  static Compiler strict(cpu_config(cpu_options(Order::Strict)));
  return order == Order::Strict ? strict : segmented;
}

// The interpreter in the reduction order that compilers of `order` reproduce bit for bit.
inline std::vector<Tensor> reference(const Graph& g, const std::vector<Tensor>& inputs,
                                     Order order = Order::Segmented) {
  InterpreterOptions o;
  o.reduction_order =
      order == Order::Strict ? ReductionOrder::Sequential : ReductionOrder::Segmented;
  return interpret(g, inputs, o);
}

// The schedule variants of seed Theorem 6.1: fusion off, and three realization settings
// (realize every multi-user value, the GPU thresholds, never realize for a threshold). Compiling a
// graph with any of them must give the bytes the default compiler gives.
struct CompilerVariant {
  const char* name;
  Compiler* compiler;
};
inline std::vector<CompilerVariant> make_schedule_variants(Order order) {
  auto make = [order](bool fuse, auto set_realization) {
    Config c = cpu_config(cpu_options(order));
    set_realization(c.realization);
    CompileOptions o;
    o.fuse = fuse;
    return new Compiler(c, o);
  };
  return {
      {"fusion off", make(false, [](RealizationConfig&) {})},
      {"realize eagerly", make(true,
                               [](RealizationConfig& r) {
                                 r.op_limit = 1;
                                 r.max_reads = 1;
                                 r.max_accumulated_reads = 1;
                               })},
      {"gpu thresholds", make(true,
                              [](RealizationConfig& r) {
                                r.op_limit = 30;
                                r.max_accumulated_reads = 8;
                                r.users_limit = 0;
                                r.transcendental = std::vector<std::string>{};
                              })},
      {"inline everything", make(true, [](RealizationConfig& r) {
         r.op_limit = 1 << 20;
         r.max_reads = 1 << 20;
         r.max_accumulated_reads = 1 << 20;
         r.users_limit = 0;
         r.transcendental = std::vector<std::string>{};
       })}};
}
// The variants for `order` (built once per order and test binary).
inline const std::vector<CompilerVariant>& schedule_variants(Order order = Order::Segmented) {
  static const std::vector<CompilerVariant> segmented = make_schedule_variants(Order::Segmented);
  static const std::vector<CompilerVariant> strict = make_schedule_variants(Order::Strict);
  return order == Order::Strict ? strict : segmented;
}

// Bit-for-bit equality (sizes, dtype, every element's bits), except that a NaN equals any NaN:
// IEEE 754 leaves the sign and payload of a NaN result open when several operands are NaN (x86
// propagates the first operand's, and compilers may commute operands), so only NaN-ness is part
// of the compared semantics.
inline bool is_nan_at(const Tensor& t, int64_t i) {
  return is_floating(t.dtype()) && std::isnan(t.get_double(i));
}

inline ::testing::AssertionResult bitwise_equal(const Tensor& got, const Tensor& want) {
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure()
           << "got " << dtype_name(got.dtype()) << shape_str(got.sizes()) << ", want "
           << dtype_name(want.dtype()) << shape_str(want.sizes());
  if (got.equal(want)) return ::testing::AssertionSuccess();
  Tensor a = got.contiguous(), b = want.contiguous();
  size_t item = static_cast<size_t>(a.itemsize());
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(a.data_ptr() + i * static_cast<int64_t>(item),
                    b.data_ptr() + i * static_cast<int64_t>(item), item) != 0 &&
        !(is_nan_at(a, i) && is_nan_at(b, i)))
      return ::testing::AssertionFailure()
             << "element " << i << " differs: got " << a.get_double(i) << ", want "
             << b.get_double(i) << "\n got:  " << got.summary() << "\n want: " << want.summary();
  return ::testing::AssertionSuccess();  // differences in NaN bits only
}

// |got_i - want_i| <= bound_i elementwise (bound as a tensor of the same shape, as double);
// infinities and NaNs must match exactly.
inline ::testing::AssertionResult within_bound(const Tensor& got, const Tensor& want,
                                               const std::vector<double>& bound) {
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "shape or dtype differs";
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.get_double(i), b = want.get_double(i);
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      if (!(std::isnan(a) && std::isnan(b)) && a != b)
        return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs " << b;
      continue;
    }
    if (std::fabs(a - b) > bound[static_cast<size_t>(i)])
      return ::testing::AssertionFailure()
             << "element " << i << ": |" << a << " - " << b << "| = " << std::fabs(a - b)
             << " > bound " << bound[static_cast<size_t>(i)];
  }
  return ::testing::AssertionSuccess();
}

// Unit roundoff of a floating dtype's computation type (half types compute in float32).
inline double unit_roundoff(DType d) {
  return d == DType::Float64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
}

// Seeded inputs for g's placeholders: normal for floats, [lo, hi) for integers, {0,1} for bool.
inline std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed = 1, int64_t lo = -5,
                                         int64_t hi = 6) {
  std::vector<Tensor> out;
  uint64_t offset = 0;
  for (const Node* p : g.placeholders()) {
    const TensorMeta& m = p->meta();
    Tensor t;
    if (is_floating(m.dtype))
      t = Tensor::randn(m.sizes, m.dtype, seed, offset);
    else if (m.dtype == DType::Bool)
      t = Tensor::randint(m.sizes, 0, 2, m.dtype, seed, offset);
    else
      t = Tensor::randint(m.sizes, lo, hi, m.dtype, seed, offset);
    offset += static_cast<uint64_t>(m.numel()) + 7;
    out.push_back(t);
  }
  return out;
}

}  // namespace stax::test
