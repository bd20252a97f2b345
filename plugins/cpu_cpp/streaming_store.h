// Streaming (non-temporal) stores of cpu_cpp (issue 27, DECISIONS 71). A kernel output larger
// than the last-level cache is evicted before anyone reads it again, and a normal store of a
// line that is not in cache first reads it (write-allocate): 3 bytes of memory traffic for 2
// useful ones. A non-temporal store writes the line without reading it.
//
// Which stores stream (streaming_store_buffers): a float32 buffer that the kernel writes
// (Output / InOut) and never loads, of more than `threshold` bytes (the plugin option
// `streaming_store_bytes`: auto = the last-level cache, 0 = off), written by exactly one store of
// the kernel that is affine and contiguous (stride 1) along the loop the printers run in blocks
// of 16: the innermost iteration variable of a pointwise kernel, the innermost reduction variable
// of a reduction-loop body that accumulates nothing (layer_norm's and softmax's last pass), in a
// body without indirect indices (whose bounds checks would stop the vectorised block), with at
// least 16 elements along that loop. The printers then store 16 elements at a time with
// stax_stream16 (streaming_prelude()): non-temporal when the address is 64-byte aligned, the
// instruction's requirement, else a normal store; the masked / scalar tail stays normal. Tensor
// storage starts 64-byte aligned (core/tensor/tensor.h, kAlignment), so rows of a multiple of 16
// floats are aligned throughout. Where that is not known from the index (a row of 4099 floats, an
// offset view), the scalar printer peels up to 15 elements (normal stores) to the first streamed
// store's 64-byte boundary: a streamed body accumulates nothing, so where its blocks start changes
// no value. The vector printer does not peel (its loops start at the chunk or at 0, as its
// accumulating bodies' lanes must); its misaligned blocks store normally. Same bits either way.
//
// Ordering: streaming stores are weakly ordered: a later plain store (a release) does not order
// them, and the fence makes the guarantee explicit instead of resting on what a vendor's locked
// instructions happen to order. A kernel that printed one calls
// stax_stream_fence() (sfence) at the end of its entry point, on the thread that ran the chunk,
// before it returns to whoever signals completion (thread_pool.cpp's finished_ counter, the
// OpenMP team's barrier, the serial caller, an extern product's epilogue block): every streamed
// line is globally visible before the launch counts as done, so the next kernel, on any thread,
// reads the new data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stax/sdk/loop_body.hpp"

namespace stax::cpu {

// Per buffer of `k`: whether its store streams (see above). All false when threshold <= 0.
std::vector<bool> streaming_store_buffers(const sdk::Kernel& k, int64_t threshold_bytes);

// stax_stream16 (16 floats at an address: non-temporal when 64-byte aligned) and
// stax_stream_fence; printed before a kernel that streams (newline-terminated).
const std::string& streaming_prelude();

// The size of the last-level cache in bytes (sysfs cpu0's highest cache index, else CPUID leaf
// 4 / 0x8000001D), 0 when unknown. Read once.
int64_t last_level_cache_bytes();

}  // namespace stax::cpu
