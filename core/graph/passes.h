// Graph-level passes that preserve bitwise-equal semantics (seed §6.9, Theorem 6.2). Both work in
// place, keep the order of the nodes they keep, and return how many nodes they removed.
#pragma once

#include <cstddef>

#include "core/graph/graph.h"

namespace stax {

// Dead code elimination (Theorem 6.2 (2)): removes every call_function node from which the output
// is not reachable. Placeholders and the output node are never removed (a graph's inputs are its
// signature). Random ops without users are removed too: in a functional graph they have no side
// effects, and each random op's stream is keyed by the node itself (the run's seed and the node's
// "rng_seed" attribute / identity), not by a counter shared with other random ops, so removing one
// does not change the numbers another draws. As the seed notes, removing an unused op that could
// fail (an out-of-range index) turns "error" into "result": the pass is a refinement there.
size_t dead_code_elimination(Graph& g);

// Common subexpression elimination (Theorem 6.2 (1)): a call_function node with the same op, the
// same arguments and the same kwargs as an earlier node is replaced by that node and erased.
// Arguments compare exactly: nodes by identity, doubles by their bits (so 0.0 and -0.0 differ,
// and a NaN argument matches the same NaN), 2 and 2.0 and True all differ. Never merged: ops of
// category Random and nodes carrying an attribute whose name starts with "rng" (rng_seed,
// rng_state ...): a random op is not a function of its arguments, so two calls are two draws
// (§6.9). Nodes of different phases ([FW]/[BW]) may merge: the earlier node is kept.
size_t common_subexpression_elimination(Graph& g);

// A concatenation along the last dim of reshapes that merged each input's trailing dims into it
// (the backward of a qkv projection split into heads: cat([reshape(dq (b, t, h, d), (b, t, h*d)),
// ...], -1)) becomes the concatenation of the unmerged inputs along their head dim, reshaped once:
// reshape(cat([dq, dk, dv], -2), (b, t, 3*h*d)). Same elements in the same places (data movement
// only: bitwise equal), but the kernel's innermost loop then runs over the shared trailing dims
// (d), where each input is read contiguously, instead of over the merged dim, where every element
// took a division, a modulo and a read of every input (measured: the GPT block's backward, the
// largest of its pointwise kernels). Applies when every input is a reshape (view) whose source
// has the cat's leading dims, then one dim, then trailing dims shared by all inputs (more than one
// element), and the same dtype. A cat of flat (1-D) tensors (the flash backward's packed upstream
// gradient: [reshape(dO (b, h, t, d), (-1,)), zeros (b*h*t)]) is done likewise over trailing dims
// T of the flattened sources that divide every input: each input as (n_j, T) (the flattened
// sources unflattened), joined along dim 0, flattened once. Returns how many cats it rewrote.
size_t cat_before_reshape(Graph& g);

}  // namespace stax
