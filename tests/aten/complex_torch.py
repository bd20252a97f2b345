"""Complex arithmetic (docs/complex.md) against torch 2.x: functions of complex (and real) tensors
traced by make_fx, whose FX printouts run through `stax run` on the interpreter and compiled
(cpu_cpp: complex nodes as counted interpreter fallbacks), and through `stax grad` (Stax's VJPs by
torch's convention, with respect to complex inputs too); outputs and gradients must match torch
eager and torch.autograd. Also torch's own backward graphs, traced by make_fx through
torch.autograd.grad (the FFT backward's zero-fill and complex products), and complex einsum.
Skips cleanly (exit 77) without torch 2.x."""
import os
import sys
import tempfile

import common

torch = common.import_torch()
if not hasattr(torch, "Tag"):
    common.skip("torch %s is older than 2.x (the reference of this test)" % torch.__version__)
import fxrun  # noqa: E402

F = torch.nn.functional
fft = torch.fft
stax = common.stax_binary()
source = os.environ.get("STAX_SOURCE_DIR", os.path.join(common.HERE, "..", ".."))
config = os.path.join(source, "configs", "cpu.yaml")
C64, C128, F32, F64 = torch.complex64, torch.complex128, torch.float32, torch.float64
CASES = []


def case(name, fn, *specs, grad=True, backward_graph=False):
    """specs: (shape, dtype) per input. backward_graph: fn returns torch.autograd.grad of a loss
    (its trace is torch's backward graph); its outputs are compared, no `stax grad` run."""
    CASES.append((name, fn, specs, grad and not backward_graph, backward_graph))


for dt in (C64, C128):
    s = "_c64" if dt == C64 else "_c128"
    z, w, v = ((3, 4), dt), ((3, 4), dt), ((4,), dt)
    case("mul_add" + s, lambda a, b: a * b + a, z, w)
    case("div_sub_broadcast" + s, lambda a, b: a / b - b, z, v)
    case("abs_angle" + s, lambda a: (a.abs(), a.angle()), z)
    case("exp_log_sqrt" + s, lambda a: (a.exp() + a.log()) * a.sqrt(), z)
    case("sgn_reciprocal_neg" + s, lambda a: a.sgn() - 1 / a, z)
    case("sin_cos_tanh" + s, lambda a: a.sin() * a.cos() + a.tanh(), z)
    case("pow" + s, lambda a: a ** 2 + a ** 3, z)
    case("sum_mean" + s, lambda a: (a.sum(1), a.mean(0), a.sum()), z)
    case("cat_pad" + s, lambda a, b: F.pad(torch.cat([a, b], 1), (1, 2)), z, w)
    case("where" + s, lambda a, b: torch.where(a.abs() > 1, a, b), z, w)
    case("conj_mul" + s, lambda a, b: a.conj() * b, z, w)
    case("real_imag" + s, lambda a: a.real * a.imag + torch.view_as_real(a).sum(-1), z)
    case("mm" + s, lambda a, b: a @ b.t(), z, w)
    case("view_copies" + s, lambda a: (torch.permute_copy(a, (1, 0)), torch.t_copy(a),
                                       torch.view_copy(a, (12,)),
                                       torch.expand_copy(a[:1], (3, 4))), z)
    case("einsum_bmm" + s, lambda a, b: torch.einsum("bij,bjk->bik", a, b),
         ((2, 3, 4), dt), ((2, 4, 5), dt))
    case("einsum_contract" + s, lambda a, b: torch.einsum("ij,j->i", a, b), z, v)
    # index / index_put (accumulating twice into row 0; in place, functionalized)
    case("index_index_put" + s,
         lambda a, b: (lambda i: (a[i] * 2, a.index_put((i,), b, accumulate=True),
                                  a.index_put((torch.arange(3).flip(0),), b[:3]),
                                  a.clone().index_put_((i,), b * b, accumulate=True)))(
             torch.cat([torch.arange(3), torch.arange(1)])),
         z, ((4, 4), dt))
