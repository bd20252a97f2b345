"""Stax as a torch.compile backend: torch.compile(m, backend="stax"), stax.compile, stax.explain.

See docs/torch_backend.md. Modules: aten_trace (Dynamo graph -> functionalized aten graph with
Core ATen decompositions), fx_import (aten FX -> stax.Graph, node by node), partition (the split
where Stax lacks an op), runtime (a Stax partition: inference, or training through stax.grad in
a torch.autograd.Function), backend (the backend, mutations written back), explain.
"""
from .backend import Options, backend, compile, make_backend, register
from .explain import Explanation, explain

__all__ = ["Options", "backend", "compile", "make_backend", "register", "explain", "Explanation"]
