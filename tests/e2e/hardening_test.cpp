// Regression tests of issue 12 (hardening) that need the compiled path or whole graphs: each input
// below used to crash (SIGFPE, SIGSEGV), race or take cubic time. Parser, config, plugin-loader and
// shape cases live next to their modules' tests (parser_test, config_test, plugin_loader_test).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "core/driver/compiled_function.h"
#include "core/graph/parser.h"
#include "core/graph/source_location.h"
#include "core/lowering/graph_lowering.h"
#include "core/scheduler/memory_plan.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

namespace stax {
namespace {

using test::bitwise_equal;
using test::cpu_compiler;
using test::cpu_config;
using test::contains;
using test::error_of;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Row 6: INT64_MIN / -1 is defined in stax_scalar (wraps to INT64_MIN; the remainder is 0), so
// the interpreter and the compiled kernel agree instead of trapping.
TEST(Hardening, Int64MinByMinusOneIsDefinedAndAgrees) {
  Graph g;
  Node* a = g.placeholder("a", {6}, DType::Int64);
  Node* b = g.placeholder("b", {6}, DType::Int64);
  g.output({g.call("floor_divide", {a, b}), g.call("remainder.Tensor", {a, b}),
            g.call("mul.Tensor", {a, b}), g.call("neg", {a}), g.call("abs", {a}),
            g.call("add.Tensor", {a, a})});
  std::vector<Tensor> in = {
      Tensor::from_vector<int64_t>({6}, {kMin, kMin, 7, kMax, -7, kMin}),
      Tensor::from_vector<int64_t>({6}, {-1, 1, -1, 2, 3, kMin}),
  };
  std::vector<Tensor> want = test::reference(g, in);
  EXPECT_EQ(want[0].to_vector<int64_t>(), (std::vector<int64_t>{kMin, kMin, -7, kMax / 2, -3, 1}));
  EXPECT_EQ(want[1].to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 1, 2, 0}));
  EXPECT_EQ(want[2].to_vector<int64_t>(), (std::vector<int64_t>{kMin, kMin, -7, -2, -21, 0}));
  EXPECT_EQ(want[3].to_vector<int64_t>(), (std::vector<int64_t>{kMin, kMin, -7, -kMax, 7, kMin}));
  EXPECT_EQ(want[4].to_vector<int64_t>(), (std::vector<int64_t>{kMin, kMin, 7, kMax, 7, kMin}));
  EXPECT_EQ(want[5].to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 14, -2, -14, 0}));
  std::vector<Tensor> got = cpu_compiler().compile(g).run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bitwise_equal(got[i], want[i])) << i;
  // A zero divisor raises torch's ZeroDivisionError (DECISIONS item 55), interpreted and compiled.
  in[1] = Tensor::from_vector<int64_t>({6}, {-1, 1, -1, 2, 0, kMin});
  EXPECT_TRUE(contains(error_of([&] { test::reference(g, in); }), "ZeroDivisionError"));
  EXPECT_TRUE(contains(error_of([&] { cpu_compiler().compile(g).run(in); }), "ZeroDivisionError"));
}

// Row 7: index_select of a 0-d tensor and cat of empty tensors crashed in the lowering rules'
// loaders (compile, run and grad); the interpreter was right.
TEST(Hardening, IndexSelectOfZeroDimAndCatOfEmpties) {
  Graph g;
  Node* x = g.placeholder("x", Shape{});
  Node* idx = g.placeholder("idx", {1}, DType::Int64);
  Node* e1 = g.placeholder("e1", {0, 3});
  Node* e2 = g.placeholder("e2", {0, 3});
  Node* sel = g.call("index_select", {x, 0, idx});
  Node* cat = g.call("cat", {std::vector<Node*>{e1, e2}, 0});
  g.output({sel, cat, g.call("mul.Tensor", {sel, x})});
  std::vector<Tensor> in = {Tensor::scalar(2.5), Tensor::from_vector<int64_t>({1}, {0}),
                            Tensor::empty({0, 3}, DType::Float32),
                            Tensor::empty({0, 3}, DType::Float32)};
  std::vector<Tensor> want = test::reference(g, in);
  EXPECT_EQ(want[0].sizes(), Shape{});
  EXPECT_EQ(want[0].item(), 2.5);
  EXPECT_EQ(want[1].sizes(), (Shape{0, 3}));
  std::vector<Tensor> got = cpu_compiler().compile(g).run(in);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bitwise_equal(got[i], want[i])) << i;

  // The gradient through both, compiled.
  Graph f;
  Node* fx = f.placeholder("x", Shape{});
  Node* fi = f.placeholder("idx", {1}, DType::Int64);
  Node* fe = f.placeholder("e", {0});
  Node* s = f.call("index_select", {fx, 0, fi});
  Node* c = f.call("cat", {std::vector<Node*>{fe, fe}, 0});
  f.output({f.call("add.Tensor", {f.call("mul.Tensor", {s, s}), f.call("sum", {c})})});
  CompiledFunction cf(f, {"x"}, cpu_compiler());
  std::vector<Tensor> fin = {Tensor::scalar(3.0), Tensor::from_vector<int64_t>({1}, {0}),
                             Tensor::empty({0}, DType::Float32)};
  ForwardResult r = cf.forward(fin);
  EXPECT_EQ(r.outputs[0].item(), 9.0);
  std::vector<Tensor> grads = cf.backward(*r.ctx);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].item(), 6.0);  // d(x*x)/dx at 3
}

