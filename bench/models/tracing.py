"""What Stax compiles: the torch 2.x make_fx printout of a workload's torch function.

trace(fn, inputs) -> Traced(text, placeholder names, output shapes, seconds)

- make_fx with Core ATen decompositions (torch._decomp.core_aten_decompositions()) plus batch
  norm's (native_batch_norm to var_mean / rsqrt / mul / add and the running statistics' update),
  in fake-tensor mode (nothing is computed). Scaled dot-product attention decomposes to its math
  form (bmm, masked softmax, bmm) with `sdpa="math"` (bench_models' default), or stays
  `_scaled_dot_product_flash_attention_for_cpu` with `sdpa="flash"` (what a CPU trace without
  decompositions holds; Stax runs it as its fused attention, docs/attention.md).
- Batch norm's decomposition writes the new running statistics into the buffers with
  `aten.copy_`. Stax has no in-place ops (issue 29: `copy_`, `add_`), so each `copy_(dst, src)`
  whose `dst` is a fresh `clone` read only before the copy becomes `src` (the functional form of
  the update: the function returns the new statistics); any other in-place op is refused with
  its name.
- Dead nodes (the `empty` batch norm leaves, unused getitems) are removed.
"""
import time
from dataclasses import dataclass

import torch
from torch._decomp import core_aten_decompositions, get_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

aten = torch.ops.aten


class Unsupported(Exception):
    """The traced graph has something the bench cannot hand to Stax."""


@dataclass
class Traced:
    text: str
    placeholders: list  # the placeholders' names, in argument order
    outputs: list  # the shapes of the returned values
    seconds: float


def decompositions(sdpa="math"):
    table = dict(core_aten_decompositions())
    if sdpa == "flash":
        table.pop(aten._scaled_dot_product_flash_attention_for_cpu.default, None)
    table.update(get_decompositions([aten.native_batch_norm, aten._native_batch_norm_legit,
                                     aten._native_batch_norm_legit_functional]))
    return table


def _functionalize_copies(graph):
    order = {n: i for i, n in enumerate(graph.nodes)}
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.copy_.default:
            continue
        dst, src = node.args[0], node.args[1]
        fresh = (getattr(dst, "target", None) is aten.clone.default and
                 all(order[u] < order[node] for u in dst.users if u is not node))
        if not fresh:
            raise Unsupported("%s writes into %s, which is read after the write: Stax has no "
                              "in-place ops (issue 29)" % (node.name, dst.name))
        node.replace_all_uses_with(src)
        graph.erase_node(node)
    for node in graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            if node.target._schema.is_mutable:
                raise Unsupported("%s calls %s, an in-place op: Stax has none (issue 29)"
                                  % (node.name, node.target))


def trace(fn, inputs, sdpa="math"):
    """`inputs`: torch tensors (only their shapes and dtypes matter); `sdpa`: "math" decomposes
    _scaled_dot_product_flash_attention_for_cpu, "flash" keeps it."""
    start = time.perf_counter()
    gm = make_fx(fn, decomposition_table=decompositions(sdpa), tracing_mode="fake")(*inputs)
    _functionalize_copies(gm.graph)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    seconds = time.perf_counter() - start
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    returned = [n for n in gm.graph.nodes if n.op == "output"][0].args[0]
    shapes = [tuple(v.meta["val"].shape) for v in torch.utils._pytree.tree_leaves(returned)]
    return Traced(str(gm.graph), names, shapes, seconds)
