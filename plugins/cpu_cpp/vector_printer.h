// The vector printer of cpu_cpp (issue 9, "vector math"): the innermost contiguous loop of a
// pointwise kernel, and the innermost reduction loop of a reduction body in the segmented order,
// printed as explicit AVX-512 code over Clang's vector extensions: 16 float lanes
// (`typedef float stax_vf __attribute__((ext_vector_type(16)))`), unaligned vector loads and
// stores (__builtin_memcpy), a masked tail (`__builtin_ia32_loadups512_mask` /
// `storeups512_mask` over the first n lanes, reductions keep their other lanes by a select),
// gathers for strided, non-affine and indirect loads (`__builtin_ia32_gathersiv16sf` with 32-bit
// indices, two `gatherdiv16sf` halves with 64-bit ones; an indirect index vector is checked over
// the live lanes, the first bad lane reported as the scalar kernel reports it), NaN-propagating maximum / minimum as selects and
// SLEEF's vector functions called directly (`Sleef_cinz_expf16_u10avx512fnofma`: the same bits
// as the scalar `..f1_u10purec` forms of scalar_ops.hpp). No system header: the ops live in the
// prelude vector_prelude() (namespace stax_vec), printed before a kernel that uses them.
//
// Semantics: every lane computes what scalar_ops.hpp computes for its element, bit for bit (the
// vector forms are the scalar definitions written over lanes: vector_printer_test runs each op
// on random bit patterns against the scalar printer); a reduction keeps the segmented order of stax/sdk/reduction_order.hpp
// with segment l in lane l (the flat reduction index j goes to lane j mod 16, the loop stepping by
// 16 from 0) and its fixed tree as shuffles (stax_vec::tree_<op>): results are the scalar
// printer's, bit for bit.
//
// What it prints (vector_plan()): float32 values and bool (lanes of 0 / -1); loads of float32
// buffers (contiguous: a vector load; invariant: a broadcast; strided, non-affine or indirect: a
// gather); int64 index loads (contiguous or invariant) feeding indirect indexing; stores of float32 buffers contiguous along the vector loop;
// sum / prod / amax / amin reductions in the segmented order (not strict_order, not argmax /
// argmin / any / all); the ops of ops.def on float32 but floordiv, mod and pow. Everything else
// (other dtypes, int64 arithmetic, index_expr, stores that are not contiguous, a buffer both
// loaded and stored by the vectorised code, pointwise kernels whose innermost extent is below
// 16, kernels the scalar printer lane-interleaves: column reductions and strict order's row
// chains) keeps the scalar printer, which Clang's loop vectoriser vectorises.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "stax/sdk/loop_body.hpp"

namespace stax::cpu {

// The lanes of a vector (AVX-512: 16 floats).
inline constexpr int64_t kVectorLanes = 16;

struct VectorPlan {
  // A kernel without reduction loops whose bodies all vectorise: the innermost iteration loop
  // runs over vectors, all bodies in one loop.
  bool pointwise = false;
  // body[b]: reduction-loop body b runs its innermost reduction loop over vectors.
  std::vector<bool> body;
  // Why a body (or the kernel) stays scalar, one line each (for tests and docs).
  std::vector<std::string> reasons;
  bool any() const;
};

// Which bodies of `k` the vector printer prints; `strict_order`: reductions keep the sequential
// order (then only reduction-loop bodies without a reduction vectorise).
VectorPlan vector_plan(const sdk::Kernel& k, bool strict_order);

// Strict order's row tiles (issue 9, DECISIONS "row tiles"): whether reduction-loop body b of
// `k` (its kernel a row reduction: one reduction loop, not contiguous along the innermost
// iteration variable) can run 16 rows at once in 16 vector lanes, each lane one row's
// sequential accumulator: "" if it can, else why not. Required: float32 loads with indices
// affine in the row and the reduction variable, contiguous or invariant along the reduction,
// no indirect or masked load, no store inside the loop, sum / prod / max / min of float32.
std::string row_tile_reason(const sdk::Kernel& k, size_t b);

// The stax_vec prelude (types, loads, stores, gathers, the ops), newline-terminated.
const std::string& vector_prelude();

// Prints the vector code of one kernel (one instance per kernel: names are unique across it).
// Lines carry their indentation relative to where they go (two spaces a level).
class VectorPrinter {
 public:
  // `streamed`: per buffer, whether its full-vector stores are streaming stores
  // (streaming_store.h: `stax_stream16`, non-temporal where 64-byte aligned; the masked tail
  // stays a normal store). The caller prints streaming_prelude() and the fence when streamed().
  explicit VectorPrinter(const sdk::Kernel& k, std::vector<bool> streamed = {});
  ~VectorPrinter();
  VectorPrinter(const VectorPrinter&) = delete;
  VectorPrinter& operator=(const VectorPrinter&) = delete;

  // A pointwise kernel: the loop over its innermost iteration variable from `lo` to `hi`
  // (expressions), all bodies in it; `tail`: whether a partial last vector can occur.
  std::vector<std::string> pointwise_loop(const std::string& lo, const std::string& hi,
                                          bool tail);
  // Reduction-loop body b: its accumulators, the reduction loops (the innermost over vectors, with
  // a masked tail), the tree and the stores.
  std::vector<std::string> reduction_body(size_t b);
  // Row-tile body b (row_tile_reason(k, b) == ""): rows i .. i + 15 of the innermost iteration
  // variable i (its current value) in the 16 lanes. Each step of 16 along the reduction loads
  // a 16 x 16 tile per contiguous load (16 consecutive elements of each row), transposes it in
  // registers (stax_vec::transpose16) and runs the body on its 16 columns in order, so lane l
  // adds row l's elements in the interpreter's sequential order; the last, partial tile loads
  // masked rows and runs its columns in order. The stores write the 16 rows' results.
  std::vector<std::string> row_tile_body(size_t b);
  // Whether a streaming store was printed.
  bool streamed() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stax::cpu
