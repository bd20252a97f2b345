"""torch.export's graphs imported as printed (issue 29 items 2 and 4, and its Goals' "with and
without Core ATen decompositions"): real modules (issue 25's ResNet BasicBlock in training and in
eval, a GPT-2 block, nn.TransformerEncoderLayer, an embedding + tied head + cross-entropy LM,
nn.LSTM and nn.GRU (one and two bidirectional layers: lstm.input / gru.input)) exported by
torch.export.export (torch 2.x's training IR: aten ops before
functionalization, in-place `add_` on num_batches_tracked and `batch_norm(training=True)` writing
the running statistics) and by .run_decompositions() (the Core ATen IR: functional, the updated
buffers returned as outputs). Each printout runs through `stax run` on the interpreter and
compiled; the user outputs, the buffers the training IR writes (saved by --save as updated
inputs) and the buffer outputs of the Core ATen IR must equal torch eager's on a copy of the
module; where the graph writes no buffer, `stax grad` too (every parameter and float input, of the
sum of the outputs) against torch.autograd. Attention dropout (check_attention_dropout): the
training IR keeps F.scaled_dot_product_attention(dropout_p > 0) as the aten op, whose mask is
Stax's Philox stream, not torch's: shapes, the interpreter against the compiled graph (one mask
for one run seed) and the keep ratio are checked, not torch's values. Skips cleanly (exit 77)
without torch 2.x."""
import copy
import os
import sys
import tempfile

import common

torch = common.import_torch()
if not hasattr(torch, "export"):
    common.skip("torch %s has no torch.export" % torch.__version__)
import fxrun  # noqa: E402
from real_modules import BasicBlock, GPT2Block, TiedLM  # noqa: E402

nn = torch.nn
F = torch.nn.functional
stax = common.stax_binary()
source = os.environ.get("STAX_SOURCE_DIR", os.path.join(common.HERE, "..", ".."))
config = os.path.join(source, "configs", "cpu.yaml")
registry = common.registry(stax)
torch.manual_seed(1)

MODULES = [
    ("resnet_basicblock_train", BasicBlock().train(), [torch.randn(2, 8, 6, 6)]),
    ("resnet_basicblock_eval", BasicBlock().eval(), [torch.randn(2, 8, 6, 6)]),
    ("gpt2_block", GPT2Block(), [torch.randn(2, 8, 32)]),
    ("transformer_encoder_layer",
     nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True), [torch.randn(2, 8, 32)]),
    ("lm_tied_cross_entropy", TiedLM(),
     [torch.randint(0, 50, (2, 8)), torch.randint(0, 50, (2, 8))]),
    ("lstm", nn.LSTM(8, 16, batch_first=True), [torch.randn(2, 5, 8)]),
    ("lstm_2layers_bidirectional_no_bias", nn.LSTM(6, 8, num_layers=2, bidirectional=True,
                                                   bias=False), [torch.randn(4, 3, 6)]),
    ("gru", nn.GRU(8, 16, batch_first=True), [torch.randn(2, 5, 8)]),
    ("gru_2layers_bidirectional", nn.GRU(6, 8, num_layers=2, bidirectional=True),
     [torch.randn(4, 3, 6)]),
]


# Graphs that call an op Stax lacks, with the reason: listed, so the test fails on any other gap
# and on a listed one that runs now (the list cannot go stale). Empty: torch.export's training IR
# keeps nn.LSTM / nn.GRU as lstm.input / gru.input, which Stax expands into their cells.
KNOWN_WAITING = {}


def flatten(v):
    return [v] if isinstance(v, torch.Tensor) else [t for w in v for t in flatten(w)]


