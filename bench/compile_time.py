"""Cold and cached compile time of the GPT block's training step (issue 27 item 6).

Traces the block (pre-norm, causal SDPA, tanh-GELU MLP; B=8, T=256, C=256, H=8 by default) with
torch's make_fx and the Core ATen decompositions, writes the printout with shape= annotations on
its placeholders, and runs bench_compile_time on it: Stax's forward + backward (joint graph, min
cut, both graphs compiled by cpu_cpp) cold (empty kernel cache) and cached (every kernel on disk),
each in a fresh process, for each compile-thread count asked. With --xla, jax.jit's compile of
the same block's value-and-grad in a fresh process, for a ratio in the same run.

    .venv/bin/python bench/compile_time.py [--build build] [--threads 1,2] [--processes 3]
                                            [--xla] [--keep DIR] [--job]

--job: the forward and backward graphs compiled as one job (Compiler::compile_pair: their kernels
in one parallel batch, as a CompiledFunction with compile_backward_with_forward does).

Needs torch (the project's .venv); --xla needs jax. Prints /proc/loadavg: measure on an idle
machine, or compare CPU times (bench_compile_time prints both).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

B, T, C, H = 8, 256, 256, 8


def shapes(b, t, c):
    return [(b, t, c), (c,), (c,), (3 * c, c), (3 * c,), (c, c), (c,), (c,), (c,), (4 * c, c),
            (4 * c,), (c, 4 * c), (c,)]


def torch_block(b, t, c, h):
    import torch.nn.functional as F

    def block(x, ln1_w, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_w, ln2_b, w_1, b_1, w_2, b_2):
        y = F.layer_norm(x, (c,), ln1_w, ln1_b)
        q, k, v = F.linear(y, w_qkv, b_qkv).split(c, dim=2)
        q, k, v = (z.view(b, t, h, c // h).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + F.linear(a.transpose(1, 2).reshape(b, t, c), w_o, b_o)
        y = F.layer_norm(x, (c,), ln2_w, ln2_b)
        return x + F.linear(F.gelu(F.linear(y, w_1, b_1), approximate="tanh"), w_2, b_2)

    return block


def trace(b, t, c, h):
    """The make_fx printout (Core ATen) with shape=(...) on every placeholder."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    args = [torch.randn(*s) * 0.05 for s in shapes(b, t, c)]
    gm = make_fx(torch_block(b, t, c, h),
                 decomposition_table=torch._decomp.core_aten_decompositions())(*args)
    text = str(gm.graph)
    dims = iter(shapes(b, t, c))

    def annotate(m):
        return "%s shape=(%s) :" % (m.group(1), ", ".join(str(d) for d in next(dims)))

    text = re.sub(r"^(\s*%\w+) :(?= \[num_users=\d+\] = placeholder)", annotate, text, flags=re.M)
    return text


def xla_compile_ms(b, t, c, h):
    """jax.jit(value_and_grad) of the same block, lowered and compiled in a fresh process."""
    code = r'''
import time, jax, jax.numpy as jnp
b, t, c, h = %d, %d, %d, %d
def ln(x, w, bias):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * w + bias
def block(p, x):
    y = ln(x, p[0], p[1]); qkv = y @ p[2].T + p[3]
    q, k, v = jnp.split(qkv, 3, axis=2)
    q, k, v = (z.reshape(b, t, h, c // h).transpose(0, 2, 1, 3) for z in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(c // h)
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -jnp.inf)
    a = jax.nn.softmax(s, -1) @ v
    x = x + a.transpose(0, 2, 1, 3).reshape(b, t, c) @ p[4].T + p[5]
    y = ln(x, p[6], p[7])
    return (x + jax.nn.gelu(y @ p[8].T + p[9], approximate=True) @ p[10].T + p[11]).sum()
shp = [(c,), (c,), (3*c, c), (3*c,), (c, c), (c,), (c,), (c,), (4*c, c), (4*c,), (c, 4*c), (c,)]
p = [jnp.zeros(s, jnp.float32) for s in shp]; x = jnp.zeros((b, t, c), jnp.float32)
f = jax.jit(jax.value_and_grad(block, argnums=(0, 1)))
t0 = time.perf_counter(); f.lower(p, x).compile(); print((time.perf_counter() - t0) * 1e3)
''' % (b, t, c, h)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, JAX_PLATFORMS="cpu"))
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1:] or ["jax failed"]
    return float(out.stdout.strip().splitlines()[-1]), None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(here, "..", "build"))
    ap.add_argument("--threads", default="", help="compile-thread counts, e.g. 1,2")
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--xla", action="store_true", help="also time jax.jit's compile")
    ap.add_argument("--keep", help="write the printout here instead of a temporary file")
    ap.add_argument("--job", action="store_true", help="both graphs compiled as one job")
    ap.add_argument("--shape", default="%d,%d,%d,%d" % (B, T, C, H), help="B,T,C,H")
    a = ap.parse_args()
    b, t, c, h = (int(v) for v in a.shape.split(","))
    t0 = time.perf_counter()
    text = trace(b, t, c, h)
    trace_ms = (time.perf_counter() - t0) * 1e3
    path = a.keep or os.path.join(tempfile.mkdtemp(prefix="stax_gpt_"), "gpt_block.fx")
    with open(path, "w") as f:
        f.write(text)
    print("traced the GPT block (B=%d T=%d C=%d H=%d) with make_fx in %.0f ms: %s"
          % (b, t, c, h, trace_ms, path))
    binary = os.path.join(a.build, "bin", "bench_compile_time")
    cmd = [binary, path, "--processes", str(a.processes)]
    if a.threads:
        cmd += ["--threads", a.threads]
    if a.job:
        cmd += ["--job", "1"]
    sys.stdout.flush()
    rc = subprocess.call(cmd)
    if a.xla:
        ms, err = xla_compile_ms(b, t, c, h)
        print("XLA (jax.jit value_and_grad, lower + compile, fresh process): %s"
              % ("%.1f ms" % ms if ms is not None else "failed: %s" % err))
    return rc


if __name__ == "__main__":
    sys.exit(main())
