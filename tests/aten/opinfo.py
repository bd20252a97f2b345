"""The OpInfo harness: PyTorch's own op test database (torch.testing._internal.
common_methods_invocations.op_db, torch 2.x: 703 entries) run on Stax.

For every OpInfo entry and every dtype it supports on the CPU that Stax has (float32, float64,
float16, bfloat16, int64, int32, int8, uint8, bool, int16, uint16, uint32, uint64; --dtypes
narrows the list), the first
--samples sample inputs are traced with make_fx into aten graphs (opinfo_cases.py). A sample maps
to Stax when every aten overload its graph calls is in Stax's registry (`stax ops`, so ops added
to the registry are picked up without a list here). The mapped samples of an entry run together
(opinfo_batch.py: one graph of disjoint parts, one process per mode) through
  interp    `stax run` (the reference interpreter),
  compiled  `stax run --config configs/cpu.yaml` (cpu_cpp),
  grad      `stax grad --wrt <float inputs>` (compiled forward + backward, upstream ones), where
            the entry supports autograd and the sample has a float input and output,
and every output (and gradient) is compared with torch eager (torch.autograd.grad) in the same
dtype. Graphs with a random op are compared by shape and dtype only.

An entry fails when a mapped sample fails in some mode. A failure is expected when
expected_failures.txt lists 'opinfo KEY: reason' with KEY one of NAME, NAME/MODE, NAME@DTYPE,
NAME@DTYPE/MODE (NAME an entry, name.variant; DTYPE a dtype or a class: integral = the integer
types, unsigned = uint16 / uint32 / uint64, lowp = float16 and bfloat16, floating). A crash is a stax process that died (a signal, or
an exit code other than 0, 1, 2). Prints one line per entry with -v (and always for failures),
then the summary:
  "N of M entries run; passed P, expected failures E; crashes C; unexplained failures U"
with the entries passing per mode and the (entry, dtype) pairs run, and exits 1 when C or U is
not 0 (or, with --all, when an expected failure passes, unless its reason starts with "(flaky)":
torch's own result varies from run to run).

Entries are visited in a fixed order (a hash of the name, rotated by --offset). --entries N stops
after N entries, so that CI runs the same subset on any machine (a time box alone would make the
subset, and so the verdict, depend on the machine's load); --budget S also stops starting new
entries after S seconds, as a cap; --all runs everything."""
import argparse
import itertools
import os
import re
import shutil
import sys
import tempfile
import time
import zlib

import common

torch = common.import_torch()
import fxrun  # noqa: E402  (needs torch)
import opinfo_batch  # noqa: E402
import opinfo_cases  # noqa: E402
from opinfo_cases import DTYPE_NAMES, STAX_DTYPES  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--budget", type=float, default=0, help="seconds; 0 = no limit")
ap.add_argument("--all", action="store_true", help="every entry, no budget")
ap.add_argument("--filter", default="", help="regex on entry names")
ap.add_argument("--samples", type=int, default=2, help="samples per entry and dtype")
ap.add_argument("--dtypes", default="", help="comma-separated dtypes (default: every Stax dtype)")
ap.add_argument("--modes", default="interp,compiled,grad")
ap.add_argument("--offset", type=int, default=0, help="start at this entry (rotation)")
ap.add_argument("--entries", type=int, default=0, help="visit at most N entries; 0 = no limit")
ap.add_argument("--keep", default="", help="keep the cases under this directory")
ap.add_argument("-v", "--verbose", action="store_true")
args = ap.parse_args()
if args.all:
    args.budget = 0
    args.entries = 0

stax = common.stax_binary()
source = os.environ.get("STAX_SOURCE_DIR", os.path.join(common.HERE, "..", ".."))
config = os.path.join(source, "configs", "cpu.yaml")
registry = common.registry(stax)
opinfo_cases.COMPLEX_OPS = common.complex_ops(stax)
expected = common.expected_failures("opinfo")
modes = args.modes.split(",")
dtypes = [d for d in STAX_DTYPES if not args.dtypes or DTYPE_NAMES[d] in args.dtypes.split(",")]

import warnings  # noqa: E402
warnings.filterwarnings("ignore")
try:
    from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402
