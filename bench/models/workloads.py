"""The workloads of the model bench (issue 27 item 7), each one function written twice: for torch
(the reference: run by torch eager and by Inductor, and traced by make_fx into the printout that
Stax compiles) and for JAX (run by XLA). The bench checks every system's outputs against torch
eager's on the same inputs, so a JAX version that computes something else fails the run.

A Workload says how to make its inputs from its shape parameters, which inputs its backward
differentiates (`wrt`), how many of its outputs receive an upstream gradient (`n_diff`: the rest,
e.g. batch norm's running statistics, are outputs without a gradient) and which hand-written C++
kernel exists for it (bench/hand_kernels.h). torch and jax are imported only by the functions
that need them, so that each worker process loads one of the two.
"""
import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np


@dataclass
class Workload:
    name: str
    inputs: Callable  # (params, rng) -> [(arg name, float32 ndarray)]
    torch_fn: Callable  # (params) -> function of torch tensors
    jax_fn: Callable  # (params) -> function of jax arrays
    wrt: Callable = None  # (params) -> argument indices the backward differentiates
    n_diff: int = 1  # leading outputs with an upstream gradient
    hand: Optional[str] = None  # bench/hand_kernels.h kernel of the stax worker


def _normal(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---- GPT block: pre-norm, causal SDPA, tanh-GELU MLP ------------------------------------------

def gpt_inputs(p, rng):
    B, T, C = p["B"], p["T"], p["C"]
    s = 1 / math.sqrt(C)
    return [("x", _normal(rng, (B, T, C))),
            ("ln1_w", 1 + _normal(rng, (C,), 0.1)), ("ln1_b", _normal(rng, (C,), 0.1)),
            ("w_qkv", _normal(rng, (C, 3 * C), s)), ("b_qkv", _normal(rng, (3 * C,), 0.1)),
            ("w_proj", _normal(rng, (C, C), s)), ("b_proj", _normal(rng, (C,), 0.1)),
            ("ln2_w", 1 + _normal(rng, (C,), 0.1)), ("ln2_b", _normal(rng, (C,), 0.1)),
            ("w_fc", _normal(rng, (C, 4 * C), s)), ("b_fc", _normal(rng, (4 * C,), 0.1)),
            ("w_out", _normal(rng, (4 * C, C), 1 / math.sqrt(4 * C))),
            ("b_out", _normal(rng, (C,), 0.1))]


def gpt_torch(p):
    import torch.nn.functional as F
    H = p["H"]

    def gpt_block(x, ln1_w, ln1_b, w_qkv, b_qkv, w_proj, b_proj, ln2_w, ln2_b, w_fc, b_fc,
                  w_out, b_out):
        B, T, C = x.shape
        h = F.layer_norm(x, (C,), ln1_w, ln1_b, 1e-5)
        q, k, v = (h @ w_qkv + b_qkv).split(C, dim=-1)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + a.transpose(1, 2).reshape(B, T, C) @ w_proj + b_proj
        h = F.layer_norm(x, (C,), ln2_w, ln2_b, 1e-5)
        return x + F.gelu(h @ w_fc + b_fc, approximate="tanh") @ w_out + b_out
    return gpt_block


def _jax_layer_norm(x, w, b, eps=1e-5):
    import jax
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + eps) * w + b


