// Helpers of the op and interpreter tests (interp_*_test, decompositions_test): row-major iota
// tensors, the text of a stax::Error, substring checks, and numpy as an oracle.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor/npy.h"
#include "core/tensor/tensor.h"
#include "core/support/error.h"

namespace stax::test {

// 0, 1, 2, ... in a row-major tensor of the given shape.
inline Tensor iota(const Shape& sizes, DType dtype = DType::Float32) {
  Tensor flat = Tensor::arange(shape_numel(sizes), dtype);
  return flat.as_strided(sizes, contiguous_strides(sizes), 0);
}

// The message of the stax::Error that `f` throws, or "<no error>".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs `body` (Python; inputs in `ins`, result in `out`) under numpy; nullopt without numpy.
inline std::optional<Tensor> numpy_eval(const std::vector<Tensor>& inputs,
                                        const std::string& body) {
  static const bool have = std::system("python3 -c 'import numpy' > /dev/null 2>&1") == 0;
  if (!have) return std::nullopt;
  char tmpl[] = "/tmp/stax_numpy_eval_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  for (size_t i = 0; i < inputs.size(); ++i)
    save_npy(dir + "/in" + std::to_string(i) + ".npy", inputs[i]);
  std::ofstream(dir + "/run.py") << "import sys, numpy as np\nd = sys.argv[1]\n"
                                 << "ins = [np.load(f'{d}/in{i}.npy') for i in range("
                                 << inputs.size() << ")]\n"
                                 << body
                                 << "\nnp.save(f'{d}/out.npy', np.ascontiguousarray(out))\n";
  std::string cmd = "python3 " + dir + "/run.py " + dir + " > " + dir + "/log.txt 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir + "/log.txt");
    ADD_FAILURE() << "numpy script failed: "
                  << std::string(std::istreambuf_iterator<char>(log), {});
    return std::nullopt;
  }
  Tensor out = load_npy(dir + "/out.npy");
  std::filesystem::remove_all(dir);
  return out;
}

// The elements of an integer (or bool) tensor as int64, in order.
inline std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_int(i));
  return v;
}

}  // namespace stax::test
