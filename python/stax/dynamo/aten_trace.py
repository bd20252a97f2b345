"""Dynamo's FX graph traced to an aten-level graph with torch's own machinery.

``aot_export_module(trace_joint=False)`` (torch._functorch.aot_autograd, what torch.export
uses) runs the graph under a fake mode with functionalization and the Core ATen decompositions
(torch._decomp.core_aten_decompositions, Inductor's starting table): the result has no
in-place ops and no views of mutated memory, and the inputs it mutated are listed in its graph
signature (``user_inputs_to_mutate``); their new values come first among the outputs. Autograd
is not traced: Stax differentiates the forward itself (stax.grad).
"""
import operator

import torch
from torch._decomp import core_aten_decompositions, get_decompositions
from torch._functorch.aot_autograd import aot_export_module


class AtenGraph:
    """gm: the aten-level GraphModule (outputs: the mutated inputs' new values, then the user
    outputs); mutations: (output index, input index) per input written back."""

    def __init__(self, gm, mutations, num_user_outputs):
        self.gm = gm
        self.mutations = mutations
        self.num_user_outputs = num_user_outputs


_DECOMPOSITIONS = None

# Beyond Core ATen: ops Stax has no schema for whose torch decompositions it runs (the
# functional batch norms functionalization produces; Stax has native_batch_norm).
_EXTRA = ("_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
          "_native_batch_norm_legit")


def decompositions():
    global _DECOMPOSITIONS
    if _DECOMPOSITIONS is None:
        table = dict(core_aten_decompositions())
        table.update(get_decompositions([getattr(torch.ops.aten, n) for n in _EXTRA]))
        _DECOMPOSITIONS = table
    return _DECOMPOSITIONS


def trace(gm, args):
    """The aten graph of Dynamo's `gm` for these runtime arguments (shapes specialised)."""
    example = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
    # mkldnn off while tracing: torch's aten.lstm / gru decompositions then unroll the layers
    # into their cells (mm, sigmoid, tanh ...) instead of calling aten.mkldnn_rnn_layer, a
    # oneDNN kernel Stax does not have. Nothing else in an aten trace depends on the flag.
    # (The flag itself, not torch.backends.mkldnn.flags(): that also sets oneDNN's TF32 mode,
    # which warns on a build without Intel GPU support.)
    mkldnn = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        aten_gm, sig = aot_export_module(gm, example, trace_joint=False,
                                         decompositions=decompositions())
    finally:
        torch._C._set_mkldnn_enabled(mkldnn)
    _strip_effect_tokens(aten_gm, sig)
    input_pos = {name: i for i, name in enumerate(sig.user_inputs)}
    out_node = next(n for n in aten_gm.graph.nodes if n.op == "output")
    out_names = [a.name if isinstance(a, torch.fx.Node) else None for a in out_node.args[0]]
    mutations = []
    for i, name in enumerate(out_names[:len(sig.user_inputs_to_mutate)]):
        mutations.append((i, input_pos[sig.user_inputs_to_mutate[name]]))
    return AtenGraph(aten_gm, mutations, len(out_names) - len(mutations))


def _strip_effect_tokens(gm, sig):
    """Calls of side-effecting ops (torch 2.x: ``_linalg_check_errors``) come out of the export
    wrapped in ``with_effects(token, op, *args)``, threading an effect token from an extra first
    placeholder to an extra first output. Stax runs a graph's calls in its data order and has
    these ops itself (``_linalg_check_errors`` raises torch's message), so each wrapped call
    becomes the plain call, and the token placeholders and outputs go: the graph then takes the
    user's inputs and returns what the signature lists, as without effects."""
    tokens_in = set(getattr(sig, "input_tokens", None) or ())
    tokens_out = set(getattr(sig, "output_tokens", None) or ())
    if not tokens_in and not tokens_out:
        return
    graph = gm.graph
    with_effects = getattr(torch.ops.higher_order, "with_effects", None)
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not with_effects:
            continue
        _, op, *args = node.args
        with graph.inserting_before(node):
            call = graph.call_function(op, tuple(args), dict(node.kwargs))
        for user in list(node.users):
            if user.op == "call_function" and user.target is operator.getitem and user.args[1] == 0:
                user.replace_all_uses_with(node.args[0])  # the token passes through
            elif user.op == "call_function" and user.target is operator.getitem:
                results = op._schema.returns
                if len(results) == 1:
                    user.replace_all_uses_with(call)
                else:
                    user.args = (call, user.args[1] - 1)
            else:
                raise RuntimeError(f"with_effects result used by {user.format_node()}")
        for user in list(node.users):
            graph.erase_node(user)
        graph.erase_node(node)
    out_node = next(n for n in graph.nodes if n.op == "output")
    outs = out_node.args[0]
    kept = tuple(a for a in outs
                 if not (isinstance(a, torch.fx.Node) and (a.name in tokens_out or a.name in tokens_in)))
    out_node.args = (kept,)
    for node in list(graph.nodes):
        if node.op == "placeholder" and node.name in tokens_in:
            if node.users:
                raise RuntimeError(f"effect token {node.name} still used after unwrapping")
            graph.erase_node(node)
        elif node.op == "call_function" and not node.users and node.name in tokens_out:
            graph.erase_node(node)
    graph.lint()
    gm.recompile()
