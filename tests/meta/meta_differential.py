"""The meta-differential test (issue 28): Stax's shape and dtype inference against torch's meta
tensors (device="meta": the shape functions torch runs without data).

For every op of Stax's registry (`stax ops --tsv`) that is an aten overload, cases are drawn
(meta_cases.py: random and edge-case shapes, dtypes and arguments, then mutants of the cases
torch accepts) and each one is
  * called on torch with meta tensors: accepted (the outputs' shapes and dtypes) or rejected;
  * written as a one-node Stax graph and checked by `stax check --batch` (one process for all
    cases): accepted (the inferred outputs) or rejected (a stax::Error).
Meta functions leave some checks to torch's kernels (most dtype support; conv2d's bias shape,
the issue's named case), and a verifier must make them to reject before compiling; so where meta
accepts, the case also runs on torch's CPU kernels with small real tensors (floats in [0, 1),
integers 0). A mismatch is a case where the two disagree: Stax accepts what torch rejects
("accepts": meta or the CPU kernel rejects; a dtype torch's CPU build merely has no kernel for, a
NotImplementedError, or a bool mask's element count, which is data, is not counted), rejects what
both meta and the CPU kernel accept ("rejects"), or both accept with other output shapes
("shape"), dtypes ("dtype") or counts ("count"); for these three the CPU kernel runs too, its
rejection makes the case "accepts", and the report says whether its outputs are Stax's (where
meta and the kernel disagree, Stax follows the kernel). Where the meta function's own Python
code fails (a division by zero, torch._check given an int), the CPU kernel judges instead.
Random ops' kernels run only on cases Stax rejects. "internal" is a Stax exception other than stax::Error, and
"crash" a case that killed the stax process: both are failures whatever torch says. Cases torch
cannot judge on meta (no meta kernel, data-dependent output shapes, outputs of a dtype Stax lacks)
are left out and counted.

expected_mismatches.txt lists the known mismatches, one line each: "OP KIND: reason". The test
fails on a mismatch it does not list; a listed one that did not occur in this run is reported (a
larger run may find it) and fails only with --strict.

  meta_differential.py --stax BIN [--seeds 0-1] [--cases 10] [--mutants 3] [--budget S]
                       [--filter RE] [-v] [--report FILE] [--strict]

CI (tests/meta/CMakeLists.txt) runs a fixed seed set within a time box; `--seeds 0-31
--cases 30` is the longer run on demand (docs/security.md says how long each takes).
Exit status: 0 pass, 1 unexplained mismatches, 77 skipped (no torch 2.x with meta tensors).
"""
import argparse
import collections
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import meta_cases as mc  # noqa: E402

SKIP = 77


def skip(why):
    print("SKIPPED: " + why)
    sys.exit(SKIP)


try:
    import torch
except Exception as e:  # not installed, or broken
    skip("torch is not importable by %s (%s); scripts/setup.sh makes .venv with torch 2.x"
         % (sys.executable, e))
if int(torch.__version__.split(".")[0]) < 2:
    skip("torch %s is too old for this test (meta tensors of every aten op need torch 2.x; "
         "run it with .venv/bin/python)" % torch.__version__)


def parse_seeds(text):
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out


def read_expected(path):
    """{(op, kind): reason}"""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^(\S+)\s+(accepts|rejects|shape|dtype|count|internal|crash):\s*(.+)$",
                         line)
            if not m:
                sys.exit("%s:%d: expected 'OP KIND: reason' (KIND: accepts, rejects, shape, "
                         "dtype, count, internal, crash)" % (path, n))
            out[(m.group(1), m.group(2))] = m.group(3)
    return out


def registry(stax):
    out = subprocess.run([stax, "ops", "--tsv"], check=True, capture_output=True,
                         text=True).stdout
    ops = []
    for line in out.splitlines():
        name, cat, _grad, schema = line.split("\t")
        # In-place and out= forms never become nodes: Graph::call functionalizes them into their
        # functional op, which is checked here (docs/functionalization.md).
        if cat == "mutating":
            continue
        ops.append(mc.Schema(name, schema))
    return ops


