"""The ops that complete Core ATen and the forms real traces carry (issue 29 items 1, 3-5), against
torch 2.x: each case is a function traced by make_fx — forward and backward (torch.autograd.grad
inside the traced function, so the graph holds the *_backward ops AOTAutograd emits) — whose FX
printout runs through `stax run` on the interpreter and compiled (cpu_cpp); every output must match
torch eager. A case whose graph lacks the op it is about fails (the trace changed). Skips cleanly
(exit 77) without torch 2.x."""
import os
import sys
import tempfile

import common

torch = common.import_torch()
if not hasattr(torch, "Tag"):
    common.skip("torch %s is older than 2.x (the reference of this test)" % torch.__version__)
import fxrun  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

stax = common.stax_binary()
source = os.environ.get("STAX_SOURCE_DIR", os.path.join(common.HERE, "..", ".."))
config = os.path.join(source, "configs", "cpu.yaml")
F = torch.nn.functional
nn = torch.nn


def grads(f, *params):
    """A function of the inputs returning f's outputs and the gradients of sum(out * weights)."""
    def step(*xs):
        out = f(*xs)
        outs = out if isinstance(out, tuple) else (out,)
        loss = sum((o * torch.linspace(0.5, 1.5, o.numel()).reshape(o.shape)).sum()
                   for o in outs if o.is_floating_point())
        ins = [x for x in xs if x.is_floating_point() and x.requires_grad] + list(params)
        return outs + tuple(torch.autograd.grad(loss, ins))
    return step


def rnd(*shape, grad=True, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype).requires_grad_(grad)


def module_case(m, x):
    """The module as a function of (x, *parameters), so parameters are graph inputs (their
    gradients are outputs) rather than constants of the trace."""
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for _, p in m.named_parameters()]

    def f(x, *ps):
        out = torch.func.functional_call(m, dict(zip(names, ps)), (x,))
        return out[0] if isinstance(out, tuple) else out
    return grads(f), [x] + params


torch.manual_seed(0)
CASES = []


def case(name, ops, fn, *inputs, mode="real", ref=None):
    """ref: torch's values where fn has no CPU kernel (traced with mode="fake")."""
    CASES.append((name, ops, fn, inputs, mode, ref))


