"""In-place ops in real traces (issue 29 item 2; core/graph/functionalize.h). torch 2.x make_fx
traces of functions that write their inputs (add_, mul_, copy_, fill_, zero_, clamp_, writes
through views) and of nn.BatchNorm2d / nn.BatchNorm1d in training mode (running_mean and
running_var updated by native_batch_norm, or by copy_ after a decomposition; num_batches_tracked
by add_) are imported as printed. Each runs through `stax run` (interpreter and compiled) and
`stax grad`: the returned values, every input an in-place op wrote (saved by --save as
DIR/NAME.npy, marked `value -> NAME` in the graph's return) and the gradients must equal torch
eager's, and an input nothing writes must not be saved as updated. Skips cleanly (exit 77)
without torch 2.x."""
import os
import subprocess
import sys
import tempfile

import common

torch = common.import_torch()
import fxrun  # noqa: E402
from torch._decomp import get_decompositions  # noqa: E402
from torch.func import functional_call  # noqa: E402

stax = common.stax_binary()
source = os.environ.get("STAX_SOURCE_DIR", os.path.join(common.HERE, "..", ".."))
config = os.path.join(source, "configs", "cpu.yaml")
registry = common.registry(stax)
aten = torch.ops.aten
torch.manual_seed(0)


def inplace_chain(x, y, z):  # add_, mul_ on inputs; copy_ with a broadcast source
    x.add_(y, alpha=2)
    y.mul_(x)
    z.copy_(x[0])
    return x * z, y.sum(0)


def through_views(x, y):  # writes through slice / select / transpose views of an input
    x[1:3].mul_(2)
    x[0].zero_()
    x.t()[0].add_(y[0])
    return (x + 1).sum(1)


def fill_clamp(x, y):  # fill_, clamp_ on a temporary and on an input; an input read twice
    t = x * 2
    t.clamp_(-1, 1)
    y.fill_(0.5)
    return t + y, x.sigmoid_()


def bn_module(cls, c, train=True):
    m = cls(c)
    with torch.no_grad():
        m.weight.uniform_(0.5, 1.5)
        m.bias.uniform_(-0.5, 0.5)
        m.running_mean.uniform_(-1, 1)
        m.running_var.uniform_(0.5, 2)
    return m.train(train)


def module_case(name, module, x, decompositions=None):
    """(name, fn, leaves, wrt): the module called by functional_call on its parameters and
    buffers as inputs (as a backend receives them)."""
    keys = [k for k, _ in module.named_parameters()] + [k for k, _ in module.named_buffers()]
    state = [p.detach().clone() for p in module.parameters()] + [b.clone() for b in module.buffers()]
    n_params = len(list(module.parameters()))

    def fn(x, *state):
        return functional_call(module, dict(zip(keys, state)), (x,))
    return (name, fn, [x] + state, list(range(1 + n_params)), decompositions)


BN_DECOMPS = get_decompositions([aten.native_batch_norm, aten._native_batch_norm_legit,
                                 aten._native_batch_norm_legit_functional])
CASES = [
    ("inplace_chain", inplace_chain, [torch.randn(3, 4), torch.randn(3, 4), torch.randn(4)],
     [], None),
    ("through_views", through_views, [torch.randn(4, 4), torch.randn(4, 4)], [1], None),
    ("fill_clamp", fill_clamp, [torch.randn(3, 4), torch.randn(3, 4)], [], None),
    module_case("batchnorm2d_train", bn_module(torch.nn.BatchNorm2d, 3), torch.randn(4, 3, 5, 5)),
    module_case("batchnorm2d_train_decomposed", bn_module(torch.nn.BatchNorm2d, 3),
                torch.randn(4, 3, 5, 5), BN_DECOMPS),
    module_case("batchnorm1d_train", bn_module(torch.nn.BatchNorm1d, 6), torch.randn(8, 6)),
    module_case("batchnorm2d_eval", bn_module(torch.nn.BatchNorm2d, 3, train=False),
                torch.randn(2, 3, 4, 4)),
]


def flatten(v):
    return [v] if isinstance(v, torch.Tensor) else [t for w in v for t in flatten(w)]


