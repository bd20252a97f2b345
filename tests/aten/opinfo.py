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
entries after S seconds, as a cap; --all runs everything.

A full run over every dtype is long, so it can be done in pieces:
  --shard K/N          only every N-th entry of the order, from the K-th (1 <= K <= N);
  --results FILE       one JSON line per entry appended to FILE as soon as the entry is done (its
                       samples per dtype and the first failure of each (dtype, mode), unjudged);
                       entries FILE already holds are not run again, so a killed run resumes;
  --entry-timeout S    an entry still running after S seconds is stopped (its stax process
                       killed) and recorded as timed out (run again on resume; counted as bad);
  --summarize FILE...  runs nothing: the summary of the result files of the pieces, judged by
                       the current expected_failures.txt (so a new reason needs no rerun), with
                       the counts per mode and per dtype; it exits 1 on a crash, an unexplained
                       failure, a timeout or a listed failure that passes.
e.g. for K in 1 2 3 4; do opinfo.py --all --shard $K/4 --results r$K.jsonl; done;
     opinfo.py --summarize 'r*.jsonl'"""
import argparse
import glob
import itertools
import json
import os
import re
import shutil
import signal
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
ap.add_argument("--shard", default="", metavar="K/N",
                help="only the K-th (1..N) of N interleaved parts of the visit order")
ap.add_argument("--results", default="", metavar="FILE",
                help="append one JSON line per entry to FILE; entries FILE already holds (other "
                     "than timed-out ones) are not run again (resume)")
ap.add_argument("--entry-timeout", type=float, default=0, metavar="S",
                help="stop an entry after S seconds and record it as timed out; 0 = no limit")
ap.add_argument("--summarize", nargs="+", metavar="FILE",
                help="run nothing: the summary of the result files (--results) of earlier runs, "
                     "judged by the current expected_failures.txt; globs are expanded")
ap.add_argument("--keep", default="", help="keep the cases under this directory")
ap.add_argument("-v", "--verbose", action="store_true")
args = ap.parse_args()
if args.all:
    args.budget = 0
    args.entries = 0
shard = None
if args.shard:
    m = re.fullmatch(r"(\d+)/(\d+)", args.shard)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        sys.exit("--shard: expected K/N with 1 <= K <= N, got '%s'" % args.shard)
    shard = (int(m.group(1)), int(m.group(2)))

expected = common.expected_failures("opinfo")
modes = args.modes.split(",")
for m in modes:
    if m not in ("interp", "compiled", "grad"):
        sys.exit("--modes: unknown mode '%s' (interp, compiled, grad)" % m)
dtypes = [d for d in STAX_DTYPES if not args.dtypes or DTYPE_NAMES[d] in args.dtypes.split(",")]
ALL_MODES = ("interp", "compiled", "grad")


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


# ---- the summary: computed from one record per entry, whether the records come from this run or
# from result files of earlier runs (shards), so that the pieces of a full run add up.
#
# A record (one JSON line of --results): {"entry": KEY, "status": "run" | "unmapped" |
# "nosamples" | "timeout", "seconds": S, "reasons": [why samples did not map], "samples":
# {dtype: mapped samples}, "slots": {"DTYPE/MODE": null (every sample passed) | "first failure"},
# "crashed": bool, "of": entries in the selection, "settings": {samples, dtypes, modes}}.

def summarize(records, strict_stale):
    """Prints the verdict of each entry's failures against expected_failures.txt and the
    summary; -> the exit code."""
    st = dict(run=0, passed=0, crashes=0, unexplained=0, expected=0, stale=0, unmapped=0,
              with_samples=0, timeouts=0, samples=0)
    mode_passed = {m: 0 for m in ALL_MODES}
    mode_ran = {m: 0 for m in ALL_MODES}
    mode_slots = {m: [0, 0, 0] for m in ALL_MODES}  # runs, failed expected, unexplained
    per_dtype = {}  # dtype -> [entries, samples, runs, passed, expected, unexplained]
    ran_slots, used_keys, unmapped_ops = set(), set(), {}
    seconds = 0.0
    for key in sorted(records):
        rec = records[key]
        seconds += rec.get("seconds", 0)
        status = rec["status"]
        if status == "nosamples":
            continue
        st["with_samples"] += 1
        if status == "timeout":
            st["timeouts"] += 1
            print("TIMEOUT %s: stopped after %.0f s (--entry-timeout)" % (key, rec["seconds"]))
            continue
        reasons = rec.get("reasons", [])
        if status == "unmapped":
            st["unmapped"] += 1
            for r in reasons:
                for o in (re.findall(r"[A-Za-z_0-9]+\.[A-Za-z_0-9]+", r)
                          if r.startswith("needs") else []):
                    unmapped_ops[o] = unmapped_ops.get(o, 0) + 1
            if args.verbose:
                print("unmapped %s: %s" % (key, "; ".join(reasons)))
            continue
        st["run"] += 1
        for dt, n in rec["samples"].items():
            st["samples"] += n
            row = per_dtype.setdefault(dt, [0, 0, 0, 0, 0, 0])
            row[0] += 1
            row[1] += n
        slots = {tuple(s.split("/")): r for s, r in rec["slots"].items()}
        unexplained = {}
        for (dt, m), r in slots.items():
            ran_slots.add((key, (dt, m)))
            row = per_dtype.setdefault(dt, [0, 0, 0, 0, 0, 0])
            row[2] += 1
            mode_slots[m][0] += 1
            if r is None:
                row[3] += 1
                continue
            ks = explaining_keys(key, dt, m)
            used_keys.update(ks)
            if ks:
                row[4] += 1
                mode_slots[m][1] += 1
            else:
                row[5] += 1
                mode_slots[m][2] += 1
                unexplained[(dt, m)] = r
        for m in ALL_MODES:
            if any(sm == m for _, sm in slots):
                mode_ran[m] += 1
                if not any(sm == m and r is not None for (_, sm), r in slots.items()):
                    mode_passed[m] += 1
        if rec.get("crashed"):
            st["crashes"] += 1
            print("CRASH %s" % key)
        failures = {s: r for s, r in slots.items() if r is not None}
        if not failures:
            st["passed"] += 1
            if args.verbose:
                print("ok %s (%s; %d samples)" % (key, ",".join(sorted(rec["samples"])),
                                                  sum(rec["samples"].values())))
        elif unexplained:
            st["unexplained"] += 1
            for (dt, m), r in sorted(unexplained.items()):
                print("FAIL %s@%s/%s: %s" % (key, dt, m, r))
        else:
            st["expected"] += 1
            if args.verbose:
                print("expected failure %s: %s" % (key, "; ".join(
                    "%s/%s: %s" % (dt, m, r) for (dt, m), r in sorted(failures.items()))))
        if args.verbose and reasons:
            print("  partly unmapped %s: %s" % (key, "; ".join(reasons)))
    # Stale expected failures: a key whose entry ran in a matching (dtype, mode) and never
    # failed there.
    for k, (name, dt, m) in sorted(expected_keys.items()):
        if name not in records or k in used_keys or expected[k].startswith("(flaky)"):
            continue
        if any(e == name and (dt is None or d in dt) and (m is None or mm == m)
               for e, (d, mm) in ran_slots):
            st["stale"] += 1
            print("PASSES but listed as an expected failure: %s" % k)
    if args.verbose and unmapped_ops:
        print("most wanted ops: " + ", ".join(
            "%s (%d)" % kv for kv in sorted(unmapped_ops.items(), key=lambda kv: -kv[1])[:40]))
    of = max([r.get("of", 0) for r in records.values()] or [0])
    settings = sorted({json.dumps(r.get("settings", {}), sort_keys=True)
                       for r in records.values()})
    print("visited %d of %d entries (%.0f s of entry time%s); %d had samples; %d not mapped (an "
          "op Stax lacks)%s" % (len(records), of, seconds,
                                "" if len(settings) != 1 else "; " + settings[0],
                                st["with_samples"], st["unmapped"],
                                "; %d timed out" % st["timeouts"] if st["timeouts"] else ""))
    if len(settings) > 1:
        print("note: the records were made with different settings: " + " | ".join(settings))
    used_modes = [m for m in ALL_MODES if mode_ran[m]]
    print("per mode, entries passing of entries run: " + ", ".join(
        "%s %d of %d" % (m, mode_passed[m], mode_ran[m]) for m in used_modes))
    print("per mode, (entry, dtype) runs: " + ", ".join(
        "%s %d (expected failures %d, unexplained %d)" % ((m,) + tuple(mode_slots[m]))
        for m in used_modes))
    print("per dtype: entries, samples, (entry, mode) runs: passed / expected / unexplained")
    order = [DTYPE_NAMES[d] for d in STAX_DTYPES]
    for dt in sorted(per_dtype, key=lambda d: order.index(d) if d in order else len(order)):
        e, n, runs, ok, ex, un = per_dtype[dt]
        print("  %-10s %4d entries %5d samples %5d runs: %d / %d / %d" % (dt, e, n, runs, ok, ex,
                                                                        un))
    print("(entry, dtype, mode) runs: %d, failed %d (expected or not)" % (
        len(ran_slots), sum(mode_slots[m][1] + mode_slots[m][2] for m in ALL_MODES)))
    print("%d of %d entries run (%d samples); passed %d, expected failures %d; crashes %d; "
          "unexplained failures %d%s" % (st["run"], st["with_samples"], st["samples"],
                                         st["passed"], st["expected"], st["crashes"],
                                         st["unexplained"], "; timeouts %d" % st["timeouts"]
                                         if st["timeouts"] else ""))
    bad = (st["crashes"] or st["unexplained"] or st["timeouts"]
           or (strict_stale and st["stale"]))
    return 1 if bad else 0


def load_records(paths):
    """{entry: record} of result files, the last record of an entry winning."""
    records = {}
    for p in paths:
        with open(p) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:  # a line cut short by a killed run
                    print("%s:%d: not a whole record, ignored" % (p, n))
                    continue
                records[rec["entry"]] = rec
    return records


if args.summarize:
    paths = [p for pat in args.summarize for p in (sorted(glob.glob(pat)) or [pat])]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        sys.exit("--summarize: no such file: " + ", ".join(missing))
    sys.exit(summarize(load_records(paths), strict_stale=True))

# ---- running entries
stax = common.stax_binary()
source = os.environ.get("STAX_SOURCE_DIR", os.path.join(common.HERE, "..", ".."))
config = os.path.join(source, "configs", "cpu.yaml")
registry = common.registry(stax)
opinfo_cases.COMPLEX_OPS = common.complex_ops(stax)

import warnings  # noqa: E402
warnings.filterwarnings("ignore")
try:
    from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402
except Exception as e:  # its imports need expecttest (the .venv has it)
    common.skip("torch's OpInfo database does not import (%s)" % e)


def entry_key(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


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


def run_entry(cases, workdir):
    """-> ({"DTYPE/MODE": None (every case passed) | first failure} over the slots that ran,
    whether a stax process crashed)."""
    slots, crashed = {}, False
    for mode in ALL_MODES:
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
            slot = "%s/%s" % (DTYPE_NAMES[c.dtype], mode)
            if slots.get(slot) is None:
                slots[slot] = "%s: %s" % (c.label, r) if r else None
    return slots, crashed


class EntryTimeout(BaseException):
    """Raised by SIGALRM when an entry passes --entry-timeout (a BaseException, so that the
    harness's `except Exception` clauses let it through; subprocess.run kills its child)."""


armed = False  # whether an entry is running (an alarm after it ended is ignored)


def on_alarm(signum, frame):
    if armed:
        raise EntryTimeout()


def visit_order(entries):
    """A fixed order spread over the alphabet (by a hash of the name), so that a time-boxed run
    samples every family of ops; rotated by --offset; --shard K/N keeps every N-th entry from
    the K-th."""
    order = sorted(entries, key=lambda op: (zlib.crc32(entry_key(op).encode()), entry_key(op)))
    k = args.offset % len(order) if order else 0
    order = order[k:] + order[:k]
    if shard:
        order = order[shard[0] - 1::shard[1]]
    return order


def visit(op, n_selected):
    """-> the entry's record."""
    key = entry_key(op)
    t0 = time.time()
    rec = {"entry": key, "of": n_selected,
           "settings": {"samples": args.samples, "modes": args.modes,
                        "dtypes": args.dtypes or "all"}}
    global armed
    if args.entry_timeout:
        armed = True
        signal.setitimer(signal.ITIMER_REAL, args.entry_timeout)
    try:
        reasons = set()
        cases = entry_cases(op, key, reasons)
        rec["reasons"] = sorted(reasons)
        if not cases:
            rec["status"] = "unmapped" if reasons else "nosamples"
        else:
            samples = {}
            for _, c in cases:
                samples[DTYPE_NAMES[c.dtype]] = samples.get(DTYPE_NAMES[c.dtype], 0) + 1
            workdir = os.path.join(tmp, re.sub(r"[^A-Za-z0-9_.]", "_", key))
            slots, crashed = run_entry(cases, workdir)
            rec.update(status="run", samples=samples, slots=slots, crashed=crashed)
    except EntryTimeout:
        rec = {"entry": key, "of": n_selected, "settings": rec["settings"], "status": "timeout"}
    finally:
        armed = False
        if args.entry_timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
    rec["seconds"] = round(time.time() - t0, 1)
    return rec


if args.entry_timeout:
    signal.signal(signal.SIGALRM, on_alarm)
entries = [op for op in op_db if not args.filter or re.search(args.filter, entry_key(op))]
previous = load_records([args.results]) if args.results and os.path.exists(args.results) else {}
records = {}
tmp = args.keep or tempfile.mkdtemp(prefix="stax_opinfo_")
start = time.time()
out = open(args.results, "a") if args.results else None
visited = 0
for op in visit_order(entries):
    key = entry_key(op)
    if args.budget and time.time() - start > args.budget:
        break
    if args.entries and visited >= args.entries:
        break
    visited += 1
    if key in previous and previous[key]["status"] != "timeout":
        records[key] = previous[key]  # done by an earlier run (resume)
        continue
    rec = visit(op, len(entries))
    records[key] = rec
    if out:
        out.write(json.dumps(rec, sort_keys=True) + "\n")
        out.flush()
    if rec["status"] == "timeout" or (args.verbose and rec["status"] != "nosamples"):
        print("%s %s (%.0f s)" % (rec["status"], key, rec["seconds"]), flush=True)
if out:
    out.close()
if not args.keep:
    shutil.rmtree(tmp, ignore_errors=True)
print("this run: %.0f s%s%s%s" % (time.time() - start,
                                  ", budget %g s" % args.budget if args.budget else "",
                                  ", shard %d/%d" % shard if shard else "",
                                  ", %d entries from %s" % (
                                      sum(1 for k in records if k in previous),
                                      args.results) if previous else ""))
sys.exit(summarize(records, strict_stale=args.all))
