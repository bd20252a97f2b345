"""Rewrites of the aten graph before the split (stax.dynamo.backend), where torch's decompositions
leave a form that is slower for Stax than an equal one.

``linear_bmm_to_mm``: ``nn.Linear`` on a 3-D input that cannot be viewed as 2-D (the attention
output after ``transpose(1, 2).reshape(b, t, c)`` of a GPT block: the decomposed SDPA leaves it
strided) decomposes through ``aten.matmul`` into ``bmm(expand(x), expand(W.t()))``: the weight
broadcast over the batch (stride 0). That is one product ``x.reshape(b * m, k) @ W.t()`` reshaped
back, which is what it becomes here (as Inductor does). Stax then runs one GEMM instead of b
small ones, its backward computes the weight's gradient as one product over all b * m rows
instead of b products and a sum over the batch, and the partition saves no broadcast (b, k, n)
weight, which the backward had to read materialized (a copy of b weights per step).
Values: Stax's GEMM sums each output element's k terms in the same order in both forms, so the
forward has the same bits; the weight's gradient sums its b * m terms in another order (a
reordered sum, within the tolerances of docs/torch_backend.md).
"""
import torch

aten = torch.ops.aten

_VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)


def _shape(node):
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


def _broadcast_matrix(node):
    """The 2-D node that `node` (a (b, k, n) tensor) broadcasts over its batch dim, or None:
    ``[view(] expand(W, [b, k, n]) [, [b, k, n])]`` with W of shape (k, n) or (1, k, n)."""
    shape = _shape(node)
    if shape is None or len(shape) != 3:
        return None
    if node.op == "call_function" and node.target in _VIEWS and _shape(node.args[0]) == shape:
        node = node.args[0]
    if node.op != "call_function" or node.target is not aten.expand.default:
        return None
    base = node.args[0]
    base_shape = _shape(base)
    if base_shape is None or tuple(base_shape[-2:]) != shape[1:]:
        return None
    if len(base_shape) == 2:
        return base
    if len(base_shape) == 3 and base_shape[0] == 1:
        return ("squeeze", base)
    return None


def _call(graph, target, args, like):
    """A new call node before the current insertion point, with meta["val"] computed on the
    fake tensors of its inputs (the split probes nodes by their shapes and dtypes)."""
    node = graph.call_function(target, args)
    vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args]
    fake_mode = getattr(like.meta.get("val"), "fake_mode", None)
    if fake_mode is not None:
        with fake_mode:
            node.meta["val"] = target(*vals)
    else:
        node.meta["val"] = target(*vals)
    return node


def _erase_unused(graph, nodes):
    """Erases the view / expand chains that fed the bmm once nothing reads them (only those:
    not a general dead-code pass)."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if (isinstance(node, torch.fx.Node) and node.op == "call_function" and not node.users
                and node.target in _VIEWS + (aten.expand.default,)):
            inputs = list(node.all_input_nodes)
            graph.erase_node(node)
            stack.extend(inputs)


def linear_bmm_to_mm(gm):
    """bmm(x, broadcast W) -> reshape(mm(reshape(x, [b*m, k]), W), [b, m, n]) (module doc).
    Returns the number of products rewritten; `gm` is modified in place."""
    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.bmm.default:
            continue
        lhs, rhs = node.args[0], node.args[1]
        out_shape, lhs_shape = _shape(node), _shape(lhs)
        weight = _broadcast_matrix(rhs)
        if weight is None or out_shape is None or lhs_shape is None:
            continue
        b, m, k = lhs_shape
        n = out_shape[2]
        with graph.inserting_before(node):
            if isinstance(weight, tuple):  # (1, k, n): its matrix
                weight = _call(graph, aten.reshape.default, (weight[1], [k, n]), node)
            flat = _call(graph, aten.reshape.default, (lhs, [b * m, k]), node)
            product = _call(graph, aten.mm.default, (flat, weight), node)
            result = _call(graph, aten.reshape.default, (product, [b, m, n]), node)
        node.replace_all_uses_with(result)
        graph.erase_node(node)
        _erase_unused(graph, [rhs, lhs])
        count += 1
    if count:
        gm.recompile()
    return count
