// Test helpers for complex tensors: their values as std::complex<double>, element moves for
// central differences, and the VJP check by central differences (torch's convention for a
// complex input: Re z̄ = ∂L/∂a, Im z̄ = ∂L/∂b). Used by complex_arith_test and eig_test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "core/functional/functional.h"
#include "core/graph/graph.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"

namespace stax::test {

// The elements of t (complex, or real with a zero imaginary part), in order.
inline std::vector<std::complex<double>> complex_values(const Tensor& t) {
  std::vector<std::complex<double>> out;
  if (is_complex(t.dtype())) {
    Tensor p = t.contiguous().as_real_view().to(DType::Float64);
    for (int64_t i = 0; i < t.numel(); ++i) out.emplace_back(p.get_double(2 * i), p.get_double(2 * i + 1));
  } else {
    for (int64_t i = 0; i < t.numel(); ++i) out.emplace_back(t.get_double(i), 0.0);
  }
  return out;
}

// Element i (part 0 real, 1 imaginary) of a copy of t moved by h.
inline Tensor moved(const Tensor& t, int64_t i, int part, double h) {
  Tensor c = t.clone();
  Tensor p = is_complex(c.dtype()) ? c.as_real_view() : c;
  int64_t j = is_complex(c.dtype()) ? 2 * i + part : i;
  p.set_double(j, p.get_double(j) + h);
  return c;
}

inline double dot(const Tensor& u, const Tensor& y) {
  double s = 0;
  for (int64_t j = 0; j < u.numel(); ++j) s += u.get_double(j) * y.get_double(j);
  return s;
}

// The gradient of L = Σ u·f(x) (f's first output real, float64) against central differences,
// within `tol` relative.
inline void check_complex_vjp(const std::string& name, Graph& g, const std::vector<Tensor>& in,
                              double tol = 1e-6) {
  verify(g);
  Tensor y = interpret(g, in)[0];
  ASSERT_EQ(y.dtype(), DType::Float64) << name;
  Tensor u = Tensor::randn(y.sizes(), DType::Float64, 7);
  VjpResult r = vjp(g, in, {u});
  ASSERT_EQ(r.grads.size(), in.size()) << name;
  const double h = 1e-6;
  for (size_t k = 0; k < in.size(); ++k) {
    ASSERT_EQ(r.grads[k].dtype(), in[k].dtype()) << name << " input " << k;
    std::vector<std::complex<double>> got = complex_values(r.grads[k]);
    for (int64_t i = 0; i < in[k].numel(); ++i)
      for (int part = 0; part < (is_complex(in[k].dtype()) ? 2 : 1); ++part) {
        std::vector<Tensor> p = in, m = in;
        p[k] = moved(in[k], i, part, h);
        m[k] = moved(in[k], i, part, -h);
        double d = (dot(u, interpret(g, p)[0]) - dot(u, interpret(g, m)[0])) / (2 * h);
        std::complex<double> gi = got[static_cast<size_t>(i)];
        EXPECT_NEAR(part == 0 ? gi.real() : gi.imag(), d, tol * std::max(1.0, std::fabs(d)))
            << name << ": input " << k << " element " << i << (part ? " imag" : " real");
      }
  }
}

}  // namespace stax::test
