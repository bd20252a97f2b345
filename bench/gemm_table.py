"""The table of docs/gemm.md from the RESULT lines of bench_gemm and gemm_peers.py.

    python3 bench/gemm_table.py results.txt

Per library, shape and thread count: the best time over the rounds, as GFLOP/s per thread
  * by CPU time: flops / process CPU seconds (every thread's time, spinning included), the figure
    that a loaded machine does not inflate;
  * by wall time: flops / wall seconds / threads (meaningful on an idle machine only);
with the percentage of the measured FMA peak (bench_gemm --peak) and the ratio to XLA.
"""
import re
import sys
from collections import defaultdict

SHAPES = {  # name: (flops, label), as bench/gemm_bench.cpp
    "square": (2 * 1024 ** 3, "1024³"),
    "tall": (2 * 2048 * 256 * 768, "2048×256×768"),
    "bmm_qk": (2 * 64 * 256 * 256 * 32, "64× 256×256×32, Bᵀ"),
    "bmm_pv": (2 * 64 * 256 * 32 * 256, "64× 256×32×256"),
}
# The GPT block's products (SHAPES=gpt scripts/bench_gemm.sh): gpt_MxNxK[_at|_bt].
for _m, _n, _k, _t in [(512, 128, 512, "at"), (128, 384, 512, "at"), (128, 512, 512, "at"),
                       (128, 128, 512, "at"), (512, 384, 128, "bt"), (512, 512, 128, "bt"),
                       (512, 128, 512, "bt"), (512, 512, 128, ""), (512, 128, 512, ""),
                       (512, 128, 384, "")]:
    SHAPES[f"gpt_{_m}x{_n}x{_k}" + (f"_{_t}" if _t else "")] = (
        2 * _m * _n * _k, f"{_m}×{_n}×{_k}" + {"at": ", Aᵀ", "bt": ", Bᵀ", "": ""}[_t])
FIELD = re.compile(r'(\w+)=("[^"]*"|\S+)')


def parse(path):
    best = defaultdict(lambda: [float("inf"), float("inf")])
    info, skips, peak, batch = {}, [], None, {}
    for line in open(path, encoding="utf-8", errors="replace"):
        kind = line.split(" ", 1)[0]
        f = {k: v.strip('"') for k, v in FIELD.findall(line)}
        if kind == "PEAK":
            peak = float(f["gflops"])
        elif kind == "LIB":
            info[f["lib"]] = f.get("version", "")
        elif kind == "SKIP":
            skips.append(line.strip())
        elif kind == "RESULT":
            key = (f["lib"], f["shape"], int(f["threads"]))
            b = best[key]
            b[0] = min(b[0], float(f["wall_ms"]))
            b[1] = min(b[1], float(f["cpu_ms"]))
            if f.get("batch", "-") != "-":
                batch[f["lib"]] = f["batch"]
            info.setdefault(f["lib"], "")
            best[key + ("check",)] = f.get("check", "-")
    return best, info, skips, peak, batch


def table(best, libs, threads, metric, peak):
    shapes = [s for s in SHAPES if any((l, s, threads) in best for l in libs)]
    if not shapes:
        return ""
    head = "| library | " + " | ".join(SHAPES[s][1] for s in shapes) + " |"
    rows = [head, "|---" * (len(shapes) + 1) + "|"]
    for lib in libs:
        cells = []
        for s in shapes:
            key = (lib, s, threads)
            if key not in best:
                cells.append("—")
                continue
            wall, cpu = best[key]
            sec = (cpu / threads if metric == "cpu" else wall) / 1e3
            g = SHAPES[s][0] / sec / threads / 1e9 if sec > 0 else 0
            cell = f"{g:.0f}"
            if peak:
                cell += f" ({100 * g / peak:.0f}%)"
            xla = best.get(("xla", s, threads))
            if xla and lib != "xla":
                xsec = (xla[1] / threads if metric == "cpu" else xla[0]) / 1e3
                cell += f" ×{xsec / sec:.2f}"
            cells.append(cell)
        rows.append(f"| {lib} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main():
    best, info, skips, peak, batch = parse(sys.argv[1])
    order = ["stax", "xla", "torch", "mkl", "onednn-debian", "onednn-pypi", "openblas-pypi",
             "blis", "openblas", "openblas-serial"]
    libs = [l for l in order if l in info] + sorted(l for l in info if l not in order)
    threads = sorted({k[2] for k in best if len(k) == 3})
    print(f"FMA peak (float32, one core): {peak} GFLOP/s" if peak else "FMA peak: not measured")
    print("Cells: GFLOP/s per thread (% of the peak) ×(library's speed / XLA's).\n")
    for t in threads:
        for metric in ("cpu", "wall"):
            what = "process CPU time" if metric == "cpu" else "wall time"
            print(f"### {t} thread{'s' if t > 1 else ''}, by {what}\n")
            print(table(best, libs, t, metric, peak))
            print()
    print("Libraries:")
    for lib in libs:
        extra = f"; batches: {batch[lib]}" if lib in batch else ""
        print(f"- {lib}: {info[lib]}{extra}")
    worst = {}
    for key, v in best.items():
        if len(key) == 4 and v not in ("-", None):
            worst[key[0]] = max(worst.get(key[0], 0.0), float(v))
    if worst:
        print("\nLargest deviation from Stax's product, in units of the gemm bound k·u·Σ|a||b|: " +
              ", ".join(f"{l} {w:.3g}" for l, w in sorted(worst.items())))
    for s in skips:
        print(s)


if __name__ == "__main__":
    main()
