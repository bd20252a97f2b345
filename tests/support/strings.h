// Small string helpers shared by the tests.
#pragma once

#include <string>

namespace stax::test {

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace stax::test
