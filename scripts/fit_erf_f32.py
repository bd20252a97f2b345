#!/usr/bin/env python3
"""Fits the coefficients of Stax's float32 erf (scalar_ops.hpp, namespace erf_f32; DECISIONS 62).

Three polynomials, each fitted by weighted least squares iterated towards minimax (Lawson) in
double on Chebyshev points, against mpmath's erf / erfc at 40 digits; the coefficients are
rounded to float from the highest degree down, the lower ones refitted after each rounding:

  Q(z), z = x^2 on [0, 0.75^2]:  erf(x)/x - 1, weighted for the relative error of x (1 + Q)
  M(t), t = a - 1.125 on [0.75, 1.5]:  0.84375 - erf(a), absolute error
  T(t), t = a - 2.75 on [1.5, 3.95]:  erfc(a), absolute error

Prints each list from the constant term up and the fit's error with float coefficients. This is
the fit only: the formula's error in float arithmetic is what erf_f32_test measures (every float32
with STAX_ERF_EXHAUSTIVE=1). Needs numpy and mpmath (the project's .venv):
  .venv/bin/python scripts/fit_erf_f32.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40


def lawson(a, y, w0, iters=120):
    """Coefficients c minimising max |w0 (a c - y)|, and that maximum."""
    w = np.full(len(y), 1.0 / len(y))
    best = None
    for _ in range(iters):
        sw = np.sqrt(w) * w0
        c = np.linalg.lstsq(a * sw[:, None], y * sw, rcond=None)[0]
        e = np.abs((a @ c - y) * w0)
        if best is None or e.max() < best[1]:
            best = (c, e.max())
        w = w * e
        w /= w.sum()
    return best


def fit(t, y, w0, degree, scale):
    """Monomials in t (columns scaled by scale^k); float coefficients, highest rounded first."""
    a = np.stack([(t / scale) ** k for k in range(degree + 1)], axis=1)
    fixed = {}
    for k in range(degree, -1, -1):
        free = [j for j in range(degree + 1) if j not in fixed]
        rest = y - sum(a[:, j] * v for j, v in fixed.items())
        c = dict(zip(free, lawson(a[:, free], rest, w0)[0]))
        fixed[k] = float(np.float32(c[k] / scale ** k)) * scale ** k
    err = np.abs((a @ np.array([fixed[k] for k in range(degree + 1)]) - y) * w0).max()
    return [float(np.float32(fixed[k] / scale ** k)) for k in range(degree + 1)], err


def chebyshev_points(lo, hi, n):
    k = np.arange(n)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)[::-1]


def main():
    x = chebyshev_points(0.0, 0.75, 3000)
    x = x[x > 1e-4]
    q = np.array([float(mp.erf(mp.mpf(v)) / mp.mpf(v) - 1) for v in x])
    fits = [("Q", fit(x * x, q, 1 / (1 + q), 6, 0.75 ** 2), "relative")]
    a = chebyshev_points(0.75, 1.5, 2000)
    m = np.array([float(mp.mpf(0.84375) - mp.erf(mp.mpf(v))) for v in a])
    fits.append(("M", fit(a - 1.125, m, np.ones_like(m), 8, 0.375), "absolute"))
    a = chebyshev_points(1.5, 3.95, 3000)
    t = np.array([float(mp.erfc(mp.mpf(v))) for v in a])
    fits.append(("T", fit(a - 2.75, t, np.ones_like(t), 13, 1.25), "absolute"))
    for name, (coefs, err), kind in fits:
        print("%s (%s error %.2g): %s" % (name, kind, err, ", ".join("%.9e" % c for c in coefs)))


if __name__ == "__main__":
    main()
