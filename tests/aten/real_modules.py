"""Real modules as torch 2.x hands them to a backend (issue 29 item 7, issue 25's list): a ResNet
BasicBlock (batch norm in training), a GPT-2 block with scaled_dot_product_attention,
nn.TransformerEncoderLayer, a ConvNeXt block, a diffusion-UNet residual block, an embedding +
tied head + cross-entropy LM, an MLP-Mixer block, nn.LSTM and nn.GRU, each called by functional_call on
its parameters and buffers and traced by make_fx, without and with Core ATen decompositions. The
printout is imported as is; `stax run` (interpreter and compiled) and `stax grad` (the float
inputs and every parameter) must match torch eager: outputs, updated buffers (batch norm's
running statistics, returned as marked updates: docs/functionalization.md) and gradients.

A trace calling an op Stax lacks is listed with the ops ("waits for ..."), not failed: those are
issue 29 items 1 and 5 (aten-ops); once registered, the case runs. A dead call of a missing op
(batch norm's empty.memory_format reserve) is removed first, with a note. Skips cleanly (exit 77)
without torch 2.x."""
import os
import sys
import tempfile

import common

torch = common.import_torch()
import fxrun  # noqa: E402
from torch._decomp import core_aten_decompositions  # noqa: E402
from torch.func import functional_call  # noqa: E402

nn = torch.nn
F = torch.nn.functional
stax = common.stax_binary()
source = os.environ.get("STAX_SOURCE_DIR", os.path.join(common.HERE, "..", ".."))
config = os.path.join(source, "configs", "cpu.yaml")
registry = common.registry(stax)
torch.manual_seed(0)


class BasicBlock(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + x)


class GPT2Block(nn.Module):
    def __init__(self, d=32, h=4, attn_dropout=0.0):
        super().__init__()
        self.h, self.attn_dropout = h, attn_dropout
        self.ln1, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln2, self.fc, self.out = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, 2)
        q, k, v = [z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v)]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.attn_dropout)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class ConvNeXtBlock(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.dw, self.ln = nn.Conv2d(c, c, 7, padding=3, groups=c), nn.LayerNorm(c)
        self.p1, self.p2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.full((c,), 0.1))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.p2(F.gelu(self.p1(self.ln(y)))) * self.gamma
        return x + y.permute(0, 3, 1, 2)


class UNetResBlock(nn.Module):
    def __init__(self, c=16, t=32):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(4, c), nn.Conv2d(c, c, 3, padding=1)
        self.t = nn.Linear(t, c)
        self.n2, self.c2 = nn.GroupNorm(4, c), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x))) + self.t(F.silu(temb))[:, :, None, None]
        return x + self.c2(F.silu(self.n2(h)))


class TiedLM(nn.Module):
    def __init__(self, v=50, d=16):
        super().__init__()
        self.emb, self.ln = nn.Embedding(v, d), nn.LayerNorm(d)

    def forward(self, idx, target):
        logits = self.ln(self.emb(idx)) @ self.emb.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), target.view(-1))


class MixerBlock(nn.Module):
    def __init__(self, p=16, c=32):
        super().__init__()
        self.l1, self.t1, self.t2 = nn.LayerNorm(c), nn.Linear(p, 2 * p), nn.Linear(2 * p, p)
        self.l2, self.c1, self.c2 = nn.LayerNorm(c), nn.Linear(c, 2 * c), nn.Linear(2 * c, c)

    def forward(self, x):
        x = x + self.t2(F.gelu(self.t1(self.l1(x).transpose(1, 2)))).transpose(1, 2)
        return x + self.c2(F.gelu(self.c1(self.l2(x))))


MODULES = [
    ("resnet_basicblock", BasicBlock(), [torch.randn(2, 8, 8, 8)]),
    ("gpt2_block", GPT2Block(), [torch.randn(2, 8, 32)]),
    ("transformer_encoder_layer",
     nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True), [torch.randn(2, 8, 32)]),
    ("convnext_block", ConvNeXtBlock(), [torch.randn(2, 16, 8, 8)]),
    ("unet_resblock", UNetResBlock(), [torch.randn(2, 16, 8, 8), torch.randn(2, 32)]),
    ("lm_tied_cross_entropy", TiedLM(),
     [torch.randint(0, 50, (2, 8)), torch.randint(0, 50, (2, 8))]),
    ("mlp_mixer_block", MixerBlock(), [torch.randn(2, 16, 32)]),
    ("lstm", nn.LSTM(8, 16, batch_first=True), [torch.randn(2, 5, 8)]),
    # nn.GRU has no oneDNN layer: its trace unrolls the cell (addmm, unsafe_split, in-place
    # add_ / sigmoid_ / tanh_ / mul_, transpose_ on the stacked outputs)
    ("gru", nn.GRU(8, 16, batch_first=True), [torch.randn(2, 5, 8)]),
    ("gru_2layers_bidirectional", nn.GRU(6, 8, num_layers=2, bidirectional=True),
     [torch.randn(4, 2, 6)]),
]


