// The GEMM libraries bench_gemm compares, each behind one interface and loaded with dlopen (so
// the bench links none of them and one process holds one library: their symbols clash).
//
//   stax             stax::sdk::gemm::multiply (the default of cpu_cpp and of the interpreter)
//                    on cpu_cpp's thread pool
//   stax-gomp        the same on a GNU OpenMP team (Debian's libgomp), as the torch backend runs
//                    it on torch's (cpu_cpp's openmp_runtime)
//   openblas         Debian's OpenBLAS 0.3.21, its own pthreads (libopenblas0-pthread)
//   openblas-serial  Debian's serial OpenBLAS 0.3.21 called per row block from Stax's pool
//   openblas-pypi    OpenBLAS 0.3.3x from PyPI's scipy-openblas32 (symbols prefixed scipy_)
//   blis             Debian's BLIS 0.9 (pthread build), through its CBLAS layer
//   mkl              MKL from PyPI (mkl_rt, its default threading layer)
//   onednn-debian    oneDNN 2.6 from Debian (dnnl_sgemm; OpenMP threads)
//   onednn-pypi      oneDNN 3.x from PyPI (dnnl_sgemm; batches as one matmul primitive)
//
// A batch is one library call where the library has one (MKL's and OpenBLAS 0.3.3x's
// cblas_sgemm_batch_strided, oneDNN 3's batched matmul), else a loop of calls (what Stax's
// extern did before); the output says which.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace stax::bench {

// One product or a batch of equal products with uniform batch strides; A is row-major
// (a_rs = k, a_cs = 1), or transposed (a_rs = 1, a_cs = m: A^T row-major, a weight gradient's
// X^T); B is row-major, or transposed (b_rs = 1, b_cs = k: B^T row-major); C is row-major.
struct GemmShape {
  std::string name;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool b_transposed = false;
  bool a_transposed = false;
};

class GemmLibrary {
 public:
  virtual ~GemmLibrary() = default;
  // The library's version as it reports it, or its file.
  virtual std::string describe() const = 0;
  // How a batch runs: "one call" or "loop of calls".
  virtual std::string batch_mode() const { return "loop of calls"; }
  // C = A @ B for every entry of the batch.
  virtual void multiply(const GemmShape& s, const float* a, const float* b, float* c) = 0;
};

// The library `name` (list above) on `threads` threads; nullptr with *why set when it is not
// installed here (the message names the file it looked for).
std::unique_ptr<GemmLibrary> load_gemm_library(const std::string& name, int threads,
                                               std::string* why);

const std::vector<std::string>& gemm_library_names();

}  // namespace stax::bench
