// libFuzzer target: the .npy reader (core/tensor/npy.h). Any input either reads or throws
// stax::Error; a crash, a sanitizer report or another exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/support/error.h"
#include "core/tensor/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    stax::npy_from_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  } catch (const stax::Error&) {
  }
  return 0;
}
