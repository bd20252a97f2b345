"""stax.explain(...): what the torch backend did with each graph Dynamo handed it.

Per Dynamo graph (one per input signature: shapes specialise): the aten ops, the Stax
partitions (inference or training; for training the partitioner's saved and recomputed values),
the ops left to torch eager where Stax lacks them (the split), the inputs written back
(mutations), and whole-graph fallbacks with their reasons.
"""
import collections
import itertools
import threading

_lock = threading.Lock()
_ALL = collections.deque(maxlen=256)  # every GraphRecord of this process, newest last
_ids = itertools.count(1)


class PartitionRecord:
    def __init__(self, name, gm):
        self.name = name
        calls = [n for n in gm.graph.nodes if n.op == "call_function"]
        self.num_nodes = len(calls)
        self.ops = collections.Counter(str(n.target) for n in calls)
        self.mode = None  # "inference" / "training" (the last compile)
        self.saved = []
        self.saved_primals = []
        self.recomputed = []
        self.backward_with_forward = False  # training: the backward compiled with the forward
        self.saved_bytes = 0
        self.num_kernels = 0
        self.compiles = 0
        self.compile_seconds = 0.0
        self.calls = 0
        self.fallback = None  # why it runs in torch eager
        self._calls_lock = threading.Lock()

    def called(self):
        with self._calls_lock:
            self.calls += 1

    def compiled(self, entry, seconds):
        self.mode = entry.mode
        self.compiles += 1
        self.compile_seconds += seconds
        fn = entry.fn
        if entry.mode == "training":
            self.saved, self.saved_primals = list(fn.saved), list(fn.saved_primals)
            self.recomputed, self.saved_bytes = list(fn.recomputed), fn.saved_bytes
            self.num_kernels = fn.compiled_forward.num_kernels
            self.backward_with_forward = bool(fn.stats["backward_with_forward"])
        else:
            self.num_kernels = fn.num_kernels

    def fell_back(self, error):
        self.fallback = str(error)

    def __str__(self):
        head = (f"  partition {self.name}: {self.num_nodes} aten ops, "
                f"{self.mode or 'not run yet'}, {self.compiles} compiles "
                f"({self.compile_seconds:.2f} s), {self.calls} calls")
        if self.fallback:
            return head + f"\n    FALLBACK to torch eager: {self.fallback}"
        lines = [head, f"    kernels (forward): {self.num_kernels}"]
        if self.mode == "training":
            lines.append(f"    saved for backward: {self.saved} ({self.saved_bytes} bytes), "
                         f"inputs held: {self.saved_primals}")
            lines.append(f"    recomputed in backward: {self.recomputed}")
            lines.append("    backward compiled: " + ("with the forward, as one job"
                                                     if self.backward_with_forward
                                                     else "on its first use"))
        return "\n".join(lines)


class GraphRecord:
    def __init__(self, num_inputs, signature):
        self.id = next(_ids)
        self.num_inputs = num_inputs
        self.signature = signature
        self.num_aten_nodes = 0
        self.partitions = []
        self.eager_ops = {}  # aten target -> count, run by torch between partitions
        self.eager_reasons = {}  # aten target -> why Stax did not take it
        self.mutations = []  # input indices written back
        self.fallback = None  # whole graph in eager: why
        with _lock:
            _ALL.append(self)

    @property
    def num_eager_ops(self):
        return sum(self.eager_ops.values())

    def __str__(self):
        lines = [f"graph {self.id}: {self.num_inputs} inputs, {self.num_aten_nodes} aten ops"]
        if self.fallback:
            lines.append(f"  FALLBACK: the whole graph runs in torch eager: {self.fallback}")
        for p in self.partitions:
            lines.append(str(p))
        for t, c in sorted(self.eager_ops.items()):
            why = self.eager_reasons.get(t)
            lines.append(f"  split: {t} x{c} runs in torch eager" + (f" ({why})" if why else ""))
        if self.mutations:
            lines.append(f"  inputs written back (mutations): {self.mutations}")
        return "\n".join(lines)


class Explanation:
    """The records of one compiled function (stax.compile) or of the whole process."""

    def __init__(self, graphs):
        self.graphs = list(graphs)

    @property
    def partitions(self):
        return [p for g in self.graphs for p in g.partitions]

    @property
    def saved(self):
        return [s for p in self.partitions for s in p.saved]

    @property
    def recomputed(self):
        return [s for p in self.partitions for s in p.recomputed]

    @property
    def eager_ops(self):
        out = collections.Counter()
        for g in self.graphs:
            out.update(g.eager_ops)
        return dict(out)

    @property
    def fallbacks(self):
        """Whole graphs and partitions that ran in torch eager, with why."""
        out = [(f"graph {g.id}", g.fallback) for g in self.graphs if g.fallback]
        out += [(p.name, p.fallback) for p in self.partitions if p.fallback]
        return out

    def __str__(self):
        if not self.graphs:
            return "stax.explain: no graph compiled yet"
        return "\n".join(str(g) for g in self.graphs)

    __repr__ = __str__


def explain(fn=None):
    """What the torch backend did: for `fn` (a stax.compile result) or, without it, for every
    graph this process compiled with backend="stax" (the newest 256)."""
    if fn is None:
        with _lock:
            return Explanation(_ALL)
    records = getattr(fn, "_stax_records", None)
    if records is None:
        raise TypeError("stax.explain(fn): fn is not a stax.compile result "
                        "(stax.explain() covers every torch.compile(backend='stax'))")
    return Explanation(records)
