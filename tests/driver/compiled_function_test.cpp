// CompiledFunction (seed §5.6): compiled forward + lazily compiled backward, checked against the
// joint graph in the reference interpreter; double backward rejected where requested (§5.7,
// Listing 5.5); memory_budget passed through to the partitioner (§5.8).
#include "core/driver/compiled_function.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/driver/double_backward.h"
#include "core/config/config.h"
#include "core/interpreter/interpreter.h"
#include "core/lowering/graph_lowering.h"
#include "core/support/error.h"

using namespace stax;

namespace {

// The build tree's plugins (cpu_cpp), whatever configs/cpu.yaml's search path finds first.
Config test_config() {
  Config c = Config::default_cpu();
  c.plugin_path = {STAX_PLUGIN_DIR};
  return c;
}

// Example 5.1: f(x, W) = gelu(x @ W).sum(), x: 32x64, W: 64x64.
Graph example_5_1() {
  Graph g;
  Node* x = g.placeholder("", {32, 64});
  Node* w = g.placeholder("", {64, 64});
  g.output({g.call("sum", {g.call("gelu", {g.call("matmul", {x, w})})})});
  return g;
}

std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed) {
  std::vector<Tensor> out;
  for (const Node* p : g.placeholders())
    out.push_back(Tensor::randn(p->shape(), p->dtype(), seed++));
  return out;
}

