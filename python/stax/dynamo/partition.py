"""The aten graph split where Stax lacks an op (the backend's graph break).

Stax cannot run an op it does not have, not even on its interpreter, so the only correct place
for such a node is torch eager. torch.fx's CapabilityBasedPartitioner groups the nodes Stax
takes into the largest acyclic partitions; each becomes a submodule that Stax compiles
(stax.dynamo.runtime.StaxPartition), and the nodes Stax lacks stay in the parent graph as plain
aten calls run by torch between them. Autograd flows across the split through torch's own
engine: each Stax partition is one torch.autograd.Function.
"""
import logging
import operator

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from . import fx_import

log = logging.getLogger("stax.dynamo")

# Ops whose only effect is a check torch's tracer inserted (no value flows out of them).
IGNORED = {"aten._assert_tensor_metadata.default", "aten._assert_async.default",
           "aten._assert_async.msg", "aten._assert_scalar.default",
           "aten.sym_constrain_range_for_size.default"}


def drop_asserts(gm):
    """Removes the tracer's metadata assertions (they have no users)."""
    changed = False
    for n in list(gm.graph.nodes):
        if n.op == "call_function" and str(n.target) in IGNORED and not n.users:
            gm.graph.erase_node(n)
            changed = True
    if changed:
        gm.recompile()


class _StaxSupport(OperatorSupportBase):
    def __init__(self):
        self.unsupported = {}  # node name -> (target, why)

    def is_node_supported(self, submodules, node):
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:
            producer = node.args[0]
            return isinstance(producer, torch.fx.Node) and producer.name not in self.unsupported
        why = fx_import.probe(node)
        if why is not None:
            self.unsupported[node.name] = (str(node.target), why)
            return False
        return True


class Split:
    """gm: the aten graph with Stax's partitions as submodules (names in `partitions`);
    eager_ops: {aten target: count} of the nodes left to torch; reasons: {target: why}."""

    def __init__(self, gm, partitions, eager_ops, reasons):
        self.gm = gm
        self.partitions = partitions
        self.eager_ops = eager_ops
        self.reasons = reasons


def split(gm):
    """Partitions `gm` (modified in place) into Stax submodules and eager aten nodes."""
    support = _StaxSupport()
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    proposed = partitioner.propose_partitions()
    fused = partitioner.fuse_partitions(proposed)
    names = [n.target for n in fused.graph.nodes if n.op == "call_module"]
    eager, reasons = {}, {}
    for n in fused.graph.nodes:
        if n.op == "call_function" and n.target is not operator.getitem:
            t = str(n.target)
            eager[t] = eager.get(t, 0) + 1
            if n.name in support.unsupported:
                reasons[t] = support.unsupported[n.name][1]
    return Split(fused, names, eager, reasons)
