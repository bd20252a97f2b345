// Fused attention in the graph (issue 27 item 3, docs/attention.md): every
// scaled_dot_product_attention the fused kernel can run becomes a call of _stax_flash_attention
// (flash_attention.cpp) whose output slice replaces it, so lowering makes one extern step of it and
// autodiff gives it the flash backward (from the saved output and log-sum-exp).
//
// The driver runs it before decomposition (Compiler::compile) and before the joint graph
// (CompiledFunction), and only for a backend that offers the extern kernels "flash_attention" and
// "flash_attention_backward"; elsewhere sdpa keeps its decomposition (matmul, softmax, matmul).
#pragma once

#include <string>
#include <vector>

namespace stax {

class Graph;

struct AttentionFusion {
  int fused = 0;
  // One line per attention considered: "%name: fused ..." or "%name: not fused: <why>" (the
  // driver puts them in Schedule::attention: the `schedule` dump's "attention:" section).
  std::vector<std::string> notes;
  std::string str() const;  // the notes, one per line, under "attention:" ("" when none)
};

// Rewrites `g` in place: every sdpa call, then the decomposed form (attention_pattern.h). Kept
// decomposed (with the reason in the notes): dtypes other than float32 / float64, grouped-query
// attention with fewer key heads, and the refusals of the pattern matcher.
// `dropout`: the backend also offers fused_attention_dropout_externs(), so the matcher fuses a
// softmax followed by dropout (docs/attention.md); without it such a match is refused with a note.
AttentionFusion fuse_attention(Graph& g, bool dropout = false);

// The extern kernels a backend must offer for fuse_attention to be worth running.
const std::vector<std::string>& fused_attention_externs();

// The extern kernels of fused attention with dropout (the plugin decides: cpu_cpp offers them,
// the GPU plugins not yet).
const std::vector<std::string>& fused_attention_dropout_externs();

}  // namespace stax
