// Stax's matrix product: its semantics, a reference implementation of them, and a fast
// implementation with the same bits (register tiles, cache blocks, any thread count).
//
// SEMANTICS. For float and double, C = A @ B (A m x k, B k x n, C m x n, each read or written
// through arbitrary element strides) is, for every element,
//     c = +0;  c = fma(a[i][p], b[p][j], c) for p = 0, 1, .., k-1;  C[i][j] = c
// one fused multiply-add per term, in increasing p: a sequential order, like the interpreter's
// sequential reductions, so the result is deterministic and independent of the layout, the
// blocking, the instruction set and the thread count. Error bound: |c - exact| <= k * u * sum_p
// |a_ip b_pj| (to first order; u = 2^-24 for float), the usual gemm bound: a library that sums in
// another order (OpenBLAS, MKL, ...) agrees with it within twice that.
//
// The reference interpreter (core/interpreter) and the cpu_cpp plugin both call multiply(), so
// compiled and interpreted matrix products agree bit for bit.
//
// IMPLEMENTATION (gemm_driver.hpp, gemm_tiles.hpp). B is packed into panels of NR columns per block
// of KC terms, A into panels of MR rows per block of MC rows; an MR x NR register tile of C
// (AVX-512: 6 x 64 floats in 24 zmm accumulators) is updated over KC terms at a time, in order, so
// the tiling never changes a bit. Row blocks (and, for few rows, column groups) are the parallel
// tasks; a batch of small products (attention's 64 x 256x256x32) is spread over its entries,
// never a loop of calls. The micro-kernels are compiled for AVX-512F, AVX2 + FMA and plain C++
// (std::fma) and picked at run time (instruction_set()).
#ifndef STAX_SDK_GEMM_HPP
#define STAX_SDK_GEMM_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <string>

namespace stax::sdk::gemm {

// C = A @ B for each of `batch` entries. Element (i, j) of entry e's A is at
// a[a_offset(e) + i * a_rs + j * a_cs] (likewise B and C), with a_offset(e) = a_offsets[e] when
// a_offsets is given, else e * a_bs. C must not overlap A or B.
template <class T>
struct Problem {
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
  const T* a = nullptr;
  int64_t a_rs = 0, a_cs = 0, a_bs = 0;
  const T* b = nullptr;
  int64_t b_rs = 0, b_cs = 0, b_bs = 0;
  T* c = nullptr;
  int64_t c_rs = 0, c_cs = 0, c_bs = 0;
  const int64_t* a_offsets = nullptr;
  const int64_t* b_offsets = nullptr;
  const int64_t* c_offsets = nullptr;

  int64_t a_offset(int64_t e) const { return a_offsets ? a_offsets[e] : e * a_bs; }
  int64_t b_offset(int64_t e) const { return b_offsets ? b_offsets[e] : e * b_bs; }
  int64_t c_offset(int64_t e) const { return c_offsets ? c_offsets[e] : e * c_bs; }
};

// Scratch memory kept between calls (packed panels), so that a run of products does not map and
// fault in fresh pages for each (~5% at 1024^3). Thread-safe; blocks larger than kMaxKeptBytes
// are freed after use. Defined in gemm_driver.hpp.
class Workspace;

// The register tiles multiply() may use (gemm_tiles.hpp), best first.
enum class InstructionSet { Avx512, Avx2, Portable };

// How multiply() runs: parallel_for(tasks, task) calls task(0 .. tasks-1), possibly on several
// threads, and returns when all have returned (a thread pool's loop). Without it (or with
// threads == 1) everything runs on the calling thread. Without a workspace the scratch is
// allocated per call.
struct Context {
  int threads = 1;
  std::function<void(int64_t tasks, const std::function<void(int64_t)>& task)> parallel_for;
  Workspace* workspace = nullptr;
  // The best set the CPU has by default; a set it lacks is replaced by the best it has (tests
  // and benchmarks ask for the others: every set gives the same bits).
  InstructionSet instruction_set = InstructionSet::Avx512;
};

// Called once the rows [row_begin, row_end) of entry `entry` of C are final (every column), from
// the thread that finished them, while they are still in its cache: the place for an epilogue.
// Blocks are disjoint and cover C; calls for different blocks may run concurrently.
using RowsDone = std::function<void(int64_t entry, int64_t row_begin, int64_t row_end)>;

// A scratch allocation failed: `bytes` for `what` (the packed panels).
class OutOfMemory : public std::bad_alloc {
 public:
  OutOfMemory(size_t bytes, const char* what)
      : message_("out of memory: " + std::to_string(bytes) + " bytes for " + what),
        bytes_(bytes) {}
  const char* what() const noexcept override { return message_.c_str(); }
  size_t bytes() const { return bytes_; }

 private:
  std::string message_;
  size_t bytes_;
};

// One term of the chain: a * b + c rounded once.
inline float fused_multiply_add(float a, float b, float c) { return std::fma(a, b, c); }
inline double fused_multiply_add(double a, double b, double c) { return std::fma(a, b, c); }

// The semantics above, one term at a time (slow; the definition tests compare against).
template <class T>
void reference(const Problem<T>& p) {
  for (int64_t e = 0; e < p.batch; ++e) {
    const T* a = p.a + p.a_offset(e);
    const T* b = p.b + p.b_offset(e);
    T* c = p.c + p.c_offset(e);
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        T acc = T(0);
        for (int64_t q = 0; q < p.k; ++q)
          acc = fused_multiply_add(a[i * p.a_rs + q * p.a_cs], b[q * p.b_rs + j * p.b_cs], acc);
        c[i * p.c_rs + j * p.c_cs] = acc;
      }
  }
}

// The fast implementation: the same bits as reference() for any `context`. T is float or
// double. Throws OutOfMemory when its scratch (packed panels, about (k + 64) * n elements plus
// a few hundred KB per thread) cannot be allocated; C is then partly written.
template <class T>
void multiply(const Problem<T>& p, const Context& context = {}, const RowsDone& done = {});

// The best set this CPU has, and its name ("avx512", "avx2", "scalar").
inline InstructionSet detect_instruction_set();
inline const char* instruction_set_name(InstructionSet set);
inline const char* instruction_set() { return instruction_set_name(detect_instruction_set()); }

}  // namespace stax::sdk::gemm

#include "stax/sdk/gemm_driver.hpp"

#endif  // STAX_SDK_GEMM_HPP
