"""A cached compile in a fresh process, the figure issue 27 names ("a cached compile: under
10 ms"), as the model bench takes it (bench/models/bench_models.py's compile table), with more
processes and builds side by side.

For each case directory (a bench_models case: case.txt, the make_fx printout, the inputs; e.g.
`scripts/bench_models.sh --keep` leaves them) and each build, one fresh `bench_model_worker`
fills an empty kernel cache (cold); then --processes rounds, each starting one fresh worker per
build (interleaved, the builds' order alternating) on the cache its cold run filled, and asking it
`setup ID stax DIR`. Per process:
  start    the worker's start-up until it answers `ready` (exec, the dynamic loader, the op tables,
           the Compiler's construction: the plugin and its JIT)
  compile  what the bench prints: the worker's COMPILE_MS (parse + joint graph + partition + the
           forward and backward compiles); with the compiling thread's CPU time over it (what
           the wall time would be on an idle machine: a compile from the cache runs on one thread)
  prepare  the worker's Compiler and Compiler::prepare() (loading the plugin and its libraries,
           configuring it, creating its JIT): part of start, and what a user's first compile
           pays when nothing prepared it
  user     prepare + compile: the compile a user sees in a fresh process (issue 27's figure:
           "a cached compile, under 10 ms"), wall and the compiling thread's CPU
  process  the process's wall time from exec to exit, and its whole CPU time (user + system,
           every thread; it includes the first run of the case and writing its outputs)
Medians over the processes, with the load average before and after.

    .venv/bin/python bench/cached_compile.py --cases DIR[,DIR...] \
        --builds build[,/work/main/build] [--processes 21] [--threads 2]
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def one_process(worker, threads, case_dir, cache):
    """-> (start ms, compile ms, compile thread cpu ms, process cpu ms, prepare ms, prepare cpu ms,
    process wall ms) of one fresh worker."""
    env = dict(os.environ, STAX_CACHE_DIR=cache, OMP_NUM_THREADS=str(threads),
               STAX_BENCH_PHASES="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.Popen([worker, str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    ready = p.stdout.readline()
    start_ms = (time.perf_counter() - t0) * 1e3
    if not ready.startswith("ready"):
        p.kill()
        sys.exit("%s did not start: %s %s" % (worker, ready, p.stderr.read()))
    p.stdin.write("setup c stax %s\nquit\n" % case_dir)
    p.stdin.flush()
    answer = p.stdout.readline().split()
    _, err = p.communicate()
    wall_ms = (time.perf_counter() - t0) * 1e3
    phases = [l for l in err.splitlines() if l.startswith("phases ")]
    # "prepare W ms (cpu C)" (an older worker prints none: nan)
    prep = [l.split() for l in err.splitlines() if l.startswith("prepare ")]
    prepare_ms = float(prep[-1][1]) if prep else float("nan")
    prepare_cpu = float(prep[-1][4].rstrip(")")) if prep else float("nan")
    # "phases W: compile MS ms (cpu MS) = ...": the compiling thread's CPU time (an older
    # worker prints no phases: nan)
    thread_cpu = float(phases[-1].split("(cpu ")[1].split(")")[0]) if phases else float("nan")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not answer or answer[0] != "ok":
        sys.exit("%s failed on %s: %s" % (worker, case_dir, " ".join(answer)))
    cpu_ms = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1e3
    return start_ms, float(answer[1]), thread_cpu, cpu_ms, prepare_ms, prepare_cpu, wall_ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", required=True, help="case directories, comma-separated")
    ap.add_argument("--builds", default="build", help="build directories, comma-separated")
    ap.add_argument("--processes", type=int, default=21)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    builds = [b for b in a.builds.split(",") if b]
    work = tempfile.mkdtemp(prefix="stax-cached-compile-")
    print("loadavg at start: %s" % loadavg(), flush=True)
    try:
        for src in [c for c in a.cases.split(",") if c]:
            name = os.path.basename(os.path.normpath(src))
            case_dir = os.path.join(work, name)  # a copy: the worker writes its outputs there
            shutil.copytree(src, case_dir, ignore=shutil.ignore_patterns("out_*", "error_*"))
            runs = {b: [] for b in builds}
            caches = {b: os.path.join(work, "cache-%s-%d" % (name, i)) for i, b in enumerate(builds)}
            for b in builds:
                cold = one_process(os.path.join(b, "bin", "bench_model_worker"), a.threads,
                                   case_dir, caches[b])
                print("%s %s cold: compile %.1f ms" % (name, b, cold[1]), flush=True)
            for r in range(a.processes):
                order = builds if r % 2 == 0 else builds[::-1]
                for b in order:
                    runs[b].append(one_process(os.path.join(b, "bin", "bench_model_worker"),
                                               a.threads, case_dir, caches[b]))
            for b in builds:
                med = [statistics.median(x[k] for x in runs[b]) for k in range(7)]
                lo = min(x[1] for x in runs[b])
                user = statistics.median(x[4] + x[1] for x in runs[b])
                user_cpu = statistics.median(x[5] + x[2] for x in runs[b])
                print("%-12s %-28s cached: start %6.1f ms (prepare %5.2f, cpu %5.2f)  compile "
                      "%6.2f ms (min %5.2f, thread cpu %5.2f)  user %6.2f ms (cpu %5.2f)  "
                      "process %6.1f ms (cpu %6.1f)  (medians of %d)"
                      % (name, b, med[0], med[4], med[5], med[1], lo, med[2], user, user_cpu,
                         med[6], med[3], len(runs[b])), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("loadavg at end: %s" % loadavg())


if __name__ == "__main__":
    main()