def torch_overload(schema):
    base, overload = schema.aten_name
    try:
        return getattr(getattr(torch.ops.aten, base), overload)
    except (AttributeError, RuntimeError):
        return None


# ---- torch ----------------------------------------------------------------------------------

class NotComparable(Exception):
    pass


def torch_value(v):
    if isinstance(v, mc.TensorSpec):
        return torch.empty(v.shape, dtype=getattr(torch, v.dtype), device="meta")
    if isinstance(v, mc.DType):
        return getattr(torch, v.name)
    if isinstance(v, list):
        return [torch_value(e) for e in v]
    return v


def call_args(schema, args):
    """-> (positional, keyword) pairs of (param, value): positional until the first left-out
    default, keywords after it and for keyword-only parameters."""
    pos, kw = [], []
    gap = False
    for p, a in zip(schema.params, args):
        if a is mc.ABSENT:
            gap = True
            continue
        if p.kwarg_only or gap:
            kw.append((p, a))
        else:
            pos.append((p, a))
    return pos, kw


NOT_COMPARABLE = re.compile(
    r"Could not run .* with arguments from the 'Meta' backend|DynamicOutputShape|"
    r"data-dependent|data dependent|meta tensors? (do|does)n't|NYI|not implemented for 'Meta'|"
    r"aten::.* not supported for Meta|cannot be called on meta|GuardOnDataDependentSymNode|"
    r"Cannot access data pointer|item\(\) on meta|\.item\(\)|"
    r"Tensor\.item|unsupported.*meta|meta device",
    re.I)


def run_torch(op, schema, args):
    """-> ("ok", [(dtype, shape)...]) or ("error", message); NotComparable."""
    pos, kw = call_args(schema, args)
    kwargs = {p.name: torch_value(a) for p, a in kw}
    if any(p.name == "device" for p in schema.params) and kwargs.get("device") is None:
        kwargs["device"] = "meta"  # creation ops: no data either
    try:
        out = op(*[torch_value(a) for _, a in pos], **kwargs)
    except NotImplementedError as e:
        raise NotComparable("torch: %s" % first_line(e))
    except Exception as e:  # noqa: BLE001 (torch raises many types for bad arguments)
        msg = first_line(e)
        if NOT_COMPARABLE.search(str(e)):
            raise NotComparable("torch: " + msg)
        return ("error", "%s: %s" % (type(e).__name__, msg))
    outs = out if isinstance(out, (list, tuple)) else [out]
    metas = []
    for t in outs:
        if not isinstance(t, torch.Tensor):
            raise NotComparable("torch returns %s" % type(t).__name__)
        name = str(t.dtype).replace("torch.", "")
        if name not in mc.DTYPES:
            raise NotComparable("torch returns %s" % name)
        metas.append((name, list(t.shape)))
    return ("ok", metas)


def cpu_value(v):
    """Small real tensors: floats in [0, 1) (probabilities, targets), integers and bools 0
    (valid indices)."""
    if isinstance(v, mc.TensorSpec):
        dt = getattr(torch, v.dtype)
        if dt.is_floating_point:
            return torch.rand(v.shape, generator=torch.Generator().manual_seed(0)).to(dt)
        return torch.zeros(v.shape, dtype=dt)
    if isinstance(v, mc.DType):
        return getattr(torch, v.name)
    if isinstance(v, list):
        return [cpu_value(e) for e in v]
    return v


# CPU kernel errors that say nothing about the arguments' metadata: a dtype torch's CPU build
# has no kernel for (Stax may well support it: torch's CUDA build often does), the test's data
# (integer division by its zeros, its zero indices into an empty dimension) or a library inside.
# NotImplementedError is torch's own word for "no kernel for this" (argmax / argmin / topk of
# bool on CPU), not a verdict on the arguments.
KERNEL_GAP = re.compile(r"not implemented for '|ZeroDivisionError|index .*out of bounds|"
                        r"out of bounds for dimension|primitive descriptor|not supported on CPU|"
                        r"^NotImplementedError: ")