except Exception as e:  # its imports need expecttest (the .venv has it)
    common.skip("torch's OpInfo database does not import (%s)" % e)


def entry_key(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def parse_key(key):
    """'name[@dtype][/mode]' -> (name, dtype names or None, mode or None)."""
    m = re.fullmatch(r"([^@/]+)(?:@([A-Za-z0-9_]+))?(?:/(interp|compiled|grad))?", key)
    if not m:
        sys.exit("expected_failures.txt: bad opinfo key '%s'" % key)
    dt = m.group(2)
    if dt is not None:
        dt = opinfo_cases.DTYPE_CLASSES.get(dt, {dt})
        unknown = dt - set(DTYPE_NAMES.values())
        if unknown:
            sys.exit("expected_failures.txt: '%s' names no Stax dtype %s" % (key, sorted(unknown)))
    return m.group(1), dt, m.group(3)


expected_keys = {key: parse_key(key) for key in expected}


def explaining_keys(name, dtype, mode):
    return [k for k, (n, dt, m) in expected_keys.items()
            if n == name and (dt is None or dtype in dt) and (m is None or m == mode)]


def entry_cases(op, key, reasons):
    """The mapped cases of an entry, [(k, Case)], over every dtype; unmapped reasons collected."""
    cases = []
    supported = opinfo_cases.supported_dtypes(op)
    for dtype in dtypes:
        if dtype not in supported:
            continue
        try:
            samples = list(itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=False),
                                            args.samples))
        except Exception as e:
            reasons.add("%s: sample_inputs failed: %s" % (DTYPE_NAMES[dtype], str(e)[:80]))
            continue
        for i, sample in enumerate(samples):
            try:
                case = opinfo_cases.Case(op, sample, dtype, i, registry,
                                         "grad" in modes and op.supports_autograd)
            except fxrun.Unmapped as u:
                reasons.add(str(u))
                continue
            except Exception as e:
                reasons.add("harness: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:100]
                                                  if str(e) else ""))
                continue
            cases.append((len(cases), case))
    return cases


def run_entry(key, cases, workdir):
    """-> ({(dtype name, mode): first failure} over the cases (absent: every case passed),
    whether a stax process crashed)."""
    failures, crashed = {}, False
    for mode in ("interp", "compiled", "grad"):
        if mode not in modes:
            continue
        todo = [(k, c) for k, c in cases if mode != "grad" or c.wrt]
        if not todo:
            continue
        try:
            res = opinfo_batch.run_mode(stax, mode, workdir, todo, config)
        except Exception as e:
            res = {k: "fail: harness: %s: %s" % (type(e).__name__, str(e)[:120]) for k, _ in todo}
        for k, c in todo:
            r = res.get(k)
            crashed = crashed or bool(r and r.startswith("crash"))
            slot = (DTYPE_NAMES[c.dtype], mode)
            if r and slot not in failures:
                failures[slot] = "%s: %s" % (c.label, r)
            ran_slots.add((key, slot))
    return failures, crashed


def visit_order(entries):
    """A fixed order spread over the alphabet (by a hash of the name), so that a time-boxed run
    samples every family of ops; rotated by --offset."""
    order = sorted(entries, key=lambda op: (zlib.crc32(entry_key(op).encode()), entry_key(op)))
    k = args.offset % len(order) if order else 0
    return order[k:] + order[:k]


entries = [op for op in op_db if not args.filter or re.search(args.filter, entry_key(op))]
stats = dict(run=0, passed=0, crashes=0, unexplained=0, expected=0, stale=0, unmapped=0,
             with_samples=0)
