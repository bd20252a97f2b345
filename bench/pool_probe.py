"""Issue 25's probe: the Stax forward's per-call time on 2 threads, alone (default) or with
eager and Inductor calls between Stax's (--mix), optionally after the bench's own rounds at
other thread counts (--prefix 1,2: bench/torch_backend.py's sequence, compiles and first
backwards included), with counters the machine's load barely changes:
- the OS threads of the process and, per busy thread, voluntary context switches per call: a
  team thread that sleeps between parallel regions (libgomp's throttled spin, see
  docs/torch_backend.md "Threads") shows ~1 per region (9 per GPT-block forward), a spinning
  one ~0;
- the OpenMP runtimes mapped and the one Stax's loops run on;
- minor page faults per call of each backend.

    PYTHONPATH=build/python .venv/bin/python bench/pool_probe.py [--models gpt,resnet]
        [--calls 200] [--threads 2] [--mix] [--prefix 1,2]
"""
import argparse
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_backend as tb  # noqa: E402


def tasks():
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            comm = open(f"/proc/self/task/{tid}/comm").read().strip()
            st = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            status = dict(line.split(":", 1) for line in open(f"/proc/self/task/{tid}/status"))
            out[int(tid)] = (comm, int(st[11]) + int(st[12]),
                             int(status["voluntary_ctxt_switches"]),
                             int(status["nonvoluntary_ctxt_switches"]))
        except (OSError, KeyError, IndexError):
            pass
    return out


def omp_libs():
    libs = []
    for line in open("/proc/self/maps"):
        f = line.split()
        if len(f) >= 6 and "omp" in os.path.basename(f[5]) and f[5] not in libs:
            libs.append(f[5])
    return libs


def dist(v):
    v = sorted(v)
    q = lambda p: v[min(len(v) - 1, int(p * len(v)))]  # noqa: E731
    return (f"n={len(v)} min {v[0]:.3f} p10 {q(.1):.3f} p50 {q(.5):.3f} p90 {q(.9):.3f} "
            f"max {v[-1]:.3f} ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gpt,resnet")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mix", action="store_true", help="eager and Inductor calls between Stax's")
    ap.add_argument("--prefix", default="",
                    help="first run the bench's rounds at these thread counts (e.g. 1 or 1,2)")
    a = ap.parse_args()
    torch._dynamo.config.allow_rnn = True
    print(f"loadavg {open('/proc/loadavg').read().split()[:3]}")
    import importlib
    sb = importlib.import_module("stax.dynamo.backend")
    if a.prefix:
        for row in tb.bench_steps(a.models.split(","), [int(t) for t in a.prefix.split(",")], 1,
                                  2, ["eager", "inductor", "stax"]):
            print("prefix", row[:3], {k: round(v, 3) for k, v in row[3].items()})
        print(f"threads after the prefix: {len(tasks())} {sorted(set(c for c, *_ in tasks().values()))}")
    for name in a.models.split(","):
        torch.set_num_threads(a.threads)
        fns = {}
        for backend in (("eager", "inductor", "stax") if a.mix else ("stax",)):
            model, args = tb.make(name)
            fn = tb.compiled(model, backend)
            with torch.no_grad():
                fn(*args)
                fn(*args)
            fns[backend] = (fn, args)
        print(f"omp libs mapped: {omp_libs()}; stax's team: {sb.torch_openmp_runtime()}")
        t0 = tasks()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        times = {b: [] for b in fns}
        faults = {b: 0 for b in fns}
        with torch.no_grad():
            for _ in range(a.calls):
                for backend, (fn, args) in fns.items():
                    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                    s = time.perf_counter()
                    fn(*args)
                    times[backend].append((time.perf_counter() - s) * 1e3)
                    faults[backend] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        t1 = tasks()
        for b, v in times.items():
            print(f"{name} {b:>8} fwd: {dist(v)}; minflt/call {faults[b] / len(v):.1f}")
        print(f"  minflt {r1.ru_minflt - r0.ru_minflt} majflt {r1.ru_majflt - r0.ru_majflt} "
              f"nvcsw {r1.ru_nvcsw - r0.ru_nvcsw} nivcsw {r1.ru_nivcsw - r0.ru_nivcsw}")
        for tid, (comm, cpu, vol, invol) in sorted(t1.items()):
            c0 = t0.get(tid, (comm, 0, 0, 0))
            if cpu - c0[1] or vol - c0[2]:
                print(f"  tid {tid} {comm:>16}: cpu {cpu - c0[1]} ticks, vol {vol - c0[2]} "
                      f"({(vol - c0[2]) / a.calls:.1f}/call), invol {invol - c0[3]}")
        print(f"  threads in process: {len(t1)}")
        torch._dynamo.reset()


if __name__ == "__main__":
    main()
