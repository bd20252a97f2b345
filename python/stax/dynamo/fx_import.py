"""An aten-level torch.fx graph converted node by node into a stax.Graph (no text round trip).

The FX graph comes from stax.dynamo.aten_trace (functionalized, Core ATen decompositions). Each
placeholder becomes a Stax placeholder with the runtime tensor's shape and dtype, each
call_function a ``g.call_function`` of the same overload with the same arguments (FX nodes
replaced by their Stax nodes), ``operator.getitem`` of a multi-output op Stax's ``getitem``.
"""
import operator

import torch

from .. import _stax
from .._errors import Error


def _stax_target(target):
    if target is operator.getitem:
        return "getitem"
    if isinstance(target, torch._ops.OpOverload):
        return str(target)  # "aten.add.Tensor"
    raise Error(f"{target}: error: not an aten op overload", "graph", str(target),
                "not an aten op overload")


def _convert_arg(value, env):
    if isinstance(value, torch.fx.Node):
        return env[value]
    if isinstance(value, (list, tuple)):
        return type(value)(_convert_arg(v, env) for v in value)
    if isinstance(value, torch.SymInt):
        raise Error("SymInt: error: symbolic size", "graph", str(value), "symbolic size")
    return value


def add_call(g, node, env):
    """Adds the Stax node of an FX call_function node; raises stax.Error when Stax has no such
    op or refuses its arguments."""
    target = _stax_target(node.target)
    args = _convert_arg(tuple(node.args), env)
    kwargs = {k: _convert_arg(v, env) for k, v in node.kwargs.items()}
    if target == "getitem":
        return g.call("getitem", *args, name=node.name)
    return g.call_function(target, args, kwargs, name=node.name)


def _meta_of(value):
    """(shape, dtype) of a tensor or of an FX node's example value."""
    if isinstance(value, torch.fx.Node):
        value = value.meta.get("val")
    if isinstance(value, torch.Tensor):
        return tuple(int(s) for s in value.shape), value.dtype
    return None


def probe(node):
    """Why Stax cannot take this FX call node (a string), or None when it can: the node is built
    in a scratch graph whose placeholders have its inputs' shapes and dtypes."""
    if node.target is operator.getitem:
        return None  # goes with its producer
    g = _stax.Graph()
    env = {}
    for inp in node.all_input_nodes:
        m = _meta_of(inp)
        if m is None:
            return f"input {inp.name} is not a tensor"
        try:
            env[inp] = g.placeholder(inp.name, m[0], dtype=m[1])
        except Error as e:
            return e.message
    try:
        add_call(g, node, env)
    except Error as e:
        return e.message
    except (TypeError, ValueError) as e:
        return str(e)
    return None


class Imported:
    """The Stax graph of an FX graph, and how its inputs and outputs map to the FX ones.

    outputs: per FX output, ("node", i) for the i-th Stax output, ("input", j) for the j-th
    input passed through, ("const", value) for a non-tensor (None).
    """

    def __init__(self, graph, outputs, num_stax_outputs, input_names, tuple_output):
        self.graph = graph
        self.outputs = outputs
        self.num_stax_outputs = num_stax_outputs
        self.input_names = input_names
        self.tuple_output = tuple_output


def import_graph(gm, inputs):
    """Converts `gm` (aten level) into a stax.Graph whose placeholders have the shapes and dtypes
    of `inputs` (the runtime tensors)."""
    g = _stax.Graph()
    env = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        raise Error("fx: error: input count", "graph", "fx", "input count differs")
    pos = {}
    for i, (n, t) in enumerate(zip(placeholders, inputs)):
        env[n] = g.placeholder(n.name, tuple(t.shape), dtype=t.dtype)
        pos[n] = i
    out_node = None
    for n in gm.graph.nodes:
        if n.op == "call_function":
            env[n] = add_call(g, n, env)
        elif n.op == "output":
            out_node = n
        elif n.op != "placeholder":
            raise Error(f"{n.name}: error: unsupported FX node kind {n.op}", "graph", n.name,
                        f"unsupported FX node kind {n.op}")
    result = out_node.args[0]
    tuple_output = isinstance(result, (tuple, list))
    values = list(result) if tuple_output else [result]
    stax_outs, index, mapping = [], {}, []
    for v in values:
        if isinstance(v, torch.fx.Node) and v.op == "placeholder":
            mapping.append(("input", pos[v]))
        elif isinstance(v, torch.fx.Node):
            if v not in index:
                index[v] = len(stax_outs)
                stax_outs.append(env[v])
            mapping.append(("node", index[v]))
        else:
            mapping.append(("const", v))
    if not stax_outs:
        raise Error("fx: error: nothing to compute", "graph", "fx", "nothing to compute")
    g.output(stax_outs)
    return Imported(g, mapping, len(stax_outs), [n.name for n in placeholders], tuple_output)
