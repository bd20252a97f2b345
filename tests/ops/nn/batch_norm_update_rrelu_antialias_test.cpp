// The forms of issue 29 phase 8 (docs/model_ops.md): torch 2.3+'s batch-norm forms writing their
// running statistics (_batch_norm_with_update and its functional, _batch_norm_no_update,
// batch_norm_backward), rrelu in training (slopes drawn per element, written into noise),
// antialiased bilinear resampling against weights worked out by hand from torch's kernel. Every
// graph is also compiled on cpu_cpp and compared with the interpreter bit for bit. Values against
// torch itself: tests/aten/core_ops.py (batch_norm_with_update, rrelu_eval, upsample_bilinear_aa).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

namespace stax {
namespace {

using test::cpu_compiler;
using test::error_of;
using test::has;
using test::reference;

// Compiled on cpu_cpp against the interpreter: bit for bit, or within `tol` (relative) where the
// interpreter's kernel is an oracle of its own (batch_norm accumulates in double).
std::vector<Tensor> compiled_equals_interpreter(const Graph& g, const std::vector<Tensor>& in,
                                                double tol = 0) {
  std::vector<Tensor> want = reference(g, in);
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (tol == 0) {
      EXPECT_TRUE(got[i].equal(want[i])) << "output " << i << ": compiled " << got[i].to_string()
                                         << " interpreter " << want[i].to_string();
      continue;
    }
    EXPECT_EQ(got[i].numel(), want[i].numel()) << "output " << i;
    if (got[i].numel() != want[i].numel()) continue;
    for (int64_t k = 0; k < got[i].numel(); ++k)
      EXPECT_NEAR(got[i].get_double(k), want[i].get_double(k),
                  tol * (1 + std::fabs(want[i].get_double(k))))
          << "output " << i << " element " << k;
  }
  return want;
}

Tensor seq(const Shape& s, double scale, double shift) {
  Tensor t = Tensor::zeros(s, DType::Float64);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set_double(i, std::sin(static_cast<double>(i) * scale) + shift);
  return t;
}

// _batch_norm_with_update: the output normalizes by the batch statistics, the running ones are
// written as torch's kernel does: (1 - m) r + m s with the unbiased batch variance; the outputs
// are (output, save_mean, save_invstd, reserve (0,) uint8) and the written placeholders follow.
TEST(BatchNormUpdate, WithUpdateWritesRunningStatistics) {
  Graph g;
  Node* x = g.placeholder("x", {2, 3, 4}, DType::Float64);
  Node* w = g.placeholder("w", {3}, DType::Float64);
  Node* b = g.placeholder("b", {3}, DType::Float64);
  Node* rm = g.placeholder("rm", {3}, DType::Float64);
  Node* rv = g.placeholder("rv", {3}, DType::Float64);
  Node* t = g.call("_batch_norm_with_update", {x, w, b, rm, rv, 0.1, 1e-5});
  g.output({g.call("getitem", {t, int64_t{0}}), g.call("getitem", {t, int64_t{1}}),
            g.call("getitem", {t, int64_t{2}}), g.call("getitem", {t, int64_t{3}})});
  verify(g);
  std::vector<Tensor> in{seq({2, 3, 4}, 0.7, 0.2), seq({3}, 1.1, 1.0), seq({3}, 0.3, 0.0),
                         seq({3}, 0.5, 0.1), seq({3}, 0.9, 1.5)};
  std::vector<Tensor> r = compiled_equals_interpreter(g, in, 1e-12);
  ASSERT_EQ(r.size(), 6u);  // 4 results + rm, rv written
  EXPECT_EQ(r[3].dtype(), DType::UInt8);
  EXPECT_EQ(r[3].numel(), 0);
  for (int64_t c = 0; c < 3; ++c) {
    double sum = 0, sq = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t k = 0; k < 4; ++k) sum += in[0].get_double(n * 12 + c * 4 + k);
    double mean = sum / 8;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t k = 0; k < 4; ++k) {
        double d = in[0].get_double(n * 12 + c * 4 + k) - mean;
        sq += d * d;
      }
    double invstd = 1 / std::sqrt(sq / 8 + 1e-5);
    EXPECT_NEAR(r[1].get_double(c), mean, 1e-12);
    EXPECT_NEAR(r[2].get_double(c), invstd, 1e-9);
    EXPECT_NEAR(r[4].get_double(c), 0.9 * in[3].get_double(c) + 0.1 * mean, 1e-12);
    EXPECT_NEAR(r[5].get_double(c), 0.9 * in[4].get_double(c) + 0.1 * sq / 7, 1e-12);
    double x0 = in[0].get_double(c * 4);
    EXPECT_NEAR(r[0].get_double(c * 4),
                (x0 - mean) * invstd * in[1].get_double(c) + in[2].get_double(c), 1e-9);
  }
  // _batch_norm_no_update: eval with the running statistics; it needs them, as torch.
  Graph e;
  Node* ex = e.placeholder("x", {2, 3}, DType::Float64);
  std::string msg = error_of([&] {
    e.call("_batch_norm_no_update", {ex, Arg(), Arg(), Arg(), Arg(), 0.1, 1e-5});
  });
  EXPECT_TRUE(has(msg, "running_mean must be defined in evaluation mode")) << msg;
}