# ---- the *_backward ops (item 4) through real modules
for name, ops, m, shape in [
        ("conv2d", ["convolution_backward"], nn.Conv2d(3, 4, 3, padding=1), (2, 3, 6, 6)),
        ("conv1d_strided", ["convolution_backward"], nn.Conv1d(3, 4, 3, stride=2), (2, 3, 9)),
        ("conv_transpose2d", ["convolution_backward"], nn.ConvTranspose2d(3, 2, 3, stride=2), (1, 3, 4, 4)),
        ("conv2d_groups", ["convolution_backward"], nn.Conv2d(4, 4, 3, groups=2, bias=False), (1, 4, 5, 5)),
        ("layer_norm", ["native_layer_norm_backward"], nn.LayerNorm(8), (4, 5, 8)),
        ("group_norm", ["native_group_norm_backward"], nn.GroupNorm(2, 4), (3, 4, 5, 5)),
        ("max_pool2d", ["max_pool2d_with_indices_backward"], nn.MaxPool2d(2), (2, 3, 6, 6)),
        ("max_pool2d_pad", ["max_pool2d_with_indices_backward"], nn.MaxPool2d(3, 2, 1), (2, 3, 7, 7)),
        ("max_pool3d", ["max_pool3d_with_indices_backward"], nn.MaxPool3d(2), (1, 2, 4, 4, 4)),
        ("avg_pool2d", ["avg_pool2d_backward"], nn.AvgPool2d(3, 2, 1), (2, 3, 7, 7)),
        ("avg_pool3d", ["avg_pool3d_backward"], nn.AvgPool3d(2), (1, 2, 4, 4, 4)),
        ("adaptive_avg_pool2d", ["_adaptive_avg_pool2d_backward"], nn.AdaptiveAvgPool2d((3, 3)), (2, 3, 7, 7)),
        ("adaptive_avg_pool3d", ["_adaptive_avg_pool3d_backward"], nn.AdaptiveAvgPool3d(2), (1, 2, 5, 5, 5)),
        ("adaptive_max_pool2d", ["adaptive_max_pool2d_backward"], nn.AdaptiveMaxPool2d(3), (2, 3, 7, 7)),
        ("reflection_pad2d", ["reflection_pad2d_backward"], nn.ReflectionPad2d(2), (2, 3, 5, 5)),
        ("reflection_pad3d", ["reflection_pad3d", "reflection_pad3d_backward"], nn.ReflectionPad3d(1), (1, 2, 3, 4, 4)),
        ("replication_pad1d", ["replication_pad1d_backward"], nn.ReplicationPad1d(2), (2, 3, 5)),
        ("replication_pad3d", ["replication_pad3d", "replication_pad3d_backward"], nn.ReplicationPad3d(1), (1, 2, 3, 4, 4)),
        ("upsample_nearest2d", ["upsample_nearest2d_backward"], nn.Upsample(scale_factor=2), (1, 2, 3, 3)),
        ("upsample_bilinear2d", ["upsample_bilinear2d_backward"], nn.Upsample(scale_factor=2, mode="bilinear"), (1, 2, 3, 3)),
        ("log_sigmoid", ["log_sigmoid_backward"], nn.LogSigmoid(), (4, 6)),
        ("glu", ["glu_backward"], nn.GLU(), (4, 6)),
        ("hardshrink", ["hardshrink_backward"], nn.Hardshrink(), (4, 6)),
        ("softshrink", ["softshrink_backward"], nn.Softshrink(), (4, 6)),
        ("prelu", ["_prelu_kernel", "_prelu_kernel_backward"], nn.PReLU(3), (2, 3, 4)),
]:
    f, inputs = module_case(m, rnd(*shape))
    case(name, ops, f, *inputs)

t46 = rnd(4, 6, grad=False)
case("batch_norm_train", ["native_batch_norm", "native_batch_norm_backward"],
     grads(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)),
     rnd(4, 3, 5, 5), rnd(3), rnd(3))
case("mse_loss", ["mse_loss_backward"], grads(lambda x, t: F.mse_loss(x, t)), rnd(4, 6), t46)
case("smooth_l1_loss", ["smooth_l1_loss_backward"],
     grads(lambda x, t: F.smooth_l1_loss(x, t, beta=0.5)), rnd(4, 6), t46)
case("huber_loss", ["huber_loss_backward"], grads(lambda x, t: F.huber_loss(x, t, delta=0.7)),
     rnd(4, 6), t46)
case("soft_margin_loss", ["soft_margin_loss_backward"],
     grads(lambda x, t: F.soft_margin_loss(x, t)), rnd(4, 6), t46.sign())
case("bce", ["binary_cross_entropy_backward"],
     grads(lambda x, t: F.binary_cross_entropy(torch.sigmoid(x), t)), rnd(4, 6),
     torch.rand(4, 6).round())
case("nll_loss2d", ["nll_loss2d_forward", "nll_loss2d_backward"],
     grads(lambda x: F.cross_entropy(x, torch.tensor([[[0, 2], [1, 1]], [[2, 0], [0, 1]]]))), rnd(2, 3, 2, 2))
case("cdist", ["_cdist_backward"], grads(lambda x, y: torch.cdist(x, y)), rnd(3, 6), t46)
case("pdist", ["_pdist_backward"], grads(lambda x: F.pdist(x)), rnd(4, 6))
case("select_slice", ["select_backward", "slice_backward"], grads(lambda x: x[:, 1] + x[1:3].sum(0)), rnd(4, 4))
case("diagonal_unfold", ["diagonal_backward", "unfold_backward"],
     grads(lambda x: x.diagonal().sum() + x.unfold(1, 2, 1).sum(-1).mean()), rnd(4, 4))

