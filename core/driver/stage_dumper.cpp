#include "core/driver/stage_dumper.h"

#include <algorithm>
#include <cassert>
#include <filesystem>

#include "core/support/atomic_file.h"
#include "core/support/error.h"

namespace stax {

StageDumper::StageDumper(DumpConfig config, std::string name)
    : config_(std::move(config)), name_(std::move(name)) {}

void StageDumper::operator()(const std::string& stage, const std::function<std::string()>& text,
                             const std::string& extension) const {
  const auto& all = DumpConfig::all_stages();
  assert(std::find(all.begin(), all.end(), stage) != all.end());
  (void)all;
  if (!config_.dir || !config_.wants(stage)) return;
  std::error_code ec;
  std::filesystem::create_directories(*config_.dir, ec);
  const std::filesystem::path path = *config_.dir / (name_ + "." + stage + "." + extension);
  // A temporary file and a rename: a link at the path is replaced, never written through.
  write_file_atomically(path, text(), "dump");
}

}  // namespace stax
