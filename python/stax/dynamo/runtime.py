"""One Stax partition of an aten graph at run time: compiled per input signature, inference
through stax.Compiler, training through stax.grad inside a torch.autograd.Function.

Training (grad mode on and an input that requires grad) goes through Stax's own joint graph,
min-cut partitioner and compiled backward (seed §5): ``stax.grad(graph, wrt=<the inputs that
require grad>)``. The forward's ForwardResult (the saved values) lives on the autograd
Function's ctx; backward() runs the compiled backward. Not AOTAutograd's partitioner.
"""
import logging
import threading
import time

import torch

from .. import _compiler
from .._errors import Error
from . import fx_import

log = logging.getLogger("stax.dynamo")


# The attention ops and where their dropout_p is (positional index).
_ATTENTION_DROPOUT_AT = {"aten::scaled_dot_product_attention": 4,
                         "aten::_scaled_dot_product_flash_attention_for_cpu": 3,
                         "aten::_scaled_dot_product_efficient_attention": 5}


def _draws_random(gm):
    """Whether the aten graph has random ops (native_dropout, rand, bernoulli ...): torch tags
    them nondeterministic_seeded. The attention ops are tagged for their dropout_p: they draw
    (Stax's dropout in their decomposition) only when it is not 0."""
    seeded = torch.Tag.nondeterministic_seeded
    for n in gm.graph.nodes:
        t = n.target
        if not (n.op == "call_function" and isinstance(t, torch._ops.OpOverload)
                and seeded in t.tags):
            continue
        if "scaled_dot_product" not in t.name():
            return True
        i = _ATTENTION_DROPOUT_AT.get(t.name())
        p = (n.args[i] if i is not None and len(n.args) > i
             else n.kwargs.get("dropout_p", 0.0))
        if p != 0:
            return True
    return False


def _run_seed():
    """The seed of one run's random ops, drawn from torch's default generator: every call draws
    new numbers (a new dropout mask per step, as in eager) and torch.manual_seed makes a run
    reproducible. The numbers are Stax's Philox stream, not the ones eager would draw."""
    return int(torch.randint(0, 2**62, (), dtype=torch.int64))


class _StaxFunction(torch.autograd.Function):
    """Forward: the compiled forward of stax.grad; backward: its compiled backward (which uses
    the forward's seed)."""

    @staticmethod
    def forward(ctx, entry, seed, *inputs):
        result = entry.fn.forward(*inputs, seed=seed)
        # take_outputs: ctx keeps the saved values, not the outputs (whose grad_fn is ctx).
        outs = tuple(result.take_outputs())
        ctx.result, ctx.entry = result, entry
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(*[o for o in outs if not o.is_floating_point()])
        return outs

    @staticmethod
    def backward(ctx, *grad_outputs):
        entry = ctx.entry
        ups = [g if (g is not None and o_float) else None
               for g, o_float in zip(grad_outputs, entry.float_outputs)]
        # retain_graph: torch decides whether this node runs again (backward(retain_graph=True));
        # the saved values are freed with the autograd graph that owns ctx.
        grads = ctx.result.backward(*ups, retain_graph=True)
        out = [None] * entry.num_inputs
        for pos, g in zip(entry.wrt_positions, grads):
            out[pos] = g
        return (None, None, *out)


class _Entry:
    """What one input signature compiled to."""

    def __init__(self, imported, fn, mode, wrt_positions, num_inputs):
        self.imported = imported
        self.fn = fn  # a stax.CompiledGraph (inference) or stax.CompiledFunction (training)
        self.mode = mode
        self.wrt_positions = wrt_positions
        self.num_inputs = num_inputs
        self.float_outputs = [o.dtype.startswith(("float", "bfloat"))
                              for o in imported.graph.outputs]


def _signature(inputs, training):
    # Looked up on every call: torch.Size as it is (hashable, no copy), a list comprehension.
    sig = tuple([(t.shape, t.dtype) if isinstance(t, torch.Tensor) else ("value", t)
                 for t in inputs])
    grads = tuple([isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()
                   for t in inputs]) if training else ()
    return sig, grads


class StaxPartition(torch.nn.Module):
    """A partition of the aten graph (`gm`, a GraphModule of aten calls) run by Stax."""

    def __init__(self, name, gm, options, record):
        super().__init__()
        self.name = name
        self.gm = gm
        self.options = options
        self.record = record  # stax.dynamo.explain.PartitionRecord
        self._entries = {}
        self._lock = threading.Lock()  # one compile per signature, also from several threads
        self._eager = False
        self._random = _draws_random(gm)

    def _compile(self, inputs, training):
        sig, grads = _signature(inputs, training)
        imported = fx_import.import_graph(self.gm, inputs)
        t0 = time.perf_counter()
        if training:
            wrt_positions = [i for i, g in enumerate(grads) if g]
            wrt = [imported.input_names[i] for i in wrt_positions]
            fn = _compiler.grad(imported.graph, wrt, budget=self.options.budget,
                                compiler=self.options.compiler(),
                                compile_backward=self.options.backward == "with_forward")
            entry = _Entry(imported, fn, "training", wrt_positions, len(inputs))
        else:
            fn = self.options.compiler().compile(imported.graph)
            entry = _Entry(imported, fn, "inference", [], len(inputs))
        self.record.compiled(entry, time.perf_counter() - t0)
        return entry

    def _entry(self, inputs, training):
        key = _signature(inputs, training)
        entry = self._entries.get(key)
        if entry is None:
            with self._lock:
                entry = self._entries.get(key)
                if entry is None:
                    entry = self._entries[key] = self._compile(inputs, training)
        return entry

    def forward(self, *inputs):
        if self._eager:
            return self.gm(*inputs)
        training = torch.is_grad_enabled() and any(
            isinstance(t, torch.Tensor) and t.requires_grad for t in inputs)
        try:
            entry = self._entry(inputs, training)
        except Error as e:
            if self.options.fallback == "error":
                raise
            self._eager = True
            self.record.fell_back(e)
            log.warning("stax: partition %s (%d aten ops) runs in torch eager: %s", self.name,
                        self.record.num_nodes, e)
            return self.gm(*inputs)
        seed = _run_seed() if self._random else 0
        if entry.mode == "training":
            outs = _StaxFunction.apply(entry, seed, *inputs)
        else:
            outs = entry.fn(*inputs, seed=seed)
            if not isinstance(outs, tuple):
                outs = (outs,)
        self.record.called()
        return self._assemble(entry.imported, outs, inputs)

    @staticmethod
    def _assemble(imported, outs, inputs):
        values = []
        for kind, v in imported.outputs:
            if kind == "node":
                values.append(outs[v])
            elif kind == "input":
                values.append(inputs[v])
            else:
                values.append(v)
        return tuple(values) if imported.tuple_output else values[0]