# ---- Core ATen ops (item 1)
case("any_dims", ["any.dims"], lambda x: (torch.ops.aten.any.dims(x > 0.5, [0, 2]),
                                          torch.ops.aten.any.dims(x > 0.5, []),
                                          torch.ops.aten.any.dims(x > 0.5, None, True)), rnd(2, 3, 4, grad=False))
case("empty_fill_copy", ["empty.memory_format", "fill.Scalar", "copy"],
     lambda x: (torch.ops.aten.fill.Scalar(x, 1.5),
                torch.ops.aten.copy(torch.empty(3, 4, dtype=torch.float64), x[0])), rnd(2, 4, grad=False))
case("atan2_out", ["atan2.out"],
     lambda x, y: torch.ops.aten.atan2.out(x, y, out=torch.empty(3, 4, dtype=torch.float64)),
     rnd(3, 4, grad=False), rnd(4, grad=False))
case("nonzero", ["nonzero"], lambda x: torch.ops.aten.nonzero(x > 0.3), rnd(3, 4, grad=False))
case("local_scalar_dense", ["_local_scalar_dense"],
     lambda x, t: x * t.item(), rnd(3, 4, grad=False), torch.tensor(2.5), mode="symbolic")
case("sym_size", ["sym_size.int"], lambda x: x.view(x.shape[0], -1).sum(0) + x.shape[1],
     rnd(3, 2, 2, grad=False), mode="symbolic")
case("dropout_eval", ["native_dropout"],
     lambda x: torch.ops.aten.native_dropout(x, 0.3, False), rnd(3, 4, grad=False))

# col2im / im2col (nn.Fold / nn.Unfold), grid_sampler_2d (F.grid_sample), _embedding_bag
case("fold", ["col2im", "im2col"],
     grads(lambda x: F.fold(x, (5, 6), (2, 3), padding=1, stride=(1, 2))), rnd(2, 12, 18))
case("fold_dilated_unbatched", ["col2im", "im2col"],
     grads(lambda x: F.fold(x, (7, 7), 3, dilation=2, padding=1, stride=2)), rnd(18, 9))
case("unfold", ["im2col", "col2im"],
     grads(lambda x: F.unfold(x, (3, 2), dilation=(1, 2), padding=(1, 0), stride=2)), rnd(2, 3, 6, 7))
grid = (torch.rand(2, 4, 3, 2) * 2.6 - 1.3).requires_grad_(True)  # some points outside [-1, 1]
for mode in ("bilinear", "nearest"):
    for pad in ("zeros", "border", "reflection"):
        for corners in (False, True):
            ops = ["grid_sampler_2d"] + (["grid_sampler_2d_backward"] if mode == "bilinear" else [])
            case("grid_sample_%s_%s_%s" % (mode, pad, "corners" if corners else "centers"), ops,
                 grads(lambda x, g, m=mode, p=pad, a=corners: F.grid_sample(
                     x, g, mode=m, padding_mode=p, align_corners=a)),
                 rnd(2, 3, 4, 5), grid if mode == "bilinear" else grid.detach())
bag_idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0])
bag_off = torch.tensor([0, 2, 2, 5])
for mode in ("sum", "mean", "max"):
    for pad in (None, 4):
        m = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=pad)
        w = m.weight.detach().clone().requires_grad_(True)
        case("embedding_bag_%s%s" % (mode, "_pad" if pad is not None else ""),
             ["_embedding_bag", "_embedding_bag_backward"],
             grads(lambda i, o, w, m=m: torch.func.functional_call(m, {"weight": w}, (i, o))),
             bag_idx, bag_off, w)
case("embedding_bag_psw_last_offset", ["_embedding_bag", "_embedding_bag_backward"],
     grads(lambda i, o, w, s: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s,
                                              include_last_offset=True)),
     bag_idx, torch.tensor([0, 2, 2, 5, 9]), rnd(10, 3), rnd(9))