def check(name, module, xs, core, tmp, failures, waiting):
    from torch.export.graph_signature import InputKind, OutputKind
    ref = copy.deepcopy(module)
    with torch.no_grad():
        want = flatten(ref(*[x.clone() for x in xs]))
    after = dict(ref.named_buffers())
    ep = torch.export.export(copy.deepcopy(module), tuple(xs))
    if core:
        ep = ep.run_decompositions()
    gm = ep.graph_module
    missing = sorted({o for o in fxrun.targets(gm) if o not in registry})
    if missing:
        waiting.append("%s: waits for %s" % (name, ", ".join(missing)))
        return
    params, buffers = dict(module.named_parameters()), dict(module.named_buffers())
    names, leaves, buffer_of = [], [], {}
    user = iter(xs)
    for spec in ep.graph_signature.input_specs:
        names.append(spec.arg.name)
        if spec.kind == InputKind.PARAMETER:
            leaves.append(params[spec.target].detach().clone())
        elif spec.kind == InputKind.BUFFER:
            leaves.append(buffers[spec.target].clone())
            buffer_of[spec.arg.name] = spec.target
        elif spec.kind == InputKind.USER_INPUT:
            leaves.append(next(user).clone())
        else:
            failures.append("%s: input kind %s not handled by this test" % (name, spec.kind))
            return
    work = os.path.join(tmp, name)
    inputs = fxrun.write_case(work, gm, str(gm.graph), names, leaves)
    written = 0
    # gradients (graphs that write no buffer): of every float output's sum, with respect to the
    # parameters and the float inputs, against torch.autograd on a copy of the module
    kinds = [spec.kind for spec in ep.graph_signature.input_specs]
    wrt = [k for k, kind in enumerate(kinds) if kind in (InputKind.PARAMETER, InputKind.USER_INPUT)
           and leaves[k].is_floating_point()]
    modes = ["interp", "compiled"]
    if all(torch.equal(after[t], buffers[t]) for t in buffer_of.values()):
        modes.append("grad")
        gref = copy.deepcopy(module)
        gparams = dict(gref.named_parameters())
        gx = [x.clone().requires_grad_(x.is_floating_point()) for x in xs]
        outs = [o for o in flatten(gref(*gx)) if o.requires_grad]
        targets = []
        user_in = iter(gx)
        for spec in ep.graph_signature.input_specs:
            t = gparams.get(spec.target) if spec.kind == InputKind.PARAMETER else (
                next(user_in) if spec.kind == InputKind.USER_INPUT else None)
            targets.append(t)
        gwant = torch.autograd.grad(outs, [targets[k] for k in wrt],
                                    [torch.ones_like(o) for o in outs], allow_unused=True)
    for mode in modes:
        r = fxrun.run_stax(stax, mode, work, inputs, config, wrt=[names[k] for k in wrt])
        if r.code != 0:
            failures.append("%s (%s): %s" % (name, mode, r.error()))
            continue
        user_out = iter(want)
        for i, spec in enumerate(ep.graph_signature.output_specs):
            if spec.kind == OutputKind.USER_OUTPUT:
                w = next(user_out)
            elif spec.kind == OutputKind.BUFFER_MUTATION:
                w = after[spec.target]
            else:
                failures.append("%s: output kind %s not handled by this test" % (name, spec.kind))
                return
            diff = fxrun.compare(r.load("out%d.npy" % i), w, grad=mode == "grad")
            if diff:
                failures.append("%s (%s): output %d (%s): %s" % (name, mode, i, spec.target or "user",
                                                                 diff))
        # the training IR writes buffers in place: --save saves each written input as NAME.npy
        for arg, target in buffer_of.items():
            path = os.path.join(r.outdir, arg + ".npy")
            changed = not torch.equal(after[target], buffers[target])
            if not core and changed:
                diff = (fxrun.compare(r.load(arg + ".npy"), after[target])
                        if os.path.exists(path) else "not saved as updated")
                written += mode == "interp"
            elif os.path.exists(path) and not changed:
                diff = "saved as updated, but torch does not write it"
            else:
                diff = None
            if diff:
                failures.append("%s (%s): buffer %s: %s" % (name, mode, target, diff))
        if mode == "grad":
            for k, gw in zip(wrt, gwant):
                gw = torch.zeros_like(leaves[k]) if gw is None else gw
                diff = fxrun.compare(r.load("grad_%s.npy" % names[k]), gw, grad=True)
                if diff:
                    failures.append("%s (grad): gradient of %s: %s" % (name, names[k], diff))
    print("ran %s: %d nodes, %d outputs, %d buffers written in place, %s" % (
        name, len(gm.graph.nodes), len(ep.graph_signature.output_specs), written,
        "%d gradients" % len(wrt) if "grad" in modes else "no gradients (writes buffers)"))


