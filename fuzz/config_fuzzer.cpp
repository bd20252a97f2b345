// libFuzzer target: the YAML config reader (core/config/config.h). Any input either loads or
// throws stax::Error; a crash, a sanitizer report or another exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/config/config.h"
#include "core/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    stax::Config::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml",
                        "/nonexistent");
  } catch (const stax::Error&) {
  }
  return 0;
}