mode_passed = {m: 0 for m in modes}
mode_ran = {m: 0 for m in modes}
ran_slots = set()      # (entry, (dtype, mode)) that ran
failed_slots = set()   # (entry, (dtype, mode)) that failed
used_keys = set()      # expected-failure keys that explained a failure
visited_keys = set()
unmapped_ops = {}
tmp = args.keep or tempfile.mkdtemp(prefix="stax_opinfo_")
start = time.time()
for op in visit_order(entries):
    key = entry_key(op)
    if args.budget and time.time() - start > args.budget:
        break
    if args.entries and len(visited_keys) >= args.entries:
        break
    visited_keys.add(key)
    reasons = set()
    cases = entry_cases(op, key, reasons)
    if not cases and not reasons:
        continue  # no samples at all (in the dtypes asked for)
    stats["with_samples"] += 1
    if not cases:
        stats["unmapped"] += 1
        for r in reasons:
            for o in re.findall(r"[A-Za-z_0-9]+\.[A-Za-z_0-9]+", r) if r.startswith("needs") else []:
                unmapped_ops[o] = unmapped_ops.get(o, 0) + 1
        if args.verbose:
            print("unmapped %s: %s" % (key, "; ".join(sorted(reasons))))
        continue
    workdir = os.path.join(tmp, re.sub(r"[^A-Za-z0-9_.]", "_", key))
    failures, crashed = run_entry(key, cases, workdir)
    stats["run"] += 1
    for m in modes:
        if any((key, (d, m)) in ran_slots for d in DTYPE_NAMES.values()):
            mode_ran[m] += 1
            if not any(slot[1] == m for slot in failures):
                mode_passed[m] += 1
    if crashed:
        stats["crashes"] += 1
        print("CRASH %s" % key)
    unexplained = {}
    for (dt, m), r in failures.items():
        failed_slots.add((key, (dt, m)))
        ks = explaining_keys(key, dt, m)
        used_keys.update(ks)
        if not ks:
            unexplained[(dt, m)] = r
    ran_dtypes = sorted({DTYPE_NAMES[c.dtype] for _, c in cases})
    if not failures:
        stats["passed"] += 1
        if args.verbose:
            print("ok %s (%s; %d samples)" % (key, ",".join(ran_dtypes), len(cases)))
    elif unexplained:
        stats["unexplained"] += 1
        for (dt, m), r in sorted(unexplained.items()):
            print("FAIL %s@%s/%s: %s" % (key, dt, m, r))
    else:
        stats["expected"] += 1
        if args.verbose:
            print("expected failure %s: %s" % (key, "; ".join(
                "%s/%s: %s" % (dt, m, r) for (dt, m), r in sorted(failures.items()))))
    if args.verbose and reasons:
        print("  partly unmapped %s: %s" % (key, "; ".join(sorted(reasons))))
# Stale expected failures: a key whose entry ran in a matching (dtype, mode) and never failed there.
for k, (name, dt, m) in sorted(expected_keys.items()):
    if name not in visited_keys or k in used_keys or expected[k].startswith("(flaky)"):
        continue
    ran = any(e == name and (dt is None or d in dt) and (m is None or mm == m)
              for e, (d, mm) in ran_slots)
    if ran:
        stats["stale"] += 1
        print("PASSES but listed as an expected failure: %s" % k)
if not args.keep:
    shutil.rmtree(tmp, ignore_errors=True)
elapsed = time.time() - start
if args.verbose and unmapped_ops:
    print("most wanted ops: " + ", ".join(
        "%s (%d)" % kv for kv in sorted(unmapped_ops.items(), key=lambda kv: -kv[1])[:40]))
print("visited %d of %d entries in %.0f s (%s; dtypes %s%s); %d had samples; %d not mapped (an op "
      "Stax lacks)" % (len(visited_keys), len(entries), elapsed, "modes " + args.modes,
                       ",".join(DTYPE_NAMES[d] for d in dtypes),
                       ", budget %g s" % args.budget if args.budget else "", stats["with_samples"],
                       stats["unmapped"]))
print("per mode, entries passing of entries run: " + ", ".join(
    "%s %d of %d" % (m, mode_passed[m], mode_ran[m]) for m in modes))
print("(entry, dtype, mode) runs: %d, failed %d (expected or not)" % (len(ran_slots),
                                                                     len(failed_slots)))
print("%d of %d entries run; passed %d, expected failures %d; crashes %d; unexplained "
      "failures %d" % (stats["run"], stats["with_samples"], stats["passed"], stats["expected"],
                       stats["crashes"], stats["unexplained"]))
bad = stats["crashes"] or stats["unexplained"] or (args.all and stats["stale"])
sys.exit(1 if bad else 0)
