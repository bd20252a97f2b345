"""Issue 25's per-step overhead: where a torch.compile(backend="stax") training step spends the
time outside Stax's compiled graphs, and the fixed cost of a step against eager and Inductor.

    PYTHONPATH=build/python .venv/bin/python bench/step_overhead.py [--models gpt,resnet]
        [--threads 1] [--steps 200] [--fwd]

Two tables, both in thread CPU time of the calling thread (time.thread_time: on a loaded
machine the figure that means something; with --threads 2 the team's other thread is not in it):
- layers: one Stax step split by layer, per step: the loss's forward (torch eager), the Stax
  forward inside StaxPartition (C++: DLPack in, the compiled forward, DLPack out), the Python
  around it (StaxPartition.forward, the autograd Function, StaxGraph.__call__), Dynamo (the
  guards and its frame: the step's call minus StaxGraph.__call__), the Stax backward (C++),
  and torch's autograd engine outside it (the loss's backward, AccumulateGrad into .grad).
  Each layer is timed by a wrapper (~1 us each), the C++ calls by timing the same calls the
  autograd Function makes.
- fixed cost: a step of the same module at tiny sizes (GPT block d=16 on 1 x 4 tokens, ResNet
  block of 4 channels on 4 x 4), where the graphs' kernels take almost nothing: what each
  backend's call path costs per step (median of 15 rounds).
"""
import argparse
import importlib
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_backend as tb  # noqa: E402

TINY = {
    "gpt": lambda: (tb.modules.GPTBlock(d=16, heads=2), (torch.randn(1, 4, 16),)),
    "resnet": lambda: (tb.modules.BasicBlock(c=4), (torch.randn(1, 4, 4, 4),)),
}


class Layers:
    """Thread-CPU time per layer of the Stax path (wrappers installed on the classes)."""

    def __init__(self):
        self.acc = {}
        sb = importlib.import_module("stax.dynamo.backend")
        sr = importlib.import_module("stax.dynamo.runtime")
        self._undo = []
        self._wrap(sb.StaxGraph, "__call__", "StaxGraph.__call__")
        self._wrap(sr.StaxPartition, "forward", "StaxPartition.forward")
        fn_cls = sr._StaxFunction
        forward, backward = fn_cls.forward, fn_cls.backward
        layers = self

        class Timed:  # the entry's CompiledFunction and ForwardResult, their C++ calls timed
            def __init__(self, obj, fwd_key, bwd_key):
                self.obj, self.fwd_key, self.bwd_key = obj, fwd_key, bwd_key

            def forward(self, *a, **k):
                t = time.thread_time()
                r = self.obj.forward(*a, **k)
                layers.add(self.fwd_key, time.thread_time() - t)
                return Timed(r, None, "C++ backward (Stax's compiled backward)")

            def take_outputs(self):
                return self.obj.take_outputs()

            def backward(self, *a, **k):
                t = time.thread_time()
                r = self.obj.backward(*a, **k)
                layers.add(self.bwd_key, time.thread_time() - t)
                return r

        class Entry:
            def __init__(self, entry):
                self.__dict__.update(entry.__dict__)
                self.fn = Timed(entry.fn, "C++ forward (Stax's compiled forward)", None)

        def timed_forward(ctx, entry, seed, *inputs):
            return forward(ctx, Entry(entry), seed, *inputs)

        def timed_backward(ctx, *grads):
            t = time.thread_time()
            r = backward(ctx, *grads)
            layers.add("_StaxFunction.backward", time.thread_time() - t)
            return r

        fn_cls.forward, fn_cls.backward = staticmethod(timed_forward), staticmethod(timed_backward)
        self._undo.append(lambda: (setattr(fn_cls, "forward", staticmethod(forward)),
                                   setattr(fn_cls, "backward", staticmethod(backward))))

    def add(self, key, seconds):
        self.acc[key] = self.acc.get(key, 0.0) + seconds

    def _wrap(self, cls, attr, key):
        f = getattr(cls, attr)

        def timed(*a, **k):
            t = time.thread_time()
            try:
                return f(*a, **k)
            finally:
                self.add(key, time.thread_time() - t)
        setattr(cls, attr, timed)
        self._undo.append(lambda: setattr(cls, attr, f))

    def undo(self):
        for u in reversed(self._undo):
            u()