case("embedding_bag_aux", ["_embedding_bag"],
     lambda w, i, o: torch.ops.aten._embedding_bag(w, i, o, False, 2, False, None, False, 4),
     rnd(10, 3, grad=False), bag_idx, bag_off)

# ---- the internal forms of scaled_dot_product_attention (item 5), routed to sdpa
qkv = [rnd(2, 3, 5, 4), rnd(2, 3, 6, 4), rnd(2, 3, 6, 4)]
case("sdpa_flash_cpu", ["_scaled_dot_product_flash_attention_for_cpu",
                        "_scaled_dot_product_flash_attention_for_cpu_backward"],
     grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v)), *qkv)
case("sdpa_flash_cpu_causal", ["_scaled_dot_product_flash_attention_for_cpu",
                               "_scaled_dot_product_flash_attention_for_cpu_backward"],
     grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)),
     *qkv)
case("sdpa_flash_cpu_mask", ["_scaled_dot_product_flash_attention_for_cpu",
                             "_scaled_dot_product_flash_attention_for_cpu_backward"],
     grads(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)),
     *qkv, rnd(5, 6, grad=False))
case("sdpa_flash_cpu_logsumexp", ["_scaled_dot_product_flash_attention_for_cpu"],
     lambda q, k, v, m: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
         q, k, v, attn_mask=m, scale=0.7),
     *[t.detach() for t in qkv], torch.rand(5, 6).masked_fill(torch.rand(5, 6) > 0.7, float("-inf")))



