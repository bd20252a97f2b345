"""The model bench (issue 27 item 7): Stax next to hand-written C++, torch eager, Inductor
(torch.compile, its C++ backend) and XLA (jax.jit on the CPU) on the GPT block, a ResNet
BasicBlock train step, W1-W5 and gelu(x @ W).sum(), on 1 and 2 threads, in one interleaved run;
then compile time, cold and cached, of the model blocks for Stax, Inductor and XLA.

    scripts/bench_models.sh [--quick] [options]     (builds the Stax worker, then runs this)
    .venv/bin/python bench/models/bench_models.py --worker build/bin/bench_model_worker [options]

How it runs (bench/README.md says more):
  1. Each case's inputs (seeded numpy), its upstream gradients and the make_fx printout of its
     torch function (tracing.py) go into a case directory (casefile.py).
  2. Per thread count T, four worker processes are started under `taskset -c` on T cores: the
     Stax worker (bench/model_worker.cpp, cpu_cpp `threads: T`), the hand worker (the same
     program, its hand kernels only: their OpenMP team is not in Stax's process), the torch worker
     (eager and Inductor, torch.set_num_threads(T)) and the JAX worker (XLA); OMP_NUM_THREADS=T
     for all. --processes N starts N of each (a system's round is then the mean of its
     processes' medians).
  3. Per case: every system compiles and runs it once, and its outputs are checked against torch
     eager's (max |out - eager| / max |eager| per output, at most --tolerance); then --rounds
     rounds, each running every system --reps times in turn (the order rotates per round, with a
     short idle gap before each system so that spinning worker threads of the previous one sleep).
     The table shows each system's median over all rounds, and each ratio as the median over
     the rounds of the two systems' ratio within the round (both measured seconds apart, so a
     drift of the machine's memory bandwidth, which on a 2-vCPU VM moves 2-thread memory-bound
     times by up to 30% within a minute, hits both), with the lowest and highest round's.
  4. Compile time: per model case and system, a fresh worker with empty caches (cold), then
     another fresh worker on the caches the first filled (cached).
The load average is printed before and after, with the read bandwidth per thread count; figures
taken with a 1-minute load average above 1.5 are marked as not results.
Exit status: 1 when a check fails or Stax, hand or a peer fails a case; a peer that is not
installed (jax) is left out with the reason instead.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import casefile  # noqa: E402
import report  # noqa: E402
from workloads import cases as all_cases  # noqa: E402

SYSTEMS = ["stax", "hand", "eager", "inductor", "xla"]
# hand runs in a C++ worker of its own: its OpenMP team spins after each region (libgomp's
# default wait policy), and in Stax's process it took a core from Stax's pool in the repetitions
# that followed (W4 4096² on 2 threads: Stax 2.11 ms with hand's team spinning beside it, 1.84
# with OMP_WAIT_POLICY=PASSIVE; bench/RECORDS.md, phase 11).
WORKER_OF = {"stax": "stax", "hand": "hand", "eager": "torch", "inductor": "torch", "xla": "jax"}
COMPILED = ["stax", "inductor", "xla"]  # the systems whose compile time is measured


class WorkerError(Exception):
    pass


class Worker:
    """One worker process and its line protocol (bench/model_worker.cpp's header)."""

    def __init__(self, kind, argv, env, log_path):
        self.kind, self.log_path = kind, log_path
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(log_path, "w"), text=True, env=env, cwd=ROOT)
        line = self.proc.stdout.readline()
        if not line.startswith("ready"):
            self.proc.kill()
            raise WorkerError("the %s worker did not start: %s%s" % (kind, line.strip(),
                                                                     self._log_tail()))

    def _log_tail(self):
        try:
            with open(self.log_path) as f:
                lines = [l.strip() for l in f.read().splitlines() if l.strip()]
            return (" (" + lines[-1][:300] + ")") if lines else ""
        except OSError:
            return ""

    def ask(self, command):
        """-> the words after `ok`; raises WorkerError on `error ...` or a dead worker."""
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self.proc.stdout.readline()
        if not line:
            raise WorkerError("the %s worker exited (status %s)%s" % (
                self.kind, self.proc.wait(), self._log_tail()))
        if line.startswith("ok"):
            return line[2:].split()
        raise WorkerError(line.strip()[len("error "):])

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)
        except (BrokenPipeError, subprocess.TimeoutExpired, OSError):
            self.proc.kill()
            self.proc.wait()


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().strip()


