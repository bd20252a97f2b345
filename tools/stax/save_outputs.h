// `stax run --save DIR` and `stax grad --save DIR` (docs/security.md, "Outputs"). DIR is created
// when missing. Every file is written through a temporary file and a rename
// (core/support/atomic_file.h): a link planted at out0.npy is replaced, never written through.
// Files of the output families ("out<N>.npy", "grad_<NAME>.npy") in DIR that this run does not
// write are stale outputs of an earlier run: they are removed (by name, with unlinkat, which
// removes a link and never its target), so DIR holds exactly this run's outputs. Nothing else in
// DIR is touched.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"

namespace stax::cli {

// Writes `outputs` (file name, tensor) into `dir`, removes the stale outputs; returns the names
// removed, sorted. Throws stax::Error (stage "cli") naming the file on failure.
std::vector<std::string> save_outputs(const std::string& dir,
                                      const std::vector<std::pair<std::string, Tensor>>& outputs);

// "saved 2 output(s) to DIR" plus, when some were removed, "; removed 1 stale output(s) of an
// earlier run: out2.npy".
std::string saved_summary(const std::string& what, const std::string& dir,
                          const std::vector<std::string>& removed);

}  // namespace stax::cli
