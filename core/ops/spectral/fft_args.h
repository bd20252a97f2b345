// The arguments the spectral ops share (_fft_r2c, _fft_c2r, _fft_c2c): their dim lists and
// normalization modes, read the same way by inference (schemas.cpp) and kernels (kernels.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/arg.h"
#include "core/support/error.h"
#include "core/types/tensor_meta.h"

namespace stax::fft {

// aten's fft_norm_mode: the factor applied to the unnormalized transform.
enum class Norm : int64_t { None = 0, ByRootN = 1, ByN = 2 };

// `dim` wrapped into [0, rank), in the given order; throws Error("shape", where) on an empty list
// (allowed only when `allow_empty`), a dim out of range or a repeated dim.
inline std::vector<int64_t> dims_of(const Arg& dim, int64_t rank, const std::string& where,
                                    bool allow_empty) {
  std::vector<int64_t> dims = dim.to_int_list();
  // torch's kernels fail on a 0-d input (a view to [-1, 0] of one element); wrap_dim would take
  // dim 0 of it as a dim of size 1 that the tensor does not have.
  if (rank == 0 && !dims.empty())
    throw Error("shape", where, "expected a tensor of at least one dimension to transform, got a "
                                "0-d tensor");
  if (dims.empty() && !allow_empty)
    throw Error("shape", where, "expected at least one dim to transform, got []");
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& d : dims) {
    d = wrap_dim(d, rank, where);
    if (seen[static_cast<size_t>(d)])
      throw Error("shape", where, "dim " + std::to_string(d) + " appears twice in the FFT's dims");
    seen[static_cast<size_t>(d)] = true;
  }
  return dims;
}

inline Norm norm_of(const Arg& normalization, const std::string& where) {
  int64_t v = normalization.to_int();
  if (v < 0 || v > 2)
    throw Error("shape", where,
                "normalization must be 0 (none), 1 (1/sqrt(n)) or 2 (1/n), got " +
                    std::to_string(v));
  return static_cast<Norm>(v);
}

// The factor of mode `norm` for a transform of `n` points (the product of the signal sizes).
inline double norm_factor(Norm norm, int64_t n) {
  switch (norm) {
    case Norm::None: return 1.0;
    case Norm::ByRootN: return 1.0 / std::sqrt(static_cast<double>(n));
    case Norm::ByN: return 1.0 / static_cast<double>(n);
  }
  return 1.0;
}

}  // namespace stax::fft
