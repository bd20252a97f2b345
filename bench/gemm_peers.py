"""torch and XLA (jax.jit) on bench_gemm's shapes: the same RESULT lines as bench_gemm.

    .venv/bin/python bench/gemm_peers.py --peer torch|xla [--threads T] [--reps R] [--shapes a,b]

The process is pinned to its first T CPUs before the peer is imported (XLA's and torch's pools
size themselves from the affinity mask; torch also gets torch.set_num_threads(T)). wall_ms is the
best wall time of one call (jax: until block_until_ready), cpu_ms the best process CPU time over
the same call (every thread of the process). scripts/bench_gemm.sh runs it.
"""
import argparse
import os
import sys
import time

SHAPES = {
    # name: (batch, m, n, k, b_transposed, a_transposed), as bench/gemm_bench.cpp
    "square": (1, 1024, 1024, 1024, False, False),
    "tall": (1, 2048, 256, 768, False, False),
    "bmm_qk": (64, 256, 256, 32, True, False),
    "bmm_pv": (64, 256, 32, 256, False, False),
}
DEFAULT_SHAPES = list(SHAPES)
# The GPT block's products (`--shapes gpt`): A or B read through a transposed view, as its
# training step passes them (gpt_MxNxK_at: mm(X.t(), dY); _bt: addmm's weight.t()).
for _m, _n, _k, _t in [(512, 128, 512, "at"), (128, 384, 512, "at"), (128, 512, 512, "at"),
                       (128, 128, 512, "at"), (512, 384, 128, "bt"), (512, 512, 128, "bt"),
                       (512, 128, 512, "bt"), (512, 512, 128, ""), (512, 128, 512, ""),
                       (512, 128, 384, "")]:
    SHAPES[f"gpt_{_m}x{_n}x{_k}" + (f"_{_t}" if _t else "")] = (1, _m, _n, _k, _t == "bt", _t == "at")


def pin(threads):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < threads:
        return False
    os.sched_setaffinity(0, cpus[:threads])
    return True


def timed(call, reps):
    call()  # warm-up (compilation for XLA)
    t0 = time.perf_counter()  # then 50 ms of calls, as bench_gemm gives every library
    while time.perf_counter() - t0 < 0.05:
        call()
    best_wall, best_cpu = float("inf"), float("inf")
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        call()
        best_cpu = min(best_cpu, time.process_time() - c0)
        best_wall = min(best_wall, time.perf_counter() - w0)
    return best_wall, best_cpu


def operands(np, batch, m, n, k, bt, at=False):
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (batch, k, m) if at else (batch, m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (batch, n, k) if bt else (batch, k, n)).astype(np.float32)
    return a, b


def torch_calls(threads, shapes):
    import numpy as np
    import torch

    torch.set_num_threads(threads)
    yield "version", "torch " + torch.__version__
    for name in shapes:
        batch, m, n, k, bt, at = SHAPES[name]
        a, b = operands(np, batch, m, n, k, bt, at)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        if bt:
            tb = tb.transpose(1, 2)  # a view: K^T, as attention reads it
        if at:
            ta = ta.transpose(1, 2)  # a view: X^T, as a weight gradient reads it
        if batch == 1:
            ta, tb = ta[0], tb[0]
            out = torch.empty(m, n)
            yield name, lambda ta=ta, tb=tb, out=out: torch.mm(ta, tb, out=out)
        else:
            out = torch.empty(batch, m, n)
            yield name, lambda ta=ta, tb=tb, out=out: torch.bmm(ta, tb, out=out)


def xla_calls(threads, shapes):
    import numpy as np
    import jax
    import jax.numpy as jnp

    yield "version", "jax " + jax.__version__ + " (XLA CPU)"
    for name in shapes:
        batch, m, n, k, bt, at = SHAPES[name]
        a, b = operands(np, batch, m, n, k, bt, at)
        ja, jb = jax.device_put(a), jax.device_put(b)
        if at:  # XLA picks its own layouts: the transpose is part of the jitted dot
            ja, jb = ja[0], jb[0]
            f = jax.jit((lambda x, y: x.T @ y.T) if bt else (lambda x, y: x.T @ y))
        elif bt and batch == 1:
            ja, jb = ja[0], jb[0]
            f = jax.jit(lambda x, y: x @ y.T)
        elif bt:
            f = jax.jit(lambda x, y: jnp.einsum("bmk,bnk->bmn", x, y))
        elif batch == 1:
            ja, jb = ja[0], jb[0]
            f = jax.jit(lambda x, y: x @ y)
        else:
            f = jax.jit(lambda x, y: x @ y)
        yield name, lambda f=f, ja=ja, jb=jb: f(ja, jb).block_until_ready()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", required=True, choices=["torch", "xla"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--shapes", default=",".join(DEFAULT_SHAPES),
                    help="comma-separated names; gpt: every gpt_* shape")
    args = ap.parse_args()
    shapes = []
    for s in args.shapes.split(","):
        if s == "gpt":
            shapes += [n for n in SHAPES if n.startswith("gpt_")]
        elif s in SHAPES:
            shapes.append(s)
        elif s:
            ap.error(f"unknown shape {s!r} (one of {', '.join(SHAPES)}, gpt)")
    if not pin(args.threads):
        print(f"SKIP lib={args.peer} threads={args.threads}: fewer CPUs in the affinity mask")
        return 0
    try:
        calls = list((torch_calls if args.peer == "torch" else xla_calls)(args.threads, shapes))
    except ImportError as e:
        print(f"SKIP lib={args.peer} threads={args.threads}: {e}")
        return 0
    for name, call in calls:
        if name == "version":
            print(f'LIB lib={args.peer} threads={args.threads} version="{call}"')
            continue
        wall, cpu = timed(call, args.reps)
        batch = "one call" if SHAPES[name][0] > 1 else "-"
        print(f"RESULT lib={args.peer} shape={name} threads={args.threads} "
              f'wall_ms={wall * 1e3:.4f} cpu_ms={cpu * 1e3:.4f} check=- batch="{batch}"')
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