def mask_count_error(schema, args, err):
    """Whether the kernel's error is about the element count of a bool / uint8 mask index
    (index_put's values against the masked elements): that count is data (the test's masks are
    all False), known when the graph runs, where Stax checks it; the build-time rule checks the
    other dims."""
    masks = [t for p, a in zip(schema.params, args) if p.base == "Tensor" and p.is_list
             and isinstance(a, list) for t in a
             if isinstance(t, mc.TensorSpec) and t.dtype in ("bool", "uint8")]
    return bool(masks) and "cannot be broadcast to indexing result" in err


# Errors of a meta function's own Python code, not checks of the arguments: torch._check given an
# int condition (upsample_nearest2d of an empty batch), a float division by zero (batch_norm's
# running variance of one value per channel, a mean over no elements), vector_norm's check of the
# reduced dims of an empty tensor that takes a negative dim for an empty one (torch._refs.linalg:
# `d >= 0 and shape[d] != 0`; the C++ kernel wraps the dim first). The CPU kernel judges such
# cases instead.
META_BUG = re.compile(r"^(TypeError: cond must be a bool|ZeroDivisionError|"
                      r"RuntimeError: linalg\.vector_norm cannot compute the \S+ norm on the "
                      r"dimension -\d+ because)")


# Ops whose torch CPU kernel kills the process on arguments its meta function accepts (oneDNN
# reads the weights with the sizes it is told): never run here; tests/aten/core_ops.py checks
# them against torch on real nn.LSTM traces.
CRASHES_TORCH = {"mkldnn_rnn_layer", "mkldnn_rnn_layer_backward"}


def cpu_run(op, schema, args):
    """torch's CPU kernel on small real tensors of the case: ["error", message] or ["ok",
    [(dtype, shape)...]]. Meta functions leave some checks to the kernels (most dtype support,
    "not implemented for 'Int'"; conv2d's bias shape); a verifier must make them, to reject
    before compiling. Where meta and the kernel give other outputs, Stax follows the kernel."""
    pos, kw = call_args(schema, args)
    try:
        out = op(*[cpu_value(a) for _, a in pos], **{p.name: cpu_value(a) for p, a in kw})
    except Exception as e:  # noqa: BLE001
        return ["error", "%s: %s" % (type(e).__name__, first_line(e))]
    outs = out if isinstance(out, (list, tuple)) else [out]
    return ["ok", [(str(t.dtype).replace("torch.", ""), list(t.shape)) if isinstance(
        t, torch.Tensor) else (type(t).__name__, []) for t in outs]]


class ContainedKernels:
    """cpu_run of cases[i] in a forked worker process, so that a torch kernel that kills its
    process yields a "KernelCrash" error instead of ending the test: torch's backward kernels
    trust that grad_output and the saved tensors have the forward's shapes (e.g.
    adaptive_max_pool2d_backward with a grad smaller than its indices reads past it and
    segfaults), so cases their meta functions accept can crash them. The worker is forked once
    (after the cases are drawn: it reads them from its copy) and again after each crash."""

    def __init__(self, cases, timeout=60.0):
        self.cases, self.timeout, self.pid = cases, timeout, None

    def _start(self):
        from_parent, to_child = os.pipe()
        from_child, to_parent = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(to_child)
            os.close(from_child)
            src, dst = os.fdopen(from_parent, "r"), os.fdopen(to_parent, "w")
            try:
                for line in src:
                    schema, args, _ = self.cases[int(line)]
                    dst.write(json.dumps(cpu_run(torch_overload(schema), schema, args)) + "\n")
                    dst.flush()
            finally:
                os._exit(0)
        os.close(from_parent)
        os.close(to_parent)
        self.pid, self.dst, self.src = pid, os.fdopen(to_child, "w"), os.fdopen(from_child, "r")

    def run(self, i):
        if self.pid is None:
            self._start()
        self.dst.write("%d\n" % i)
        self.dst.flush()
        ready, _, _ = select.select([self.src], [], [], self.timeout)
        line = self.src.readline() if ready else ""
        if line:
            return json.loads(line)
        os.kill(self.pid, signal.SIGKILL)
        _, status = os.waitpid(self.pid, 0)
        self.dst.close()
        self.src.close()
        self.pid = None
        return ["error", "KernelCrash: torch's CPU kernel %s" % (
            "killed the process (signal %d)" % os.WTERMSIG(status) if ready else "timed out")]

    def close(self):
        if self.pid is not None:
            self.dst.close()
            os.waitpid(self.pid, 0)


