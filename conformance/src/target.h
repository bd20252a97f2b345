// The backend under test, shared by every conformance case: the config, the default Compiler,
// graphs built on the config's device, and the checks every case uses.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/driver/compiler.h"
#include "stax/conformance/conformance.h"

namespace stax::conformance {

class Target {
 public:
  explicit Target(const SuiteOptions& options);

  const SuiteOptions& options() const { return options_; }
  const Config& config() const { return config_; }
  const std::string& device() const { return device_; }  // the config's device name
  // The Compiler on the config as given (created on first use).
  Compiler& compiler();
  // A new Compiler on the config with `edit` applied to the tested device's entry.
  std::unique_ptr<Compiler> compiler_with(const std::function<void(DeviceConfig&)>& edit,
                                          CompileOptions options = {}) const;

  // A placeholder on the tested device.
  Node* input(Graph& g, const std::string& name, Shape sizes, DType dtype = DType::Float32) const;

  // Compiles g, runs it on `in`, and expects every output equal to the interpreter's bit for bit;
  // then again without fusion (the schedule must not change a bit, seed Theorem 6.1).
  void expect_bitwise(const Graph& g, const std::vector<Tensor>& in);
  // Compiles and runs g; returns {compiled, interpreted} outputs.
  std::pair<std::vector<Tensor>, std::vector<Tensor>> run_both(const Graph& g,
                                                               const std::vector<Tensor>& in);

 private:
  SuiteOptions options_;
  Config config_;
  std::string device_;
  std::unique_ptr<Compiler> compiler_, unfused_;
};

// Floating inputs with special values (NaN, ±Inf, ±0, ties, large, tiny) in their first elements.
std::vector<Tensor> special_inputs(const Graph& g, uint64_t seed = 7);

// One conformance case: registered as Conformance<category>.<name>.
struct Case {
  std::string category;
  std::string name;
  std::function<void(Target&)> body;
};

// The cases of each category (cases_*.cpp).
void add_pointwise_cases(std::vector<Case>& out);
void add_reduction_cases(std::vector<Case>& out);
void add_extern_cases(std::vector<Case>& out);
void add_fuzz_cases(std::vector<Case>& out);
void add_error_cases(std::vector<Case>& out);

}  // namespace stax::conformance