def cpus(threads):
    mine = sorted(os.sched_getaffinity(0))
    if len(mine) < threads:
        raise SystemExit("asked for %d threads, the process may run on %d CPUs" % (threads,
                                                                                len(mine)))
    return ",".join(str(c) for c in mine[:threads])


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = args.keep or tempfile.mkdtemp(prefix="stax-bench-models-")
        os.makedirs(self.work, exist_ok=True)
        self.systems = [s for s in SYSTEMS if s in args.systems]
        self.cases = [c for c in all_cases(args.quick, args.sizes)
                      if not args.cases or any(c.id == p or c.id.startswith(p + "_")
                                               for p in args.cases)]
        self.times = {}  # (case id, threads, system) -> [ms]
        self.round_ms = {}  # (case id, threads, system) -> [the median of each round's reps]
        self.errors = {}  # (case id, threads, system) -> message
        self.worst = {}  # (case id, threads, system) -> relative error vs eager
        self.compile = {}  # (case id, system, "cold"|"cached") -> ms
        self.setup_ms = {}  # (case id, threads, system) -> compile ms in the timing workers
        self.trace_ms = {}
        self.notes = []  # systems left out, and why
        self.failed = False

    # ---- workers -------------------------------------------------------------------------
    def worker_argv(self, kind, threads):
        if kind in ("stax", "hand"):  # the same C++ worker, one process per system
            return [self.args.worker, str(threads)]
        return [sys.executable, os.path.join(HERE, "peer_worker.py"), kind, str(threads)]

    def start(self, kind, threads, env_extra, tag):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), **env_extra)
        argv = ["taskset", "-c", cpus(threads)] + self.worker_argv(kind, threads)
        return Worker(kind, argv, env, os.path.join(self.work, "%s-%s.log" % (kind, tag)))

    def start_all(self, threads):
        caches = os.path.join(self.work, "cache-%d" % threads)
        env = {"stax": {"STAX_CACHE_DIR": os.path.join(caches, "stax")}, "hand": {},
               "torch": {"TORCHINDUCTOR_CACHE_DIR": os.path.join(caches, "inductor")},
               "jax": {}}
        workers = {}  # kind -> [Worker]: --processes of them
        for kind in sorted({WORKER_OF[s] for s in self.systems + ["eager"]}):
            if kind == "jax" and not self.jax_available():
                continue
            try:
                workers[kind] = [self.start(kind, threads, env[kind],
                                            "t%d" % threads + ("-p%d" % p if p else ""))
                                 for p in range(self.args.processes)]
            except WorkerError as e:
                self.notes.append(str(e))
                self.failed = True
        return workers

    def jax_available(self):
        try:
            import importlib.util
            if importlib.util.find_spec("jax") is None:
                raise ImportError("no module named jax")
            return True
        except ImportError as e:
            note = "XLA left out: %s (scripts/setup_bench.sh installs jax[cpu])" % e
            if note not in self.notes:
                self.notes.append(note)
            return False

    # ---- cases ---------------------------------------------------------------------------
    def prepare(self, case):
        """Writes the case directory: inputs, upstream gradients, printout, case.txt."""
        import torch
        import tracing
        spec = case.spec
        d = os.path.join(self.work, case.id)
        os.makedirs(d, exist_ok=True)
        rng = np.random.default_rng(zlib.crc32(case.id.encode()))
        named = spec.inputs(case.params, rng)
        traced = tracing.trace(spec.torch_fn(case.params),
                               [torch.from_numpy(a) for _, a in named], sdpa=self.args.sdpa)
        self.trace_ms[case.id] = traced.seconds * 1e3
        with open(os.path.join(d, "graph.txt"), "w") as f:
            f.write(traced.text + "\n")
        c = casefile.CaseFile(d, workload=case.workload, mode=case.mode, params=case.params,
                              graph="graph.txt", hand=spec.hand or "none")
        for k, ((_, a), name) in enumerate(zip(named, traced.placeholders)):
            np.save(c.path("in_%d.npy" % k), a)
            c.inputs.append((name, "in_%d.npy" % k))
        if case.mode == "fwdbwd":
            c.wrt = spec.wrt(case.params)
            for k, shape in enumerate(traced.outputs):
                if k < spec.n_diff:
                    cot = rng.standard_normal(shape).astype(np.float32) if shape else \
                        np.ones((), np.float32)
                    np.save(c.path("cot_%d.npy" % k), cot)
                    c.cotangents.append("cot_%d.npy" % k)
                else:
                    c.cotangents.append(None)
        c.write()
        return c

    def case_systems(self, case, workers):
        """The systems set up for `case`: the chosen ones, and eager (the reference) always."""
        return [s for s in SYSTEMS if WORKER_OF[s] in workers and
                (s in self.systems or s == "eager") and (s != "hand" or case.spec.hand)]

    def run_case(self, case, c, threads, workers):
        live = []
        for s in self.case_systems(case, workers):
            key = (case.id, threads, s)
            try:  # every process of the system sets it up; the last one's outputs are checked
                for w in workers[WORKER_OF[s]]:
                    words = w.ask("setup %s %s %s" % (case.id, s, c.dir))
                    self.setup_ms.setdefault(key, float(words[0]))
                live.append(s)
            except WorkerError as e:
                self.errors[key] = str(e)
                self.failed = True
        self.check(case, c, threads, live)
        live = [s for s in live if s in self.systems]  # eager only as the reference: not timed
        if self.args.rounds:
            live = [s for s in live
                    if all(self.time(case, threads, s, w, 1) for w in workers[WORKER_OF[s]])]
        # One turn per system and process; the order rotates per round.
        turns = [(s, p) for p in range(self.args.processes) for s in live]
        for r in range(self.args.rounds if live else 0):
            per_process = {}
            for s, p in turns[r % len(turns):] + turns[:r % len(turns)]:
                time.sleep(self.args.gap)
                ms = self.time(case, threads, s, workers[WORKER_OF[s]][p], self.args.reps)
                if ms:
                    per_process.setdefault(s, []).append(statistics.median(ms))
                    self.times.setdefault((case.id, threads, s), []).extend(ms)
            # A system's round: the mean of its processes' medians (each process's pages and
            # placement weigh the same).
            for s, meds in per_process.items():
                if len(meds) == self.args.processes:
                    self.round_ms.setdefault((case.id, threads, s), []).append(
                        sum(meds) / len(meds))
        for kind in {WORKER_OF[s] for s in live}:
            for w in workers[kind]:
                try:
                    w.ask("drop %s" % case.id)
                except WorkerError as e:
                    self.notes.append("%s worker, drop %s: %s" % (kind, case.id, e))

    def time(self, case, threads, system, worker, reps):
        """Runs `reps` timed calls in `worker` -> their times (ms); [] (and the error recorded)
        when the worker fails."""
        key = (case.id, threads, system)
        if key in self.errors:
            return []
        try:
            return [float(m) for m in worker.ask("time %s %s %d" % (case.id, system, reps))]
        except WorkerError as e:
            self.errors[key] = str(e)
            self.failed = True
            return []

    def check(self, case, c, threads, live):
        if "eager" not in live:  # its failure is recorded: nothing to check against
            for s in live:
                self.errors[(case.id, threads, s)] = "not checked: torch eager failed"
            self.failed = True
            return
        ref = casefile.load_outputs(c.dir, "eager")
        for s in live:
            if s == "eager":
                continue
            got = casefile.load_outputs(c.dir, s)
            err = relative_error(ref, got)
            self.worst[(case.id, threads, s)] = err
            if not err <= self.args.tolerance:
                self.failed = True
                self.errors[(case.id, threads, s)] = (
                    "outputs differ from torch eager's: max relative error %.3g > %.3g"
                    % (err, self.args.tolerance))
        for f in os.listdir(c.dir):
            if f.startswith("out_"):
                os.remove(os.path.join(c.dir, f))

    # ---- compile time ----------------------------------------------------------------------
    def measure_compile(self, case, c):
        threads = max(self.args.threads)
        for s in COMPILED:
            if s not in self.systems or (s == "xla" and not self.jax_available()):
                continue
            cache = os.path.join(self.work, "compile-cache", case.id, s)
            env = {"stax": {"STAX_CACHE_DIR": cache},
                   "inductor": {"TORCHINDUCTOR_CACHE_DIR": cache,
                                "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
                                "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"},
                   "xla": {"BENCH_JAX_CACHE_DIR": cache}}[s]
            for phase in ("cold", "cached"):
                try:
                    w = self.start(WORKER_OF[s], threads, env, "compile")
                    try:
                        words = w.ask("setup %s %s %s" % (case.id, s, c.dir))
                        self.compile[(case.id, s, phase)] = float(words[0])
                    finally:
                        w.close()
                except WorkerError as e:
                    self.errors[(case.id, "compile", s)] = str(e)
                    self.failed = True
                    break

    # ---- the run ---------------------------------------------------------------------------
    def run(self):
        a = self.args
        self.header = report.header(ROOT, loadavg(), a.quick)
        print(self.header, flush=True)
        prepared = {}
        for case in self.cases:
            prepared[case.id] = self.prepare(case)
        self.bandwidth, self.blas = {}, ""
        for threads in a.threads:
            workers = self.start_all(threads)
            native = (workers.get("stax") or workers.get("hand") or [None])[0]  # a C++ worker
            if native and not self.blas:
                self.blas = native.ask("blas")[0]
                print(report.blas_line(self.blas), flush=True)
            if native and a.rounds:
                self.bandwidth[threads] = float(native.ask("probe")[0])
                print("read bandwidth, %d thread%s: %.1f GB/s" % (
                    threads, "" if threads == 1 else "s", self.bandwidth[threads]), flush=True)
            for case in self.cases:
                self.run_case(case, prepared[case.id], threads, workers)
                print(report.progress(self, case, threads), flush=True)
            for ws in workers.values():
                for w in ws:
                    w.close()
        if a.compile_time:
            for case in self.cases:
                if case.model and (not a.quick or case.id == "gpt_fwdbwd"):
                    self.measure_compile(case, prepared[case.id])
        self.load_after = loadavg()
        print(report.tables(self), flush=True)
        if not a.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        return 1 if self.failed else 0