// Row 8: two threads compiling on one Compiler raced in the cpu_cpp JIT's lazy set-up and entry
// counter ("Duplicate definition of symbol 'stax_entry_0'", then SIGSEGV).
TEST(Hardening, ConcurrentCompilesOnOneCompiler) {
  Compiler compiler(cpu_config());  // fresh: the JIT is created by the racing compiles
  auto graph_of = [](int k) {
    Graph g;
    Node* x = g.placeholder("x", {16});
    g.output({g.call("relu", {g.call("add.Scalar", {x, static_cast<double>(k)})})});
    return g;
  };
  const int kThreads = 4, kPerThread = 3;
  std::vector<std::vector<std::string>> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        Graph g = graph_of(t * kPerThread + i - 6);
        std::vector<Tensor> in = {Tensor::arange(16, DType::Float32)};
        try {
          std::vector<Tensor> got = compiler.compile(g).run(in);
          if (!bitwise_equal(got[0], test::reference(g, in)[0]))
            failures[t].push_back("graph " + std::to_string(i) + " differs");
        } catch (const std::exception& e) {
          failures[t].push_back(e.what());
        }
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(failures[t].empty()) << failures[t][0];
}

// Row 10: a fused chain of 100k relu nodes took cubic time in add_origins and recursed once per
// inlined node; now origins are shared and a chain is realized every 256 inlined nodes.
TEST(Hardening, HundredThousandNodeChainLowers) {
  const int kNodes = 100000;
  Graph g;
  Node* v = g.placeholder("x", {8});
  for (int i = 0; i < kNodes; ++i) v = g.call("relu", {v});
  g.output({v});
  LoweredGraph l = lower_graph(g);
  // One buffer per 256 inlined nodes, plus the output.
  EXPECT_EQ(l.buffers.size(), static_cast<size_t>((kNodes + 255) / 256));
  Origins last = l.buffers.back()->origins();
  ASSERT_FALSE(last.empty());
  EXPECT_EQ(last.back(), g.outputs()[0]);
  EXPECT_EQ(last.size(), static_cast<size_t>(kNodes % 256 == 0 ? 256 : kNodes % 256));
  // A shorter chain, compiled and run (a 100k-node one is hundreds of large kernels to JIT):
  // still relu(x), across the realized segments.
  Graph small;
  Node* s = small.placeholder("x", {8});
  for (int i = 0; i < 1000; ++i) s = small.call("relu", {s});
  small.output({s});
  std::vector<Tensor> in = {Tensor::from_vector<float>({8}, {-2, -1, -0.5f, 0, 0.5f, 1, 2, 3})};
  EXPECT_TRUE(
      bitwise_equal(cpu_compiler().compile(small).run(in)[0], test::reference(small, in)[0]));
}

