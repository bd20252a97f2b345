// The Python interpreter that has torch, for the tests that compare against it.
#pragma once

#include <cstdlib>
#include <string>
#include <unistd.h>

namespace stax::test {

// Debian's python3-torch (installed by scripts/setup.sh) lives in /usr/bin/python3's
// dist-packages, which a pyenv or venv `python3` earlier in PATH does not see: through plain
// `python3` those tests would skip without saying why. STAX_TORCH_PYTHON overrides the choice.
inline const std::string& torch_python() {
  static const std::string python = [] {
    if (const char* e = std::getenv("STAX_TORCH_PYTHON"); e && *e) return std::string(e);
    if (::access("/usr/bin/python3", X_OK) == 0) return std::string("/usr/bin/python3");
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