class AttentionDropoutProbe(nn.Module):
    """F.scaled_dot_product_attention(q, k, v, dropout_p): fed q = k = 0 (every probability 1 / S)
    and v = the identity, its output is the dropped probabilities: keep / (S (1 - p))."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p)


def export_and_run(name, module, xs, tmp, failures):
    """Exports `module` (training IR), runs it with `stax run` on the interpreter and compiled:
    -> (graph module, {mode: output 0}) or None after a failure."""
    ep = torch.export.export(copy.deepcopy(module), tuple(xs))
    gm = ep.graph_module
    sdpa = [n for n in gm.graph.nodes if n.op == "call_function"
            and isinstance(n.target, torch._ops.OpOverload)
            and fxrun.overload_name(n.target) == "scaled_dot_product_attention.default"]
    if not sdpa:
        failures.append("%s: the training IR has no scaled_dot_product_attention" % name)
        return None
    params, buffers = dict(module.named_parameters()), dict(module.named_buffers())
    names, leaves, user = [], [], iter(xs)
    for spec in ep.graph_signature.input_specs:
        names.append(spec.arg.name)
        leaves.append((params.get(spec.target) if spec.target in params else
                       buffers[spec.target] if spec.target in buffers else next(user))
                      .detach().clone())
    work = os.path.join(tmp, name)
    inputs = fxrun.write_case(work, gm, str(gm.graph), names, leaves)
    outs = {}
    for mode in ("interp", "compiled"):
        r = fxrun.run_stax(stax, mode, work, inputs, config)
        if r.code != 0:
            failures.append("%s (%s): %s" % (name, mode, r.error()))
            return None
        outs[mode] = r.load("out0.npy")
    return gm, outs


def check_attention_dropout(tmp, failures):
    import numpy as np
    p, b, h, s = 0.3, 2, 4, 64
    # The probe: the values, the keep ratio, one mask on the interpreter and compiled.
    q = torch.zeros(b, h, s, 8)
    v = torch.eye(s).expand(b, h, s, s).contiguous()
    got = export_and_run("attention_dropout_probe", AttentionDropoutProbe(p), [q, q.clone(), v],
                         tmp, failures)
    if got:
        _, outs = got
        kept_value = np.float32(1.0 / s) * np.float32(1.0 / (1.0 - p))
        for mode, o in outs.items():
            if o.shape != (b, h, s, s):
                failures.append("attention_dropout_probe (%s): shape %s" % (mode, o.shape))
                return
            if not np.all((o == 0) | (np.abs(o - kept_value) <= 1e-6 * kept_value)):
                failures.append("attention_dropout_probe (%s): values other than 0 and "
                                "1 / (S (1 - p))" % mode)
        kept = int(np.count_nonzero(outs["interp"]))
        n = outs["interp"].size
        sd = (n * p * (1 - p)) ** 0.5
        if abs(kept - n * (1 - p)) > 5 * sd:
            failures.append("attention_dropout_probe: kept %d of %d, expected %.0f +- %.0f"
                            % (kept, n, n * (1 - p), 5 * sd))
        if not np.array_equal(outs["interp"] != 0, outs["compiled"] != 0):
            failures.append("attention_dropout_probe: the compiled mask differs from the "
                            "interpreter's")
        print("ran attention_dropout_probe: kept %d of %d (p = %g)" % (kept, n, p))
    # A GPT-2 block with attention dropout: torch's shape, finite values, and the compiled graph
    # (fused on cpu_cpp) equals the interpreter (the same mask).
    x = torch.randn(2, 8, 32)
    block = GPT2Block(attn_dropout=0.2)
    got = export_and_run("gpt2_block_attention_dropout", block, [x], tmp, failures)
    if got:
        _, outs = got
        want_shape = tuple(block(x).shape)
        for mode, o in outs.items():
            if o.shape != want_shape or not np.all(np.isfinite(o)):
                failures.append("gpt2_block_attention_dropout (%s): shape %s (torch %s) or not "
                                "finite" % (mode, o.shape, want_shape))
        if not np.allclose(outs["compiled"], outs["interp"], rtol=1e-4, atol=1e-5):
            failures.append("gpt2_block_attention_dropout: compiled differs from the interpreter "
                            "(max %g)" % np.max(np.abs(outs["compiled"] - outs["interp"])))
        with torch.no_grad():
            eval_like = GPT2Block()
            eval_like.load_state_dict(block.state_dict())
            undropped = eval_like(x).numpy()
        if np.allclose(outs["interp"], undropped, rtol=1e-4, atol=1e-5):
            failures.append("gpt2_block_attention_dropout: the output equals the block without "
                            "dropout (nothing dropped)")
        print("ran gpt2_block_attention_dropout: %s" % (want_shape,))


def main():
    tmp = tempfile.mkdtemp(prefix="stax_export_")
    failures, waiting = [], []
    check_attention_dropout(tmp, failures)
    for base, module, xs in MODULES:
        for core, suffix in ((False, ""), (True, "+core_aten")):
            before = len(failures)
            check(base + suffix, module, xs, core, tmp, failures, waiting)
            if len(failures) > before:
                print("FAIL %s" % (base + suffix))
    known = {"%s: waits for %s" % kv for kv in KNOWN_WAITING.items()}
    for w in waiting:
        print("waiting: %s%s" % (w, " (listed)" if w in known else ""))
        if w not in known:
            failures.append("not listed in KNOWN_WAITING: " + w)
    for k in sorted(known - set(waiting)):
        failures.append("listed in KNOWN_WAITING but runs now (remove it): " + k)
    for f in failures:
        print("FAIL " + f)
    total = 2 * len(MODULES)
    print("%d of %d torch.export graphs (torch %s) ran; %d wait for ops Stax lacks; %d failures" % (
        total - len(waiting), total, torch.__version__, len(waiting), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