def layers_table(name, backward, steps):
    model, args = tb.make(name)
    fn = tb.compiled(model, "stax")
    ctx = torch.enable_grad if backward else torch.no_grad
    with ctx():
        for _ in range(3):
            tb.step(fn, args, backward)
    layers = Layers()
    try:
        with ctx():
            for _ in range(steps):
                t0 = time.thread_time()
                out = fn(*args)
                t1 = time.thread_time()
                layers.add("step's call", t1 - t0)
                if backward:
                    loss = out.float().pow(2).mean()
                    t2 = time.thread_time()
                    loss.backward()
                    t3 = time.thread_time()
                    layers.add("loss forward (eager)", t2 - t1)
                    layers.add("loss.backward()", t3 - t2)
    finally:
        layers.undo()
    a = {k: v / steps * 1e6 for k, v in layers.acc.items()}
    get = a.get
    rows = [("C++ forward (Stax's compiled forward)", get("C++ forward (Stax's compiled forward)", 0))]
    rows.append(("StaxPartition.forward around it", get("StaxPartition.forward", 0) - rows[0][1]))
    rows.append(("StaxGraph.__call__ around that", get("StaxGraph.__call__", 0)
                 - get("StaxPartition.forward", 0)))
    rows.append(("Dynamo (guards, frame) around that", get("step's call", 0)
                 - get("StaxGraph.__call__", 0)))
    if backward:
        rows.append(("loss forward (eager)", get("loss forward (eager)", 0)))
        cpp_bwd = get("C++ backward (Stax's compiled backward)", 0)
        rows.append(("C++ backward (Stax's compiled backward)", cpp_bwd))
        rows.append(("_StaxFunction.backward around it", get("_StaxFunction.backward", 0) - cpp_bwd))
        rows.append(("autograd engine outside Stax (loss bwd, AccumulateGrad)",
                     get("loss.backward()", 0) - get("_StaxFunction.backward", 0)))
    total = get("step's call", 0) + get("loss forward (eager)", 0) + get("loss.backward()", 0)
    print(f"\n{name} {'fwd+bwd' if backward else 'fwd'}, {torch.get_num_threads()} thread(s): "
          f"{total:.0f} us a step (thread CPU, {steps} steps)")
    for label, us in rows:
        print(f"  {label:>58}: {us:9.1f} us  {us / total * 100:5.1f}%")


def fixed_cost_table(name, backward):
    ctx = torch.enable_grad if backward else torch.no_grad
    fns = {}
    for backend in ("eager", "inductor", "stax"):
        torch.manual_seed(0)
        model, args = TINY[name]()
        fn = tb.compiled(model.train(), backend)
        with ctx():
            tb.step(fn, args, backward)
            tb.step(fn, args, backward)
        fns[backend] = (fn, args)
    times = {b: [] for b in fns}
    with ctx():
        for _ in range(15):
            for backend, (fn, args) in fns.items():
                t = time.thread_time()
                for _ in range(100):
                    tb.step(fn, args, backward)
                times[backend].append((time.thread_time() - t) / 100 * 1e6)
    cells = "  ".join(f"{b} {statistics.median(v):7.1f} us" for b, v in times.items())
    print(f"  tiny {name} {'fwd+bwd' if backward else 'fwd'}: {cells}")
    torch._dynamo.reset()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gpt,resnet")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--fwd", action="store_true", help="forward only (default: forward + backward)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    backward = not a.fwd
    for name in a.models.split(","):
        layers_table(name, backward, a.steps)
        torch._dynamo.reset()
    print("\nfixed cost of a step at tiny sizes (thread CPU, median of 15 rounds of 100 steps)")
    for name in a.models.split(","):
        fixed_cost_table(name, backward)


if __name__ == "__main__":
    main()