def gpt_jax(p):
    import jax
    import jax.numpy as jnp
    H = p["H"]

    def gpt_block(x, ln1_w, ln1_b, w_qkv, b_qkv, w_proj, b_proj, ln2_w, ln2_b, w_fc, b_fc,
                  w_out, b_out):
        B, T, C = x.shape
        h = _jax_layer_norm(x, ln1_w, ln1_b)
        q, k, v = jnp.split(h @ w_qkv + b_qkv, 3, axis=-1)
        q, k, v = (t.reshape(B, T, H, C // H) for t in (q, k, v))  # jax: (B, T, heads, D)
        a = jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")
        x = x + a.reshape(B, T, C) @ w_proj + b_proj
        h = _jax_layer_norm(x, ln2_w, ln2_b)
        return x + jax.nn.gelu(h @ w_fc + b_fc, approximate=True) @ w_out + b_out
    return gpt_block


# ---- ResNet BasicBlock, training mode: conv-bn-relu-conv-bn + residual, relu ------------------
# Batch norm uses the batch's statistics and returns the updated running statistics (momentum
# 0.1, unbiased variance), as nn.BatchNorm2d in train() does; num_batches_tracked is not kept
# (it only counts steps when momentum is set).

def resnet_inputs(p, rng):
    N, C, S = p["N"], p["C"], p["S"]
    s = 1 / math.sqrt(9 * C)
    out = [("x", _normal(rng, (N, C, S, S))), ("w1", _normal(rng, (C, C, 3, 3), s))]
    for k in ("1", "2"):
        if k == "2":
            out.append(("w2", _normal(rng, (C, C, 3, 3), s)))
        out += [("g" + k, 1 + _normal(rng, (C,), 0.1)), ("b" + k, _normal(rng, (C,), 0.1)),
                ("rm" + k, _normal(rng, (C,), 0.1)),
                ("rv" + k, (1 + np.abs(_normal(rng, (C,), 0.1))).astype(np.float32))]
    return out  # x, w1, g1, b1, rm1, rv1, w2, g2, b2, rm2, rv2


def resnet_torch(p):
    import torch.nn.functional as F

    def basic_block(x, w1, g1, b1, rm1, rv1, w2, g2, b2, rm2, rv2):
        # the running statistics are buffers updated in place: work on copies, return them
        rm1, rv1, rm2, rv2 = rm1.clone(), rv1.clone(), rm2.clone(), rv2.clone()
        h = F.conv2d(x, w1, padding=1)
        h = F.relu(F.batch_norm(h, rm1, rv1, g1, b1, training=True, momentum=0.1, eps=1e-5))
        h = F.conv2d(h, w2, padding=1)
        h = F.batch_norm(h, rm2, rv2, g2, b2, training=True, momentum=0.1, eps=1e-5)
        return F.relu(h + x), rm1, rv1, rm2, rv2
    return basic_block


def resnet_jax(p):
    import jax
    import jax.numpy as jnp

    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)),
                                            dimension_numbers=("NCHW", "OIHW", "NCHW"))

    def batch_norm(h, g, b, rm, rv):
        n = h.shape[0] * h.shape[2] * h.shape[3]
        mean = h.mean((0, 2, 3))
        var = ((h - mean[None, :, None, None]) ** 2).mean((0, 2, 3))
        y = ((h - mean[None, :, None, None]) * jax.lax.rsqrt(var + 1e-5)[None, :, None, None]
             * g[None, :, None, None] + b[None, :, None, None])
        return y, 0.9 * rm + 0.1 * mean, 0.9 * rv + 0.1 * var * (n / (n - 1))

    def basic_block(x, w1, g1, b1, rm1, rv1, w2, g2, b2, rm2, rv2):
        h, rm1, rv1 = batch_norm(conv(x, w1), g1, b1, rm1, rv1)
        h, rm2, rv2 = batch_norm(conv(jnp.maximum(h, 0), w2), g2, b2, rm2, rv2)
        return jnp.maximum(h + x, 0), rm1, rv1, rm2, rv2
    return basic_block


# ---- W1-W5 (bench/cpu_bench.cpp) and W2 gelu(x @ W).sum() ----------------------------------

def square_inputs(names, vector_names=()):
    def make(p, rng):
        n = p["n"]
        return ([(a, _normal(rng, (n, n))) for a in names] +
                [(a, _normal(rng, (n,))) for a in vector_names])
    return make


def w1_torch(p):
    return lambda x, y: ((x + y).relu() * 2).sum(-1)


