"""The call overhead of a compiled graph from Python (issue 24's goal: within 10 us of the C++
call), beside torch eager's per-op dispatch, in one run.

    PYTHONPATH=build/python .venv/bin/python bench/python_call_overhead.py \
        [--reps 9] [--calls 1000] [--clock wall|thread_cpu] [--build build]

The graph is bench_cpu's W1call: ((x + y).relu() * 2).sum(-1) at 64 x 128, float32, on cpu_cpp
with 1 thread. Rows (median over reps of the mean of `calls` back-to-back calls, in us):
  C++ CompiledGraph::run        `bench_cpu REPS 64 1 W1call` (the same graph, cpu_cpp, 1 thread)
  stax f(x, y) torch            torch tensors in (DLPack, no copy), a torch tensor out
  stax f(x, y) numpy            numpy arrays in and out
  stax f(x, y) stax.Tensor      stax.Tensor in and out (no framework conversion)
  stax f.run([x, y])            the list API, stax.Tensor out
  DLPack in: stax.tensor(x)     one torch tensor imported (no copy)
  DLPack out: torch.from_dlpack one stax.Tensor exported to torch (no copy)
  torch eager x + y             one op's dispatch at 64 x 128 (torch.set_num_threads(1))
  torch eager W1 (4 ops)        the same graph eagerly: add, relu, mul, sum
The overhead of Python is (stax f(x, y) torch) - (C++); the goal is <= 10 us.

Timings are for the record only on an idle machine (load average below ~1.5, checked and
printed); on a loaded one use --clock thread_cpu (the calling thread's CPU time: preemptions do
not count; STAX_BENCH_CLOCK=thread_cpu for bench_cpu) and mark the figures as CPU time.
"""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch

import stax

ROWS, COLS = 64, 128


def clock_fn(name):
    return {"wall": time.perf_counter, "thread_cpu": time.thread_time}[name]


def median_us(fn, reps, calls, clock):
    fn()  # warm-up: the output pool and the JIT'd kernel
    times = []
    for _ in range(reps):
        t = clock()
        for _ in range(calls):
            fn()
        times.append((clock() - t) * 1e6 / calls)
    times.sort()
    return times[len(times) // 2]


def cpp_us(build, reps, clock_name):
    """bench_cpu's W1call row: Stax's C++ per-call time (ms) -> us."""
    exe = os.path.join(build, "bin", "bench_cpu")
    if not os.path.exists(exe):
        return None, f"{exe} not built"
    env = dict(os.environ)
    if clock_name == "thread_cpu":
        env["STAX_BENCH_CLOCK"] = "thread_cpu"
    r = subprocess.run([exe, str(reps), "64", "1", "W1call"],  # reps sizes threads workloads
                       capture_output=True, text=True, env=env)
    for line in r.stdout.splitlines():
        m = re.match(r"W1call\s+64\s+1\s+([0-9.]+)", line)
        if m:
            return float(m.group(1)) * 1e3, None
    return None, "no W1call row in bench_cpu's output: " + (r.stderr or r.stdout)[-300:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--clock", choices=["wall", "thread_cpu"], default="wall")
    ap.add_argument("--build", default="build", help="the build tree holding bin/bench_cpu")
    a = ap.parse_args()
    clock = clock_fn(a.clock)
    load = os.getloadavg()[0]
    idle = load < 1.5
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  load average {load:.2f} "
          f"({'idle' if idle else 'LOADED: not for the record'}), clock {a.clock}, "
          f"reps {a.reps} x {a.calls} calls, torch {torch.__version__}, numpy {np.__version__}")

    torch.set_num_threads(1)
    g = stax.Graph()
    x = g.placeholder("x", (ROWS, COLS))
    y = g.placeholder("y", (ROWS, COLS))
    g.output(g.call("sum.dim_IntList",
                    g.call("mul.Scalar", g.call("relu", g.call("add.Tensor", x, y)), 2), [-1]))
    f = stax.Compiler({"devices": {"cpu": {"backend": "cpu_cpp", "options": {"threads": 1}}}}
                      ).compile(g)
    xt, yt = torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)
    xn, yn = xt.numpy(), yt.numpy()
    xs, ys = stax.tensor(xt), stax.tensor(yt)
    torch.testing.assert_close(f(xt, yt), ((xt + yt).relu() * 2).sum(-1), rtol=1e-5, atol=1e-5)
    out_s = f(xs, ys)

    rows = []
    cpp, why = cpp_us(a.build, a.reps, a.clock)
    rows.append(("C++ CompiledGraph::run (bench_cpu W1call)", cpp, why))
    rows.append(("stax f(x, y) torch", median_us(lambda: f(xt, yt), a.reps, a.calls, clock), None))
    rows.append(("stax f(x, y) numpy", median_us(lambda: f(xn, yn), a.reps, a.calls, clock), None))
    rows.append(("stax f(x, y) stax.Tensor",
                 median_us(lambda: f(xs, ys), a.reps, a.calls, clock), None))
    rows.append(("stax f.run([x, y])", median_us(lambda: f.run([xs, ys]), a.reps, a.calls, clock),
                 None))
    rows.append(("DLPack in: stax.tensor(x)",
                 median_us(lambda: stax.tensor(xt), a.reps, a.calls, clock), None))
    rows.append(("DLPack out: torch.from_dlpack",
                 median_us(lambda: torch.from_dlpack(out_s), a.reps, a.calls, clock), None))
    with torch.no_grad():
        rows.append(("torch eager x + y (one op)",
                     median_us(lambda: xt + yt, a.reps, a.calls, clock), None))
        rows.append(("torch eager W1 (4 ops)",
                     median_us(lambda: ((xt + yt).relu() * 2).sum(-1), a.reps, a.calls, clock),
                     None))
    for name, us, note in rows:
        print(f"{name:44s} {us:9.2f} us" if us is not None else f"{name:44s}         - ({note})")
    torch_call = rows[1][1]
    if cpp is not None:
        over = torch_call - cpp
        print(f"{'Python overhead (torch in/out) - C++':44s} {over:9.2f} us  "
              f"(goal <= 10 us: {'met' if over <= 10 else 'NOT met'})")
    print(f"{'torch eager per op (W1 / 4)':44s} {rows[-1][1] / 4:9.2f} us")


if __name__ == "__main__":
    sys.exit(main())