// The bound of compiled_function.h for reductions / matmuls.
::testing::AssertionResult close(const Tensor& got, const Tensor& want) {
  if (got.allclose(want, kGradientRtol, kGradientAtol)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got.summary() << "\nwant " << want.summary();
}

::testing::AssertionResult bitwise(const Tensor& got, const Tensor& want) {
  if (got.equal(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got.summary() << "\nwant " << want.summary();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CompiledFunction, Example51MatchesInterpreter) {
  Graph g = example_5_1();
  Compiler compiler(test_config());
  CompiledFunction f(g, {"primals_2"}, compiler);
  EXPECT_EQ(f.partition().saved, std::vector<std::string>{"matmul"});
  EXPECT_EQ(f.partition().saved_primals, std::vector<std::string>{"primals_1"});
  CompiledFunctionStats s = f.stats();
  EXPECT_EQ(s.forward_compiles, 1);
  EXPECT_EQ(s.backward_compiles, 0);
  EXPECT_EQ(s.saved_bytes, 8192);
  EXPECT_EQ(s.save_all_bytes, 8192);            // B \ primals = {matmul}
  EXPECT_EQ(s.all_intermediates_bytes, 16388);  // matmul, gelu, sum_0

  std::vector<Tensor> in = random_inputs(g, 7);
  ForwardResult r = f.forward(in);
  ASSERT_EQ(r.outputs.size(), 1u);
  ASSERT_EQ(r.ctx->saved_values().size(), 1u);
  EXPECT_EQ(r.ctx->saved_bytes(), 8192);
  EXPECT_EQ(r.ctx->saved_primals().size(), 1u);
  // The saved primal is the caller's tensor itself, not a copy.
  EXPECT_EQ(r.ctx->saved_primals()[0].data_ptr(), in[0].data_ptr());

  std::vector<Tensor> grads = f.backward(*r.ctx);
  ASSERT_EQ(grads.size(), 1u);
  std::vector<Tensor> ref = f.reference(in);
  ASSERT_EQ(ref.size(), 2u);
  EXPECT_TRUE(close(r.outputs[0], ref[0]));
  EXPECT_TRUE(close(grads[0], ref[1]));
  EXPECT_EQ(grads[0].sizes(), (Shape{64, 64}));
  // The saved value is h = x @ W (within the matmul bound of the interpreter's).
  Graph h;
  h.output({h.call("matmul", {h.placeholder("", {32, 64}), h.placeholder("", {64, 64})})});
  EXPECT_TRUE(close(f.forward(in).ctx->saved_values()[0], interpret(h, in)[0]));
  s = f.stats();
  EXPECT_EQ(s.backward_compiles, 1);
  EXPECT_GT(s.forward_compile_ms, 0);
  EXPECT_GT(s.backward_compile_ms, 0);
  EXPECT_NE(f.stats_str().find("saved 8192 B/step"), std::string::npos) << f.stats_str();
}

// A saved value reaches the backward in the layout the compiled forward returns it in. v is the
// transpose of a pointwise value (the GPT block's k·scale, transposed for the scores): its meta
// has the view's strides, but the forward realizes it as a buffer of its own, row-major. The
// backward's placeholder takes the forward's layout, so its input loading reads v in place
// instead of copying it into the view's strides every step. Gradients as the joint graph's.
TEST(CompiledFunction, SavedValuesKeepTheForwardsLayout) {
  Graph g;
  Node* x = g.placeholder("x", {16, 24});
  Node* w = g.placeholder("w", {16, 5});
  Node* v = g.call("permute", {g.call("tanh", {x}, {}, "y"), std::vector<int64_t>{1, 0}}, {}, "v");
  g.output({g.call("sum", {g.call("mm", {v, w}, {}, "o")}, {}, "loss")});
  Compiler compiler(test_config());
  CompiledFunction f(g, {"w"}, compiler);
  ASSERT_EQ(f.partition().saved, std::vector<std::string>{"v"});
  std::vector<Tensor> in = random_inputs(g, 3);
  ForwardResult r = f.forward(in);
  const Shape saved_strides = r.ctx->saved_values().at(0).strides();
  std::vector<Node*> bw_in = f.partition().backward.placeholders();
  size_t k = 0;
  while (k < bw_in.size() && bw_in[k]->name() != "v") ++k;
  ASSERT_LT(k, bw_in.size());
  // The case: the forward returns v in another layout than its meta's (the view's strides).
  ASSERT_NE(saved_strides, bw_in[k]->meta().strides);
  std::vector<Tensor> grads = f.backward(*r.ctx);
  std::vector<Tensor> ref = f.reference(in);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_TRUE(close(grads[0], ref[1]));
  EXPECT_EQ(f.compiled_backward()->lowered().inputs[k]->layout().stride, saved_strides);
}

TEST(CompiledFunction, InterpreterPathIsBitwiseTheJointGraph) {
  Graph g = example_5_1();
  CompiledFunctionOptions o;
  o.interpret = true;
  CompiledFunction f(g, {"primals_1", "primals_2"}, Config{}, o);
  EXPECT_EQ(f.compiled_forward(), nullptr);
  std::vector<Tensor> in = random_inputs(g, 3);
  ForwardResult r = f.forward(in);
  std::vector<Tensor> grads = f.backward(*r.ctx, {Tensor::scalar(0.5)});
  std::vector<Tensor> ref = f.reference(in, {Tensor::scalar(0.5)});
  ASSERT_EQ(ref.size(), 3u);
  EXPECT_TRUE(bitwise(r.outputs[0], ref[0]));
  EXPECT_TRUE(bitwise(grads[0], ref[1]));
  EXPECT_TRUE(bitwise(grads[1], ref[2]));
  EXPECT_EQ(f.stats().forward_compiles, 0);
  EXPECT_EQ(f.stats().backward_compiles, 0);
}

TEST(CompiledFunction, BackwardCompiledOnFirstBackwardOnly) {
  Graph g = example_5_1();
  Compiler compiler(test_config());
  CompiledFunction f(g, {"primals_2"}, compiler);
  // Inference only: the backward graph is never compiled.
  for (uint64_t seed = 0; seed < 3; ++seed) {
    ForwardResult r = f.forward(random_inputs(g, seed));
    EXPECT_EQ(r.outputs.size(), 1u);
  }
  EXPECT_FALSE(f.backward_compiled());
  EXPECT_EQ(f.compiled_backward(), nullptr);
  EXPECT_EQ(f.stats().backward_compiles, 0);
  EXPECT_EQ(f.stats().forward_calls, 3);
  EXPECT_NE(f.stats_str().find("backward compile (not compiled)"), std::string::npos);

  // Training: compiled once, on the first backward; reused afterwards.
  for (uint64_t seed = 0; seed < 3; ++seed) {
    std::vector<Tensor> in = random_inputs(g, seed);
    ForwardResult r = f.forward(in);
    std::vector<Tensor> grads = f.backward(*r.ctx);
    EXPECT_TRUE(f.backward_compiled());
    EXPECT_EQ(f.stats().backward_compiles, 1);
    EXPECT_TRUE(close(grads[0], f.reference(in)[1])) << "seed " << seed;
  }
  EXPECT_EQ(f.stats().backward_calls, 3);
  EXPECT_EQ(f.stats().forward_compiles, 1);
}

// compile_backward(): the backward compiled up front, once; backward() then compiles nothing and
// gives the bits of a function whose backward was compiled by its first backward().
TEST(CompiledFunction, BackwardCompiledUpFrontOnRequest) {
  Graph g = example_5_1();
  Compiler compiler(test_config());
  CompiledFunction lazy(g, {"primals_2"}, compiler), eager(g, {"primals_2"}, compiler);
  eager.compile_backward();
  EXPECT_TRUE(eager.backward_compiled());
  EXPECT_NE(eager.compiled_backward(), nullptr);
  eager.compile_backward();  // a no-op now
  EXPECT_EQ(eager.stats().backward_compiles, 1);
  std::vector<Tensor> in = random_inputs(g, 7);
  ForwardResult a = lazy.forward(in), b = eager.forward(in);
  std::vector<Tensor> ga = lazy.backward(*a.ctx), gb = eager.backward(*b.ctx);
  EXPECT_EQ(eager.stats().backward_compiles, 1);
  ASSERT_EQ(ga.size(), gb.size());
  for (size_t i = 0; i < ga.size(); ++i) EXPECT_TRUE(ga[i].equal(gb[i])) << "gradient " << i;
  EXPECT_TRUE(close(gb[0], eager.reference(in)[1]));
}

// compile_backward_with_forward: both graphs compiled in the constructor as one job
// (Compiler::compile_pair, their kernels in one batch). The same kernels and the same bits as a
// forward compile followed by compile_backward(), each compiled once (two Compilers: nothing
// comes from another's in-process cache); the saved values keep the forward's layouts as on the
// lazy path; gradients as the joint graph's.
TEST(CompiledFunction, BackwardCompiledWithForwardAsOneJob) {
  struct Case {
    Graph g;
    std::vector<std::string> wrt;
  };
  std::vector<Case> cases;
  cases.push_back({example_5_1(), {"primals_1", "primals_2"}});
  {
    Graph g;  // a saved value in another layout than its meta's (SavedValuesKeepTheForwardsLayout)
    Node* x = g.placeholder("x", {16, 24});
    Node* w = g.placeholder("w", {16, 5});
    Node* v =
        g.call("permute", {g.call("tanh", {x}, {}, "y"), std::vector<int64_t>{1, 0}}, {}, "v");
    g.output({g.call("sum", {g.call("mm", {v, w}, {}, "o")}, {}, "loss")});
    cases.push_back({std::move(g), {"x", "w"}});
  }
  for (const Case& c : cases) {
    Compiler apart_compiler(test_config()), job_compiler(test_config());
    CompiledFunctionOptions o;
    o.compile_backward_with_forward = true;
    CompiledFunction apart(c.g, c.wrt, apart_compiler), job(c.g, c.wrt, job_compiler, o);
    apart.compile_backward();
    ASSERT_TRUE(job.backward_compiled());
    CompiledFunctionStats s = job.stats();
    EXPECT_EQ(s.forward_compiles, 1);
    EXPECT_EQ(s.backward_compiles, 1);
    EXPECT_TRUE(s.backward_with_forward);
    EXPECT_GT(s.forward_compile_ms, 0);
    EXPECT_NE(job.stats_str().find("forward + backward compile"), std::string::npos)
        << job.stats_str();
    job.compile_backward();  // a no-op
    EXPECT_EQ(job.stats().backward_compiles, 1);
    for (auto [a, b] : {std::pair{apart.compiled_forward(), job.compiled_forward()},
                        std::pair{apart.compiled_backward(), job.compiled_backward()}}) {
      EXPECT_EQ(b->stats().kernels_compiled, a->stats().kernels_compiled);
      EXPECT_EQ(b->stats().kernels_from_memory, a->stats().kernels_from_memory);
      ASSERT_EQ(a->kernels().size(), b->kernels().size());
      for (size_t k = 0; k < a->kernels().size(); ++k)
        EXPECT_EQ(a->kernels()[k].source, b->kernels()[k].source) << k;
      ASSERT_EQ(a->lowered().inputs.size(), b->lowered().inputs.size());
      for (size_t k = 0; k < a->lowered().inputs.size(); ++k)
        EXPECT_EQ(a->lowered().inputs[k]->layout().stride, b->lowered().inputs[k]->layout().stride);
    }
    std::vector<Tensor> in = random_inputs(c.g, 11);
    ForwardResult ra = apart.forward(in), rb = job.forward(in);
    std::vector<Tensor> ga = apart.backward(*ra.ctx), gb = job.backward(*rb.ctx);
    EXPECT_EQ(job.stats().backward_compiles, 1);
    EXPECT_TRUE(bitwise(rb.outputs[0], ra.outputs[0]));
    std::vector<Tensor> ref = job.reference(in);
    ASSERT_EQ(gb.size(), c.wrt.size());
    ASSERT_EQ(ga.size(), gb.size());
    for (size_t i = 0; i < gb.size(); ++i) {
      EXPECT_TRUE(bitwise(gb[i], ga[i])) << "gradient " << i;
      EXPECT_TRUE(close(gb[i], ref[1 + i])) << "gradient " << i;
    }
  }
}

// Compiler::compile_pair of a graph with itself: the second graph's kernels are the first's
// (compiled once, in the batch), and both run to the bits of compile().
TEST(CompiledFunction, CompilePairCompilesAKernelBothHoldOnce) {
  Graph g = example_5_1();
  Compiler pair_compiler(test_config()), single(test_config());
  auto [a, b] = pair_compiler.compile_pair(g, [&](const LoweredGraph&) { return g.clone(); });
  CompiledGraph c = single.compile(g);
  ASSERT_GT(c.stats().kernels_compiled, 0);
  EXPECT_EQ(a.stats().kernels_compiled, c.stats().kernels_compiled);
  EXPECT_EQ(b.stats().kernels_compiled, 0);
  EXPECT_EQ(b.stats().kernels_from_memory, c.stats().kernels_compiled);
  std::vector<Tensor> in = random_inputs(g, 5);
  std::vector<Tensor> want = c.run(in);
  EXPECT_TRUE(bitwise(a.run(in)[0], want[0]));
  EXPECT_TRUE(bitwise(b.run(in)[0], want[0]));
  EXPECT_TRUE(close(want[0], interpret(g, in)[0]));
}

// A cancelled token stops the one-job compile as it stops compile(): stage "cancelled".
TEST(CompiledFunction, CompilePairIsCancellable) {
  Graph g = example_5_1();
  Compiler compiler(test_config());
  CancellationToken token;
  token.cancel();
  std::string err = error_of([&] {
    compiler.compile_pair(g, [&](const LoweredGraph&) { return g.clone(); }, &token);
  });
  EXPECT_NE(err.find("cancelled"), std::string::npos) << err;
}

TEST(CompiledFunction, SavedValuesReleasedUnlessRetained) {
  Graph g = example_5_1();
  Compiler compiler(test_config());
  CompiledFunction f(g, {"primals_2"}, compiler);
  std::vector<Tensor> in = random_inputs(g, 1);
  ForwardResult r = f.forward(in);
  BackwardOptions keep;
  keep.retain_graph = true;
  Tensor g1 = f.backward(*r.ctx, {}, keep)[0];
  EXPECT_FALSE(r.ctx->released());
  Tensor g2 = f.backward(*r.ctx, {Tensor::scalar(2.0)})[0];  // linear in the upstream gradient
  EXPECT_TRUE(r.ctx->released());
  EXPECT_EQ(r.ctx->saved_bytes(), 0);
  std::vector<float> a = g1.to_vector<float>(), b = g2.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(2.0f * a[i], b[i]) << i;
  std::string msg = error_of([&] { f.backward(*r.ctx); });
  EXPECT_NE(msg.find("a second time"), std::string::npos) << msg;
  // Contexts of another function and malformed upstream gradients are rejected.
  CompiledFunction other(g, {"primals_2"}, compiler);
  ForwardResult ro = other.forward(in);
  EXPECT_NE(error_of([&] { f.backward(*ro.ctx); }).find("another CompiledFunction"),
            std::string::npos);
  ForwardResult r2 = f.forward(in);
  msg = error_of([&] { f.backward(*r2.ctx, {Tensor::ones({2})}); });
  EXPECT_NE(msg.find("upstream gradient 0 (tangents_1)"), std::string::npos) << msg;
  msg = error_of([&] { f.forward({in[0]}); });
  EXPECT_NE(msg.find("expected 2 inputs, got 1"), std::string::npos) << msg;
}

// Listing 5.5: create_graph returns the first-order gradients (the same bits), and only
// differentiating them again rejects, with the listing's message, where it is asked for.
TEST(CompiledFunction, DoubleBackwardRejectedWhereItIsRequested) {
  Graph g = example_5_1();
  Compiler compiler(test_config());
  CompiledFunction f(g, {"primals_2"}, compiler);
  std::vector<Tensor> in = random_inputs(g, 2);
  ForwardResult plain = f.forward(in), recorded = f.forward(in);
  std::vector<Tensor> want = f.backward(*plain.ctx);
  EXPECT_FALSE(plain.ctx->gradients_backward());  // no graph to differentiate
  BackwardOptions o;
  o.create_graph = true;
  std::vector<Tensor> grads = f.backward(*recorded.ctx, {}, o);
  ASSERT_EQ(grads.size(), want.size());
  EXPECT_TRUE(grads[0].equal(want[0]));
  EXPECT_TRUE(close(grads[0], f.reference(in)[1]));
  ASSERT_TRUE(recorded.ctx->gradients_backward());
  try {
    recorded.ctx->gradients_backward()({Tensor::ones(grads[0].sizes())});
    FAIL() << "differentiating a compiled gradient was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.stage(), "autodiff");
    EXPECT_EQ(e.location(), "compiled backward");
    EXPECT_EQ(e.message(), std::string(kDoubleBackwardMessage));
    EXPECT_EQ(std::string(e.what()),
              "compiled backward: error: Compiled regions do not support second-order gradients "
              "(double backward). Run the function without compilation to compute higher-order "
              "derivatives.");
  }
  EXPECT_EQ(f.stats().backward_calls, 2);
}

namespace {

// budget_graph of partitioner_test, one branch: a0 = x @ w0 (U, 512 bytes), s0 = a0 + y0 (2048
// bytes), 32 cheap steps, e0 = tanh(...) read by tanh_backward. The min cut saves e0 (2048 bytes);
// the fewest bytes save a0 (512) and recompute the chain in the backward.
Graph budget_forward() {
  Graph g;
  Node* x = g.placeholder("x", {8, 16});
  Node* w = g.placeholder("w0", {16, 16});
  Node* y = g.placeholder("y0", {4, 8, 16});
  Node* v = g.call("add.Tensor", {g.call("mm", {x, w}, {}, "a0"), y}, {}, "s0");
  for (int i = 0; i < 32; ++i) v = g.call("add.Scalar", {v, 0.25}, {}, "c0_" + std::to_string(i));
  g.output({g.call("sum", {g.call("tanh", {v}, {}, "e0")})});
  return g;
}

}  // namespace

TEST(CompiledFunction, MemoryBudgetPassesThrough) {
  Graph g = budget_forward();
  Compiler compiler(test_config());
  CompiledFunctionOptions o;
  o.partition.policy.force_save_long_chains = false;
  CompiledFunction plain(g, {"w0"}, compiler, o);
  EXPECT_EQ(plain.partition().saved, std::vector<std::string>{"e0"});
  EXPECT_FALSE(plain.partition().budget.has_value());

  o.partition.memory_budget = 1024;
  o.partition.algorithm = partition::FlowAlgorithm::kEdmondsKarp;
  CompiledFunction f(g, {"w0"}, compiler, o);
  ASSERT_TRUE(f.partition().budget.has_value());
  EXPECT_EQ(f.partition().budget->budget, 1024);
  EXPECT_EQ(f.partition().budget->outcome, partition::BudgetOutcome::kRecomputeMore);
  EXPECT_EQ(f.partition().algorithm, partition::FlowAlgorithm::kEdmondsKarp);
  EXPECT_EQ(f.partition().saved, std::vector<std::string>{"a0"});
  EXPECT_EQ(f.stats().saved_bytes, 512);
  EXPECT_EQ(f.stats().save_all_bytes, 2048);  // e0: the only computed value the backward reads
  std::vector<Tensor> in = random_inputs(g, 5);
  ForwardResult r = f.forward(in);
  EXPECT_EQ(r.ctx->saved_bytes(), 512);
  std::vector<Tensor> grads = f.backward(*r.ctx);
  std::vector<Tensor> ref = f.reference(in);
  EXPECT_TRUE(close(r.outputs[0], ref[0]));
  EXPECT_TRUE(close(grads[0], ref[1]));

  // An infeasible budget fails at construction, naming the fewest bytes possible.
  o.partition.memory_budget = 100;
  std::string msg = error_of([&] { CompiledFunction bad(g, {"w0"}, compiler, o); });
  EXPECT_NE(msg.find("needs is 512"), std::string::npos) << msg;
}

TEST(CompiledFunction, SeveralOutputsAndBroadcasting) {
  // y = tanh(x @ W + b) (b broadcast over rows), s = sum(y * y), n = x's argmax (integer, not
  // differentiable); gradients of W and b (b's sums over the broadcast rows).
  Graph g;
  Node* x = g.placeholder("x", {16, 8});
  Node* w = g.placeholder("W", {8, 4});
  Node* b = g.placeholder("b", {4});
  Node* y = g.call("tanh", {g.call("add.Tensor", {g.call("matmul", {x, w}), b})});
  Node* s = g.call("sum", {g.call("mul.Tensor", {y, y})});
  Node* n = g.call("argmax", {x});
  g.output({y, s, n});
  Compiler compiler(test_config());
  CompiledFunction f(g, {"W", "b"}, compiler);
  EXPECT_EQ(f.num_outputs(), 3u);
  EXPECT_EQ(f.joint().tangents.size(), 2u);  // y and s; argmax has none
  EXPECT_EQ(f.joint().output_tangent[2], -1);
  std::vector<Tensor> in = random_inputs(g, 11);
  ForwardResult r = f.forward(in);
  ASSERT_EQ(r.outputs.size(), 3u);
  Tensor gy = Tensor::randn({16, 4}, DType::Float32, 99);
  std::vector<Tensor> up = {gy, Tensor::scalar(0.75), Tensor()};
  std::vector<Tensor> grads = f.backward(*r.ctx, up);
  std::vector<Tensor> ref = f.reference(in, up);
  ASSERT_EQ(ref.size(), 5u);
  EXPECT_TRUE(close(r.outputs[0], ref[0]));
  EXPECT_TRUE(close(r.outputs[1], ref[1]));
  EXPECT_TRUE(bitwise(r.outputs[2], ref[2]));
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads[1].sizes(), (Shape{4}));
  EXPECT_TRUE(close(grads[0], ref[3]));
  EXPECT_TRUE(close(grads[1], ref[4]));
  // An undefined upstream gradient counts as zeros: only s contributes.
  ForwardResult r2 = f.forward(in);
  std::vector<Tensor> only_s = {Tensor(), Tensor::scalar(1.0), Tensor()};
  std::vector<Tensor> g2 = f.backward(*r2.ctx, only_s);
  std::vector<Tensor> ref2 = f.reference(in, only_s);
  EXPECT_TRUE(close(g2[0], ref2[3]));
  EXPECT_TRUE(close(g2[1], ref2[4]));
}

TEST(CompiledFunction, PointwiseOnlyGradientsAreBitwise) {
  // No reduction, no matmul: every compiled kernel evaluates the interpreter's scalar semantics.
  Graph g;
  Node* x = g.placeholder("x", {8, 33});
  Node* y = g.placeholder("y", {33});
  Node* a = g.call("mul.Tensor", {g.call("sin", {x}), y});
  Node* out = g.call("add.Tensor", {g.call("tanh", {a}), g.call("exp", {x})});
  g.output({out, g.call("sigmoid", {a})});
  Compiler compiler(test_config());
  CompiledFunction f(g, {"x"}, compiler);
  std::vector<Tensor> in = random_inputs(g, 21);
  std::vector<Tensor> up = {Tensor::randn({8, 33}, DType::Float32, 5),
                            Tensor::randn({8, 33}, DType::Float32, 6)};
  ForwardResult r = f.forward(in);
  std::vector<Tensor> grads = f.backward(*r.ctx, up);
  std::vector<Tensor> ref = f.reference(in, up);
  EXPECT_TRUE(bitwise(r.outputs[0], ref[0]));
  EXPECT_TRUE(bitwise(r.outputs[1], ref[1]));
  EXPECT_TRUE(bitwise(grads[0], ref[2]));
}

TEST(CompiledFunction, JointGraphErrorsSurface) {
  Graph g = example_5_1();
  CompiledFunctionOptions o;
  o.interpret = true;
  std::string msg = error_of([&] { CompiledFunction f(g, {"nope"}, Config{}, o); });
  EXPECT_NE(msg.find("nope"), std::string::npos) << msg;
}
