"""Two Stax builds and Inductor on the torch backend's module set, interleaved in one run: the
training step (forward + backward, or forward alone) through torch.compile, as wall time and
as process CPU time (every thread's; on a loaded machine the CPU time of a 1-thread step is the
figure that means something).

    .venv/bin/python bench/torch_backend_ab.py --builds before=OLD/build/python,after=build/python \\
        [--models convnext,lm,mixer,unet] [--threads 1,2] [--reps 7] [--steps 20] [--fwd]

Each build runs in a worker process of its own (PYTHONPATH=<build>/python: two builds of the
extension cannot share a process; `name=dir:VAR=VALUE` also sets VAR in that worker's
environment, so one build can run against itself with a switch off, e.g.
`--builds gemm=build/python:STAX_CPU_CONV_BLOCKED=0,blocked=build/python`), and Inductor in a third (torch.compile default). Every worker
compiles every (model, threads) cell first; then each round asks every worker in turn for
`steps` steps of one cell, so the variants alternate within a second of each other and share the
machine's load. Reported per cell: the median over `reps` rounds of the mean step, wall and
CPU ms, and the ratios to Inductor. Models and sizes are bench/torch_backend.py's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(backend):
    sys.path.insert(0, HERE)
    import torch
    import torch_backend as tb
    cells = {}
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "prepare":
            key = (cmd["model"], cmd["threads"], cmd["backward"])
            torch.set_num_threads(cmd["threads"])
            model, args = tb.make(cmd["model"])
            fn = tb.compiled(model, backend)
            ctx = torch.enable_grad if cmd["backward"] else torch.no_grad
            with ctx():
                tb.step(fn, args, cmd["backward"])
                tb.step(fn, args, cmd["backward"])
            cells[key] = (fn, args, ctx)
            print(json.dumps({"ok": True}), flush=True)
        elif cmd["op"] == "run":
            key = (cmd["model"], cmd["threads"], cmd["backward"])
            fn, args, ctx = cells[key]
            torch.set_num_threads(cmd["threads"])
            with ctx():
                w0, c0 = time.perf_counter(), time.process_time()
                for _ in range(cmd["steps"]):
                    tb.step(fn, args, cmd["backward"])
                w1, c1 = time.perf_counter(), time.process_time()
            n = cmd["steps"]
            print(json.dumps({"wall": (w1 - w0) / n * 1e3, "cpu": (c1 - c0) / n * 1e3}), flush=True)


class Worker:
    def __init__(self, name, backend, pythonpath):
        env = dict(os.environ)
        pythonpath, *settings = pythonpath.split(":") if backend == "stax" else (pythonpath,)
        for kv in settings:  # name=dir:VAR=VALUE: the worker's own environment variables
            k, _, v = kv.partition("=")
            env[k] = v
        if pythonpath:
            env["PYTHONPATH"] = os.path.abspath(pythonpath)
        self.name = name
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", backend],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def ask(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit(f"worker {self.name} died")
        return json.loads(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", default="")
    ap.add_argument("--builds", default="",
                    help="name=pythondir[:VAR=VALUE...],... (Stax builds; VAR=VALUE set in the "
                         "worker's environment, e.g. a switch of one build)")
    ap.add_argument("--models", default="convnext,lm,mixer,unet")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--fwd", action="store_true", help="forward only (default: forward + backward)")
    ap.add_argument("--no-inductor", action="store_true")
    a = ap.parse_args()
    if a.worker:
        return worker(a.worker)
    workers = [Worker(n, "stax", p) for n, p in (b.split("=", 1) for b in a.builds.split(",") if b)]
    if not a.no_inductor:
        workers.append(Worker("inductor", "inductor", os.environ.get("PYTHONPATH", "")))
    backward = not a.fwd
    cells = [(m, int(t)) for t in a.threads.split(",") for m in a.models.split(",")]
    print(f"loadavg at start: {open('/proc/loadavg').read().strip()}", flush=True)
    for m, t in cells:
        for w in workers:
            w.ask(op="prepare", model=m, threads=t, backward=backward)
    results = {}
    for m, t in cells:
        times = {w.name: [] for w in workers}
        for _ in range(a.reps):
            for w in workers:
                times[w.name].append(w.ask(op="run", model=m, threads=t, backward=backward,
                                           steps=a.steps))
        results[(m, t)] = {n: (statistics.median(x["wall"] for x in v),
                               statistics.median(x["cpu"] for x in v)) for n, v in times.items()}
    print(f"loadavg at end: {open('/proc/loadavg').read().strip()}")
    what = "fwd" if a.fwd else "fwd+bwd"
    names = [w.name for w in workers]
    print(f"{what} step, ms: wall / cpu (median of {a.reps} rounds of {a.steps} steps; "
          f"x: cpu ratio to inductor)")
    print(f"{'threads':>7} {'model':>9} " + " ".join(f"{n:>24}" for n in names))
    for (m, t), r in results.items():
        ref = r.get("inductor", (None, None))[1]
        cols = []
        for n in names:
            wall, cpu = r[n]
            ratio = f" {cpu / ref:5.2f}x" if ref else ""
            cols.append(f"{wall:7.2f} / {cpu:7.2f}{ratio}".rjust(24))
        print(f"{t:>7} {m:>9} " + " ".join(cols))
    for w in workers:
        w.p.stdin.close()
        w.p.wait()


if __name__ == "__main__":
    main()
