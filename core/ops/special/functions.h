// Special functions of the interpreter's kernels (kernels.cpp), in double, written from their
// textbook definitions: digamma (recurrence to x >= 10, then the asymptotic series with Bernoulli
// numbers; reflection for x < 0), trigamma / polygamma (reflection, the Hurwitz zeta function by
// Euler-Maclaurin summation), erfinv / ndtri (an initial guess refined by Newton steps on
// erf / erfc), erfcx and log_ndtr (exp(x^2) erfc(x) with the asymptotic series where the product
// over/underflows), the regularized incomplete gamma functions (series / continued fraction), the
// Airy function Ai from Bessel functions of order 1/3, and the orthogonal polynomials by their
// three-term recurrences. Bessel functions of integer order come from the C++17 library
// (std::cyl_bessel_j / cyl_neumann / cyl_bessel_i / cyl_bessel_k). Edge values (poles, domain
// ends) follow torch's documented results: ±inf at poles, NaN outside the domain.
#pragma once

#include <cstdint>

namespace stax::special {

double digamma(double x);
double trigamma(double x);
double polygamma(int64_t n, double x);
double zeta(double s, double q);  // Hurwitz zeta: sum_k (k + q)^-s
double erfinv(double y);
double ndtri(double p);
double erfcx(double x);
double log_ndtr(double x);
double igamma(double a, double x);   // regularized lower P(a, x)
double igammac(double a, double x);  // regularized upper Q(a, x)
double i0(double x);
double i0e(double x);
double i1(double x);
double i1e(double x);
double bessel_j0(double x);
double bessel_j1(double x);
double bessel_y0(double x);
double bessel_y1(double x);
double bessel_k0(double x);
double bessel_k1(double x);
double bessel_k0e(double x);  // exp(x) K0(x)
double bessel_k1e(double x);
double spherical_bessel_j0(double x);
double airy_ai(double x);

// Orthogonal polynomials of degree n (n < 0: 0), evaluated in T (float or double) as torch does.
enum class Poly {
  ChebyshevT, ChebyshevU, ChebyshevV, ChebyshevW,
  ShiftedChebyshevT, ShiftedChebyshevU, ShiftedChebyshevV, ShiftedChebyshevW,
  HermiteH, HermiteHe, LaguerreL, LegendreP
};
double polynomial(Poly p, double x, int64_t n);

}  // namespace stax::special
