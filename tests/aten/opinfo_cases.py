"""One OpInfo sample as a Stax case: the call with every tensor argument a graph input, torch's
eager outputs (and autograd gradients), the make_fx trace and whether Stax has every op it calls.
Used by opinfo.py (the driver) and opinfo_batch.py (running cases through `stax`)."""
import torch

import fxrun

# The dtypes the harness runs, in this order; the others OpInfo lists (float8) are not Stax dtypes
# (core/types/dtype.h) and are counted apart.
STAX_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
               torch.int32, torch.int8, torch.uint8, torch.bool, torch.int16, torch.uint16,
               torch.uint32, torch.uint64, torch.complex64, torch.complex128]
DTYPE_NAMES = {d: str(d)[len("torch."):] for d in STAX_DTYPES}
# Classes of dtypes an expected failure may name (expected_failures.txt: NAME@CLASS).
DTYPE_CLASSES = {
    "integral": {"int64", "int32", "int8", "uint8", "int16", "uint16", "uint32", "uint64"},
    "unsigned": {"uint16", "uint32", "uint64"},
    "lowp": {"float16", "bfloat16"},
    "floating": {"float32", "float64", "float16", "bfloat16"},
    "complex": {"complex64", "complex128"},
}
# The ops taking complex tensors (`stax ops --complex`), set by the driver: a sample with complex
# values maps only when every op of its graph is one of them (docs/complex.md).
COMPLEX_OPS = set()


def differentiable(t):
    return t.dtype.is_floating_point or t.dtype.is_complex


def supported_dtypes(op):
    try:
        return set(op.supported_dtypes("cpu"))
    except Exception:
        return set(op.dtypes)


def dense_zeros(leaf, g):
    """A gradient as a plain tensor: zeros where torch gives none (an unused input) or one of its
    ZeroTensors (sgn's derivative on real inputs), which have no storage to read."""
    if g is None or g._is_zerotensor():
        return torch.zeros_like(leaf)
    return g


def flatten_sample(op, sample):
    """-> (fn(*leaves), leaves): the call with every tensor argument a graph input."""
    leaves = []

    def spec(x):
        if isinstance(x, torch.Tensor):
            leaves.append(x.detach())
            return ("T", len(leaves) - 1)
        if isinstance(x, (list, tuple)):
            return ("L", type(x), [spec(e) for e in x])
        return ("C", x)

    def build(s, vals):
        if s[0] == "T":
            return vals[s[1]]
        if s[0] == "C":
            return s[1]
        return s[1](build(e, vals) for e in s[2])

    s_in = spec(sample.input)
    s_args = [spec(a) for a in sample.args]
    s_kw = {k: spec(v) for k, v in sample.kwargs.items()}

    def fn(*vals):
        return op(build(s_in, vals), *[build(a, vals) for a in s_args],
                  **{k: build(v, vals) for k, v in s_kw.items()})

    return fn, leaves


def flat_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in flat_outputs(o)]
    raise fxrun.Unmapped("returns a %s" % type(out).__name__)


def differentiable_leaves(fn, leaves, floats):
    """The float leaves torch differentiates: aten declares some inputs not differentiable
    (native_batch_norm's running stats, nll_loss_forward's weight) and raises when they require
    grad; those are left out of --wrt."""
    def ok(wrt):
        try:
            fn(*[t.clone().requires_grad_(i in wrt) for i, t in enumerate(leaves)])
            return True
        except RuntimeError as e:
            if "is not differentiable with respect to" not in str(e):
                raise
            return False
    if ok(floats):
        return floats
    return [i for i in floats if ok([i])]


def draws_random(gm, registry):
    """Whether the trace draws random numbers (then Stax's Philox stream and torch's generator
    differ, and only shapes and dtypes can be compared): a call of a Stax random op, or of an
    in-place or out= form (category mutating, functionalized at parse time) that torch tags
    nondeterministic_seeded. F.dropout on the CPU records empty_like + bernoulli_.float, not
    native_dropout; scaled_dot_product_attention (and its flash form) is tagged too (for its
    dropout_p) but is deterministic at dropout_p = 0, so the tag alone does not decide: it draws
    when its dropout_p is not 0 (Stax's dropout in its decomposition)."""
    seeded = torch.Tag.nondeterministic_seeded
    dropout_at = {"scaled_dot_product_attention.default": 4,
                  "_scaled_dot_product_flash_attention_for_cpu.default": 3}
    for n in gm.graph.nodes:
        if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
            continue
        name = fxrun.overload_name(n.target)
        if name in dropout_at:
            i = dropout_at[name]
            p = n.args[i] if len(n.args) > i else n.kwargs.get("dropout_p", 0.0)
            if p != 0:
                return True
        category = registry[name][0]
        if category == "random" or (category == "mutating" and seeded in n.target.tags):
            return True
    return False


