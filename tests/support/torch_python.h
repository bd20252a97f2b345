// The Python interpreter that has torch, for the tests that compare against it.
#pragma once

#include <cstdlib>
#include <string>
#include <unistd.h>

namespace stax::test {

// The reference is torch 2.x in the project's .venv: the CMake cache variable STAX_TORCH_PYTHON
// (cmake/StaxHelpers.cmake) reaches the tests that use it as a compile definition; the environment
// variable STAX_TORCH_PYTHON overrides it at run time. Without either, plain `python3`.
inline const std::string& torch_python() {
  static const std::string python = [] {
    if (const char* e = std::getenv("STAX_TORCH_PYTHON"); e && *e) return std::string(e);
#ifdef STAX_TORCH_PYTHON
    if (::access(STAX_TORCH_PYTHON, X_OK) == 0) return std::string(STAX_TORCH_PYTHON);
#endif
    return std::string("python3");
  }();
  return python;
}

inline bool torch_importable() {
  static const bool have =
      std::system((torch_python() + " -c 'import torch' > /dev/null 2>&1").c_str()) == 0;
  return have;
}

}  // namespace stax::test
