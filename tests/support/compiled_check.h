// Helpers of the compiled-path tests (cpu_cpp_test, compiled_e2e_test): a Compiler on this build
// tree's cpu_cpp plugin, and comparisons of compiled results with the reference interpreter.
// cpu_cpp runs reductions in one of two orders (plugins/cpu_cpp/cpu_backend.cpp, `strict_order`):
// Order::Segmented (its default) is the interpreter's ReductionOrder::Segmented bit for bit, and
// Order::Strict its default ReductionOrder::Sequential; reference() runs the matching one.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/driver/compiler.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "stax/conformance/compare.h"

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
// STAX_TEST_VECTOR_PRINTER=true|false sets cpu_cpp's `vector_printer` (the ctest entries
// *_vector_test run the compiled suites with it on; unset: the plugin's default).
// STAX_TEST_STREAMING_STORE_BYTES=N sets `streaming_store_bytes` (compiled_fuzz_stream_test: 64,
// so that nearly every output the printers can stream does).
inline OptionValue cpu_options(Order order, int threads = 0) {
  OptionValue o = OptionValue::map();
  if (const char* v = std::getenv("STAX_TEST_VECTOR_PRINTER"); v && *v)
    o.set("vector_printer", OptionValue::make_scalar(v));
  if (const char* v = std::getenv("STAX_TEST_STREAMING_STORE_BYTES"); v && *v)
    o.set("streaming_store_bytes", OptionValue::make_scalar(v));
  if (order == Order::Strict) o.set("strict_order", OptionValue::make_scalar("true"));
  if (threads > 0) o.set("threads", OptionValue::make_scalar(std::to_string(threads)));
  return o;
}

// The kernel functions of cg's kernels (from each source's kernel marker on, past the prelude),
// concatenated: what a printer test looks for.
inline std::string kernel_functions(const CompiledGraph& cg) {
  std::string out;
  for (const auto& k : cg.kernels()) {
    size_t at = k.source.find("// ---- stax kernel ----");
    out += at == std::string::npos ? k.source : k.source.substr(at);
  }
  return out;
}

// One Compiler per order and test binary (the JIT's cold start is paid once per order); the
// default options give Order::Segmented.
inline Compiler& cpu_compiler(Order order = Order::Segmented) {
  static Compiler segmented(cpu_config(cpu_options(Order::Segmented)));
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
  std::shared_ptr<Compiler> compiler;
};
inline std::vector<CompilerVariant> make_schedule_variants(Order order) {
  auto make = [order](bool fuse, auto set_realization) {
    Config c = cpu_config(cpu_options(order));
    set_realization(c.realization);
    CompileOptions o;
    o.fuse = fuse;
    return std::make_shared<Compiler>(c, o);
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

// The comparisons and seeded inputs shared with the conformance suite.
using conformance::bitwise_equal;
using conformance::random_inputs;
using conformance::unit_roundoff;
using conformance::within_bound;

}  // namespace stax::test
