#!/usr/bin/env python3
"""Fused attention (docs/attention.md) against torch's F.scaled_dot_product_attention.

For each case: a one-op sdpa graph in Stax's text format, inputs written as .npy; the output of
`stax run --config cpu.yaml` (compiled on cpu_cpp: the flash_attention extern) and the gradients
of sum(output * w) from `stax grad --config cpu.yaml` (forward + backward compiled: the
flash_attention_backward extern), each compared with torch's eager sdpa and autograd. The fused
path must have run: `stax compile --dump schedule` names the flash_attention extern and `stax
grad` prints the backward op in its joint graph, so a silent fallback to the decomposition fails.
float64: to 1e-9; float32: to 2e-5 of the largest magnitude (at least 1) (torch's CPU kernel sums in its own
order too).

Usage: flash_attention_torch_check.py STAX_BINARY CONFIG_YAML. Exits 77 (ctest: skipped) without
torch.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

torch.manual_seed(0)
STAX, CONFIG = sys.argv[1], sys.argv[2]
DTYPES = {torch.float64: "torch.float64", torch.float32: "torch.float32", torch.bool: "torch.bool"}


def graph_text(inputs, causal, scale):
    lines = ["graph("]
    for name, t in inputs:
        shape = "(" + ", ".join(str(s) for s in t.shape) + ("," if t.dim() == 1 else "") + ")"
        lines.append(f"    %{name} shape={shape} dtype={DTYPES[t.dtype]} = placeholder[target={name}]")
    mask = "%m" if len(inputs) > 3 else "None"
    kw = "{}" if scale is None else "{scale: %r}" % scale
    lines.append("    %result = call_function[target=tensorplay.ops.tp.scaled_dot_product_attention.default]"
                 f"(args = (%q, %k, %v, {mask}, 0.0, {causal}), kwargs = {kw})")
    lines.append("    return (result,)")
    lines.append(")")
    return "\n".join(lines) + "\n"


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(" ".join(cmd) + "\n" + r.stdout[-2000:] + r.stderr[-2000:])
    return r.stdout


def close(got, want, dtype):
    # Relative to the largest magnitude, at least 1: an all-zero gradient (T = 1: the softmax of
    # one key does not depend on the scores) is torch's rounding noise (~1e-16) against Stax's 0.
    scale = max(float(np.max(np.abs(want))), 1.0)
    tol = 1e-9 if dtype == torch.float64 else 2e-5
    err = float(np.max(np.abs(got - want))) / scale if got.shape == want.shape else float("inf")
    return err <= tol, err


def check(name, b, h, l, s, e, ev, causal, dtype, mask=None, scale=None):
    q, k, v = (torch.randn(b, h, n, d, dtype=dtype) for n, d in ((l, e), (s, e), (s, ev)))
    inputs = [("q", q), ("k", k), ("v", v)]
    if mask == "bool":
        m = torch.rand(l, s) > 0.3
        m[:, 0] = True
        inputs.append(("m", m))
    elif mask == "add":
        inputs.append(("m", torch.randn(h, l, s, dtype=dtype)))
    w = torch.randn(b, h, l, ev, dtype=dtype)
    bad = []
    with tempfile.TemporaryDirectory() as d:
        g = os.path.join(d, "g.stax")
        with open(g, "w") as f:
            f.write(graph_text(inputs, causal, scale))
        ins = []
        for n, t in inputs + [("tangents_1", w)]:
            np.save(os.path.join(d, n + ".npy"), t.numpy())
            ins += ["--input", f"{n}={os.path.join(d, n + '.npy')}"]
        leaves = [t.clone().requires_grad_(t.is_floating_point()) for _, t in inputs]
        want = F.scaled_dot_product_attention(*leaves[:3], attn_mask=leaves[3] if mask else None,
                                              is_causal=causal, scale=scale)
        (want * w).sum().backward()
        schedule = run([STAX, "compile", g, "--config", CONFIG, "--dump", "schedule"])
        if "extern flash_attention ->" not in schedule:
            bad.append("the compiled forward has no flash_attention extern")
        out = os.path.join(d, "run")
        run([STAX, "run", g, *ins[:-2], "--save", out, "--config", CONFIG])
        ok, err = close(np.load(os.path.join(out, "out0.npy")), want.detach().numpy(), dtype)
        if not ok:
            bad.append(f"forward: max rel err {err:.3g}")
        wrt = [n for n, t in inputs if t.is_floating_point()]
        out = os.path.join(d, "grad")
        text = run([STAX, "grad", g, "--wrt", ",".join(wrt), *ins, "--config", CONFIG, "--save", out])
        if "_stax_flash_attention_backward" not in text:
            bad.append("stax grad did not use the flash backward")
        for (n, t), leaf in zip(inputs, leaves):
            if n not in wrt:
                continue
            ok, err = close(np.load(os.path.join(out, f"grad_{n}.npy")), leaf.grad.numpy(), dtype)
            if not ok:
                bad.append(f"d/d{n}: max rel err {err:.3g}")
    print(("ok   " if not bad else "FAIL ") + name + ("" if not bad else ": " + "; ".join(bad)))
    return not bad


cases = [
    ("causal_odd_t", 2, 2, 67, 67, 32, 32, True),
    ("plain_head64", 1, 3, 70, 70, 64, 64, False),
    ("t1_causal", 2, 2, 1, 1, 32, 32, True),
    ("head80_causal", 1, 2, 129, 129, 80, 80, True),
    ("cross", 2, 2, 33, 90, 32, 48, False),
]
ok = True
for dtype in (torch.float64, torch.float32):
    for c in cases:
        try:
            ok = check(c[0] + "_" + str(dtype).split(".")[-1], *c[1:], dtype) and ok
        except Exception as ex:
            ok = False
            print(f"FAIL {c[0]}: {ex}")
for name, mask, scale in (("bool_mask", "bool", None), ("additive_mask", "add", 0.3)):
    try:
        ok = check(name, 1, 2, 40, 50, 32, 32, False, torch.float64, mask, scale) and ok
    except Exception as ex:
        ok = False
        print(f"FAIL {name}: {ex}")
print("fused attention agrees with torch" if ok else "MISMATCHES")
sys.exit(0 if ok else 1)