# float ⊕ complex: torch's promotion (float64 with complex64 is complex128); real inputs get the
# real part of their gradient.
case("promote_f32_c64", lambda x, a: x * a + x, ((3, 4), F32), ((3, 4), C64))
case("promote_f64_c64", lambda x, a: x * a - a, ((4,), F64), ((3, 4), C64))
case("complex_of_reals_times_real", lambda x, y: torch.complex(x, y) * x, ((3, 4), F64),
     ((3, 4), F64))
# A complex einsum layer between real tensors (a spectral mixing of modes).
case("spectral_einsum_layer",
     lambda x, wr, wi: fft.irfft(torch.einsum("bim,iom->bom", fft.rfft(x),
                                              torch.complex(wr, wi)), n=x.shape[-1]),
     ((2, 3, 8), F32), ((3, 4, 5), F32), ((3, 4, 5), F32))

# linalg.eig / eigvals and their gradients (torch's linalg_eig_backward), real and complex inputs:
# functions symmetric in the eigenvalues' order and independent of the eigenvectors' phases (the
# two LAPACKs may order and rotate them differently; torch refuses phase-dependent losses).
for dt in (F64, C128):
    s = "_f64" if dt == F64 else "_c128"
    case("eigvals_power_sums" + s,
         lambda a: ((torch.linalg.eigvals(a) ** 2).sum(-1), torch.linalg.eigvals(a).exp().sum(-1)),
         ((2, 4, 4), dt))
    case("eig_vector_magnitudes" + s,
         lambda a: (lambda l, v: (v.abs() * l.abs().unsqueeze(-2)).sum(-1))(*torch.linalg.eig(a)),
         ((2, 4, 4), dt))
    case("eig_reconstruction" + s,
         lambda a: (lambda l, v: (v * l.unsqueeze(-2)) @ v.conj().transpose(-2, -1))(
             *torch.linalg.eig(a)),
         ((4, 4), dt))


def grad_of(loss):
    """The function returning d loss / d inputs: torch's backward graph when traced."""
    def fn(*xs):
        xs = [x.detach().requires_grad_(True) for x in xs]
        return torch.autograd.grad(loss(*xs), xs)
    return fn


for dt in (F32, F64):
    s = "_f32" if dt == F32 else "_f64"
    case("rfft_abs_backward" + s, grad_of(lambda x: fft.rfft(x).abs().sum()), ((3, 8), dt),
         backward_graph=True)
    case("rfft_pow_backward" + s,
         grad_of(lambda x: torch.view_as_real(fft.rfft(x, norm="ortho")).pow(2).sum()),
         ((4, 7), dt), backward_graph=True)
    case("fft_mul_backward" + s,
         grad_of(lambda x, y: (fft.rfft(x) * fft.rfft(y)).real.sum()), ((2, 6), dt), ((2, 6), dt),
         backward_graph=True)
    case("rfft_irfft_backward" + s,
         grad_of(lambda x, w: (fft.irfft(fft.rfft(x) * w, n=9) ** 2).sum()), ((2, 9), dt),
         ((5,), dt), backward_graph=True)
case("tanh_spectrum_backward", grad_of(
    lambda x: torch.view_as_real(torch.tanh(fft.rfft(x))).sum()), ((2, 6), F64),
    backward_graph=True)
case("complex_einsum_backward", grad_of(
    lambda a, b: torch.view_as_real(torch.einsum("ij,jk->ik", a, b)).pow(2).sum()),
    ((3, 4), C64), ((4, 2), C64), backward_graph=True)


