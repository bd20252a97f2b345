#include "core/support/error.h"

namespace stax {

static std::string format_error(const std::string& stage, const std::string& location,
                                const std::string& message) {
  if (!location.empty()) return location + ": error: " + message;
  return stage + ": error: " + message;
}

Error::Error(std::string stage, std::string location, std::string message)
    : std::runtime_error(format_error(stage, location, message)),
      stage_(std::move(stage)),
      location_(std::move(location)),
      message_(std::move(message)) {}

void throw_ops_not_installed(const char* table) {
  throw Error("registry", "",
              std::string("the ") + table +
                  " is empty: call stax::install_ops() (core/ops/install.h) before building, "
                  "differentiating, running or compiling a graph");
}

}  // namespace stax
