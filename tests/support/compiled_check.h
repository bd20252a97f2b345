// Helpers of the compiled-path tests (cpu_cpp_test, compiled_e2e_test): a Compiler on this build
// tree's cpu_cpp plugin, and comparisons of compiled results with the reference interpreter.
#pragma once

#include <gtest/gtest.h>

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

// One Compiler per test binary with the default options (the JIT's cold start is paid once).
inline Compiler& cpu_compiler() {
  static Compiler compiler(cpu_config());
  return compiler;
}

// The schedule variants of seed Theorem 6.1: fusion off, and three realization settings
// (realize every multi-user value, the GPU thresholds, never realize for a threshold). Compiling a
// graph with any of them must give the bytes the default compiler gives.
struct CompilerVariant {
  const char* name;
  Compiler* compiler;
};
inline std::vector<CompilerVariant> schedule_variants() {
  auto make = [](bool fuse, auto set_realization) {
    Config c = cpu_config();
    set_realization(c.realization);
    CompileOptions o;
    o.fuse = fuse;
    return new Compiler(c, o);
  };
  static std::vector<CompilerVariant> variants = {
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
  return variants;
}

// The comparisons and seeded inputs shared with the conformance suite.
using conformance::bitwise_equal;
using conformance::random_inputs;
using conformance::unit_roundoff;
using conformance::within_bound;

}  // namespace stax::test