def heads_split_attention(x):
    """GPT-2's attention: q, k, v split from one projection, heads made a dim, and the output's
    heads merged by a view, legal only on torch's output layout (the query's dim order, here
    (B, L, H, E) memory); the backward trace views the gradients of torch's layout too."""
    b, t, c3 = x.shape
    q, k, v = [z.view(b, t, 3, c3 // 9).transpose(1, 2) for z in x.split(c3 // 3, 2)]
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).view(b, t, c3 // 3)


case("sdpa_flash_cpu_heads_split", ["_scaled_dot_product_flash_attention_for_cpu",
                                    "_scaled_dot_product_flash_attention_for_cpu_backward"],
     grads(heads_split_attention), rnd(2, 5, 36))


def efficient_ref(q, k, v, b):
    """torch's values of _scaled_dot_product_efficient_attention (a CUDA kernel) on the CPU."""
    s = (q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5 + b
    lse = torch.logsumexp(s, -1)
    pad = (lse.shape[-1] + 31) // 32 * 32 - lse.shape[-1]
    return (F.scaled_dot_product_attention(q, k, v, attn_mask=b),
            F.pad(lse, (0, pad), value=float("inf")), torch.tensor(0), torch.tensor(0))


case("sdpa_efficient", ["_scaled_dot_product_efficient_attention"],
     lambda q, k, v, b: torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, b, True),
     *[t.detach() for t in qkv], rnd(5, 6, grad=False), mode="fake", ref=efficient_ref)


# nn.LSTM without decompositions: mkldnn_rnn_layer per layer and direction (item 5)
for name, m, shape in [
        ("lstm", nn.LSTM(4, 5), (3, 2, 4)),
        ("lstm_batch_first_2layers", nn.LSTM(4, 5, num_layers=2, batch_first=True), (2, 3, 4)),
        ("lstm_bidirectional", nn.LSTM(3, 4, bidirectional=True), (5, 2, 3)),
        ("lstm_no_bias", nn.LSTM(3, 4, bias=False), (4, 2, 3))]:
    f, inputs = module_case(m, rnd(*shape))
    case(name, ["mkldnn_rnn_layer", "mkldnn_rnn_layer_backward"], f, *inputs)
lstm2 = nn.LSTM(3, 4, num_layers=2)


def lstm_state(x, h0, c0, *ps):
    names = [n for n, _ in lstm2.named_parameters()]
    out, (h, c) = torch.func.functional_call(lstm2, dict(zip(names, ps)), (x, (h0, c0)))
    return out, h, c


lstm_params = [p.detach().clone().requires_grad_(True) for p in lstm2.parameters()]
case("lstm_state", ["mkldnn_rnn_layer", "mkldnn_rnn_layer_backward"], grads(lstm_state),
     rnd(4, 2, 3), rnd(2, 2, 4), rnd(2, 2, 4), *lstm_params)


# ---- the remaining unmapped ops (issue 29, phase 8): torch 2.3+'s batch-norm forms (the running
# statistics written into clones, returned), rrelu in eval, antialiased bilinear resampling,
# Python's bitwise operators on integers
def bn_update(x, w, b, rm, rv):
    rm, rv = rm.clone(), rv.clone()
    out = torch.ops.aten._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5)
    return out[0], out[1], out[2], rm, rv


def bn_no_update(x, w, b, rm, rv):
    return torch.ops.aten._batch_norm_no_update(x, w, b, rm, rv, 0.1, 1e-5)[0]


stats = (torch.randn(3) * 0.1, torch.rand(3) + 0.5)
case("batch_norm_with_update", ["_batch_norm_with_update", "batch_norm_backward"],
     grads(bn_update), rnd(2, 3, 4, 4), rnd(3), rnd(3), *stats)
case("batch_norm_no_update", ["_batch_norm_no_update", "batch_norm_backward"],
     grads(bn_no_update), rnd(2, 3, 4), rnd(3), rnd(3), *stats)
case("rrelu_eval", ["rrelu_with_noise", "rrelu_with_noise_backward"],
     grads(lambda x: F.rrelu(x, 0.1, 0.3, training=False)), rnd(4, 6))
case("upsample_bilinear_aa", ["_upsample_bilinear2d_aa", "_upsample_bilinear2d_aa_backward"],
     grads(lambda x: F.interpolate(x, size=(3, 5), mode="bilinear", antialias=True)),
     rnd(2, 2, 7, 4))
case("upsample_bilinear_aa_corners", ["_upsample_bilinear2d_aa"],
     grads(lambda x: F.interpolate(x, size=(4, 2), mode="bilinear", antialias=True,
                                   align_corners=True)), rnd(1, 3, 9, 7))
case("upsample_bilinear_aa_f64_scale", ["_upsample_bilinear2d_aa"],
     lambda x: F.interpolate(x, scale_factor=(0.4, 1.7), mode="bilinear", antialias=True),
     rnd(1, 2, 11, 6, grad=False, dtype=torch.float64))
case("bitwise_operators", ["__lshift__.Scalar", "__rshift__.Tensor", "bitwise_and.Tensor",
                           "bitwise_or.Scalar", "bitwise_xor.Tensor", "bitwise_not"],
     lambda a, s: (a << 3, a >> s, a & s, a | 5, a ^ s, ~a),
     torch.tensor([1, -8, -1, 5, 12, -7, 2**62, -(2**63)]),
     torch.tensor([63, 1, 63, 0, 64, -1, 2, 1]))

mlm_target = torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 1, 0, 2]])
case("multilabel_margin_loss", ["multilabel_margin_loss_forward", "multilabel_margin_loss_backward"],
     grads(lambda x: F.multilabel_margin_loss(x, mlm_target)), rnd(3, 4))
case("multilabel_margin_loss_none", ["multilabel_margin_loss_forward",
                                     "multilabel_margin_loss_backward"],
     grads(lambda x: F.multilabel_margin_loss(x, mlm_target, reduction="none")), rnd(3, 4))
case("multilabel_margin_loss_1d_sum", ["multilabel_margin_loss_forward"],
     grads(lambda x: F.multilabel_margin_loss(x, mlm_target[1], reduction="sum")), rnd(4))
case("unique_dim", ["unique_dim"],
     lambda x: torch.unique(x, dim=0, return_inverse=True, return_counts=True),
     torch.tensor([[1, 2, 0], [0, 5, 1], [1, 2, 0], [0, 4, 9], [0, 5, 1]]))
