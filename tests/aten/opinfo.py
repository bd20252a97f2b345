"""The OpInfo harness: PyTorch's own op test database (torch.testing._internal.
common_methods_invocations.op_db) run on Stax.

For every OpInfo entry, its sample inputs (the first --samples of one dtype: float32 where the op
supports it, else int64, else bool) are traced with make_fx into aten graphs. A sample maps to Stax
when every aten overload its graph calls is in Stax's registry (`stax ops`, so ops added to the
registry are picked up without a list here). Each mapped sample runs through
  interp    `stax run` (the reference interpreter),
  compiled  `stax run --config configs/cpu.yaml` (cpu_cpp),
  grad      `stax grad --wrt <float inputs>` (compiled forward + backward, upstream ones), where
            the entry supports autograd,
and every output (and gradient) is compared with torch eager (torch.autograd.grad). Graphs with a
random op are compared by shape and dtype only.

An entry fails when a mapped sample fails in some mode; it is an expected failure when
expected_failures.txt lists 'opinfo NAME' (or 'opinfo NAME/MODE') with the reason. A crash is a
stax process that died (a signal, or an exit code other than 0, 1, 2). Prints one line per entry
with -v (and always for failures), then the summary:
  "N of M entries run; crashes C; unexplained failures U"
and exits 1 when C or U is not 0 (or, with --all, when an expected failure passes, unless its
reason starts with "(flaky)": torch's own result varies from run to run).

--budget S stops starting new entries after S seconds (entries are visited in a fixed order,
rotated by --offset), so that CI gets a time-boxed subset; --all runs everything."""
import argparse
import itertools
import os
import re
import shutil
import sys
import tempfile
import time
import traceback

import common

torch = common.import_torch()
import fxrun  # noqa: E402  (needs torch)

ap = argparse.ArgumentParser()
ap.add_argument("--budget", type=float, default=0, help="seconds; 0 = no limit")
ap.add_argument("--all", action="store_true", help="every entry, no budget")
ap.add_argument("--filter", default="", help="regex on entry names")
ap.add_argument("--samples", type=int, default=2, help="samples per entry")
ap.add_argument("--modes", default="interp,compiled,grad")
ap.add_argument("--offset", type=int, default=0, help="start at this entry (rotation)")
ap.add_argument("--keep", default="", help="keep the cases under this directory")
ap.add_argument("-v", "--verbose", action="store_true")
args = ap.parse_args()
if args.all:
    args.budget = 0

stax = common.stax_binary()
source = os.environ.get("STAX_SOURCE_DIR", os.path.join(common.HERE, "..", ".."))
config = os.path.join(source, "configs", "cpu.yaml")
registry = common.registry(stax)
expected = common.expected_failures("opinfo")
modes = args.modes.split(",")

import warnings  # noqa: E402
warnings.filterwarnings("ignore")
try:
    from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402
except Exception as e:  # its imports need expecttest (pip; scripts/setup.sh installs it)
    common.skip("torch's OpInfo database does not import (%s)" % e)


