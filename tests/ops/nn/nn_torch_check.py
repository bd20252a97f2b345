#!/usr/bin/env python3
"""The nn ops (issue 14 part B) against PyTorch's own results, where torch is installed.

For each case: a one-op graph in Stax's text format with float64 inputs written as .npy; the
output of `stax run` (reference interpreter) and of `stax run --config cpu.yaml` (compiled on
cpu_cpp), and the gradients of sum(output) from `stax grad --config cpu.yaml` (forward + backward
compiled), each compared with torch's eager result / autograd.

Usage: nn_torch_check.py STAX_BINARY CONFIG_YAML. Exits 77 (ctest: skipped) without torch.
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


def fmt(v):
    if isinstance(v, bool):
        return "True" if v else "False"
    if v is None:
        return "None"
    if isinstance(v, str):
        return f"'{v}'"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt(x) for x in v) + "]"
    return repr(v)


def graph_text(op, inputs, args):
    lines = ["graph("]
    for name, t in inputs:
        dt = "" if t.dtype == torch.float64 else " dtype=torch.int64"
        dt = " dtype=torch.float64" if t.dtype == torch.float64 else dt
        shape = "(" + ", ".join(str(s) for s in t.shape) + ("," if t.dim() == 1 else "") + ")"
        lines.append(f"    %{name} shape={shape}{dt} = placeholder[target={name}]")
    items = [f"%{n}" for n, _ in inputs] + [fmt(x) for x in args]
    a = ", ".join(items) + ("," if len(items) == 1 else "")
    lines.append(f"    %result = call_function[target=tensorplay.ops.tp.{op}](args = ({a}), kwargs = {{}})")
    lines.append("    return (result,)")
    lines.append(")")
    return "\n".join(lines) + "\n"


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(" ".join(cmd) + "\n" + r.stdout[-2000:] + r.stderr[-2000:])


def check(name, op, inputs, args, torch_fn, grad=True):
    with tempfile.TemporaryDirectory() as d:
        g = os.path.join(d, "g.stax")
        with open(g, "w") as f:
            f.write(graph_text(op, inputs, args))
        ins = []
        for n, t in inputs:
            np.save(os.path.join(d, n + ".npy"), t.detach().numpy())
            ins += ["--input", f"{n}={os.path.join(d, n + '.npy')}"]
        diff = lambda n, t: t.is_floating_point() and not n.startswith("c_")  # c_*: constants
        leaves = [t.detach().clone().requires_grad_(diff(n, t)) for n, t in inputs]
        want = torch_fn(*leaves)
        bad = []
        for mode, extra in (("interpreter", []), ("compiled", ["--config", CONFIG])):
            out = os.path.join(d, mode)
            run([STAX, "run", g, *ins, "--save", out, *extra])
            got = np.load(os.path.join(out, "out0.npy"))
            if got.shape != tuple(want.shape) or not np.allclose(got, want.detach().numpy(), 1e-9, 1e-9, equal_nan=True):
                bad.append(f"{mode}: max |diff| {np.max(np.abs(got - want.detach().numpy())) if got.shape == tuple(want.shape) else got.shape}")
        wrt = [n for (n, t) in inputs if diff(n, t)]
        if grad and wrt:
            want.sum().backward()
            out = os.path.join(d, "grad")
            run([STAX, "grad", g, "--wrt", ",".join(wrt), *ins, "--config", CONFIG, "--save", out])
            for (n, t), leaf in zip(inputs, leaves):
                if not diff(n, t):
                    continue
                got = np.load(os.path.join(out, f"grad_{n}.npy"))
                w = leaf.grad.numpy() if leaf.grad is not None else np.zeros_like(got)
                if not np.allclose(got, w, 1e-8, 1e-8):
                    bad.append(f"d/d{n}: max |diff| {np.max(np.abs(got - w))}")
        print(("ok   " if not bad else "FAIL ") + name + ("" if not bad else ": " + "; ".join(bad)))
        return not bad


def r(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def idx(high, *shape):
    return torch.randint(0, high, shape)


T = torch
cases = [
    ("conv2d", "conv2d.default", [("x", r(2, 3, 7, 6)), ("w", r(4, 3, 3, 2)), ("b", r(4))], [[2, 1], [1, 0], [1, 2]],
     lambda x, w, b: F.conv2d(x, w, b, (2, 1), (1, 0), (1, 2))),
    ("conv1d_grouped", "conv1d.default", [("x", r(2, 4, 9)), ("w", r(6, 2, 3))], [None, [2], [1], [1], 2],
     lambda x, w: F.conv1d(x, w, None, 2, 1, 1, 2)),
    ("conv3d", "conv3d.default", [("x", r(1, 2, 4, 5, 4)), ("w", r(2, 2, 2, 3, 2))], [None, [1, 2, 1], [1, 0, 1]],
     lambda x, w: F.conv3d(x, w, None, (1, 2, 1), (1, 0, 1))),
    ("conv2d_same", "conv2d.padding", [("x", r(1, 2, 5, 6)), ("w", r(3, 2, 3, 4))], [None, [1, 1], "same", [1, 2]],
     lambda x, w: F.conv2d(x, w, None, 1, "same", (1, 2))),
    ("conv_transpose2d", "conv_transpose2d.input", [("x", r(2, 4, 3, 4)), ("w", r(4, 3, 3, 3)), ("b", r(6))],
     [[2, 2], [1, 0], [1, 1], 2, [1, 1]],
     lambda x, w, b: F.conv_transpose2d(x, w, b, (2, 2), (1, 0), (1, 1), 2, (1, 1))),
    ("conv_transpose1d_dilated", "conv_transpose1d.default", [("x", r(1, 3, 5)), ("w", r(3, 2, 3))],
     [None, [2], [1], [0], 1, [2]], lambda x, w: F.conv_transpose1d(x, w, None, 2, 1, 0, 1, 2)),
    ("batch_norm_train", "batch_norm.default", [("x", r(4, 3, 5)), ("w", r(3)), ("b", r(3))],
     [None, None, True, 0.1, 1e-5, False], lambda x, w, b: F.batch_norm(x, None, None, w, b, True, 0.1, 1e-5)),
    ("batch_norm_eval", "batch_norm.default",
     [("x", r(4, 3, 2, 2)), ("w", r(3)), ("b", r(3)), ("c_rm", r(3)), ("c_rv", r(3).abs() + 0.5)],
     [False, 0.1, 1e-5, False], lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, False, 0.1, 1e-5)),
    ("group_norm", "group_norm.default", [("x", r(2, 6, 3, 2))], [3],
     lambda x: F.group_norm(x, 3)),
    ("embedding_padding_idx", "embedding.default", [("w", r(10, 4)), ("i", idx(10, 3, 5))], [2],
     lambda w, i: F.embedding(i, w, padding_idx=2)),
    ("max_pool2d_ceil", "max_pool2d.default", [("x", r(2, 3, 7, 6))], [[3, 2], [2, 2], [1, 1], [1, 1], True],
     lambda x: F.max_pool2d(x, (3, 2), (2, 2), (1, 1), (1, 1), True)),
    ("max_pool2d_ties", "max_pool2d.default", [("x", torch.randint(0, 3, (1, 2, 6, 7)).double())],
     [[3, 3], [2, 2], [1, 1]], lambda x: F.max_pool2d(x, 3, 2, 1)),
    ("max_pool1d_dilated", "max_pool1d.default", [("x", r(2, 3, 11))], [[3], [2], [1], [2]],
     lambda x: F.max_pool1d(x, 3, 2, 1, 2)),
    ("avg_pool2d_ceil_excl", "avg_pool2d.default", [("x", r(2, 3, 7, 6))], [[3, 3], [2, 2], [1, 1], True, False],
     lambda x: F.avg_pool2d(x, 3, 2, 1, True, False)),
    ("avg_pool2d_ceil_incl", "avg_pool2d.default", [("x", r(1, 2, 7, 8))], [[3, 2], [2, 3], [1, 1], True, True],
     lambda x: F.avg_pool2d(x, (3, 2), (2, 3), 1, True, True)),
    ("avg_pool3d_divisor", "avg_pool3d.default", [("x", r(1, 2, 4, 4, 4))], [[2, 2, 2], [], [0], False, True, 3],
     lambda x: F.avg_pool3d(x, 2, divisor_override=3)),
    ("adaptive_avg_pool2d", "adaptive_avg_pool2d.default", [("x", r(2, 3, 7, 9))], [[3, 4]],
     lambda x: F.adaptive_avg_pool2d(x, (3, 4))),
    ("adaptive_avg_pool1d", "adaptive_avg_pool1d.default", [("x", r(2, 3, 10))], [[4]],
     lambda x: F.adaptive_avg_pool1d(x, 4)),
    ("constant_pad_nd", "constant_pad_nd.default", [("x", r(2, 3, 5))], [[1, -2, 2, 0], 0.5],
     lambda x: F.pad(x, (1, -2, 2, 0), value=0.5)),
    ("reflection_pad2d", "reflection_pad2d.default", [("x", r(1, 2, 4, 5))], [[2, 1, 3, 0]],
     lambda x: F.pad(x, (2, 1, 3, 0), mode="reflect")),
    ("replication_pad1d", "replication_pad1d.default", [("x", r(2, 3, 4))], [[3, 1]],
     lambda x: F.pad(x, (3, 1), mode="replicate")),
    ("upsample_nearest2d", "upsample_nearest2d.default", [("x", r(1, 2, 3, 5))], [[7, 8]],
     lambda x: F.interpolate(x, size=(7, 8), mode="nearest")),
    ("upsample_bilinear2d", "upsample_bilinear2d.default", [("x", r(1, 2, 3, 5))], [[7, 8], False],
     lambda x: F.interpolate(x, size=(7, 8), mode="bilinear", align_corners=False)),
    ("upsample_bilinear2d_ac", "upsample_bilinear2d.default", [("x", r(1, 2, 3, 5))], [[7, 8], True],
     lambda x: F.interpolate(x, size=(7, 8), mode="bilinear", align_corners=True)),
    ("nll_loss_weight_ignore", "nll_loss.default",
     [("x", r(6, 5)), ("t", torch.tensor([0, 4, -100, 2, 2, 1])), ("c_w", r(5).abs())], [1, -100],
     lambda x, t, w: F.nll_loss(x, t, w, ignore_index=-100)),
    ("cross_entropy_smoothing", "cross_entropy_loss.default", [("x", r(6, 5)), ("t", idx(5, 6))], [None, 1, -100, 0.2],
     lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2)),
    ("cross_entropy_2d_sum", "cross_entropy_loss.default", [("x", r(2, 4, 3, 3)), ("t", idx(4, 2, 3, 3))], [None, 2],
     lambda x, t: F.cross_entropy(x, t, reduction="sum")),
    ("cross_entropy_probs", "cross_entropy_loss.default", [("x", r(6, 5)), ("c_p", r(6, 5).softmax(-1))], [],
     lambda x, p: F.cross_entropy(x, p)),
    ("mse_loss", "mse_loss.default", [("x", r(4, 5)), ("y", r(4, 5))], [],
     lambda x, y: F.mse_loss(x, y)),
    ("smooth_l1_loss", "smooth_l1_loss.default", [("x", r(4, 5)), ("y", r(4, 5))], [0, 0.7],
     lambda x, y: F.smooth_l1_loss(x, y, reduction="none", beta=0.7)),
    ("bce_with_logits", "binary_cross_entropy_with_logits.default",
     [("x", r(4, 5)), ("c_y", torch.rand(4, 5, dtype=torch.float64)), ("c_w", r(5).abs()), ("c_pw", r(5).abs())], [],
     lambda x, y, w, pw: F.binary_cross_entropy_with_logits(x, y, w, pos_weight=pw)),
]

# scaled_dot_product_attention against its math definition in float64 (independent of torch's
# fused kernels; core_ops.py and OpInfo compare with torch's own sdpa).
def sdpa_ref(q, k, v, causal):
    s = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    return s.softmax(-1) @ v


cases.append(("sdpa_causal", "scaled_dot_product_attention.default",
              [("q", r(2, 2, 5, 4)), ("k", r(2, 2, 5, 4)), ("v", r(2, 2, 5, 3))], [None, 0.0, True],
              lambda q, k, v: sdpa_ref(q, k, v, True)))

ok = True
for name, op, inputs, args, fn in cases:
    try:
        ok = check(name, op, inputs, args, fn) and ok
    except Exception as e:
        ok = False
        print(f"FAIL {name}: {e}")
print("all nn ops agree with torch" if ok else "MISMATCHES")
sys.exit(0 if ok else 1)