def first_line(e):
    s = str(e).strip().splitlines()
    return (s[0] if s else type(e).__name__)[:300]


# ---- Stax -----------------------------------------------------------------------------------

def text_value(v, names):
    if isinstance(v, mc.TensorSpec):
        return "%" + names[id(v)]
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return "'%s'" % v
    if isinstance(v, mc.DType):
        return "torch." + v.name
    if isinstance(v, list):
        return "[" + ", ".join(text_value(e, names) for e in v) + "]"
    raise ValueError(v)


def graph_text(schema, args, outputs):
    """The case as Stax graph text: placeholders, the call, a getitem per element of a tuple or
    list result, the return."""
    lines, names = ["graph("], {}

    def placeholders(v):
        if isinstance(v, mc.TensorSpec):
            name = "t%d" % len(names)
            names[id(v)] = name
            shape = "(" + ", ".join(str(d) for d in v.shape) + ("," if len(v.shape) == 1 else "") + ")"
            lines.append("    %%%s shape=%s dtype=%s = placeholder[target=%s]"
                         % (name, shape, v.dtype, name))
        elif isinstance(v, list):
            for e in v:
                placeholders(e)

    for a in args:
        placeholders(a)
    pos, kw = call_args(schema, args)
    base, overload = schema.aten_name
    lines.append("    %%r = call_function[target=aten.%s.%s](args = (%s%s), kwargs = {%s})" % (
        base, overload, ", ".join(text_value(a, names) for _, a in pos),
        "," if len(pos) == 1 else "",
        ", ".join("%s: %s" % (p.name, text_value(a, names)) for p, a in kw)))
    if schema.returns[0] == "tensor":
        lines.append("    return (r,)")
    else:
        gets = []
        for i in range(outputs):
            lines.append("    %%g%d = call_function[target=getitem](args = (%%r, %d), kwargs = {})"
                         % (i, i))
            gets.append("g%d" % i)
        lines.append("    return (" + ", ".join(gets) + ("," if len(gets) == 1 else "") + ")")
    lines.append(")")
    return "\n".join(lines) + "\n"


def run_stax_batch(stax, texts, workdir):
    """-> {index: verdict dict}; a case that kills the process gets {"crash": ...} and the
    batch goes on after it."""
    verdicts = {}
    start = 0
    while start < len(texts):
        path = os.path.join(workdir, "batch_%d.txt" % start)
        with open(path, "w") as f:
            for i in range(start, len(texts)):
                f.write("#@case %d\n%s" % (i, texts[i]))
        proc = subprocess.run([stax, "check", "--batch", path], capture_output=True)
        last = start - 1
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            try:
                v = json.loads(line)
            except ValueError:
                continue
            i = int(v["case"])
            verdicts[i] = v
            last = max(last, i)
        if proc.returncode == 0 and last == len(texts) - 1:
            break
        crashed = last + 1
        if crashed >= len(texts):
            break
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        verdicts[crashed] = {"crash": "exit status %d%s" % (
            proc.returncode, (": " + tail[-1][:200]) if tail else "")}
        start = crashed + 1
    return verdicts


# ---- comparing --------------------------------------------------------------------------------

def random_op(schema):
    """Ops that draw random numbers: their CPU kernel runs only on a case Stax rejects (meta
    judges the rest)."""
    return any(p.base == "Generator" for p in schema.params) or schema.name.startswith(
        ("rand", "normal", "bernoulli", "dropout"))


