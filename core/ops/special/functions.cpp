// Special functions of the interpreter (special_functions.h): textbook series, recurrences and
// Newton iterations in double.
#include "core/ops/special/functions.h"

#include <cmath>
#include <limits>

namespace stax::special {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt2Pi = 2.50662827463100050242;  // sqrt(2 pi)
constexpr double kEps = 1e-17;

bool is_nonpositive_integer(double x) { return x <= 0 && x == std::floor(x); }

double ndtr(double x) { return 0.5 * std::erfc(-x / kSqrt2); }

}  // namespace

double digamma(double x) {
  if (std::isnan(x)) return x;
  if (x == 0) return std::copysign(kInf, -x);
  if (x < 0) {
    if (x == std::floor(x)) return kNaN;
    double q;
    double r = std::modf(x, &q);  // tan(pi r) is more accurate than tan(pi x)
    return digamma(1 - x) - kPi / std::tan(kPi * r);
  }
  if (std::isinf(x)) return x;
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  // psi(x) ~ ln x - 1/(2x) - sum_k B_2k / (2k x^2k)
  double y = 1 / (x * x);
  double s = y * (1.0 / 12 - y * (1.0 / 120 - y * (1.0 / 252 - y * (1.0 / 240 - y * (1.0 / 132 -
             y * (691.0 / 32760 - y / 12))))));
  return result + std::log(x) - 0.5 / x - s;
}

double zeta(double s, double q) {
  if (std::isnan(s) || std::isnan(q)) return kNaN;
  if (s == 1) return kInf;
  if (s < 1) return kNaN;
  if (q <= 0) {
    if (q == std::floor(q)) return kInf;
    if (s != std::floor(s)) return kNaN;  // (k + q)^-s undefined for negative bases
  }
  if (std::isinf(q)) return 0;
  // Euler-Maclaurin: sum_{k < m} (q + k)^-s + a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! (s)_(2j-1)
  // a^(-s-2j+1), with a = q + m >= 10.
  double sum = 0;
  double a = q;
  int64_t m = 0;
  while (a < 10 || m < 2) {
    sum += std::pow(a, -s);
    a += 1;
    if (++m > 10000000) return kNaN;
  }
  sum += std::pow(a, 1 - s) / (s - 1) + 0.5 * std::pow(a, -s);
  // B_2j / (2j)!
  static const double kB[] = {1.0 / 12,
                              -1.0 / 720,
                              1.0 / 30240,
                              -1.0 / 1209600,
                              1.0 / 47900160,
                              -691.0 / 1307674368000.0,
                              1.0 / 74724249600.0,
                              -3617.0 / 10670622842880000.0,
                              43867.0 / 5109094217170944000.0,
                              -174611.0 / 802857662698291200000.0,
                              854513.0 / 155112100433309859840000.0};
  double fac = s * std::pow(a, -s - 1);  // (s)_1 a^(-s-1)
  for (size_t j = 0; j < sizeof(kB) / sizeof(kB[0]); ++j) {
    double term = kB[j] * fac;
    sum += term;
    if (std::fabs(term) < kEps * std::fabs(sum)) break;
    double k = 2.0 * static_cast<double>(j) + 1;  // (s)_(2j+1) -> (s)_(2j+3)
    fac *= (s + k) * (s + k + 1) / (a * a);
  }
  return sum;
}

double trigamma(double x) {
  if (std::isnan(x)) return x;
  if (is_nonpositive_integer(x)) return kInf;
  if (x < 0.5) {
    double sp = std::sin(kPi * x);
    return kPi * kPi / (sp * sp) - trigamma(1 - x);  // reflection
  }
  return zeta(2, x);
}

double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  if (n == 1) return trigamma(x);
  double sign = n % 2 ? 1.0 : -1.0;
  return sign * std::exp(std::lgamma(static_cast<double>(n) + 1)) *
         zeta(static_cast<double>(n) + 1, x);
}

double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return kNaN;
  if (y == 1) return kInf;
  if (y == -1) return -kInf;
  if (y == 0) return y;
  // Winitzki's closed-form guess (relative error ~2e-3), then Newton steps on erf(x) = y.
  const double a = 0.147;
  double l = std::log1p(-y * y);
  double t = 2 / (kPi * a) + l / 2;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - l / a) - t), y);
  for (int i = 0; i < 5; ++i) {
    double d = 2 / std::sqrt(kPi) * std::exp(-x * x);
    if (d == 0) break;
    double step = (std::erf(x) - y) / d;
    x -= step;
    if (std::fabs(step) <= 1e-16 * std::fabs(x)) break;
  }
  return x;
}

