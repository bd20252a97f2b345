"""torch.compile(model, backend="stax") and stax.compile(fn_or_module, ...).

Dynamo hands the backend an FX graph of torch-level calls; the backend returns a callable. Per
input signature (shapes, dtypes, devices: a shape Dynamo left dynamic is specialised here, with
a log line) that callable traces the graph to aten level (stax.dynamo.aten_trace), splits it
where Stax lacks an op (stax.dynamo.partition), and runs Stax partitions (stax.dynamo.runtime)
with torch eager between them. Inputs the graph mutates (batch-norm running statistics, in-place
updates of inputs) come back as extra outputs of the functionalized graph and are written back
with ``copy_`` after the call, as eager does.
"""
import logging
import os
import threading

import torch

from .. import _compiler
from .._errors import Error
from . import aten_rewrite, aten_trace, explain, partition, runtime

log = logging.getLogger("stax.dynamo")


class Options:
    """The backend's options (torch.compile(..., options={...}) or stax.compile(**options)).

    config: a shipped config name, YAML path, dict or stax.Config ("cpu").
    device: run on this device kind of the config (stax.Compiler's device).
    budget: the partitioner's memory budget in bytes for saved values (seed §5.8), or None.
    fallback: "eager" (a graph or partition Stax cannot compile runs in torch eager, with a log
        line and a count in stax.explain) or "error" (raise the stax.Error instead).
    pool: "torch" (cpu_cpp's parallel loops run on torch's own OpenMP team, as wide as
        torch.get_num_threads(): one pool in the process, not Stax's next to torch's spinning
        one) or "stax" (Stax's own threads, the config's `threads`). A config that sets cpu_cpp's
        `openmp_runtime` itself keeps it.
    backward: "with_forward" (a training partition compiles its backward with its forward, at
        the first call, as one job: both graphs' kernels in one parallel batch, as AOTAutograd
        compiles the backward ahead of time) or "on_first_use" (the backward compiles at the
        first backward(): no backward compile for a forward that never runs one).
    """

    KEYS = ("config", "device", "budget", "fallback", "pool", "backward")

    def __init__(self, config="cpu", device=None, budget=None, fallback="eager", pool="torch",
                 backward="with_forward"):
        if fallback not in ("eager", "error"):
            raise ValueError(f"stax backend: fallback={fallback!r} (expected 'eager' or 'error')")
        if pool not in ("torch", "stax"):
            raise ValueError(f"stax backend: pool={pool!r} (expected 'torch' or 'stax')")
        if backward not in ("with_forward", "on_first_use"):
            raise ValueError(f"stax backend: backward={backward!r} "
                             "(expected 'with_forward' or 'on_first_use')")
        self.config, self.device, self.budget, self.fallback = config, device, budget, fallback
        self.pool, self.backward = pool, backward
        self._compiler = None
        self._lock = threading.Lock()

    @classmethod
    def parse(cls, options):
        options = dict(options or {})
        unknown = sorted(set(options) - set(cls.KEYS))
        if unknown:
            raise ValueError(f"stax backend: unknown option(s) {unknown} (known: {list(cls.KEYS)})")
        return cls(**options)

    def compiler(self):
        with self._lock:
            if self._compiler is None:
                team = torch_openmp_runtime() if self.pool == "torch" else None
                options = (("cpu_cpp", "openmp_runtime", team),) if team else ()
                if self.device is None:
                    self._compiler = _compiler._compiler_for(self.config, options)
                else:
                    self._compiler = _compiler.Compiler(
                        _compiler._with_backend_options(self.config, options), device=self.device)
            return self._compiler


def torch_openmp_runtime():
    """The file of the OpenMP runtime torch's intra-op pool runs on (its bundled libgomp), or
    None when torch's parallel backend is not OpenMP or no runtime is mapped."""
    global _torch_team
    if _torch_team is None:
        _torch_team = ""
        if "parallel backend: OpenMP" in torch.__config__.parallel_info():
            try:
                with open("/proc/self/maps") as maps:
                    for line in maps:
                        path = line.split()[-1] if len(line.split()) >= 6 else ""
                        if os.path.basename(path).startswith(("libgomp", "libomp", "libiomp")):
                            _torch_team = path
                            break
            except OSError:
                pass
    return _torch_team or None


_torch_team = None


class _Runner:
    """One input signature: the split aten graph and the inputs it writes back."""

    def __init__(self, gm, mutations):
        self.gm = gm
        self.mutations = mutations

    def __call__(self, args):
        outs = self.gm(*args)
        if not isinstance(outs, (tuple, list)):
            outs = (outs,)
        if self.mutations:
            with torch.no_grad():
                for out_pos, in_pos in self.mutations:
                    args[in_pos].copy_(outs[out_pos])
        return tuple(outs[len(self.mutations):])


class _Eager:
    def __init__(self, gm):
        self.gm = gm

    def __call__(self, args):
        return self.gm(*args)


