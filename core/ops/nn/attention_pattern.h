// The decomposed attention pattern (issue 27 item 3, docs/attention.md "The decomposed form"):
// what torch traces hand Stax when sdpa was decomposed before Stax saw it (make_fx with the Core
// ATen decompositions, the torch.compile path): the scores Q·Kᵀ as bmm / matmul behind views,
// expands and clones, an optional scale (mul / div by a number on the scores; a scale applied to
// q and k separately stays inside the operands), an optional mask (add of a tensor, where /
// masked_fill with -inf), _softmax over the keys, torch's guard that zeroes fully masked rows,
// then the product with V. Each match with the same semantics becomes one _stax_flash_attention
// call (causal when the mask is a constant causal mask); each refusal leaves the subgraph alone
// with a note saying why.
#pragma once

namespace stax {

class Graph;
struct AttentionFusion;

// Rewrites the matches in `g` in place (then removes the dead nodes), adds one note per softmax
// whose input is a matrix product to `report`, and counts the fused ones in report.fused.
// With `dropout`, a dropout of the probabilities before P·V (dropout.default, or native_dropout's
// expansion rand_like < 1 - p, mul, mul) is fused too, drawing the same numbers; without it such a
// match is refused with a note (the backend offers no dropout extern).
void fuse_decomposed_attention(Graph& g, AttentionFusion& report, bool dropout = false);

}  // namespace stax
