"""torch.compile(backend="stax") against eager and Inductor (issue 25's bench), in one run:
step time (forward, forward+backward) on 1 and 2 threads, interleaved, and compile time cold
and cached.

    PYTHONPATH=build/python .venv/bin/python bench/torch_backend.py [--reps 7] [--steps 20]
        [--models gpt,resnet] [--threads 1,2] [--backends eager,inductor,stax] [--skip-compile]

Models: a GPT-2 pre-norm block (d=128, 4 heads, batch 8 x 64 tokens, causal SDPA) and a ResNet
BasicBlock (64 channels, 8 x 32 x 32, train mode: batch norm with running statistics).
Step times: for each thread count, rounds that run every backend once in turn (eager,
inductor, stax), `steps` steps each; the median over `reps` rounds of the mean step, in ms, and
the ratio to Inductor. Compile times: each in a fresh process (`--worker compile`), the first
forward+backward call, with empty cache directories (cold: STAX_CACHE_DIR and
TORCHINDUCTOR_CACHE_DIR fresh) and then again in a new process with the caches filled (cached).

Figures for the record only on an idle machine (the load average is checked and printed).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "python", "torch_backend"))
import modules  # noqa: E402  (the test suite's module definitions)


def make(name):
    torch.manual_seed(0)
    if name == "gpt":
        return modules.GPTBlock(d=128, heads=4), (torch.randn(8, 64, 128),)
    if name == "resnet":
        return modules.BasicBlock(c=64).train(), (torch.randn(8, 64, 32, 32),)
    raise ValueError(name)


def compiled(model, backend):
    if backend == "eager":
        return model
    if backend == "inductor":
        return torch.compile(model)
    import stax  # noqa: F401  (registers backend="stax")
    return torch.compile(model, backend="stax")


def step(fn, args, backward):
    out = fn(*args)
    if backward:
        out.float().pow(2).mean().backward()
    return out


def time_steps(fn, args, backward, steps):
    t0 = time.perf_counter()
    for _ in range(steps):
        step(fn, args, backward)
    return (time.perf_counter() - t0) / steps * 1e3


def bench_steps(names, threads, reps, steps, backends):
    rows = []
    for nthreads in threads:
        torch.set_num_threads(nthreads)
        for name in names:
            for backward in (False, True):
                fns = {}
                for backend in backends:
                    model, args = make(name)
                    fns[backend] = (compiled(model, backend), args)
                    ctx = torch.enable_grad() if backward else torch.no_grad()
                    with ctx:
                        step(*fns[backend], backward)  # compile, warm up
                        step(*fns[backend], backward)
                times = {b: [] for b in fns}
                for _ in range(reps):
                    for backend, (fn, args) in fns.items():
                        ctx = torch.enable_grad() if backward else torch.no_grad()
                        with ctx:
                            times[backend].append(time_steps(fn, args, backward, steps))
                med = {b: statistics.median(v) for b, v in times.items()}
                rows.append((nthreads, name, "fwd+bwd" if backward else "fwd", med))
                torch._dynamo.reset()
    return rows


def compile_worker(name, backend):
    model, args = make(name)
    fn = compiled(model, backend)
    t0 = time.perf_counter()
    step(fn, args, True)
    print(json.dumps({"seconds": time.perf_counter() - t0}))


def bench_compile(names, backends):
    rows = []
    for name in names:
        for backend in [b for b in backends if b != "eager"]:
            with tempfile.TemporaryDirectory() as d:
                env = dict(os.environ, STAX_CACHE_DIR=os.path.join(d, "stax"),
                           TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor"))
                secs = []
                for _ in ("cold", "cached"):
                    out = subprocess.run([sys.executable, __file__, "--worker", "compile",
                                          "--models", name, "--backend", backend], env=env,
                                         check=True, capture_output=True, text=True).stdout
                    secs.append(json.loads(out.strip().splitlines()[-1])["seconds"])
                rows.append((name, backend, secs[0], secs[1]))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--models", default="gpt,resnet")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--backends", default="eager,inductor,stax")
    ap.add_argument("--skip-compile", action="store_true")
    ap.add_argument("--worker")
    ap.add_argument("--backend")
    a = ap.parse_args()
    names = a.models.split(",")
    if a.worker == "compile":
        compile_worker(names[0], a.backend)
        return
    print(f"load average: {open('/proc/loadavg').read().split()[:3]} (record only below ~1.5)")
    print(f"torch {torch.__version__}")
    backends = a.backends.split(",")
    base = "inductor" if "inductor" in backends else backends[0]
    print(f"\nstep time, ms (median of rounds; ratio to {base})")
    print(f"{'threads':>7} {'model':>7} {'pass':>8} " + " ".join(f"{b:>16}" for b in backends))
    for nthreads, name, kind, med in bench_steps(names, [int(t) for t in a.threads.split(",")],
                                                 a.reps, a.steps, backends):
        cells = " ".join(f"{med[b]:8.3f} ({med[b] / med[base]:4.2f}x)" for b in backends)
        print(f"{nthreads:>7} {name:>7} {kind:>8} {cells}")
    if not a.skip_compile:
        print("\ncompile time of the first forward+backward, s (fresh processes)")
        print(f"{'model':>7} {'backend':>9} {'cold':>8} {'cached':>8}")
        for name, backend, cold, cached in bench_compile(names, backends):
            print(f"{name:>7} {backend:>9} {cold:8.2f} {cached:8.2f}")


if __name__ == "__main__":
    main()