def _key(args):
    """The input signature a runner is looked up by, on every call: torch.Size and torch.device
    as they are (hashable, no copies; a list comprehension, not a generator: half the time)."""
    return tuple([(a.shape, a.dtype, a.device) if isinstance(a, torch.Tensor)
                  else (type(a).__name__, a) for a in args])


def _shown(key):
    """The signature as stax.explain shows it: (shape tuple, dtype, device type) per tensor."""
    return tuple((tuple(k[0]), k[1], k[2].type) if len(k) == 3 else k for k in key)


class StaxGraph:
    """The callable the backend returns for one Dynamo graph."""

    def __init__(self, gm, example_inputs, options, records):
        self.gm = gm
        self.options = options
        self.records = records
        self._runners = {}
        self._lock = threading.Lock()
        if any(isinstance(a, torch.SymInt) or (isinstance(a, torch.Tensor) and any(
                isinstance(s, torch.SymInt) for s in a.shape)) for a in example_inputs):
            log.info("stax: Dynamo passed a graph with dynamic shapes; Stax specialises it per "
                     "concrete input shape (one compile per shape, kernels shared by the cache)")

    def __call__(self, *args):
        key = _key(args)
        runner = self._runners.get(key)
        if runner is None:
            with self._lock:
                runner = self._runners.get(key)
                if runner is None:
                    runner = self._runners[key] = self._build(list(args), key)
        return runner(list(args))

    def _fallback(self, record, why):
        if self.options.fallback == "error":
            raise Error(f"torch backend: error: {why}", "graph", "torch backend", why)
        record.fallback = why
        log.warning("stax: graph %d runs in torch eager: %s", record.id, why)
        return _Eager(self.gm)

    def _build(self, args, key):
        record = explain.GraphRecord(len(args), _shown(key))
        self.records.append(record)
        devices = {a.device.type for a in args if isinstance(a, torch.Tensor)}
        if devices - {"cpu"}:
            return self._fallback(record, f"inputs on device(s) {sorted(devices)}: the torch "
                                          "backend takes CPU tensors (Stax's device configs run "
                                          "CPU-resident graphs)")
        try:
            traced = aten_trace.trace(self.gm, args)
        except Exception as e:  # torch's tracer: report, run eager
            return self._fallback(record, f"tracing to aten failed: {type(e).__name__}: {e}")
        gm = traced.gm
        partition.drop_asserts(gm)
        aten_rewrite.linear_bmm_to_mm(gm)
        record.num_aten_nodes = sum(1 for n in gm.graph.nodes if n.op == "call_function")
        record.mutations = [i for _, i in traced.mutations]
        split = partition.split(gm)
        record.eager_ops, record.eager_reasons = split.eager_ops, split.reasons
        for t, c in split.eager_ops.items():
            log.warning("stax: %s x%d is not a Stax op here (%s): the graph is split there and "
                        "torch eager runs it", t, c, split.reasons.get(t, "?"))
        for name in split.partitions:
            sub = getattr(split.gm, name)
            prec = explain.PartitionRecord(f"g{record.id}.{name}", sub)
            record.partitions.append(prec)
            setattr(split.gm, name, runtime.StaxPartition(prec.name, sub, self.options, prec))
        return _Runner(split.gm, traced.mutations)


def make_backend(options=None, records=None):
    """A Dynamo backend function with these options; its GraphRecords go to `records`."""
    opts = Options.parse(options)
    recs = records if records is not None else []

    def stax_backend(gm, example_inputs):
        return StaxGraph(gm, example_inputs, opts, recs)

    return stax_backend


def backend(gm, example_inputs, options=None):
    """The registered backend: torch.compile(m, backend="stax", options={...})."""
    return make_backend(options)(gm, example_inputs)


def compile(fn_or_module, config="cpu", *, dynamic=None, fullgraph=False, **options):
    """stax.compile(f, config="cpu", budget=None, device=None, fallback="eager"): the seed's
    tp.compile. Returns torch.compile(f, backend=<Stax with these options>); stax.explain(result)
    shows what Stax did with it."""
    records = []
    options["config"] = config
    fn = torch.compile(fn_or_module, backend=make_backend(options, records), dynamic=dynamic,
                       fullgraph=fullgraph)
    fn._stax_records = records
    return fn


_registered = False


def register():
    """Registers "stax" with Dynamo (done on import of stax when torch is imported, and by the
    torch_dynamo_backends entry point of the installed package)."""
    global _registered
    if _registered:
        return
    from torch._dynamo.backends.registry import _BACKENDS, _COMPILER_FNS, register_backend
    # With the entry point discovered (_BACKENDS holds it), torch's lookup registers it: this
    # import may be that lookup loading stax.dynamo:backend.
    if "stax" not in _COMPILER_FNS and _BACKENDS.get("stax") is None:
        register_backend(backend, name="stax")
    _registered = True
