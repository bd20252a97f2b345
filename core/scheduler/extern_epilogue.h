// Epilogues fused into matrix products (issue 27 item 2): after fusion, for a backend that runs
// them (FusionLimits::extern_epilogues, ABI 1.5 plugin_api.h EPILOGUES), the first kernel that
// reads a matrix product's output (extern mm, bmm, matmul, addmm) becomes that product's epilogue
// when
//   * it is pointwise (no reduction ranges) over exactly the product's elements, and every body
//     reads the product only at the point it computes (its row-major flat index: the bias add,
//     activation and residual add after a linear layer, as lowered and fused);
//   * the product's output is contiguous (row-major), so that finished rows are flat ranges;
//   * every other buffer the kernel reads is ready before the product runs (a graph input or
//     the result of an earlier step).
// The kernel's step is then merged into the product's: one step that writes the product and the
// kernel's buffers, run by the backend as the product plus the kernel on each block of rows while
// it is still in cache (or by the host after the product, for a backend that declines). The
// kernel is compiled and runs as before, point for point, so the results are bit-identical with
// the fusion on or off. Schedule::epilogues records every decision and its reason for the
// `schedule` dump.
#pragma once

#include "core/lowering/graph_lowering.h"
#include "core/policy/backend_policy.h"
#include "core/scheduler/schedule.h"

namespace stax {

void fuse_extern_epilogues(Schedule& schedule, const LoweredGraph& graph,
                           const FusionLimits& limits);

}  // namespace stax
