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
                    Tensor, dtype, interpret, tensor, undefined)
from ._stax import (bfloat16, bool, float16, float32, float64, int8, int32, int64,  # noqa: A004
                    uint8)
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
]