double ndtri(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  if (p == 0.5) return 0;
  if (p > 0.5) return -ndtri(1 - p);
  // p < 0.5: Newton on log(ndtr(x)) = log(p) (accurate in the far tail too).
  double x = p > 1e-10 ? kSqrt2 * erfinv(2 * p - 1) : -std::sqrt(-2 * std::log(p));
  double lp = std::log(p);
  for (int i = 0; i < 50; ++i) {
    double c = ndtr(x);
    double pdf = std::exp(-0.5 * x * x) / kSqrt2Pi;
    if (c == 0 || pdf == 0) break;
    double step = (std::log(c) - lp) * c / pdf;
    x -= step;
    if (std::fabs(step) <= 1e-15 * std::fabs(x)) break;
  }
  return x;
}

double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (x < 25) return std::exp(x * x) * std::erfc(x);
  // erfc(x) exp(x^2) ~ 1/(x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k
  double z = 1 / (2 * x * x), term = 1, sum = 1;
  for (int k = 1; k < 8; ++k) {
    term *= -(2 * k - 1) * z;
    sum += term;
  }
  return sum / (x * std::sqrt(kPi));
}

double log_ndtr(double x) {
  if (std::isnan(x)) return x;
  if (x > -1) return std::log1p(-0.5 * std::erfc(x / kSqrt2));
  double t = -x / kSqrt2;
  return std::log(0.5 * erfcx(t)) - t * t;
}

namespace {
// x^a e^-x / Gamma(a), in logs.
double gamma_prefactor(double a, double x) { return std::exp(a * std::log(x) - x - std::lgamma(a)); }

double igamma_series(double a, double x) {
  double term = 1 / a, sum = term;
  for (int n = 1; n < 10000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < kEps * std::fabs(sum)) break;
  }
  return sum * gamma_prefactor(a, x);
}

// Q(a, x) by the continued fraction (modified Lentz), for x >= a + 1.
double igammac_fraction(double a, double x) {
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) break;
  }
  return h * gamma_prefactor(a, x);
}
}  // namespace

double igamma(double a, double x) {
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) return kNaN;
  if (a == 0) return x > 0 ? 1 : kNaN;
  if (x == 0) return 0;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : 0;
  if (std::isinf(x)) return 1;
  return x < a + 1 ? igamma_series(a, x) : 1 - igammac_fraction(a, x);
}

double igammac(double a, double x) {
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) return kNaN;
  if (a == 0) return x > 0 ? 0 : kNaN;
  if (x == 0) return 1;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : 1;
  if (std::isinf(x)) return 0;
  return x < a + 1 ? 1 - igamma_series(a, x) : igammac_fraction(a, x);
}

// ---- Bessel functions (the C++17 library for finite arguments; limits at infinity)

double i0(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return kInf;
  return std::cyl_bessel_i(0.0, std::fabs(x));
}

double i1(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return x;
  return std::copysign(std::cyl_bessel_i(1.0, std::fabs(x)), x);
}

// exp(-|x|) I_n(|x|): the product where I_n is finite, the asymptotic series beyond.
double ie(int n, double x) {
  double ax = std::fabs(x);
  if (ax < 500) return std::exp(-ax) * std::cyl_bessel_i(static_cast<double>(n), ax);
  double mu = 4.0 * n * n, z = 1 / (8 * ax);
  double s = 1 - (mu - 1) * z + (mu - 1) * (mu - 9) * z * z / 2 -
             (mu - 1) * (mu - 9) * (mu - 25) * z * z * z / 6;
  return s / std::sqrt(2 * kPi * ax);
}

double i0e(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return 0;
  return ie(0, x);
}

double i1e(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return std::copysign(0.0, x);
  return std::copysign(ie(1, x), x);
}

double bessel_j0(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return 0;
  return std::cyl_bessel_j(0.0, std::fabs(x));
}

double bessel_j1(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return 0;
  double j = std::cyl_bessel_j(1.0, std::fabs(x));  // J1 is odd
  return x < 0 ? -j : j;
}

double bessel_y(int n, double x) {
  if (std::isnan(x)) return x;
  if (x < 0) return kNaN;
  if (x == 0) return -kInf;
  if (std::isinf(x)) return 0;
  return std::cyl_neumann(static_cast<double>(n), x);
}
double bessel_y0(double x) { return bessel_y(0, x); }
double bessel_y1(double x) { return bessel_y(1, x); }

// exp(x) K_n(x) (scaled) or K_n(x).
double bessel_k(int n, double x, bool scaled) {
  if (std::isnan(x)) return x;
  if (x < 0) return kNaN;
  if (x == 0) return kInf;
  if (std::isinf(x)) return 0;
  if (x < 500) {
    double k = std::cyl_bessel_k(static_cast<double>(n), x);
    return scaled ? std::exp(x) * k : k;
  }
  double mu = 4.0 * n * n, z = 1 / (8 * x);
  double s = 1 + (mu - 1) * z + (mu - 1) * (mu - 9) * z * z / 2 +
             (mu - 1) * (mu - 9) * (mu - 25) * z * z * z / 6;
  double r = s * std::sqrt(kPi / (2 * x));
  return scaled ? r : r * std::exp(-x);
}
double bessel_k0(double x) { return bessel_k(0, x, false); }
double bessel_k1(double x) { return bessel_k(1, x, false); }
double bessel_k0e(double x) { return bessel_k(0, x, true); }
double bessel_k1e(double x) { return bessel_k(1, x, true); }

