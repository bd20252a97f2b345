// Test helpers: aten's overload names of the binary pointwise ops.
#pragma once

#include <string>

namespace stax::test {

// aten's overload names of a binary op: pow.Tensor_Tensor / pow.Tensor_Scalar,
// floor_divide (.default) / floor_divide.Scalar, else OP.Tensor / OP.Scalar.
inline std::string tensor_overload(const std::string& op) {
  return op == "pow" ? "pow.Tensor_Tensor" : op == "floor_divide" ? "floor_divide" : op + ".Tensor";
}
inline std::string scalar_overload(const std::string& op) {
  return op == "pow" ? "pow.Tensor_Scalar" : op + ".Scalar";
}

}  // namespace stax::test
