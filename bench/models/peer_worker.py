"""The peers' worker of the model bench: torch eager and Inductor (`torch`), or XLA (`jax`).

    python bench/models/peer_worker.py torch|jax THREADS

bench_models.py starts it under `taskset` on THREADS cores and drives it over stdin / stdout with
the protocol of bench/model_worker.cpp (`setup ID SYSTEM DIR`, `time ID SYSTEM REPS`, `drop ID`,
`quit`; answers `ok ...` or `error ...`, one line each). Threads: torch.set_num_threads(THREADS)
(Inductor's generated C++ takes its OpenMP thread count from it); XLA's CPU client sizes its
thread pools from the CPUs the process may run on, i.e. the taskset; OMP_NUM_THREADS is set by
the driver for both.

setup's COMPILE_MS: Inductor: the first call (Dynamo, AOTAutograd, Inductor, C++ compiles; for
fwdbwd the backward's compile on the first backward) minus a second call; XLA: jit's
lower().compile(); eager: 0. FIRST_MS: the first run after the compile.
BENCH_JAX_CACHE_DIR turns on XLA's persistent compilation cache there (the compile-time runs).
"""
import os
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import casefile  # noqa: E402
from workloads import WORKLOADS  # noqa: E402


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


class TorchCases:
    systems = ("eager", "inductor")

    def __init__(self, threads):
        import torch
        self.torch = torch
        torch.set_num_threads(threads)

    def prepare(self, c, system):
        torch = self.torch
        spec = WORKLOADS[c.workload]
        fn = spec.torch_fn(c.params)
        if system == "inductor":
            fn = torch.compile(fn, dynamic=False)
        inputs = [torch.from_numpy(a) for a in c.load_inputs()]
        if c.mode == "fwd":
            def run():
                with torch.no_grad():
                    return list(as_tuple(fn(*inputs)))
            return run
        for i in c.wrt:
            inputs[i].requires_grad_(True)
        wrt = [inputs[i] for i in c.wrt]
        cots = [torch.from_numpy(a) for a in c.load_cotangents() if a is not None]

        def run():
            outs = as_tuple(fn(*inputs))
            grads = torch.autograd.grad(outs[:len(cots)], wrt, cots)
            return [o.detach() for o in outs] + list(grads)
        return run

    def to_numpy(self, t):
        return t.detach().numpy()


class JaxCases:
    systems = ("xla",)

    def __init__(self, threads):
        cache = os.environ.get("BENCH_JAX_CACHE_DIR")
        import jax
        if cache:
            jax.config.update("jax_compilation_cache_dir", cache)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        self.jax = jax
        self.compile_ms = 0.0

    def prepare(self, c, system):
        jax = self.jax
        spec = WORKLOADS[c.workload]
        fn = spec.jax_fn(c.params)
        args = [jax.device_put(a) for a in c.load_inputs()]
        if c.mode == "fwd":
            step = fn
        else:
            wrt, n_args = list(c.wrt), len(args)
            n_diff = sum(1 for f in c.cotangents if f is not None)

            def step(*all_args):
                primals, cots = list(all_args[:n_args]), all_args[n_args:]

                def f(*w):
                    a = list(primals)
                    for i, v in zip(wrt, w):
                        a[i] = v
                    outs = as_tuple(fn(*a))
                    return tuple(outs[:n_diff]), tuple(outs[n_diff:])
                outs, vjp, aux = jax.vjp(f, *[primals[i] for i in wrt], has_aux=True)
                return (*outs, *aux, *vjp(tuple(cots)))
            args = args + [jax.device_put(a) for a in c.load_cotangents() if a is not None]
        start = time.perf_counter()
        compiled = jax.jit(step).lower(*args).compile()
        self.compile_ms = (time.perf_counter() - start) * 1e3

        def run():
            return list(jax.block_until_ready(as_tuple(compiled(*args))))
        return run

    def to_numpy(self, t):
        return np.asarray(t)


def main():
    kind, threads = sys.argv[1], int(sys.argv[2])
    backend = TorchCases(threads) if kind == "torch" else JaxCases(threads)
    cases = {}
    print("ready", kind, threads, flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        try:
            answer = ""
            if words[0] == "setup":
                id, system, dir = words[1:4]
                if system not in backend.systems:
                    raise ValueError("this worker runs %s, not %s" % (backend.systems, system))
                c = casefile.read(dir)
                start = time.perf_counter()
                run = backend.prepare(c, system)
                out = run()
                t1 = time.perf_counter()
                run()
                t2 = time.perf_counter()
                first, second = (t1 - start) * 1e3, (t2 - t1) * 1e3
                if kind == "jax":
                    compile_ms, first_ms = backend.compile_ms, first - backend.compile_ms
                elif system == "inductor":
                    compile_ms, first_ms = max(0.0, first - second), second
                else:
                    compile_ms, first_ms = 0.0, first
                for k, t in enumerate(out):
                    np.save(casefile.output_path(dir, system, k), backend.to_numpy(t))
                cases[(id, system)] = run
                answer = "%.3f %.4f" % (compile_ms, first_ms)
            elif words[0] == "time":
                id, system, reps = words[1], words[2], int(words[3])
                run = cases[(id, system)]
                times = []
                for _ in range(reps):
                    start = time.perf_counter()
                    out = run()
                    times.append((time.perf_counter() - start) * 1e3)
                    del out
                answer = " ".join("%.4f" % t for t in times)
            elif words[0] == "drop":
                for key in [k for k in cases if k[0] == words[1]]:
                    del cases[key]
            else:
                raise ValueError("unknown command " + words[0])
            print("ok" + (" " + answer if answer else ""), flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is answered, the worker goes on
            sys.stderr.write(traceback.format_exc())
            msg = ("%s: %s" % (type(e).__name__, e)).replace("\n", " ")[:1500]
            print("error", msg, flush=True)


if __name__ == "__main__":
    main()
