// CancellationToken (core/support/cancellation.h) in Compiler::compile and CompiledFunction: the
// core side of Ctrl-C during a long compile in Python. A cancelled compile throws stax::Error
// with stage "cancelled" at its next checkpoint and leaves the Compiler usable.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/driver/compiled_function.h"
#include "core/driver/compiler.h"
#include "core/interpreter/interpreter.h"
#include "core/support/cancellation.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

// cpu_cpp without the disk cache (even when STAX_CACHE_DIR is set): every kernel is compiled.
Config uncached() {
  Config c = test::cpu_config();
  c.cache = false;
  return c;
}

// n independent row reductions of different shapes: n kernels that the plugin compiles one by
// one (no disk cache, and distinct shapes defeat the in-process cache).
Graph many_kernels(int n) {
  Graph g;
  std::vector<Node*> outs;
  for (int i = 0; i < n; ++i) {
    Node* x = g.placeholder("x" + std::to_string(i), {8, 16 + i});
    outs.push_back(g.call("sum.dim_IntList", {g.call("exp", {x}), std::vector<int64_t>{-1}}));
  }
  g.output(outs);
  return g;
}

TEST(CancellationToken, ChecksThrowOnlyOnceCancelled) {
  CancellationToken token;
  EXPECT_NO_THROW(token.check("here", "the pass"));
  EXPECT_NO_THROW(check_cancelled(nullptr, "here", "the pass"));
  token.cancel();
  try {
    check_cancelled(&token, "here", "the pass");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.stage(), kCancelledStage);
    EXPECT_EQ(e.location(), "here");
    EXPECT_EQ(e.message(), "cancelled before the pass");
  }
  token.reset();
  EXPECT_FALSE(token.cancelled());
}

TEST(CompileCancel, ACancelledTokenStopsBeforeTheFirstPass) {
  Compiler compiler(uncached());
  Graph g = many_kernels(3);
  CancellationToken token;
  token.cancel();
  try {
    compiler.compile(g, &token);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.stage(), kCancelledStage);
    EXPECT_EQ(e.message(), "cancelled before decompose");
  }
  // The Compiler is usable afterwards, and the result is right.
  CompiledGraph cg = compiler.compile(g);
  std::vector<Tensor> in;
  for (int i = 0; i < 3; ++i) in.push_back(Tensor::randn({8, 16 + i}, DType::Float32, 7, i));
  std::vector<Tensor> got = cg.run(in), want = interpret(g, in);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(got[i].allclose(want[i], kGradientRtol, kGradientAtol)) << i;
}

// Cancelled from another thread while it compiles: it stops at a checkpoint (one of the passes
// or, most likely, between two of its 40 kernels) with the "cancelled" error.
TEST(CompileCancel, AnotherThreadCancelsARunningCompile) {
  Compiler compiler(uncached());
  Graph g = many_kernels(40);
  CancellationToken token;
  std::string stage, message;
  std::thread worker([&] {
    try {
      compiler.compile(g, &token);
    } catch (const Error& e) {
      stage = e.stage();
      message = e.message();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  token.cancel();
  worker.join();
  EXPECT_EQ(stage, kCancelledStage) << "40 kernels compiled in under 30 ms?";
  EXPECT_EQ(message.rfind("cancelled before ", 0), 0u) << message;
  std::printf("stopped at: %s\n", message.c_str());  // most often between two kernels
  EXPECT_EQ(compiler.compile(many_kernels(2)).num_kernels(), 2u);
}

TEST(CompileCancel, CompiledFunctionPollsItsToken) {
  Compiler compiler(uncached());
  Graph g;
  Node* x = g.placeholder("x", {4, 8});
  Node* w = g.placeholder("w", {8, 8});
  g.output({g.call("sum.default", {g.call("gelu", {g.call("matmul", {x, w})})})});
  auto token = std::make_shared<CancellationToken>();
  CompiledFunctionOptions options;
  options.cancel = token;
  token->cancel();
  try {
    CompiledFunction f(g, {"w"}, compiler, options);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.stage(), kCancelledStage);
    EXPECT_EQ(e.message(), "cancelled before the joint graph");
  }
  token->reset();
  CompiledFunction f(g, {"w"}, compiler, options);
  Tensor xv = Tensor::randn({4, 8}, DType::Float32, 1),
         wv = Tensor::randn({8, 8}, DType::Float32, 2);
  ForwardResult r = f.forward({xv, wv});
  token->cancel();  // the lazy backward compile is cancelled, then retried
  EXPECT_THROW(f.backward(*r.ctx, {}, {/*retain_graph=*/true}), Error);
  EXPECT_FALSE(f.backward_compiled());
  token->reset();
  std::vector<Tensor> grads = f.backward(*r.ctx);
  std::vector<Tensor> ref = f.reference({xv, wv});
  EXPECT_TRUE(grads[0].allclose(ref[1], kGradientRtol, kGradientAtol));
}

}  // namespace
}  // namespace stax
