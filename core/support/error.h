// stax::Error: the one exception type for failures caused by user input or plugin output.
// It carries the stage that failed, the location (file:line:col, node name, plugin path...) and
// the cause. Internal invariants are asserts, not Errors (LLVM's split).
#pragma once

#include <stdexcept>
#include <string>

namespace stax {

class Error : public std::runtime_error {
 public:
  // what() is "LOCATION: error: MESSAGE" when a location is given, else "STAGE: error: MESSAGE".
  Error(std::string stage, std::string location, std::string message);

  const std::string& stage() const { return stage_; }
  const std::string& location() const { return location_; }
  const std::string& message() const { return message_; }

 private:
  std::string stage_, location_, message_;
};

// Throws stax::Error(stage, location, message) when cond is false.
inline void check(bool cond, const std::string& stage, const std::string& location,
                  const std::string& message) {
  if (!cond) throw Error(stage, location, message);
}

// The engines' op tables (op registry, decompositions, VJP / JVP rules, interpreter kernels,
// lowering rules) are empty until stax::install_ops() (core/ops/install.h) fills them; reading one
// before that throws this Error ("registry" stage), naming `table` and the call to make.
[[noreturn]] void throw_ops_not_installed(const char* table);

}  // namespace stax
