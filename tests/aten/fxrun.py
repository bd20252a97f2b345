"""Tracing a Python function with torch's make_fx, writing its FX printout and .npy inputs, and
running it through the stax CLI (interpreter, compiled, gradient) against torch eager. Shared by
fx_printouts.py and opinfo.py."""
import operator
import os
import re
import subprocess

import numpy as np
import torch
from torch.fx.experimental.proxy_tensor import make_fx

# The dtypes Stax has (core/types/dtype.h) and how they travel as .npy: bfloat16 as raw 2-byte
# words ('|V2', which Stax reads as bfloat16; Stax writes bfloat16 outputs as float32).
NPY_DTYPES = {torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
              torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128,
              torch.int16, torch.uint16, torch.uint32, torch.uint64}


class Unmapped(Exception):
    """The traced graph uses something Stax does not have (an op, a tuple-valued op, a dtype)."""


def trace(fn, leaves):
    """-> (GraphModule, its printout text, the placeholder names in order)."""
    gm = make_fx(fn)(*leaves)
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    return gm, str(gm.graph), names


def overload_name(op):
    """An OpOverload's name as Stax's registry spells it: 'add.Tensor', 'relu.default'."""
    schema = op._schema
    return "%s.%s" % (schema.name.split("::")[-1], schema.overload_name or "default")


def targets(gm):
    """The aten overload names ('add.Tensor') of the graph's calls; Unmapped on anything else."""
    out = []
    for n in gm.graph.nodes:
        if n.op == "call_function":
            if n.target is operator.getitem:  # an element of an op returning several tensors
                out.append("getitem.default")
                continue
            if not isinstance(n.target, torch._ops.OpOverload):
                raise Unmapped("calls %s (not an aten op: a tuple-valued op)" % n.target)
            out.append(overload_name(n.target))
        elif n.op not in ("placeholder", "get_attr", "output"):
            raise Unmapped("has a %s node" % n.op)
    return out


def save_npy(path, t):
    t = t.detach().resolve_conj().resolve_neg()  # OpInfo's samples carry lazy conjugates
    if t.dtype not in NPY_DTYPES:
        raise Unmapped("dtype %s has no .npy form" % t.dtype)
    if t.dtype == torch.bfloat16:
        np.save(path, t.contiguous().view(torch.int16).numpy().view(np.dtype("V2")))
        return
    np.save(path, t.contiguous().numpy())


def write_case(workdir, gm, text, names, leaves):
    """Writes graph.stax and one NAME.npy per placeholder / get_attr; -> --input arguments."""
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, "graph.stax"), "w") as f:
        f.write(text)
    args = []
    for name, t in zip(names, leaves):
        p = os.path.join(workdir, name + ".npy")
        save_npy(p, t)
        args += ["--input", "%s=%s" % (name, p)]
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            p = os.path.join(workdir, n.name + ".npy")
            save_npy(p, getattr(gm, n.target))
            args += ["--input", "%s=%s" % (n.name, p)]
    return args


class StaxResult:
    def __init__(self, proc, outdir):
        self.code = proc.returncode
        self.stdout, self.stderr = proc.stdout, proc.stderr
        self.outdir = outdir

    @property
    def crashed(self):
        # 0 success, 1 a stax::Error (a clear message), 2 usage: anything else is a crash.
        return self.code not in (0, 1, 2)

    def error(self):
        # stax prints its error on stderr; the inputs' listing goes to stdout.
        lines = [l for l in self.stderr.splitlines() if l.strip()] or [
            l for l in self.stdout.splitlines() if l.strip()]
        return lines[-1] if lines else "exit code %d" % self.code

    def load(self, name):
        return np.load(os.path.join(self.outdir, name))


def run_stax(stax, mode, workdir, inputs, config, wrt=(), timeout=300):
    """mode: interp | compiled | grad. Saves outputs under workdir/<mode>/."""
    outdir = os.path.join(workdir, mode)
    graph = os.path.join(workdir, "graph.stax")
    if mode == "interp":
        cmd = [stax, "run", graph, "--save", outdir] + inputs
    elif mode == "compiled":
        cmd = [stax, "run", graph, "--config", config, "--save", outdir] + inputs
    else:
        cmd = [stax, "grad", graph, "--config", config, "--wrt", ",".join(wrt),
               "--save", outdir] + inputs
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc = subprocess.CompletedProcess(cmd, 124, "", "timed out after %d s" % timeout)
    return StaxResult(proc, outdir)


def tolerance(dtype, grad=False):
    if dtype == torch.bfloat16:
        return (3e-2, 3e-2) if grad else (1.6e-2, 1e-2)
    if dtype == torch.float16:
        return 1e-2, 1e-2
    if dtype == torch.float64:
        return 1e-7, 1e-7
    if dtype == torch.float32:
        return (1e-3, 1e-4) if grad else (1e-4, 1e-5)
    return 0, 0


def _at(i):
    return "(" + ", ".join(str(int(k)) for k in i) + ")"


def compare(got, want, grad=False, ref64=None):
    """None when equal within tolerance, else a short description. For float16 / bfloat16,
    `ref64` is torch's result of the same call in float64 (on the same, upcast, inputs): an
    element also passes when it is no farther from it than twice torch's own low-precision result
    is (plus the tolerance), since both round differently (a sum in another order)."""
    want = want.detach().resolve_conj().resolve_neg()  # torch's lazy conjugate / negative views
    bf16 = want.dtype == torch.bfloat16
    w = want.to(torch.float32).numpy() if bf16 or want.dtype not in NPY_DTYPES else want.numpy()
    if tuple(got.shape) != tuple(w.shape):
        return "shape %s, torch %s" % (tuple(got.shape), tuple(w.shape))
    if got.dtype != w.dtype:
        return "dtype %s, torch %s" % (got.dtype, w.dtype)
    if bf16 and got.size and (np.ascontiguousarray(got).view(np.uint32) & 0xFFFF).any():
        # Stax writes a bfloat16 output as float32: every value must then be a bfloat16.
        return "dtype: values that are no bfloat16 (computed in float32?), torch bfloat16"
    if want.is_complex():  # compare the real and imaginary parts as real numbers
        return compare(np.stack([got.real, got.imag], -1),
                       torch.view_as_real(want.resolve_conj()), grad)
    rtol, atol = tolerance(want.dtype, grad)
    if w.dtype == np.bool_ or rtol == 0:
        if not np.array_equal(got, w):
            bad = np.argwhere(got != w)
            i = tuple(bad[0])
            return "%d elements differ, e.g. at %s: %r vs torch %r" % (len(bad), _at(i),
                                                                       got[i].item(), w[i].item())
        return None
    g64, w64 = got.astype(np.float64), w.astype(np.float64)
    ok = np.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)
    if ref64 is not None and not ok.all() and tuple(ref64.shape) == tuple(w.shape):
        r = ref64.detach().to(torch.float64).numpy()
        with np.errstate(invalid="ignore"):
            torch_err = np.abs(w64 - r)
            ok |= np.abs(g64 - r) <= 2 * torch_err + atol + rtol * np.abs(r)
    if not ok.all():
        bad = np.argwhere(~ok)
        i = tuple(bad[0])
        return "%d of %d elements differ, e.g. at %s: %r vs torch %r" % (
            len(bad), ok.size, _at(i), g64[i], w64[i])
    return None
