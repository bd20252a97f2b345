"""The model bench's printout: the header (machine, versions, load), a progress line per case,
and the tables: the issue's table (Stax's time, then Stax / hand and peer / Stax ratios, threads
side by side as `1 / 2`), the medians of every system, and compile time cold and cached."""
import datetime
import os
import platform
import random
import statistics
import subprocess


def _version(module):
    try:
        return __import__(module).__version__
    except Exception:  # noqa: BLE001 - not installed: say so
        return "not installed"


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def header(root, load, quick=False):
    try:
        commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["bench_models: %s, Stax %s, %s, %d CPUs" % (now, commit or "?", _cpu_model(),
                                                         os.cpu_count() or 0),
             "peers: torch %s, jax %s" % (_version("torch"), _version("jax")),
             "loadavg at start: %s" % load]
    if quick:
        lines.append("--quick: tiny shapes, one round: this run checks the bench, its times are "
                     "not figures")
    if float(load.split()[0]) > 1.5:
        lines.append("WARNING: 1-minute load above 1.5: these figures are not results")
    return "\n".join(lines)


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def blas_line(core):
    line = "OpenBLAS kernels (Stax's extern GEMMs and the hand GEMMs): " + core
    if core.lower() in ("prescott", "nehalem", "sandybridge", "haswell") and \
            "avx512f" in _cpu_flags():
        line += (" -- not its AVX-512 kernels: this OpenBLAS does not know the CPU "
                 "(OPENBLAS_CORETYPE=SkylakeX in the environment forces them)")
    return line


def median(v):
    return statistics.median(v) if v else None


def _ms(v):
    if v is None:
        return "—"
    return "%.3g" % v if v < 10 else "%.0f" % v if v >= 100 else "%.1f" % v


def progress(bench, case, threads):
    cells = []
    for s in bench.systems:
        key = (case.id, threads, s)
        if key in bench.errors:
            cells.append("%s FAIL" % s)
        elif key in bench.times:
            cells.append("%s %s ms" % (s, _ms(median(bench.times[key]))))
        elif key in bench.worst:
            cells.append("%s ok" % s + (" (compile %s ms)" % _ms(bench.setup_ms[key])
                                        if bench.setup_ms.get(key) else ""))
        elif s == "eager" and any(k[:2] == (case.id, threads) for k in bench.worst):
            cells.append("eager (the reference)")
    err = max((v for k, v in bench.worst.items() if k[:2] == (case.id, threads)), default=None)
    return "  %-34s %d thr: %s%s" % (case.label, threads, ", ".join(cells),
                                      "" if err is None else "; max err %.1e" % err)


def _per_thread(bench, fn):
    """`a / b` over the thread counts of fn(threads) (a string, or None for —)."""
    return " / ".join(fn(t) or "—" for t in bench.args.threads)


def _cell(bench, key):
    if key in bench.errors:
        return "fail"
    return _ms(median(bench.times[key])) if key in bench.times else None


def round_ratios(bench, case, t, num, den):
    """num / den per round: the two systems' medians of the same round, a few seconds apart.

    On a VM the memory bandwidth of two vCPUs drifts over seconds (the host places them), by up
    to 30% on a 2-thread memory-bound kernel; a ratio of times taken in the same round sees the
    same drift on both sides, a ratio of the all-round medians does not."""
    a, b = (bench.round_ms.get((case.id, t, s), []) for s in (num, den))
    return [x / y for x, y in zip(a, b) if x and y]


def _fmt(r):
    return "%.2f" % r if 0.1 <= r < 100 else "%.2g" % r


def _ratio(bench, case, t, num, den):
    """The median of the per-round ratios (round_ratios)."""
    if (case.id, t, num) in bench.errors or (case.id, t, den) in bench.errors:
        return "fail"
    rs = round_ratios(bench, case, t, num, den)
    return _fmt(median(rs)) if rs else None


def median_interval(ratios, level=0.9, resamples=2000):
    """The `level` bootstrap interval of the median of `ratios` (seeded: the same rounds give the
    same interval): where the median ratio lies given the rounds' scatter."""
    rng = random.Random(0)
    meds = sorted(median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
    cut = int(resamples * (1 - level) / 2)
    return meds[cut], meds[resamples - 1 - cut]


def _spread(bench, case, t, num, den):
    """The per-round ratios' lowest and highest, and from 5 rounds on the 90% interval of their
    median: 'lo-hi (a-b)'."""
    rs = round_ratios(bench, case, t, num, den)
    if len(rs) < 2:
        return None
    cell = "%s-%s" % (_fmt(min(rs)), _fmt(max(rs)))
    if len(rs) >= 5:
        cell += " (%s-%s)" % tuple(_fmt(x) for x in median_interval(rs))
    return cell


def spread_table(bench):
    rows = ["| workload | threads | rounds | Stax / hand | Inductor / Stax | XLA / Stax |",
            "|---|---|---|---|---|---|"]
    for case in bench.cases:
        n = max((len(v) for k, v in bench.round_ms.items() if k[0] == case.id), default=0)
        if n < 2:
            continue
        cells = [case.label, " / ".join(str(t) for t in bench.args.threads), str(n)]
        cells.append(_per_thread(bench, lambda t: _spread(bench, case, t, "stax", "hand"))
                     if case.spec.hand else "—")
        for peer in ("inductor", "xla"):
            cells.append(_per_thread(bench, lambda t: _spread(bench, case, t, peer, "stax")))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) if len(rows) > 2 else ""