def compare(torch_result, stax_verdict):
    """-> None (agree) or (kind, detail)."""
    if "crash" in stax_verdict:
        return ("crash", stax_verdict["crash"])
    if stax_verdict.get("internal"):
        return ("internal", stax_verdict["error"])
    t_ok = torch_result[0] == "ok"
    s_ok = stax_verdict["ok"]
    if not t_ok and not s_ok:
        return None
    if t_ok and not s_ok:
        return ("rejects", "stax: %s" % stax_verdict["error"][:300])
    if not t_ok and s_ok:
        return ("accepts", "torch: %s; stax: %s" % (torch_result[1], stax_verdict["outputs"]))
    want, got = torch_result[1], [(d, s) for d, s in stax_verdict["outputs"]]
    if len(want) != len(got):
        return ("count", "torch %d outputs, stax %d" % (len(want), len(got)))
    for (wd, ws), (gd, gs) in zip(want, got):
        if list(ws) != list(gs):
            return ("shape", "torch %s, stax %s" % (want, got))
    for (wd, ws), (gd, gs) in zip(want, got):
        if wd != gd:
            return ("dtype", "torch %s, stax %s" % (want, got))
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stax", default=os.environ.get("STAX_BIN"))
    ap.add_argument("--seeds", default="0-1")
    ap.add_argument("--cases", type=int, default=10, help="random cases per op and seed")
    ap.add_argument("--mutants", type=int, default=3, help="mutants per case torch accepts")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds for drawing and torch; ops after it are left out (said)")
    ap.add_argument("--filter", default="", help="regex on op names")
    ap.add_argument("--expected", default=os.path.join(HERE, "expected_mismatches.txt"))
    ap.add_argument("--report", default="", help="write every mismatch (JSON lines) here")
    ap.add_argument("--strict", action="store_true", help="fail on stale expected entries")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    if not a.stax or not os.path.exists(a.stax):
        sys.exit("--stax (or STAX_BIN) must name the stax binary")
    expected = read_expected(a.expected)
    seeds = parse_seeds(a.seeds)
    ops = [s for s in registry(a.stax) if (not a.filter or re.search(a.filter, s.name))
           and s.name.split(".")[0] not in CRASHES_TORCH]
    t0 = time.time()

    cases = []  # (schema, args, torch_result)
    stats = collections.Counter()
    unmapped = []
    cut = None
    for schema in ops:
        if a.budget and time.time() - t0 > a.budget:
            cut = schema.name
            break
        op = torch_overload(schema)
        if op is None:
            unmapped.append(schema.name)
            continue
        for seed in seeds:
            rng = random.Random("%d:%s" % (seed, schema.name))
            drawn = [mc.draw_case(rng, schema) for _ in range(a.cases)]
            queue = list(drawn)
            while queue:
                args = queue.pop(0)
                try:
                    res = run_torch(op, schema, args)
                except NotComparable:
                    stats["not comparable"] += 1
                    continue
                if res[0] == "ok" and schema.returns[0] == "list" and not res[1]:
                    stats["not comparable"] += 1  # an empty list: nothing to return
                    continue
                cases.append((schema, args, res))
                if res[0] == "ok" and any(args is d for d in drawn):
                    queue += mc.mutants(rng, schema, args, a.mutants)
    t_torch = time.time() - t0

    texts = []
    for schema, args, res in cases:
        count = len(res[1]) if res[0] == "ok" else (schema.returns[1] or 1)
        texts.append(graph_text(schema, args, count))
    with tempfile.TemporaryDirectory(prefix="stax_meta_") as work:
        t1 = time.time()
        verdicts = run_stax_batch(a.stax, texts, work)
        t_stax = time.time() - t1

    found = collections.OrderedDict()  # (op, kind) -> [count, example]
    torch_ok = stax_ok = 0
    kernels = ContainedKernels(cases)
    for i, (schema, args, res) in enumerate(cases):
        v = verdicts.get(i, {"crash": "no verdict"})
        torch_ok += res[0] == "ok"
        stax_ok += bool(v.get("ok"))
        if res[0] == "error" and META_BUG.search(res[1]) and not random_op(schema):
            kind, got = kernels.run(i)
            res = (kind, got if kind == "ok" else res[1])
            stats["meta bugs"] += 1
        d = compare(res, v)
        # Random ops' kernels run only to judge a case Stax rejects (their outputs are random).
        if res[0] == "ok" and (d is None or d[0] in ("rejects", "shape", "dtype", "count")) \
                and (not random_op(schema) or d is not None and d[0] == "rejects"):
            # Meta accepted: does the CPU kernel? Stax must reject what it rejects.
            kind, got = kernels.run(i)
            if kind == "error" and d is not None and d[0] == "rejects":
                stats["kernel rejects"] += 1
                d = None
            elif kind == "error" and v.get("ok"):
                if KERNEL_GAP.search(got) or mask_count_error(schema, args, got):
                    stats["kernel gaps"] += 1  # a dtype torch's CPU build lacks, or the data
                else:
                    d = ("accepts", "torch's CPU kernel: %s; stax: %s" % (got, v["outputs"]))
            elif kind == "ok" and d is not None and d[0] != "rejects":
                same = [(t, list(z)) for t, z in got] == [(t, list(z)) for t, z in v["outputs"]]
                d = (d[0], d[1] + ("; torch's CPU kernel gives Stax's" if same else
                                   "; torch's CPU kernel gives %s" % got))
        if d is None:
            continue
        key = (schema.name, d[0])
        if key not in found:
            found[key] = [0, mc.describe(schema, args), d[1], texts[i]]
        found[key][0] += 1

    kernels.close()
    unexplained = [k for k in found if k not in expected]
    stale = [k for k in expected if k not in found and any(s.name == k[0] for s in ops)
             and (cut is None)]
    if a.report:
        with open(a.report, "w") as f:
            for (op, kind), (n, case, detail, text) in found.items():
                f.write(json.dumps({"op": op, "kind": kind, "cases": n, "example": case,
                                    "detail": detail, "listed": (op, kind) in expected}) + "\n")
    for key in unexplained:
        n, case, detail, text = found[key]
        print("MISMATCH %s %s (%d case(s)), e.g. %s\n    %s\n%s" % (
            key[0], key[1], n, case, detail, "".join("      " + l for l in
                                                     text.splitlines(True)) if a.verbose else ""))
    if a.verbose:
        for key, (n, case, detail, _) in found.items():
            if key in expected:
                print("expected %s %s (%d case(s)): %s" % (key[0], key[1], n, expected[key]))
    if a.verbose or a.strict:
        for key in stale:
            print("listed but not seen in this run: %s %s" % key)
    kinds = collections.Counter(k for _, k in found)
    print("ops %d (%d not aten overloads: %s)%s; seeds %s, %d cases each, %d mutants per "
          "accepted case" % (len(ops), len(unmapped), ", ".join(unmapped) or "none",
                             "; time box hit at %s" % cut if cut else "", a.seeds, a.cases,
                             a.mutants))
    print("cases %d (torch accepts %d, stax accepts %d); %d not comparable; %d that torch's meta "
          "function accepts and its CPU kernel rejects, as Stax does; %d that Stax accepts and "
          "torch's CPU build has no kernel for; %d where the meta function's own code failed "
          "and the CPU kernel judged; torch %.1f s, stax %.1f s"
          % (len(cases), torch_ok, stax_ok, stats["not comparable"], stats["kernel rejects"],
             stats["kernel gaps"], stats["meta bugs"], t_torch, t_stax))
    print("mismatching (op, kind) pairs %d: %s; listed in %s: %d; unexplained %d; listed "
          "but not seen %d" % (len(found), ", ".join("%s %d" % kv for kv in sorted(kinds.items())),
                               os.path.basename(a.expected), len(found) - len(unexplained),
                               len(unexplained), len(stale)))
    bad = unexplained or (a.strict and stale)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