def relative_error(ref, got):
    """max over outputs of max |got - ref| / max |ref|; inf on a count, shape or NaN mismatch."""
    if len(ref) != len(got) or not ref:
        return float("inf")
    worst = 0.0
    for r, g in zip(ref, got):
        if tuple(r.shape) != tuple(g.shape):
            return float("inf")
        r64, g64 = r.astype(np.float64), g.astype(np.float64)
        scale = max(float(np.abs(r64).max()) if r64.size else 0.0, 1e-30)
        diff = float(np.abs(r64 - g64).max()) if r64.size else 0.0
        worst = max(worst, diff / scale if diff == diff else float("inf"))
    return worst


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="tiny shapes, 1 round of 2 reps, compile time of the GPT block fwd+bwd "
                        "only: a smoke test of the whole bench, not figures")
    p.add_argument("--worker", default=os.path.join(ROOT, "build", "bin", "bench_model_worker"))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--cases", default="",
                   help="cases, comma-separated: ids (gpt_fwd, W1_4096, W2, resnet_step) or "
                        "their first part (gpt, W1, resnet)")
    p.add_argument("--sizes", default="", help="W1-W5 sizes (default 4096,8192)")
    p.add_argument("--rounds", type=int, default=None, help="default 3 (--quick 1)")
    p.add_argument("--reps", type=int, default=None, help="reps per round (default 5, --quick 2)")
    p.add_argument("--gap", type=float, default=0.05, help="idle seconds before each system")
    p.add_argument("--processes", type=int, default=1,
                   help="worker processes per system (default 1): each round times every "
                        "system in each of its processes, and a system's round is the mean of "
                        "its processes' medians. Two processes of the same program differ by "
                        "up to ~2%% on the memory-bound W1 / W4 (their pages' placement): with "
                        "2 or more, that difference is averaged instead of charged to a system")
    # Legitimate differences (summation orders, XLA's exp / tanh) measured at most 2.5e-6; a JAX
    # GPT block with erf GELU instead of tanh GELU differs from torch's by 9e-5.
    p.add_argument("--tolerance", type=float, default=2e-5,
                   help="max |out - eager| / max |eager| per output (default 2e-5)")
    p.add_argument("--no-compile-time", dest="compile_time", action="store_false")
    p.add_argument("--check-only", action="store_true",
                   help="compile, run once and check against torch; no timing, no compile time")
    p.add_argument("--keep", default="", help="keep the case directories and logs in this dir")
    # "flash" needs the strides of land's _scaled_dot_product_flash_attention_for_cpu expansion
    # (torch's (B, L, H, E) layout, so the trace's view after the transpose is legal).
    p.add_argument("--sdpa", choices=("flash", "math"), default="math",
                   help="what Stax's printout holds for attention: its decomposed math form "
                        "(default) or torch's flash op for the CPU (Stax's fused attention)")
    a = p.parse_args(argv)
    a.threads = [int(t) for t in a.threads.split(",") if t]
    a.systems = [s for s in a.systems.split(",") if s]
    a.cases = [c for c in a.cases.split(",") if c]
    a.sizes = [int(s) for s in a.sizes.split(",") if s]
    a.rounds = a.rounds if a.rounds is not None else (1 if a.quick else 3)
    a.reps = a.reps if a.reps is not None else (2 if a.quick else 5)
    if a.processes < 1:
        p.error("--processes must be at least 1")
    if a.check_only:
        a.rounds, a.compile_time = 0, False
    unknown = set(a.systems) - set(SYSTEMS)
    if unknown:
        p.error("unknown systems %s (known: %s)" % (sorted(unknown), ", ".join(SYSTEMS)))
    if ("stax" in a.systems or "hand" in a.systems) and not os.access(a.worker, os.X_OK):
        p.error("no worker at %s: build it (cmake --build build --target bench_model_worker)"
                % a.worker)
    return a


if __name__ == "__main__":
    sys.exit(Bench(parse_args(sys.argv[1:])).run())