class Case:
    """A mapped sample: everything needed to run it through stax and check the results.
    Raises fxrun.Unmapped when Stax cannot run it (an op it lacks, a dtype it has no form of,
    make_fx or torch eager failing)."""

    def __init__(self, op, sample, dtype, index, registry, want_grad):
        self.dtype = dtype
        self.index = index  # the sample's number within its dtype
        self.fn, self.leaves = flatten_sample(op, sample)
        try:
            self.want = flat_outputs(self.fn(*self.leaves))
        except fxrun.Unmapped:
            raise
        except Exception as e:  # e.g. the jiterator entries: CUDA only
            raise fxrun.Unmapped("torch eager fails on CPU: %s" % str(e).splitlines()[0][:80])
        for t in self.leaves + self.want:
            if t.dtype not in fxrun.NPY_DTYPES:
                raise fxrun.Unmapped("uses %s (not a Stax dtype)" % t.dtype)
        try:
            self.gm, self.text, self.names = fxrun.trace(self.fn, self.leaves)
        except fxrun.Unmapped:
            raise
        except Exception as e:
            raise fxrun.Unmapped("make_fx failed: %s" % str(e).splitlines()[0][:100])
        ops = fxrun.targets(self.gm)
        missing = sorted({o for o in ops if o not in registry})
        if missing:
            raise fxrun.Unmapped("needs " + ", ".join(missing))
        if any(t.dtype.is_complex for t in self.leaves + self.want):
            real_only = sorted({o for o in ops if o not in COMPLEX_OPS and o != "getitem.default"})
            if real_only:
                raise fxrun.Unmapped("needs complex forms of " + ", ".join(real_only))
        if len(self.names) != len(self.leaves):
            raise fxrun.Unmapped("make_fx dropped inputs")
        self.random = draws_random(self.gm, registry)
        # float16 / bfloat16: torch's results in float64 on the same inputs, the reference of
        # fxrun.compare's second chance (both low-precision results round their own way).
        self.lowp = dtype in (torch.float16, torch.bfloat16)
        self.leaves64 = [t.double() if t.dtype == dtype else t for t in self.leaves]
        self.want64 = None
        if self.lowp and not self.random:
            try:
                self.want64 = flat_outputs(self.fn(*self.leaves64))
            except Exception:
                self.want64 = None
        self.wrt, self.want_grads, self.want_grads64 = [], None, None
        if want_grad and not self.random:
            self._torch_gradients()

    def _torch_gradients(self):
        """The float inputs to differentiate and torch's gradients (upstream ones for the float
        outputs; integer outputs such as max.dim's indices have none: `stax grad` makes no
        tangent for them)."""
        floats = [i for i, t in enumerate(self.leaves) if differentiable(t)]
        if not floats or not any(differentiable(w) for w in self.want):
            return
        floats = differentiable_leaves(self.fn, self.leaves, floats)
        if not floats:
            return
        rg = [t.clone().requires_grad_(i in floats) for i, t in enumerate(self.leaves)]
        try:  # torch may refuse a gradient input (soft_margin_loss's target): no grad check
            outs = [o for o in flat_outputs(self.fn(*rg)) if differentiable(o)]
            tg = torch.autograd.grad(outs, [rg[i] for i in floats],
                                     [torch.ones_like(o) for o in outs], allow_unused=True)
        except RuntimeError:  # an output without grad_fn (no path from the inputs)
            return
        self.wrt = floats
        self.want_grads = [dense_zeros(self.leaves[i], g) for i, g in zip(floats, tg)]
        if self.lowp:
            self.want_grads64 = self._gradients64(floats)

    def _gradients64(self, floats):
        rg = [t.clone().requires_grad_(i in floats) for i, t in enumerate(self.leaves64)]
        try:
            outs = [o for o in flat_outputs(self.fn(*rg)) if o.dtype.is_floating_point]
            tg = torch.autograd.grad(outs, [rg[i] for i in floats],
                                     [torch.ones_like(o) for o in outs], allow_unused=True)
        except Exception:
            return None
        return [dense_zeros(rg[i], g) for i, g in zip(floats, tg)]

    def ref64(self, i, grad=False):
        """torch's float64 result of output (or gradient) i, or None."""
        refs = self.want_grads64 if grad else self.want64
        return refs[i] if refs is not None and i < len(refs) else None

    @property
    def label(self):
        return "%s sample %d" % (DTYPE_NAMES[self.dtype], self.index)