def run_case(name, fn, specs, grad, backward_graph):
    torch.manual_seed(len(name))
    inputs = [torch.randn(*shape, dtype=dt) for shape, dt in specs]
    gm, text, names = fxrun.trace(fn, inputs)
    leaves = [x.clone().requires_grad_(not backward_graph) for x in inputs]
    want = fn(*leaves)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    with tempfile.TemporaryDirectory() as d:
        args = fxrun.write_case(d, gm, text, names, inputs)
        for mode in ("interp", "compiled", "grad") if grad else ("interp", "compiled"):
            r = fxrun.run_stax(stax, mode, d, args, config, wrt=names)
            if r.code != 0:
                return "%s: %s" % (mode, r.error())
            if mode == "compiled" and "fallbacks: " not in r.stdout:
                return "compiled: no interpreter fallbacks reported for the complex nodes"
            for k, w in enumerate(want):
                bad = fxrun.compare(r.load("out%d.npy" % k), w, grad=backward_graph)
                if bad:
                    return "%s output %d: %s" % (mode, k, bad)
        if not grad:
            return None
        grads = torch.autograd.grad(want, leaves, [torch.ones_like(w) for w in want],
                                    allow_unused=True)
        for name_k, leaf, g in zip(names, leaves, grads):
            want_g = torch.zeros_like(leaf) if g is None else g
            bad = fxrun.compare(r.load("grad_%s.npy" % name_k), want_g, grad=True)
            if bad:
                return "grad %s: %s" % (name_k, bad)
    return None


def eig_case(dt):
    """linalg.eig / eigvals of real or complex matrices against torch's: eigenvalues as sets
    (LAPACKs may order them differently), eigenvectors by magnitude (a vector's phase is the
    LAPACK's choice) and by A·V = V·diag(λ)."""
    import numpy as np
    torch.manual_seed(3)
    a = torch.randn(2, 5, 5, dtype=dt)
    fn = lambda x: (*torch.linalg.eig(x), torch.linalg.eigvals(x))  # noqa: E731
    gm, text, names = fxrun.trace(fn, [a])
    want_l, want_v, _ = fn(a)
    tol = 1e-4 if dt in (F32, C64) else 1e-10
    with tempfile.TemporaryDirectory() as d:
        args = fxrun.write_case(d, gm, text, names, [a])
        for mode in ("interp", "compiled"):
            r = fxrun.run_stax(stax, mode, d, args, config)
            if r.code != 0:
                return "%s: %s" % (mode, r.error())
            l, v, l2 = (r.load("out%d.npy" % k) for k in range(3))
            if not np.array_equal(l, l2):
                return "%s: eigvals differ from eig's eigenvalues" % mode
            for b in range(a.shape[0]):
                order, want_order = np.lexsort((l[b].imag, l[b].real)), np.lexsort(
                    (want_l[b].imag.numpy(), want_l[b].real.numpy()))
                if not np.allclose(l[b][order], want_l[b].numpy()[want_order], atol=tol, rtol=tol):
                    return "%s: eigenvalues %s, torch %s" % (mode, l[b], want_l[b].numpy())
                mag, want_mag = np.abs(v[b][:, order]), np.abs(want_v[b].numpy()[:, want_order])
                if not np.allclose(mag, want_mag, atol=10 * tol, rtol=10 * tol):
                    return "%s: eigenvector magnitudes differ from torch's" % mode
                res = a[b].numpy() @ v[b] - v[b] * l[b][None, :]
                if np.abs(res).max() > 10 * tol:
                    return "%s: A V != V diag(l) (residual %g)" % (mode, np.abs(res).max())
    return None


only = sys.argv[1:]
failures = ran = 0
for name, fn, specs, grad, backward_graph in CASES:
    if only and name not in only:
        continue
    try:
        why = run_case(name, fn, specs, grad, backward_graph)
    except fxrun.Unmapped as e:
        why = "unmapped: %s" % e
    print("%-32s %s" % (name, "ok" if why is None else "FAIL: " + why))
    failures += why is not None
    ran += 1
for dt in (F32, F64, C64, C128):
    name = "linalg_eig_eigvals_" + {F32: "f32", F64: "f64", C64: "c64", C128: "c128"}[dt]
    if only and name not in only:
        continue
    why = eig_case(dt)
    print("%-32s %s" % (name, "ok" if why is None else "FAIL: " + why))
    failures += why is not None
    ran += 1
print("%d of %d complex cases match torch %s" % (ran - failures, ran, torch.__version__))
sys.exit(1 if failures else 0)