// Issue 12: an allocation that cannot be satisfied (2^50 bytes) is a stax::Error naming the node,
// interpreted and compiled (cpu_cpp_test checks a graph stays usable after a run-time error).
TEST(Hardening, AllocationFailureNamesTheNode) {
  Graph g;
  Node* n = g.placeholder("n", {4});
  Node* big = g.call("zeros", {std::vector<int64_t>{int64_t{1} << 48}}, {}, "big");
  g.output({g.call("sum", {big}, {}, "total"), g.call("relu", {n}, {}, "r")});
  std::vector<Tensor> in = {Tensor::from_vector<float>({4}, {-1, 2, -3, 4})};
  try {
    interpret(g, in);
    ADD_FAILURE() << "the interpreter allocated 2^50 bytes";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "%big: error: zeros.default: out of memory: cannot allocate 1125899906842624 bytes");
  }
  Graph h;
  Node* hn = h.placeholder("n", {4});
  h.output({h.call("zeros", {std::vector<int64_t>{int64_t{1} << 48}}, {}, "big"),
            h.call("relu", {hn}, {}, "r")});
  CompiledGraph cg = cpu_compiler().compile(h);
  try {
    cg.run(in);
    ADD_FAILURE() << "the compiled graph allocated 2^50 bytes";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "%big: error: out of memory: cannot allocate 1125899906842624 bytes");
  }
}

// Issue 12: a run-time error names the node, where it came from in the graph text
// (FILE:LINE:COL) and the offending value, interpreted and compiled; the process survives and the
// CompiledGraph stays usable.
const char kIndexGraph[] =
    "graph(\n"
    "    %x shape=(5, 3) = placeholder[target=x]\n"
    "    %idx shape=(2,) dtype=int64 = placeholder[target=idx]\n"
    "    %sel shape=(2, 3) = call_function[target=tensorplay.ops.tp.index_select.default](args = "
    "(%x, 0, %idx), kwargs = {})\n"
    "    %r shape=(2, 3) = call_function[target=tensorplay.ops.tp.relu.default](args = (%sel,), "
    "kwargs = {})\n"
    "    return (r,)\n"
    ")\n";

TEST(Hardening, OutOfBoundsIndexNamesNodeLocationAndValue) {
  Graph g = parse_graph(kIndexGraph, "oob.stax");
  EXPECT_EQ(source_location(*g.find("sel")), "oob.stax:4:5");
  EXPECT_EQ(node_where(*g.find("sel")), "%sel (oob.stax:4:5)");
  Tensor x = Tensor::randn({5, 3}, DType::Float32, 7);
  Tensor bad = Tensor::from_vector<int64_t>({2}, {1, 7});
  Tensor ok = Tensor::from_vector<int64_t>({2}, {4, 0});
  // Interpreted: the node, its line, the value, the dimension and its size.
  EXPECT_EQ(error_of([&] { interpret(g, {x, bad}); }),
            "%sel (oob.stax:4:5): error: index_select.default: index 7 is out of bounds for "
            "dimension 0 with size 5");
  // Compiled (index_select and relu fused into one kernel): the kernel's nodes with their lines,
  // the loaded index and the size; then the same CompiledGraph runs again, right.
  CompiledGraph cg = cpu_compiler().compile(g);
  ASSERT_EQ(cg.num_kernels(), 1u);
  std::string what = error_of([&] { cg.run({x, bad}); });
  EXPECT_EQ(what.rfind("%sel (oob.stax:4:5), %r (oob.stax:5:5): error: kernel '", 0), 0u) << what;
  EXPECT_TRUE(contains(what, "index out of bounds: index 7 for a dimension of size 5")) << what;
  Tensor neg = Tensor::from_vector<int64_t>({2}, {-3, 0});  // index_select takes no negatives
  what = error_of([&] { cg.run({x, neg}); });
  EXPECT_TRUE(contains(what, "index out of bounds: index -3 for a dimension of size 5")) << what;
  EXPECT_TRUE(bitwise_equal(cg.run({x, ok})[0], interpret(g, {x, ok})[0]));
  // A node a pass inserts in place of a parsed one keeps its line (decompositions).
  Graph c = g.clone();
  EXPECT_EQ(source_location(*c.find("r")), "oob.stax:5:5");
}

