"""The FFT ops (_fft_r2c / _fft_c2r, Core ATen; _fft_c2c; view_as_real / view_as_complex / complex /
_conj) against torch 2.x's torch.fft: each case is a function of real inputs traced by make_fx,
whose FX printout runs through `stax run` on the interpreter and compiled (cpu_cpp), and through
`stax grad` (Stax's own VJPs: the upstream gradients are ones, complex outputs 1+0j); outputs and
gradients must match torch eager. rfft/irfft/rfftn/irfftn, every normalization, odd and even
sizes, float32 and float64. The compiled runs must report the FFT ops as interpreter fallbacks
(complex tensors never cross the plugin ABI; docs/complex.md). Skips cleanly (exit 77) without
torch 2.x."""
import os
import re
import sys
import tempfile

import common

torch = common.import_torch()
if not hasattr(torch, "Tag"):
    common.skip("torch %s is older than 2.x (the reference of this test)" % torch.__version__)
import fxrun  # noqa: E402

stax = common.stax_binary()
source = os.environ.get("STAX_SOURCE_DIR", os.path.join(common.HERE, "..", ".."))
config = os.path.join(source, "configs", "cpu.yaml")
fft = torch.fft
CASES = []


def case(name, ops, fn, *shapes, dtype=torch.float32, grad=True):
    """grad=False: no `stax grad` run (the VJPs of views of complex values build real-only ops)."""
    CASES.append((name, ops, fn, shapes, dtype, grad))


def rfft_case(norm, dim):
    return lambda x: fft.rfft(x, dim=dim, norm=norm)


def irfft_case(norm, n):
    """irfft of a spectrum given as its real view (n = 9 and 8 both need 5 entries)."""
    return lambda x: fft.irfft(torch.view_as_complex(x), n=n, norm=norm)


def rfftn_irfftn_case(norm):
    return lambda x: fft.irfftn(fft.rfftn(x, dim=(0, 2), norm=norm), s=(4, 5), dim=(0, 2),
                                norm=norm)


for dt, sfx in ((torch.float32, ""), (torch.float64, "_f64")):
    for norm in ("backward", "ortho", "forward"):
        case("rfft_%s%s" % (norm, sfx), ["_fft_r2c"], rfft_case(norm, -1), (3, 7), dtype=dt)
        case("rfft_even_%s%s" % (norm, sfx), ["_fft_r2c"], rfft_case(norm, 0), (8, 3), dtype=dt)
        for n in (9, 8):
            case("irfft%d_%s%s" % (n, norm, sfx), ["_fft_c2r", "view_as_complex"],
                 irfft_case(norm, n), (3, 5, 2), dtype=dt)
        case("rfftn_irfftn_%s%s" % (norm, sfx), ["_fft_r2c", "_fft_c2r"], rfftn_irfftn_case(norm),
             (4, 3, 5), dtype=dt)
    case("fft_of_real%s" % sfx, ["_fft_r2c"], lambda x: torch.view_as_real(fft.fft(x)), (2, 5),
         dtype=dt)
    case("ifft_fft%s" % sfx, ["_fft_r2c", "_fft_c2c"],
         lambda x: torch.view_as_real(fft.ifft(fft.fft(x, norm="ortho"), dim=0)), (3, 6),
         dtype=dt)
    case("rfft2%s" % sfx, ["_fft_r2c"], lambda x: fft.rfft2(x), (2, 5, 6), dtype=dt)
    case("irfftn_3d%s" % sfx, ["_fft_c2r"],
         lambda x: fft.irfftn(torch.view_as_complex(x), s=(3, 4, 7)), (3, 4, 4, 2), dtype=dt)


def spectral_layer(x, w):
    """A Fourier layer: filter the 2-D spectrum by real weights, back to space."""
    y = fft.rfftn(x, dim=(-2, -1), norm="ortho")
    y = torch.view_as_complex(torch.view_as_real(y) * w[..., None])
    return fft.irfftn(y, s=x.shape[-2:], dim=(-2, -1), norm="ortho")


case("spectral_layer", ["_fft_r2c", "view_as_real", "view_as_complex", "_fft_c2r"],
     spectral_layer, (2, 4, 6), (4, 4))
case("complex_conj", ["complex", "_conj", "_fft_c2c"],
     lambda x, y: fft.fft(torch.complex(x, y).conj(), dim=1), (3, 4), (3, 4))
case("slice_spectrum", ["_fft_r2c", "slice.Tensor", "permute"],
     lambda x: torch.view_as_real(fft.rfft(x)[:, 1:3].permute(1, 0).contiguous()), (3, 8),
     grad=False)


def run_case(name, ops, fn, shapes, dtype, grad):
    torch.manual_seed(len(name))
    inputs = [torch.randn(*s, dtype=dtype) for s in shapes]
    gm, text, names = fxrun.trace(fn, inputs)
    targets = fxrun.targets(gm)
    for op in ops:
        if (op if "." in op else op + ".default") not in targets:
            return "the trace has no %s (it has %s)" % (op, sorted(set(targets)))
    leaves = [x.clone().requires_grad_(True) for x in inputs]
    want = fn(*leaves)
    want = [w.resolve_neg().resolve_conj() for w in (want if isinstance(want, (tuple, list))
                                                     else [want])]
    with tempfile.TemporaryDirectory() as d:
        args = fxrun.write_case(d, gm, text, names, inputs)
        for mode in ("interp", "compiled", "grad") if grad else ("interp", "compiled"):
            r = fxrun.run_stax(stax, mode, d, args, config, wrt=names)
            if r.code != 0:
                return "%s: %s" % (mode, r.error())
            if mode == "compiled" and not re.search(r"fallbacks: [1-9][0-9]* \([^)]*_fft_",
                                                    r.stdout):
                return "compiled: the FFT ops are not reported as interpreter fallbacks"
            for k, w in enumerate(want):
                bad = fxrun.compare(r.load("out%d.npy" % k), w)
                if bad:
                    return "%s output %d: %s" % (mode, k, bad)
        if not grad:
            return None
        grads = torch.autograd.grad(want, leaves, [torch.ones_like(w) for w in want],
                                    allow_unused=True)
        for name_k, g in zip(names, grads):
            want_g = torch.zeros_like(leaves[0]) if g is None else g.resolve_neg().resolve_conj()
            bad = fxrun.compare(r.load("grad_%s.npy" % name_k), want_g, grad=True)
            if bad:
                return "grad %s: %s" % (name_k, bad)
    return None


only = sys.argv[1:]
failures = ran = 0
for name, ops, fn, shapes, dtype, grad in CASES:
    if only and name not in only:
        continue
    why = run_case(name, ops, fn, shapes, dtype, grad)
    print("%-28s %s" % (name, "ok" if why is None else "FAIL: " + why))
    failures += why is not None
    ran += 1
print("%d of %d FFT cases match torch %s" % (ran - failures, ran, torch.__version__))
sys.exit(1 if failures else 0)