double spherical_bessel_j0(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return 0;
  if (std::fabs(x) < 0.5) {
    double y = x * x;
    return 1 - y / 6 * (1 - y / 20 * (1 - y / 42 * (1 - y / 72 * (1 - y / 110))));
  }
  return std::sin(x) / x;
}

double airy_ai(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return 0;
  if (x == 0) return 0.355028053887817239260;  // 1 / (3^(2/3) Gamma(2/3))
  if (x > 0) {
    double zeta = 2.0 / 3.0 * x * std::sqrt(x);
    if (zeta > 700) return 0;
    return std::sqrt(x / 3) / kPi * std::cyl_bessel_k(1.0 / 3.0, zeta);
  }
  double z = -x;
  double zeta = 2.0 / 3.0 * z * std::sqrt(z);
  // Ai(-z) = sqrt(z)/2 (J_1/3(zeta) - Y_1/3(zeta) / sqrt(3))
  return std::sqrt(z) / 2 *
         (std::cyl_bessel_j(1.0 / 3.0, zeta) - std::cyl_neumann(1.0 / 3.0, zeta) / std::sqrt(3.0));
}

// ---- orthogonal polynomials

double polynomial(Poly p, double x, int64_t n) {
  if (std::isnan(x)) return x;
  if (n < 0) return 0;
  bool shifted = p == Poly::ShiftedChebyshevT || p == Poly::ShiftedChebyshevU ||
                 p == Poly::ShiftedChebyshevV || p == Poly::ShiftedChebyshevW;
  double y = shifted ? x + x - 1 : x;
  double prev = 1, cur = 0;
  switch (p) {
    case Poly::ChebyshevT: case Poly::ShiftedChebyshevT:
      if (std::fabs(y) == 1) return (y > 0 || n % 2 == 0) ? 1 : -1;
      if (n > 6 && std::fabs(y) < 1) return std::cos(n * std::acos(y));
      cur = y;
      break;
    case Poly::ChebyshevU: case Poly::ShiftedChebyshevU:
      if (std::fabs(y) == 1) return (y > 0 || n % 2 == 0) ? n + 1 : -(n + 1);
      if (n > 8 && std::fabs(y) < 1) {
        double t = std::acos(y);
        if (std::sin(t) != 0) return std::sin((n + 1) * t) / std::sin(t);
        return (n + 1) * std::cos((n + 1) * t) / y;
      }
      cur = y + y;
      break;
    case Poly::ChebyshevV: case Poly::ShiftedChebyshevV:
      if (std::fabs(y) == 1) return y > 0 ? 1 : (n % 2 == 0 ? n + n + 1 : -(n + n + 1));
      if (n > 8 && std::fabs(y) < 1) {
        double t = std::acos(y);  // V_n(cos t) = cos((n + 1/2) t) / cos(t / 2)
        return std::cos((n + 0.5) * t) / std::cos(t / 2);
      }
      cur = y + y - 1;
      break;
    case Poly::ChebyshevW: case Poly::ShiftedChebyshevW:
      if (std::fabs(y) == 1) return y > 0 ? n + n + 1 : (n % 2 == 0 ? 1 : -1);
      if (n > 8 && std::fabs(y) < 1) {
        double t = std::acos(y);  // W_n(cos t) = sin((n + 1/2) t) / sin(t / 2)
        return std::sin((n + 0.5) * t) / std::sin(t / 2);
      }
      cur = y + y + 1;
      break;
    case Poly::HermiteH:
      cur = x + x;
      break;
    case Poly::HermiteHe:
      cur = x;
      break;
    case Poly::LaguerreL:
      if (x == 0) return 1;
      cur = 1 - x;
      break;
    case Poly::LegendreP:
      if (std::fabs(x) == 1) return (x > 0 || n % 2 == 0) ? 1 : -1;
      cur = x;
      break;
  }
  if (n == 0) return 1;
  for (int64_t k = 1; k < n; ++k) {
    double next = 0;
    double kd = static_cast<double>(k);
    switch (p) {
      case Poly::HermiteH: next = (x + x) * cur - 2 * kd * prev; break;
      case Poly::HermiteHe: next = x * cur - kd * prev; break;
      case Poly::LaguerreL: next = ((2 * kd + 1 - x) * cur - kd * prev) / (kd + 1); break;
      case Poly::LegendreP: next = ((2 * kd + 1) * x * cur - kd * prev) / (kd + 1); break;
      default: next = (y + y) * cur - prev; break;  // the Chebyshev kinds
    }
    prev = cur;
    cur = next;
  }
  return cur;
}

}  // namespace stax::special