// The same for an allocation failure of a parsed graph: the node and its line.
TEST(Hardening, AllocationFailureNamesTheSourceLine) {
  Graph g = parse_graph(
      "graph(\n"
      "    %n shape=(4,) = placeholder[target=n]\n"
      "    %big shape=(281474976710656,) = call_function[target=tensorplay.ops.tp.zeros.default]"
      "(args = ([281474976710656],), kwargs = {})\n"
      "    %r shape=(4,) = call_function[target=tensorplay.ops.tp.relu.default](args = (%n,), "
      "kwargs = {})\n"
      "    return (big, r)\n"
      ")\n",
      "alloc.stax");
  std::vector<Tensor> in = {Tensor::from_vector<float>({4}, {-1, 2, -3, 4})};
  EXPECT_EQ(error_of([&] { interpret(g, in); }),
            "%big (alloc.stax:3:5): error: zeros.default: out of memory: cannot allocate 1125899906842624 bytes");
  CompiledGraph cg = cpu_compiler().compile(g);
  EXPECT_EQ(error_of([&] { cg.run(in); }),
            "%big (alloc.stax:3:5): error: out of memory: cannot allocate 1125899906842624 bytes");
}

// Runs `cg` from one thread per entry of `inputs`, `runs` times each, at the same time; every
// result must equal `expected` of its thread bit for bit and no run may throw.
void expect_concurrent_runs_agree(const CompiledGraph& cg,
                                  const std::vector<std::vector<Tensor>>& inputs,
                                  const std::vector<std::vector<Tensor>>& expected, int runs) {
  const size_t n = inputs.size();
  std::vector<int> mismatches(n, 0);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < runs; ++r) {
          std::vector<Tensor> got = cg.run(inputs[t]);
          for (size_t i = 0; i < got.size(); ++i)
            if (!bitwise_equal(got[i], expected[t][i])) ++mismatches[t];
        }
      } catch (const std::exception& ex) {
        errors[t] = ex.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (size_t t = 0; t < n; ++t) {
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
    EXPECT_EQ(errors[t], "") << "thread " << t;
  }
}

// Issue 12 item 2: runs of one CompiledGraph from several threads, each with its own arena for
// the intermediates (a free list of run contexts) and no lock around cpu_cpp's kernels
// (concurrent_runs); every result equals the interpreter's, bit for bit.
TEST(Hardening, ConcurrentRunsOfOneCompiledGraph) {
  Graph g;
  Node* x = g.placeholder("x", {64, 96});
  Node* m = g.call("amax", {x, std::vector<int64_t>{1}, true});
  Node* e = g.call("exp", {g.call("sub.Tensor", {x, m})});
  Node* sm = g.call("div.Tensor", {e, g.call("sum.dim_IntList", {e, std::vector<int64_t>{1}, true})});
  g.output({g.call("mul.Tensor", {sm, g.call("tanh", {x})}), g.call("sum", {sm})});
  CompiledGraph cg = cpu_compiler().compile(g);
  ASSERT_GT(cg.memory_plan().arena_bytes, 0);  // the intermediates live in an arena
  ASSERT_TRUE(cpu_compiler().registry().backend("cpu").properties().concurrent_runs);
  const int kThreads = 2, kRuns = 40;
  std::vector<std::vector<Tensor>> inputs, expected;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back({Tensor::randn({64, 96}, DType::Float32, 100 + t)});
    expected.push_back(test::reference(g, inputs.back()));
  }
  expect_concurrent_runs_agree(cg, inputs, expected, kRuns);
}

// Concurrent runs on a compiler with a 2-thread pool (threads: 2): every kernel of both runs is
// split across the pool, whose parallel_for calls take turns; the arena free list, the output
// pools and the pool's hand-off are what the TSan run (scripts/sanitize.sh thread) checks here.
TEST(Hardening, ConcurrentRunsShareTheThreadPool) {
  Compiler two(cpu_config(test::cpu_options(test::Order::Segmented, 2)));
  ASSERT_EQ(two.registry().backend("cpu").properties().cores, 2);
  Graph g;
  Node* x = g.placeholder("x", {512, 256});
  Node* y = g.placeholder("y", {512, 256});
  Node* s = g.call("relu", {g.call("add.Tensor", {x, y})});
  g.output({g.call("sum.dim_IntList", {s, std::vector<int64_t>{1}}),
            g.call("exp", {g.call("mul.Scalar", {s, 0.01})})});
  CompiledGraph cg = two.compile(g);
  const int kThreads = 2, kRuns = 6;
  std::vector<std::vector<Tensor>> inputs, expected;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back({Tensor::randn({512, 256}, DType::Float32, 200 + t),
                      Tensor::randn({512, 256}, DType::Float32, 300 + t)});
    expected.push_back(test::reference(g, inputs.back()));
  }
  expect_concurrent_runs_agree(cg, inputs, expected, kRuns);
}

}  // namespace
}  // namespace stax
