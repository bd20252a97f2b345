// StageDumper: writes the printable form of a pipeline stage to <dir>/<name>.<stage>.txt when the
// config's `dump:` sets a dir and lists the stage (DumpConfig, core/config/config.h); without a
// dir it writes nothing (the CLI prints stages itself). The Compiler calls it after each pass.
// Each file is written through a temporary file and a rename (core/support/atomic_file.h): a
// link planted at a dump's name is replaced, never written through. The directory is not
// cleaned: it collects one file per graph name and stage, each replacing its predecessor.
#pragma once

#include <functional>
#include <string>

#include "core/config/config.h"

namespace stax {

class StageDumper {
 public:
  // `name` names the files (the graph's name, "graph" when it has none).
  StageDumper(DumpConfig config, std::string name);

  // Writes the stage (one of DumpConfig::all_stages()) when wanted; `text` is called only then.
  // `extension` names a second form of a stage ("dot": <name>.<stage>.dot, a picture).
  // Creates the directory. Throws stax::Error (stage "dump") when the file cannot be written.
  void operator()(const std::string& stage, const std::function<std::string()>& text,
                  const std::string& extension = "txt") const;

 private:
  DumpConfig config_;
  std::string name_;
};

}  // namespace stax
