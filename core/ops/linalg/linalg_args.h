// Shared argument checks and shapes of the linear-algebra ops (docs/linalg.md): the schemas'
// inference rules and the expansions use them, with torch's messages.
#pragma once

#include <string>

#include "core/graph/op_registry.h"

namespace stax::linalg {

// Parts of the Stax-internal element ops (_stax_linalg_*(..., int output)): which result of the
// factorization an element is.
enum LuPart : int64_t { kLU = 0, kPivots = 1, kInfo = 2 };
enum DetPart : int64_t { kDet = 0, kSign = 1, kLogAbsDet = 2 };
enum SvdPart : int64_t { kU = 0, kS = 1, kVh = 2 };

// The matrix dims' sizes and the batch shape of a (*, m, n) tensor.
inline int64_t rows(const Shape& s) { return s[s.size() - 2]; }
inline int64_t cols(const Shape& s) { return s[s.size() - 1]; }
inline Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }
inline Shape with_matrix(Shape batch, int64_t m, int64_t n) {
  batch.push_back(m);
  batch.push_back(n);
  return batch;
}

// float32 / float64 only (torch's CPU kernels also take complex; Stax rejects complex tensors for
// these ops when the graph is built, and half precision has no LAPACK kernel in torch either).
void need_float(const CallArgs& c, const TensorMeta& m, const std::string& api);
// At least 2 dims ("The input tensor A must have at least 2 dimensions.").
void need_matrix(const CallArgs& c, const TensorMeta& m, const std::string& api,
                 const std::string& name = "A");
// Batches of square matrices.
void need_square(const CallArgs& c, const TensorMeta& m, const std::string& api,
                 const std::string& name = "A");

// torch's linalg_solve_is_vector_rhs: B is a vector (or batch of vectors) right-hand side.
bool is_vector_rhs(const Shape& a, const Shape& b);

// The qr mode: "reduced", "complete" or "r" (else an error).
void need_qr_mode(const CallArgs& c, const std::string& mode);

}  // namespace stax::linalg