def w1_jax(p):
    import jax.numpy as jnp
    return lambda x, y: (jnp.maximum(x + y, 0) * 2).sum(-1)


def w3_torch(p):
    import torch
    return lambda x: torch.softmax(x, -1)


def w3_jax(p):
    import jax
    return lambda x: jax.nn.softmax(x, -1)


def w4_torch(p):
    return lambda x: (x * x).sum(-1)


def w4_jax(p):
    return lambda x: (x * x).sum(-1)


def w5_torch(p):
    import torch.nn.functional as F
    return lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


def w5_jax(p):
    return lambda x, w, b: _jax_layer_norm(x, w, b)


def w2_inputs(p, rng):
    n = p["n"]
    # lower case `w`: FX names the placeholder of an argument `W` %w_1 with target W_1, which
    # Stax's parser refuses (it wants the two equal)
    return [("x", _normal(rng, (n, n))), ("w", _normal(rng, (n, n), 1 / math.sqrt(n)))]


def w2_torch(p):
    import torch.nn.functional as F
    return lambda x, w: F.gelu(x @ w).sum()


def w2_jax(p):
    import jax
    return lambda x, w: jax.nn.gelu(x @ w, approximate=False).sum()


WORKLOADS = {
    "gpt": Workload("gpt", gpt_inputs, gpt_torch, gpt_jax, wrt=lambda p: list(range(13))),
    # differentiated: x, the conv weights and the batch norms' affine parameters
    "resnet": Workload("resnet", resnet_inputs, resnet_torch, resnet_jax,
                       wrt=lambda p: [0, 1, 2, 3, 6, 7, 8], n_diff=1),
    "W1": Workload("W1", square_inputs(["x", "y"]), w1_torch, w1_jax, hand="W1"),
    "W3": Workload("W3", square_inputs(["x"]), w3_torch, w3_jax, hand="W3"),
    "W4": Workload("W4", square_inputs(["x"]), w4_torch, w4_jax, hand="W4"),
    "W5": Workload("W5", square_inputs(["x"], ["w", "b"]), w5_torch, w5_jax, hand="W5"),
    "W2": Workload("W2", w2_inputs, w2_torch, w2_jax, wrt=lambda p: [0, 1], hand="W2"),
}


@dataclass
class Case:
    """One row of the table: a workload at one size, forward (inference) or forward + backward."""
    id: str  # "gpt_fwdbwd", "W1_4096"
    workload: str
    mode: str  # "fwd" | "fwdbwd"
    params: dict
    label: str
    model: bool = False  # a model block (its compile time is measured cold and cached)
    extra: dict = field(default_factory=dict)

    @property
    def spec(self):
        return WORKLOADS[self.workload]


def cases(quick=False, sizes=None):
    """The bench's cases in table order; `quick`: tiny shapes for smoke tests."""
    gpt = dict(B=2, T=32, C=64, H=4) if quick else dict(B=8, T=256, C=256, H=8)
    res = dict(N=2, C=8, S=8) if quick else dict(N=8, C=64, S=32)
    sizes = sizes or ([256] if quick else [4096, 8192])
    w2 = dict(n=128 if quick else 1024)
    out = [Case("gpt_fwd", "gpt", "fwd", gpt, "GPT block forward", model=True),
           Case("gpt_fwdbwd", "gpt", "fwdbwd", gpt, "GPT block fwd + bwd", model=True),
           Case("resnet_step", "resnet", "fwdbwd", res, "ResNet BasicBlock train step",
                model=True)]
    for w in ("W1", "W3", "W4", "W5"):
        for n in sizes:
            out.append(Case("%s_%d" % (w, n), w, "fwd", dict(n=n), "%s %d²" % (w, n)))
    out.append(Case("W2", "W2", "fwdbwd", w2, "gelu(x@W).sum() fwd + bwd %d³" % w2["n"],
                    model=True))
    return out