def flatten(v):
    return [v] if isinstance(v, torch.Tensor) else [t for w in v for t in flatten(w)]


def check(name, module, xs, decompositions, tmp, failures, notes, waiting):
    module.train()
    keys = [k for k, _ in module.named_parameters()] + [k for k, _ in module.named_buffers()]
    n_params = len(keys) - len(list(module.buffers()))
    state = [p.detach().clone() for p in module.parameters()] + [b.clone() for b in module.buffers()]
    leaves = list(xs) + state

    def fn(*a):
        return functional_call(module, dict(zip(keys, a[len(xs):])), tuple(a[:len(xs)]))

    after = [t.clone() for t in leaves]
    want = flatten(fn(*after))
    written = [k for k in range(len(leaves)) if not torch.equal(after[k], leaves[k])]
    wrt = [k for k in range(len(xs) + n_params) if leaves[k].dtype.is_floating_point]
    args = [t.clone().requires_grad_(k in wrt) for k, t in enumerate(leaves)]
    outs = [o for o in flatten(fn(*args)) if o.requires_grad]
    grads = torch.autograd.grad(outs, [args[k] for k in wrt], [torch.ones_like(o) for o in outs],
                                allow_unused=True)

    gm = fxrun.make_fx(fn, decomposition_table=decompositions)(*[t.clone() for t in leaves])
    missing = sorted({o for o in fxrun.targets(gm) if o not in registry})
    if missing:
        gm.graph.eliminate_dead_code()
        gm.recompile()
        still = sorted({o for o in fxrun.targets(gm) if o not in registry})
        if still:
            waiting.append("%s: waits for %s" % (name, ", ".join(still)))
            return
        notes.append("%s: removed dead calls of %s" % (name, ", ".join(missing)))
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    work = os.path.join(tmp, name)
    inputs = fxrun.write_case(work, gm, str(gm.graph), names, leaves)
    for mode in ("interp", "compiled", "grad"):
        r = fxrun.run_stax(stax, mode, work, inputs, config, wrt=[names[k] for k in wrt])
        if r.code != 0:
            failures.append("%s (%s): %s" % (name, mode, r.error()))
            continue
        for i, w in enumerate(want):
            diff = fxrun.compare(r.load("out%d.npy" % i), w, grad=mode == "grad")
            if diff:
                failures.append("%s (%s): output %d: %s" % (name, mode, i, diff))
        for k in written:
            path = os.path.join(r.outdir, names[k] + ".npy")
            diff = (fxrun.compare(r.load(names[k] + ".npy"), after[k], grad=mode == "grad")
                    if os.path.exists(path) else "not saved as updated")
            if diff:
                failures.append("%s (%s): updated buffer %s: %s" % (name, mode, names[k], diff))
        if mode == "grad":
            for k, g in zip(wrt, grads):
                g = torch.zeros_like(leaves[k]) if g is None else g
                diff = fxrun.compare(r.load("grad_%s.npy" % names[k]), g, grad=True)
                if diff:
                    failures.append("%s (grad): gradient of %s: %s" % (name, names[k], diff))
    print("ran %s: %d nodes, %d gradients, %d updated buffers" % (
        name, len(gm.graph.nodes), len(wrt), len(written)))


def main():
    tmp = tempfile.mkdtemp(prefix="stax_modules_")
    failures, notes, waiting = [], [], []
    for base, module, xs in MODULES:
        for decompositions, suffix in ((None, ""), (core_aten_decompositions(), "+core_aten")):
            before = len(failures)
            check(base + suffix, module, xs, decompositions, tmp, failures, notes, waiting)
            if len(failures) > before:
                print("FAIL %s" % (base + suffix))
    for n in notes:
        print("note: " + n)
    for w in waiting:
        print("waiting: " + w)
    for f in failures:
        print("FAIL " + f)
    total = 2 * len(MODULES)
    print("%d of %d traces (torch %s) ran; %d wait for ops Stax lacks; %d failures" % (
        total - len(waiting), total, torch.__version__, len(waiting), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
