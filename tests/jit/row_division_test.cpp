// Softmax's division in two fused multiply-adds (plugins/cpu_cpp/row_division.h, issue 27 item
// 5): the compiled quotients equal the interpreter's x / s bit for bit for every kind of x and s
// (normal, tiny, subnormal, huge, ±0, ±inf, NaN, either sign; rows that take the fast form and
// rows that fall back to the division), in both reduction orders and on 1 and 2 threads; softmax
// keeps its bits; and the fast form is what the kernel prints.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/compiled_check.h"

namespace stax::test {
namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// y = x / amax(d, -1): d's rows hold the divisor once (the rest -inf), so each row of x is divided
// by a chosen s, which the kernel hoists (a store-only body after the amax reduction).
Graph divide_by_row_max(int64_t rows, int64_t cols) {
  Graph g;
  Node* x = g.placeholder("x", {rows, cols});
  Node* d = g.placeholder("d", {rows, cols});
  Node* s = g.call("amax.default", {d, std::vector<int64_t>{1}, true});
  g.output({g.call("div.Tensor", {x, s})});
  return g;
}

// Divisors: every kind, both signs.
std::vector<float> divisors() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> s = {1.0f,     3.0f,     4096.0f,   0.1f,      1e-9f,     7e9f,
                          0x1p-32f, 0x1p32f,  0x1.fffffep31f, 0x1p-33f, 0x1p40f, 1e-30f,
                          1e30f,    1e-40f,   0.0f,      inf,       std::nanf(""), 1.5f};
  const size_t n = s.size();
  for (size_t i = 0; i < n; ++i) s.push_back(-s[i]);
  return s;
}

// Row r of x: mostly values that take the fast form (random mantissas over a range of
// exponents), plus, in some rows, one special value that sends the row to the division.
std::vector<float> dividends(int64_t rows, int64_t cols) {
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f,     -0.0f, 1e-40f, -1e-42f, 0x1p-64f, 0x1p-65f, 0x1p63f,
                            0x1p64f,  inf,   -inf,   std::nanf("")};
  std::vector<float> x(static_cast<size_t>(rows * cols));
  uint64_t state = 0x2545F4914F6CDD1Dull;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      // exponents 2^-60 .. 2^60 (biased 67 .. 187), random mantissa and sign
      const uint32_t exponent = 67 + static_cast<uint32_t>((state >> 32) % 121);
      uint32_t u = (static_cast<uint32_t>(state) & 0x807fffffu) | (exponent << 23);
      x[static_cast<size_t>(r * cols + c)] = bits_to_float(u);
    }
  // Zeros of both signs in every row (they take the fast form); one special in every 3rd row.
  for (int64_t r = 0; r < rows; ++r) {
    x[static_cast<size_t>(r * cols)] = (r % 2) ? -0.0f : 0.0f;
    if (r % 3 == 2)
      x[static_cast<size_t>(r * cols + (r % cols))] = specials[(r / 3) % std::size(specials)];
  }
  return x;
}

std::vector<Tensor> inputs(int64_t rows, int64_t cols) {
  const std::vector<float> s = divisors();
  std::vector<float> d(static_cast<size_t>(rows * cols), -std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < rows; ++r)
    d[static_cast<size_t>(r * cols + (r * 7) % cols)] = s[static_cast<size_t>(r) % s.size()];
  return {Tensor::from_vector({rows, cols}, dividends(rows, cols)),
          Tensor::from_vector({rows, cols}, d)};
}

void expect_bitwise(const Graph& g, const std::vector<Tensor>& in, Order order, int threads) {
  Compiler compiler(cpu_config(cpu_options(order, threads)));
  CompiledGraph cg = compiler.compile(g);
  // against the graph as compiled (softmax decomposed: the interpreter runs the same ops)
  std::vector<Tensor> got = cg.run(in), want = reference(cg.graph(), in, order);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(bitwise_equal(got[i], want[i]))
        << order_name(order) << ", " << threads << " threads, output " << i;
}

TEST(RowDivision, QuotientsAreTheInterpretersBitForBit) {
  const int64_t rows = 3 * 72, cols = 257;  // a tail after the vector loops
  Graph g = divide_by_row_max(rows, cols);
  const std::vector<Tensor> in = inputs(rows, cols);
  for (Order order : {Order::Segmented, Order::Strict})
    for (int threads : {1, 2}) expect_bitwise(g, in, order, threads);
}

TEST(RowDivision, TheKernelDividesInFmas) {
  Graph g = divide_by_row_max(8, 64);
  CompiledGraph cg = cpu_compiler().compile(g);
  std::string functions;  // the kernel functions, after the prelude (which defines the helpers)
  for (const CompiledKernelInfo& k : cg.kernels())
    functions += k.source.substr(k.source.find("// ---- stax kernel ----"));
  EXPECT_NE(functions.find("= stax_row_div_apply(tmp"), std::string::npos) << functions;
  EXPECT_NE(functions.find("stax_row_div_range("), std::string::npos) << functions;
  EXPECT_NE(functions.find("= stax_scalar::truediv(tmp"), std::string::npos);  // the fallback
}

// Many divisors against many dividends: 4096 rows of 512, each row its own random normal s.
TEST(RowDivision, RandomRowsAndDivisors) {
  const int64_t rows = 4096, cols = 512;
  Graph g = divide_by_row_max(rows, cols);
  std::vector<float> d(static_cast<size_t>(rows * cols), -std::numeric_limits<float>::infinity());
  uint32_t state = 7;
  for (int64_t r = 0; r < rows; ++r) {
    state = state * 1664525u + 1013904223u;
    // |s| in [2^-31, 2^31], any mantissa, either sign
    const uint32_t exponent = 96 + (state >> 8) % 63;
    d[static_cast<size_t>(r * cols + r % cols)] =
        bits_to_float((state & 0x807fffffu) | (exponent << 23));
  }
  std::vector<float> x = dividends(rows, cols);
  for (int64_t r = 2; r < rows; r += 3)  // no specials: every row takes the fast form
    for (int64_t c = 0; c < cols; ++c)
      if (!std::isfinite(x[static_cast<size_t>(r * cols + c)]) ||
          (x[static_cast<size_t>(r * cols + c)] != 0.0f &&
           std::fabs(x[static_cast<size_t>(r * cols + c)]) < 0x1p-60f))
        x[static_cast<size_t>(r * cols + c)] = 1.0f;
  const std::vector<Tensor> in = {Tensor::from_vector({rows, cols}, x),
                                  Tensor::from_vector({rows, cols}, d)};
  expect_bitwise(g, in, Order::Segmented, 1);
}

TEST(RowDivision, SoftmaxKeepsItsBits) {
  for (int64_t cols : {17, 512, 4099}) {
    Graph g;
    Node* x = g.placeholder("x", {33, cols});
    g.output({g.call("softmax.int", {x, -1})});
    std::vector<Tensor> in = random_inputs(g, 11);
    // a masked row (exp(-inf) = 0) and a row of large logits (exp underflows to subnormals)
    std::vector<float> v = in[0].to_vector<float>();
    for (int64_t c = 0; c < cols; c += 2) v[static_cast<size_t>(cols + c)] = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) v[static_cast<size_t>(2 * cols + c)] = -100.0f * (c % 7);
    in[0] = Tensor::from_vector({33, cols}, v);
    for (Order order : {Order::Segmented, Order::Strict}) expect_bitwise(g, in, order, 1);
  }
}

}  // namespace
}  // namespace stax::test