// rrelu_with_noise in training: x > 0 passes, x <= 0 is scaled by a slope in [lower, upper]
// drawn per element, and the slopes (1 for x > 0) are written into noise; the compiled run draws
// the same numbers (the node's seed). Eval: leaky_relu with the mean slope, noise unchanged.
TEST(RreluTraining, DrawsSlopesAndWritesNoise) {
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    Graph g;
    Node* x = g.placeholder("x", {64}, DType::Float64);
    Node* noise = g.placeholder("noise", {64}, DType::Float64);
    Node* y = g.call("rrelu_with_noise", {x, noise, 0.1, 0.3, training});
    g.output({y});
    verify(g);
    std::vector<Tensor> in{seq({64}, 0.37, 0.0), Tensor::full({64}, 7.0, DType::Float64)};
    std::vector<Tensor> r = compiled_equals_interpreter(g, in);
    ASSERT_EQ(r.size(), training ? 2u : 1u);  // noise is written in training only
    double lo_seen = 1, hi_seen = 0;
    for (int64_t i = 0; i < 64; ++i) {
      double xv = in[0].get_double(i), yv = r[0].get_double(i);
      if (xv == 0) continue;  // 0 whatever the slope
      if (xv > 0) {
        EXPECT_EQ(yv, xv);
        if (training) EXPECT_EQ(r[1].get_double(i), 1.0);
        continue;
      }
      double slope = yv / xv;
      if (!training) {
        EXPECT_NEAR(slope, 0.2, 1e-15);
        continue;
      }
      EXPECT_GE(slope, 0.1 - 1e-12);
      EXPECT_LE(slope, 0.3 + 1e-12);
      EXPECT_NEAR(r[1].get_double(i), slope, 1e-12);
      lo_seen = std::min(lo_seen, slope);
      hi_seen = std::max(hi_seen, slope);
    }
    if (training) EXPECT_GT(hi_seen - lo_seen, 0.05);  // drawn, not one slope
  }
}

// _upsample_bilinear2d_aa of a (1, 1, 1, 4) row to width 2 (scale 2, support 2): torch's weights
// are [3, 3, 1] / 7 over inputs 0..2 and [1, 3, 3] / 7 over 1..3; the height (1 -> 1) is
// untouched. Upscaling (4 -> 5, support 1) interpolates as plain bilinear.
TEST(AntialiasedBilinear, WeightsAsTorch) {
  Graph g;
  Node* x = g.placeholder("x", {1, 1, 1, 4}, DType::Float64);
  Node* up = g.placeholder("u", {1, 1, 2, 4}, DType::Float64);
  g.output({g.call("_upsample_bilinear2d_aa", {x, std::vector<int64_t>{1, 2}, false}),
            g.call("_upsample_bilinear2d_aa", {up, std::vector<int64_t>{2, 5}, false}),
            g.call("upsample_bilinear2d", {up, std::vector<int64_t>{2, 5}, false})});
  verify(g);
  Tensor xv = Tensor::from_vector({1, 1, 1, 4}, std::vector<double>{1, 10, 100, 1000},
                                  DType::Float64);
  Tensor uv = seq({1, 1, 2, 4}, 0.9, 0.0);
  std::vector<Tensor> r = compiled_equals_interpreter(g, {xv, uv});
  EXPECT_NEAR(r[0].get_double(0), (3 * 1 + 3 * 10 + 100) / 7.0, 1e-12);
  EXPECT_NEAR(r[0].get_double(1), (10 + 3 * 100 + 3 * 1000) / 7.0, 1e-12);
  for (int64_t i = 0; i < 10; ++i) EXPECT_NEAR(r[1].get_double(i), r[2].get_double(i), 1e-12);
  // uint8 (torch's fixed-point path) is refused, naming the reason.
  Graph u8;
  Node* b = u8.placeholder("b", {1, 1, 4, 4}, DType::UInt8);
  std::string msg =
      error_of([&] { u8.call("_upsample_bilinear2d_aa", {b, std::vector<int64_t>{2, 2}, false}); });
  EXPECT_TRUE(has(msg, "expected a floating-point input")) << msg;
}

}  // namespace
}  // namespace stax
