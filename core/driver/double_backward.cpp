#include "core/driver/double_backward.h"

#include <string>

#include "core/support/error.h"

namespace stax {

void reject_double_backward() {
  throw Error("autodiff", "compiled backward", std::string(kDoubleBackwardMessage));
}

BackwardFn rejecting_backward() {
  return [](const std::vector<Tensor>&) -> std::vector<Tensor> { reject_double_backward(); };
}

void check_backward_request(int order) {
  if (order >= 2) reject_double_backward();
}

}  // namespace stax
