// The GEMM library behind cpu_cpp's float32 / float64 matrix products and convolutions: the
// `blas:` option (docs/gemm.md has the measurements behind the default).
//
//   stax     (default) Stax's own GEMM (sdk/include/stax/sdk/gemm.hpp): the interpreter's bits,
//            register tiles and cache blocks, batches over their entries, on the backend's pool
//   openblas Debian's serial OpenBLAS (libopenblas0-serial)
//   blis     BLIS, single-threaded (Debian's libblis4-serial, else any libblis.so.4 told to use
//            one thread)
//   mkl      MKL's mkl_rt with its sequential threading layer (PyPI `mkl`, or any on the path)
//   onednn   oneDNN's dnnl_sgemm (Debian libdnnl2 2.x, or 3.x; float64 goes to stax: oneDNN has
//            no dgemm), told to use one OpenMP thread per call
//
// Every library runs on the backend's thread pool: a product is cut into blocks of rows (or a
// batch into its entries), and each pool thread calls the single-threaded library on its block
// (one thread pool, never a second one spinning against the kernels'). The libraries are
// loaded with dlopen when the config names them, so the plugin links none of them; `blas_library`
// names the file to load instead of the usual ones. Results of a library other than stax agree
// with the interpreter within the gemm bound (they sum in their own order).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "plugins/cpu_cpp/thread_pool.h"
#include "stax/sdk/gemm.hpp"

namespace stax::cpu {

class GemmLibrary {
 public:
  virtual ~GemmLibrary() = default;
  // The library and version, for the plugin's version string and errors.
  virtual std::string describe() const = 0;
  // C = A @ B (sdk::gemm::Problem, any strides); `done` is called for every finished block of
  // rows, possibly from several threads at once. Throws sdk::gemm::OutOfMemory when scratch
  // memory runs out.
  virtual void multiply(const sdk::gemm::Problem<float>& p, const sdk::gemm::RowsDone& done) = 0;
  virtual void multiply(const sdk::gemm::Problem<double>& p, const sdk::gemm::RowsDone& done) = 0;
};

const std::vector<std::string>& gemm_library_names();

// The library `name` on `pool` (nullptr: the calling thread alone) with `threads` threads;
// `file` overrides where it is loaded from. nullptr with *why set when it cannot be loaded (the
// message names the files tried and the package that provides them).
std::unique_ptr<GemmLibrary> load_gemm_library(const std::string& name, const std::string& file,
                                               std::shared_ptr<ThreadPool> pool, int threads,
                                               std::string* why);

}  // namespace stax::cpu
