"""Stax from Python: graphs, the compiler, gradients, tensors through DLPack.

    import stax, torch
    g = stax.Graph.load("examples/example_1_1.stax")
    f = stax.Compiler("cpu").compile(g)
    out = f(torch.randn(64, 128), torch.randn(64, 128))   # a torch tensor, no copies

See docs/python.md for the API, the DLPack rules, errors and threads.
"""
from ._errors import Error  # first: the extension raises it
from . import _stax
from ._stax import (CompiledFunction, CompiledGraph, Config, ForwardResult, Graph, Kernel, Node,
                    Tensor, dtype, interpret, promote_types, tensor, undefined)
from ._stax import (bfloat16, bool, complex64, complex128, float16, float32, float64,  # noqa: A004
                    int8, int16, int32, int64, uint8, uint16, uint32, uint64)
from ._compiler import Compiler, grad
from ._config import cmake_dir, configs_dir, plugin_dir, shipped_configs
from ._runtime import cache, plugins

from_dlpack = tensor

__version__ = "0.1.0"

__all__ = [
    "Error", "Graph", "Node", "Compiler", "CompiledGraph", "CompiledFunction", "ForwardResult",
    "Kernel", "Config", "Tensor", "tensor", "from_dlpack", "grad", "interpret", "plugins",
    "cache", "dtype", "undefined", "configs_dir", "plugin_dir", "cmake_dir", "shipped_configs",
    "float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool",
    "complex64", "complex128", "int16", "uint16", "uint32", "uint64", "promote_types",
]


def compile(fn_or_module, config="cpu", **options):  # noqa: A001  (the seed's tp.compile)
    """torch.compile(fn_or_module, backend="stax") with Stax's options (config, budget, device,
    fallback, dynamic, fullgraph): see stax.dynamo.compile and docs/torch_backend.md."""
    from .dynamo import compile as _compile
    return _compile(fn_or_module, config, **options)


def explain(fn=None):
    """What the torch backend did with `fn` (a stax.compile result), or with every graph of
    this process compiled with backend="stax": partitions, saved and recomputed values, ops
    split off to torch eager, fallbacks (stax.dynamo.explain)."""
    from .dynamo import explain as _explain
    return _explain(fn)


def _register_torch_backend():
    # torch.compile(backend="stax") finds the backend through the torch_dynamo_backends entry
    # point (the wheel's; the build tree writes one too). When Dynamo is already imported, the
    # backend is also registered here, at no import cost (`import stax` imports neither torch
    # nor Dynamo: ~10 s on the loaded session machine).
    import sys
    if "torch._dynamo" in sys.modules:
        try:
            from .dynamo import register
            register()
        except ImportError:  # a torch without Dynamo
            pass


_register_torch_backend()
__all__ += ["compile", "explain"]
