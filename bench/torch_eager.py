"""torch eager timings for bench_cpu (issue 9): the same workloads, same threads.

    .venv/bin/python bench/torch_eager.py REPS SIZES THREADS

prints one line per (workload, size, threads): `torch <workload> <size> <threads> <median ms>`,
and `torch-missing <reason>` when torch cannot be imported. Run by bench_cpu with the
.venv's Python (the CMake cache variable STAX_TORCH_PYTHON).
"""
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # noqa: BLE001 - any import failure means "no torch column"
    print("torch-missing", type(e).__name__, str(e).replace("\n", " ")[:200])
    sys.exit(0)


def median_ms(fn, reps, calls=1):
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) * 1e3 / calls)
    times.sort()
    return times[len(times) // 2]


def main():
    reps = int(sys.argv[1])
    sizes = [int(s) for s in sys.argv[2].split(",") if s]
    threads = [int(t) for t in sys.argv[3].split(",") if t]
    torch.manual_seed(0)
    for t in threads:
        torch.set_num_threads(t)
        for n in sizes:
            x = torch.randn(n, n)
            y = torch.randn(n, n)
            w = torch.randn(n)
            b = torch.randn(n)
            with torch.no_grad():
                cases = {
                    "W1": lambda: ((x + y).relu() * 2).sum(-1),
                    "W3": lambda: torch.softmax(x, -1),
                    "W4": lambda: (x * x).sum(-1),
                    "W5": lambda: F.layer_norm(x, (n,), w, b, 1e-5),
                }
                for name, fn in cases.items():
                    print("torch", name, n, t, "%.6f" % median_ms(fn, reps), flush=True)
            del x, y
        # per-call overhead: W1 at 64 x 128
        xs, ys = torch.randn(64, 128), torch.randn(64, 128)
        with torch.no_grad():
            ms = median_ms(lambda: ((xs + ys).relu() * 2).sum(-1), reps, calls=1000)
        print("torch", "W1call", 64, t, "%.6f" % ms, flush=True)
        # W2: gelu(x @ W).sum(), forward + backward, 1024^3
        x2 = torch.randn(1024, 1024, requires_grad=True)
        w2 = torch.randn(1024, 1024, requires_grad=True)

        def w2_step():
            f = F.gelu(x2 @ w2).sum()
            return torch.autograd.grad(f, [x2, w2])

        print("torch", "W2", 1024, t, "%.6f" % median_ms(w2_step, reps), flush=True)
        # the MLP training step (bench_cpu's mlp_graph)
        B, D, H, O = 1024, 1024, 1024, 128
        xm, ym = torch.randn(B, D), torch.randn(B, O)
        p = [torch.randn(D, H, requires_grad=True), torch.randn(H, requires_grad=True),
             torch.randn(H, O, requires_grad=True), torch.randn(O, requires_grad=True)]

        def mlp_step():
            pred = F.gelu(xm @ p[0] + p[1]) @ p[2] + p[3]
            loss = ((pred - ym) * (pred - ym)).mean()
            return torch.autograd.grad(loss, p)

        print("torch", "MLP", B, t, "%.6f" % median_ms(mlp_step, reps), flush=True)


if __name__ == "__main__":
    main()