case("unique_dim_float", ["unique_dim"], lambda x: torch.unique(x, dim=1, return_inverse=True),
     torch.tensor([[1.5, -2.0, 1.5, 0.0], [3.0, 7.0, 3.0, 7.0]]))
case("unique_consecutive_dim", ["unique_consecutive"],
     lambda x: torch.unique_consecutive(x, dim=1, return_inverse=True, return_counts=True),
     torch.tensor([[1, 1, 2, 2, 1], [3, 3, 4, 4, 3]]))


# ---- issue 29 audit: scatter's reduce forms (scatter_reduce.two with include_self) and integer
# convolution (wrapping in the element type, as torch's slow path)
sc_idx = torch.tensor([[0, 1, 0], [2, 0, 0]])
case("scatter_reduce_forms", ["scatter.reduce", "scatter.value_reduce"],
     lambda x, s, i: (x.scatter(0, i, s, reduce="add"), x.scatter(0, i, s, reduce="multiply"),
                      x.scatter(1, i, 1.5, reduce="add"), x.scatter(1, i, -2.0, reduce="multiply")),
     rnd(3, 4, grad=False), rnd(2, 3, grad=False), sc_idx)
case("scatter_reduce_forms_int", ["scatter.reduce", "scatter.value_reduce"],
     lambda x, s, i: (x.scatter(0, i, s, reduce="add"), x.scatter(0, i, s, reduce="multiply"),
                      x.scatter(1, i, 7, reduce="add")),
     torch.tensor([[3, -1, 2, 5], [4, 0, -6, 1], [2, 2, 2, 2]], dtype=torch.int32),
     torch.tensor([[100, 7, -3], [5, 9, 11]], dtype=torch.int32), sc_idx)
case("conv_integer", ["convolution"],
     lambda x, w, b, x8, w8: (F.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2),
                              F.conv_transpose2d(x, w, stride=2),
                              F.conv1d(x8, w8)),
     torch.randint(-50, 50, (2, 4, 5, 6)), torch.randint(-9, 9, (4, 2, 3, 3)),
     torch.randint(-100, 100, (4,)), torch.randint(-128, 127, (2, 3, 9), dtype=torch.int8),
     torch.randint(-128, 127, (4, 3, 3), dtype=torch.int8))


def run_case(name, ops, fn, inputs, mode, ref):
    try:
        if mode == "real":
            gm, text, names = fxrun.trace(fn, list(inputs))
        else:  # symbolic: sizes as symbols (sym_size.int, _local_scalar_dense); fake: meta kernels
            gm = make_fx(fn, tracing_mode=mode)(*inputs)
            text = str(gm.graph)
            names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    except Exception as e:  # noqa: BLE001
        return "trace failed: %s" % e
    targets = fxrun.targets(gm)
    for op in ops:
        full = op if "." in op else op + ".default"
        if full not in targets:
            return "the trace has no %s (it has %s)" % (full, sorted(set(targets)))
    want = (ref or fn)(*inputs)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    with tempfile.TemporaryDirectory() as d:
        args = fxrun.write_case(d, gm, text, names, list(inputs))
        for mode in ("interp", "compiled"):
            r = fxrun.run_stax(stax, mode, d, args, config)
            if r.code != 0:
                return "%s: %s" % (mode, r.error())
            for k, w in enumerate(want):
                got = r.load("out%d.npy" % k)
                bad = fxrun.compare(got, w, grad=True)
                if bad:
                    return "%s output %d: %s" % (mode, k, bad)
    return None


only = sys.argv[1:]
failures = ran = 0
for name, ops, fn, inputs, mode, ref in CASES:
    if only and name not in only:
        continue
    why = run_case(name, ops, fn, inputs, mode, ref)
    print("%-24s %s" % (name, "ok" if why is None else "FAIL: " + why))
    failures += why is not None
    ran += 1
print("%d of %d cases match torch %s" % (ran - failures, ran, torch.__version__))
sys.exit(1 if failures else 0)
