"""stax.Compiler and stax.grad: the configured compile path (core/driver)."""
import os
import threading

from . import _config, _stax
from ._stax import Graph, Node


class Compiler:
    """Compiles graphs with the backends a config selects (thread-safe: compiles take turns).

    config: a shipped name ("cpu", "cuda_emulated", "cuda_triton_interpret", ...: the files of
        configs/), a YAML path, a dict of the same keys, or a stax.Config.
    device: run graphs whose placeholders are on "cpu" on this device kind of the config
        (``stax run --device``).
    name: names the dump files (the config's ``dump: {dir: ...}``).
    decompose / fuse: composite ops decomposed before lowering; kernels fused.
    """

    def __init__(self, config="cpu", *, device=None, name="graph", decompose=True, fuse=True):
        cfg = _config.resolve(config)
        if device is not None:
            cfg.default_device = device
        self._compiler = _stax._Compiler(cfg, name, decompose, fuse)
        self.config = self._compiler.config

    def compile(self, graph):
        """A stax.CompiledGraph: call it with one tensor per placeholder. The GIL is released
        while it compiles; Ctrl-C (in the main thread) stops the compile and raises
        KeyboardInterrupt."""
        return self._compiler.compile(_as_graph(graph))

    @property
    def cache_dir(self):
        """The kernel cache directory it uses, or None (cache off)."""
        return self._compiler.cache_dir

    def __repr__(self):
        return f"<stax.Compiler {self.config.source}: {self.config.devices}>"


def _as_graph(graph):
    if isinstance(graph, Graph):
        return graph
    if isinstance(graph, (str, os.PathLike)):
        s = os.fspath(graph)
        if "\n" not in s and os.path.isfile(s):
            return Graph.load(s)
        return Graph.parse(s)
    raise TypeError(f"expected a stax.Graph, graph text or a path, got {type(graph).__name__}")


_compilers = {}
_compilers_lock = threading.Lock()


def _with_backend_options(config, backend_options):
    """`config` resolved, with each (backend, key, value) of `backend_options` set on the devices
    of that plugin (unless the config sets the key itself)."""
    if not backend_options:
        return config
    cfg = _config.resolve(config)
    for backend, key, value in backend_options:
        cfg.set_backend_option(backend, key, value)
    return cfg


def _compiler_for(config, backend_options=()):
    """A Compiler per shipped name or path and backend options, made once (plugins load once
    per Compiler)."""
    if not isinstance(config, (str, os.PathLike)):
        return Compiler(_with_backend_options(config, backend_options))
    key = (os.fspath(config), tuple(backend_options))
    with _compilers_lock:
        c = _compilers.get(key)
        if c is None:
            c = _compilers[key] = Compiler(_with_backend_options(config, backend_options))
        return c


def grad(graph, wrt, *, budget=None, config="cpu", compiler=None, interpret=False,
         algorithm="dinic", seed=0, compile_backward=False):
    """Forward and backward of `graph` with respect to the placeholders `wrt` (names or Nodes).

    Builds the joint graph (seed §5.3), partitions it with the min-cut rematerialization
    partitioner (§5.4-5.5; `budget`: at most that many bytes of saved values), compiles the
    forward now and the backward on its first use (§5.6); `compile_backward` compiles the
    backward now too, with the forward, as one job (both graphs' kernels in one parallel batch:
    faster than the two apart when the backward will run anyway, docs/jit_compile.md).
    Returns a stax.CompiledFunction:
    ``cf(x, W).backward()`` gives the gradients; ``cf.saved`` / ``cf.recomputed`` /
    ``cf.partition_report`` show the partition. `interpret` runs both halves on the reference
    interpreter instead (nothing compiled).
    """
    if isinstance(wrt, (str, Node)):
        wrt = [wrt]
    names = [w.name if isinstance(w, Node) else str(w) for w in wrt]
    g = _as_graph(graph)
    c = None
    if not interpret:
        c = (compiler if compiler is not None else _compiler_for(config))._compiler
    return _stax._grad(g, names, c, budget, algorithm, seed, compile_backward)
