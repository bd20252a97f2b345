// libFuzzer target: the graph text parser (core/graph/parser.h). Any input either parses or
// throws stax::Error; a crash, a sanitizer report or another exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/graph/parser.h"
#include "core/ops/install.h"
#include "core/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stax::install_ops();  // the engines' op tables (core/ops/install.h); once
  try {
    stax::parse_graph(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.stax");
  } catch (const stax::Error&) {
  }
  return 0;
}