def entry_key(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def pick_dtype(op):
    try:
        supported = op.supported_dtypes("cpu")
    except Exception:
        supported = op.dtypes
    for dt in (torch.float32, torch.int64, torch.bool):
        if dt in supported:
            return dt
    return None


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


def run_sample(op, fn, leaves, workdir):
    """-> {mode: None (pass) | 'crash: ...' | 'fail: ...'}; raises Unmapped."""
    try:
        want = flat_outputs(fn(*leaves))
    except fxrun.Unmapped:
        raise
    except Exception as e:  # e.g. the jiterator entries: CUDA only
        raise fxrun.Unmapped("torch eager fails on CPU: %s" % str(e).splitlines()[0][:80])
    for w in want:
        if w.dtype not in fxrun.NPY_DTYPES:
            raise fxrun.Unmapped("returns %s (Stax has no such dtype, or no .npy form)" % w.dtype)
    try:
        gm, text, names = fxrun.trace(fn, leaves)
    except fxrun.Unmapped:
        raise
    except Exception as e:
        raise fxrun.Unmapped("make_fx failed: %s" % str(e).splitlines()[0][:100])
    ops = fxrun.targets(gm)
    missing = sorted({o for o in ops if o not in registry})
    if missing:
        raise fxrun.Unmapped("needs " + ", ".join(missing))
    if len(names) != len(leaves):
        raise fxrun.Unmapped("make_fx dropped inputs")
    random = any(registry[o][0] == "random" for o in ops)
    inputs = fxrun.write_case(workdir, gm, text, names, leaves)
    results = {}
    for mode in ("interp", "compiled"):
        if mode not in modes:
            continue
        r = fxrun.run_stax(stax, mode, workdir, inputs, config)
        if r.code != 0:
            results[mode] = ("crash: " if r.crashed else "fail: ") + r.error()
            continue
        results[mode] = None
        for i, w in enumerate(want):
            got = r.load("out%d.npy" % i)
            diff = ("shape %s vs %s" % (got.shape, tuple(w.shape))
                    if random and tuple(got.shape) != tuple(w.shape)
                    else None if random else fxrun.compare(got, w))
            if diff:
                results[mode] = "fail: output %d: %s" % (i, diff)
                break
    if "grad" in modes and op.supports_autograd and not random:
        floats = [i for i, t in enumerate(leaves) if t.dtype.is_floating_point]
        floats = differentiable_leaves(fn, leaves, floats)
        if floats and want and any(w.dtype.is_floating_point for w in want):
            # Upstream gradients are ones for the floating-point outputs (integer outputs, such
            # as max.dim's indices, have none: `stax grad` makes no tangent for them).
            rg = [t.clone().requires_grad_(i in floats) for i, t in enumerate(leaves)]
            try:  # torch may refuse a gradient input (soft_margin_loss's target): no grad check
                outs = [o for o in flat_outputs(fn(*rg)) if o.dtype.is_floating_point]
                tg = torch.autograd.grad(outs, [rg[i] for i in floats],
                                         [torch.ones_like(o) for o in outs], allow_unused=True)
            except RuntimeError as e:  # an output without grad_fn (no path from the inputs)
                tg = None
            if tg is not None:
                r = fxrun.run_stax(stax, "grad", workdir, inputs, config,
                                   wrt=[names[i] for i in floats])
                if r.code != 0:
                    results["grad"] = ("crash: " if r.crashed else "fail: ") + r.error()
                else:
                    results["grad"] = None
                    for i, g in zip(floats, tg):
                        g = torch.zeros_like(leaves[i]) if g is None else g
                        diff = fxrun.compare(r.load("grad_%s.npy" % names[i]), g, grad=True)
                        if diff:
                            results["grad"] = "fail: grad of %s: %s" % (names[i], diff)
                            break
    return results


entries = sorted(op_db, key=entry_key)
with_samples = 0
stats = dict(run=0, passed=0, crashes=0, unexplained=0, expected=0, stale=0, unmapped=0)
unmapped_ops = {}
tmp = args.keep or tempfile.mkdtemp(prefix="stax_opinfo_")
start = time.time()
visited = 0
order = entries[args.offset % len(entries):] + entries[:args.offset % len(entries)]
total_with_samples = 0
for op in order:
    key = entry_key(op)
    if args.filter and not re.search(args.filter, key):
        continue
    if args.budget and time.time() - start > args.budget:
        break
    visited += 1
    dtype = pick_dtype(op)
    samples = []
    if dtype is not None:
        try:
            samples = list(itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=False),
                                            args.samples))
        except Exception:
            samples = []
    if not samples:
        continue
    with_samples += 1
    outcome = {}  # mode -> first failure
    crash = False
    mapped = 0
    reasons = set()
    for k, sample in enumerate(samples):
        workdir = os.path.join(tmp, re.sub(r"[^A-Za-z0-9_.]", "_", key), str(k))
        try:
            fn, leaves = flatten_sample(op, sample)
            res = run_sample(op, fn, leaves, workdir)
        except fxrun.Unmapped as u:
            reasons.add(str(u))
            continue
        except Exception as e:
            res = {"harness": "fail: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:120]
                                               if str(e) else "")}
        mapped += 1
        for mode, r in res.items():
            if r and mode not in outcome:
                outcome[mode] = "sample %d: %s" % (k, r)
            crash = crash or bool(r and r.startswith("crash"))
    if not mapped:
        stats["unmapped"] += 1
        for r in reasons:
            for o in re.findall(r"[A-Za-z_0-9]+\.[A-Za-z_0-9]+", r) if r.startswith("needs") else []:
                unmapped_ops[o] = unmapped_ops.get(o, 0) + 1
        if args.verbose:
            print("unmapped %s: %s" % (key, "; ".join(sorted(reasons))))
        continue
    stats["run"] += 1
    if crash:
        stats["crashes"] += 1
    unexplained = {m: r for m, r in outcome.items()
                   if key not in expected and "%s/%s" % (key, m) not in expected}
    if not outcome:
        stats["passed"] += 1
        stale = [k2 for k2 in (key, key + "/interp", key + "/compiled", key + "/grad")
                 if k2 in expected and not expected[k2].startswith("(flaky)")]
        if stale:
            stats["stale"] += 1
            print("PASSES but listed as an expected failure: %s" % ", ".join(stale))
        elif args.verbose:
            print("ok %s (%s, %d of %d samples)" % (key, str(dtype)[6:], mapped, len(samples)))
    elif unexplained:
        stats["unexplained"] += 1
        for m, r in sorted(unexplained.items()):
            print("FAIL %s/%s: %s" % (key, m, r))
    else:
        stats["expected"] += 1
        if args.verbose:
            print("expected failure %s: %s" % (key, "; ".join(
                "%s: %s" % (m, r) for m, r in sorted(outcome.items()))))
if not args.keep:
    shutil.rmtree(tmp, ignore_errors=True)
total = sum(1 for op in entries if not args.filter or re.search(args.filter, entry_key(op)))
elapsed = time.time() - start
if args.verbose and unmapped_ops:
    print("most wanted ops: " + ", ".join(
        "%s (%d)" % kv for kv in sorted(unmapped_ops.items(), key=lambda kv: -kv[1])[:40]))
print("visited %d of %d entries in %.0f s (%s%s); %d had samples; %d not mapped (an op Stax lacks)"
      % (visited, total, elapsed, "modes " + args.modes,
         ", budget %g s" % args.budget if args.budget else "", with_samples, stats["unmapped"]))
print("%d of %d entries run; passed %d, expected failures %d; crashes %d; unexplained "
      "failures %d" % (stats["run"], with_samples, stats["passed"], stats["expected"],
                       stats["crashes"], stats["unexplained"]))
bad = stats["crashes"] or stats["unexplained"] or (args.all and stats["stale"])
sys.exit(1 if bad else 0)
