"""FX printouts parse and run as PyTorch prints them. With the installed torch, make_fx traces a few
functions (a GELU/softmax layer, an MLP with linear/addmm, pow/floor_divide/where/creation ops,
memory-format and device literals) and a few OpInfo samples; each printout (print(gm.graph):
`graph():`, `[num_users=N]`, `torch.ops.aten.X.overload` targets, `return x` without parentheses,
nested return tuples, get_attr constants) is written as is, its inputs as .npy files, and run by
`stax run` on the interpreter and compiled (cpu_cpp): every output must match torch eager. The same
printouts in torch 1.x's spelling (`[#users=N]`) must parse too, and shapes may come from
--shape instead of .npy inputs. Skips cleanly (exit 77) without torch 2.x."""
import os
import re
import subprocess
import sys
import tempfile

import common

torch = common.import_torch()
import fxrun  # noqa: E402

stax = common.stax_binary()
source = os.environ.get("STAX_SOURCE_DIR", os.path.join(common.HERE, "..", ".."))
config = os.path.join(source, "configs", "cpu.yaml")
registry = common.registry(stax)
F = torch.nn.functional
torch.manual_seed(0)


def gelu_softmax(x, w, b):  # the example
    return torch.softmax(F.gelu(x @ w + b), -1).sum(-1)


def mlp(x, w1, b1, w2, b2):
    h = torch.relu(F.linear(x, w1, b1))
    return torch.log_softmax(F.linear(h, w2, b2), -1).mean()


def arith(x, y):
    a = x ** 2 + 2 ** x - torch.abs(y) ** x
    q = torch.floor_divide(x, y) + torch.remainder(x, 1.5)
    z = torch.zeros(x.shape[0], x.shape[1]) + torch.ones_like(x)
    return torch.where(x > y, a, q) * z, (a.sum(0), q.amax(1))


def layouts(x):
    t = x.t().contiguous()  # clone(..., memory_format=torch.contiguous_format)
    return t.reshape(-1)[:5], F.gelu(t, approximate="tanh").softmax(0)


def constant(x):  # a lifted constant: get_attr + lift_fresh_copy
    return x * torch.tensor([1.0, 2.0, 3.0])


def multi_output(x, w):  # tuple-valued ops and operator.getitem (docs/DECISIONS.md item 20)
    v, i = torch.max(x, 1)
    a, b = torch.split(x, 2, 0)[:2]
    s, si = torch.sort(x, -1, descending=True)
    var, mean = torch.var_mean(x, 1)
    y = F.layer_norm(x, (x.shape[1],), w)
    return v, i, a * b, y, s[:, :2], si, var + mean, sum(torch.unbind(x, 1)), torch.topk(x, 2)


CASES = [
    ("gelu_softmax", gelu_softmax, [torch.randn(4, 8), torch.randn(8, 16), torch.randn(16)]),
    ("mlp", mlp, [torch.randn(5, 8), torch.randn(16, 8), torch.randn(16), torch.randn(3, 16),
                  torch.randn(3)]),
    ("arith", arith, [torch.rand(3, 4) + 0.5, torch.rand(3, 4) + 0.5]),
    ("layouts", layouts, [torch.randn(3, 4)]),
    ("constant", constant, [torch.randn(2, 3)]),
    ("multi_output", multi_output, [torch.randn(4, 5), torch.randn(5)]),
]
# A few OpInfo samples, traced as printouts too.
import warnings  # noqa: E402
warnings.filterwarnings("ignore")
try:
    from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402
except Exception as e:  # its imports need expecttest (pip; scripts/setup.sh installs it)
    common.skip("torch's OpInfo database does not import (%s)" % e)
for op in op_db:
    if op.name in ("add", "sub", "mul", "pow", "softmax", "where", "sum", "clamp", "cat",
                   "permute") and not op.variant_test_name:
        for k, s in enumerate(op.sample_inputs("cpu", torch.float32)):
            if k >= 2:
                break
            if not isinstance(s.input, torch.Tensor) and op.name != "cat":
                continue
            leaves = [s.input] if isinstance(s.input, torch.Tensor) else list(s.input)
            extra = [a for a in s.args if isinstance(a, torch.Tensor)]
            if extra or any(isinstance(v, torch.Tensor) for v in s.kwargs.values()):
                continue  # keep these samples to their first tensor(s)
            if isinstance(s.input, torch.Tensor):
                fn = (lambda op, s: lambda x: op(x, *s.args, **s.kwargs))(op, s)
            else:
                fn = (lambda op, s: lambda *xs: op(list(xs), *s.args, **s.kwargs))(op, s)
            CASES.append(("opinfo_%s_%d" % (op.name, k), fn, [t.detach() for t in leaves]))

tmp = tempfile.mkdtemp(prefix="stax_fx_")
failures = []
ran = 0
for name, fn, leaves in CASES:
    work = os.path.join(tmp, name)
    want = fn(*leaves)
    want = [want] if isinstance(want, torch.Tensor) else [
        t for w in want for t in ([w] if isinstance(w, torch.Tensor) else w)]
    gm, text, names = fxrun.trace(fn, leaves)
    missing = sorted({o for o in fxrun.targets(gm) if o not in registry})
    if missing:
        failures.append("%s: Stax lacks %s" % (name, ", ".join(missing)))
        continue
    inputs = fxrun.write_case(work, gm, text, names, leaves)
    for mode in ("interp", "compiled"):
        r = fxrun.run_stax(stax, mode, work, inputs, config)
        if r.code != 0:
            failures.append("%s (%s): %s\n%s" % (name, mode, r.error(), text))
            continue
        for i, w in enumerate(want):
            diff = fxrun.compare(r.load("out%d.npy" % i), w)
            if diff:
                failures.append("%s (%s): output %d: %s" % (name, mode, i, diff))
    # torch 1.x spelled the user count #users; shapes may come from --shape instead of .npy.
    v1 = os.path.join(work, "graph_v1.stax")
    with open(v1, "w") as f:
        f.write(text.replace("[num_users=", "[#users="))
    shapes = []
    for n, t in zip(names, leaves):
        shapes += ["--shape", "%s=%s:%s" % (n, ",".join(map(str, t.shape)), str(t.dtype)[6:])]
    consts = [a for a in inputs if "_tensor_constant" in a]
    cmd = [stax, "run", v1, "--config", config, "--check"] + shapes
    for c in consts:
        cmd += ["--input", c]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        failures.append("%s (torch 1.x spelling, --shape, --check): %s" % (
            name, (p.stderr + p.stdout).strip().splitlines()[-1]))
    ran += 1
    print("ok %s: %d ops (%s)" % (name, len(fxrun.targets(gm)),
                                   ", ".join(sorted(set(fxrun.targets(gm))))))
for f in failures:
    print("FAIL " + f)
print("%d of %d FX printouts (torch %s) parsed and ran on the interpreter and compiled; %d "
      "failures" % (ran, len(CASES), torch.__version__, len(failures)))
sys.exit(1 if failures else 0)