def main_table(bench):
    rows = ["| workload | threads | Stax | Stax / hand | eager | Inductor | XLA | max err |",
            "|---|---|---|---|---|---|---|---|"]
    for case in bench.cases:
        stax = _per_thread(bench, lambda t: _cell(bench, (case.id, t, "stax")))
        cells = [case.label, " / ".join(str(t) for t in bench.args.threads), stax + " ms"]
        cells.append(_per_thread(bench, lambda t: _ratio(bench, case, t, "stax", "hand"))
                     if case.spec.hand else "—")
        for peer in ("eager", "inductor", "xla"):
            cells.append(_per_thread(bench, lambda t: _ratio(bench, case, t, peer, "stax")))
        errs = [v for k, v in bench.worst.items() if k[0] == case.id]
        cells.append("%.1e" % max(errs) if errs else "—")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def medians_table(bench):
    rows = ["| case | threads | " + " | ".join(bench.systems) + " |",
            "|---|---|" + "---|" * len(bench.systems)]
    for case in bench.cases:
        for t in bench.args.threads:
            cells = []
            for s in bench.systems:
                key = (case.id, t, s)
                cells.append(_cell(bench, key) or "—")
            rows.append("| %s | %d | %s |" % (case.id, t, " | ".join(cells)))
    return "\n".join(rows)


def compile_table(bench):
    compiled = [s for s in ("stax", "inductor", "xla") if s in bench.systems]
    rows = ["| case (%d threads) | %s | make_fx trace (Stax's input) |" % (
                max(bench.args.threads),
                " | ".join("%s cold / cached" % s for s in compiled)),
            "|---|" + "---|" * (len(compiled) + 1)]
    for case in bench.cases:
        if not any((case.id, s, "cold") in bench.compile for s in compiled):
            continue
        cells = []
        for s in compiled:
            cold, cached = (bench.compile.get((case.id, s, p)) for p in ("cold", "cached"))
            cells.append("fail" if (case.id, "compile", s) in bench.errors else
                         "%s / %s ms" % (_ms(cold), _ms(cached)))
        rows.append("| %s | %s | %s ms |" % (case.label, " | ".join(cells),
                                             _ms(bench.trace_ms.get(case.id))))
    return "\n".join(rows)


def check_summary(bench):
    n = len(bench.worst)
    bad = sum(1 for k in bench.worst if k in bench.errors)
    return ("checks against torch eager: %d of %d passed (tolerance %.1e); largest error %.1e"
            % (n - bad, n, bench.args.tolerance, max(bench.worst.values(), default=0.0)))


def tables(bench):
    if not bench.args.rounds:  # --check-only
        out = ["", check_summary(bench)]
        out += ["note: " + n for n in bench.notes]
        out += ["FAILED %s: %s" % (" ".join(str(k) for k in key), msg)
                for key, msg in sorted(bench.errors.items(), key=str)]
        return "\n".join(out)
    out = ["", "Times: Stax's median; Stax / hand (above 1: Stax is slower); peer / Stax "
           "(below 1: the peer is faster): the median over the rounds of the ratio of the two "
           "systems' times in the same round. max err: the largest relative error of any "
           "system against torch eager.", "", main_table(bench), "", "Medians (ms):", "",
           medians_table(bench)]
    spread = spread_table(bench)
    if spread:
        out += ["", "The ratios' lowest and highest round (how far the machine moved them) and, "
                "from 5 rounds on, in parentheses the 90% bootstrap interval of their median:",
                "", spread]
    out += ["", check_summary(bench)]
    if bench.compile:
        out += ["", "Compile time (fresh process; cold: empty caches, cached: the caches the "
                "cold run filled):", "", compile_table(bench)]
    bw = ", ".join("%d thread%s %.1f GB/s" % (t, "" if t == 1 else "s", g)
                   for t, g in sorted(bench.bandwidth.items()))
    out += ["", "read bandwidth: " + (bw or "not measured")]
    if bench.blas:
        out.append(blas_line(bench.blas))
    out.append("loadavg at end: " + bench.load_after)
    if float(bench.load_after.split()[0]) > 1.5:
        out.append("WARNING: 1-minute load above 1.5 at the end: these figures are not results")
    for note in bench.notes:
        out.append("note: " + note)
    for key, msg in sorted(bench.errors.items(), key=str):
        out.append("FAILED %s: %s" % (" ".join(str(k) for k in key), msg))
    return "\n".join(out)