def trace(name, fn, leaves, decompositions, notes):
    """make_fx's printout as is; when it holds unused calls of ops Stax lacks (the
    empty.memory_format batch norm's reserve records, aten-ops adds it), the dead code is
    removed first (FX keeps the in-place calls: their schemas mutate) and the note says so."""
    gm = fxrun.make_fx(fn, decomposition_table=decompositions)(*[t.clone() for t in leaves])
    missing = sorted({o for o in fxrun.targets(gm) if o not in registry})
    if missing:
        gm.graph.eliminate_dead_code()
        gm.recompile()
        notes.append("%s: removed dead calls of %s (not in Stax yet)" % (name, ", ".join(missing)))
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    return gm, str(gm.graph), names


def check_case(name, fn, leaves, wrt, decompositions, tmp, failures, notes):
    work = os.path.join(tmp, name)
    # torch eager on copies: the outputs, the inputs as the call leaves them, the gradients.
    after = [t.clone() for t in leaves]
    want = flatten(fn(*after))
    written = [k for k in range(len(leaves)) if not torch.equal(after[k], leaves[k])]
    grads = None
    if wrt:
        args = [t.clone().requires_grad_(k in wrt) for k, t in enumerate(leaves)]
        outs = flatten(fn(*[a if k not in wrt else a * 1 for k, a in enumerate(args)]))
        outs = [o for o in outs if o.requires_grad]
        grads = torch.autograd.grad(outs, [args[k] for k in wrt],
                                    [torch.ones_like(o) for o in outs], allow_unused=True)
    gm, text, names = trace(name, fn, leaves, decompositions, notes)
    missing = sorted({o for o in fxrun.targets(gm) if o not in registry})
    if missing:
        failures.append("%s: Stax lacks %s" % (name, ", ".join(missing)))
        return
    inputs = fxrun.write_case(work, gm, text, names, leaves)
    shapes = []
    for n, t in zip(names, leaves):
        shapes += ["--shape", "%s=%s:%s" % (n, ",".join(map(str, t.shape)), str(t.dtype)[6:])]
    p = subprocess.run([stax, "check", os.path.join(work, "graph.stax")] + shapes,
                       capture_output=True, text=True)
    ret = [l for l in p.stdout.splitlines() if l.strip().startswith("return")]
    marked = sorted(s.split("->")[1].strip().rstrip(",)") for s in ret[0].split(", ")
                    if "->" in s) if ret else []
    if p.returncode != 0 or marked != sorted(names[k] for k in written):
        failures.append("%s: stax check: return %s, the inputs torch writes: %s; %s" % (
            name, ret, [names[k] for k in written], p.stderr.strip()))
        return
    for mode in ("interp", "compiled", "grad"):
        if mode == "grad" and not wrt:
            continue
        r = fxrun.run_stax(stax, mode, work, inputs, config, wrt=[names[k] for k in wrt])
        if r.code != 0:
            failures.append("%s (%s): %s\n%s" % (name, mode, r.error(), text))
            continue
        for i, w in enumerate(want):
            diff = fxrun.compare(r.load("out%d.npy" % i), w, grad=mode == "grad")
            if diff:
                failures.append("%s (%s): output %d: %s" % (name, mode, i, diff))
        for k, n in enumerate(names):
            saved = os.path.exists(os.path.join(r.outdir, n + ".npy"))
            if k not in written:
                if saved:
                    failures.append("%s (%s): input %s saved as updated; torch leaves it" % (
                        name, mode, n))
                continue
            if not saved:
                failures.append("%s (%s): the update of input %s is not saved" % (name, mode, n))
                continue
            diff = fxrun.compare(r.load(n + ".npy"), after[k], grad=mode == "grad")
            if diff:
                failures.append("%s (%s): updated input %s: %s" % (name, mode, n, diff))
        if mode == "grad":
            for k, g in zip(wrt, grads):
                g = torch.zeros_like(leaves[k]) if g is None else g
                diff = fxrun.compare(r.load("grad_%s.npy" % names[k]), g, grad=True)
                if diff:
                    failures.append("%s (grad): gradient of %s: %s" % (name, names[k], diff))
    print("ok %s: writes %s; %s" % (name, [names[k] for k in written] or "nothing",
                                    ", ".join(sorted(set(fxrun.targets(gm))))))


def main():
    tmp = tempfile.mkdtemp(prefix="stax_functionalize_")
    failures, notes = [], []
    for name, fn, leaves, wrt, decompositions in CASES:
        before = len(failures)
        check_case(name, fn, leaves, wrt, decompositions, tmp, failures, notes)
        if len(failures) > before:
            print("FAIL %s" % name)
    for n in notes:
        print("note: " + n)
    for f in failures:
        print("FAIL " + f)
    print("%d cases (torch %s), %d failures" % (len(CASES), torch.__version__, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
