// `stax grad` run as a process: Example 5.1 prints Listing 5.2, Table 5.1's capacities, the max
// flow and the saved set; --save writes gradients equal to the interpreter's joint graph; --dot,
// --budget, --algorithm, --dump, upstream gradients as inputs, and clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/autodiff/joint_graph.h"
#include "core/graph/parser.h"
#include "core/driver/compiled_function.h"
#include "core/interpreter/interpreter.h"
#include "core/tensor/npy.h"
#include "tests/support/cli_runner.h"

namespace fs = std::filesystem;
using namespace stax;
using namespace stax::test;

namespace {

using Result = CliResult;

class CliGrad : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    // The build tree's plugins, whatever else configs/cpu.yaml's search path would find.
    config_ = write("cpu.yaml", "plugin_path: [" + std::string(STAX_PLUGIN_DIR) +
                                    "]\ndevices:\n  cpu: { backend: cpu_cpp }\n");
  }

  // Runs `stax grad ARGS --config <test config>` with stdout and stderr captured separately.
  Result grad(const std::string& args) {
    return stax("grad " + args + " --config " + config_.string());
  }

  fs::path write_npy(const std::string& name, const Tensor& t) {
    fs::path p = dir_ / name;
    save_npy(p.string(), t);
    return p;
  }

  fs::path config_;
};

}  // namespace

TEST_F(CliGrad, Example51ShowsListing52Table51AndTheCut) {
  Result r = grad(example("example_5_1_forward.stax") + " --wrt primals_2");
  ASSERT_EQ(r.code, 0) << r.err;
  // Listing 5.2 (with t's shape as the builder infers it: (64, 32), see autodiff_joint_test).
  for (const char* line :
       {"[FW] %primals_1 : [num_users=2] = placeholder[target=primals_1]\n",
        "[FW] %primals_2 : [num_users=1] = placeholder[target=primals_2]\n",
        "[BW] %tangents_1 : [num_users=1] = placeholder[target=tangents_1]\n",
        "[FW] %matmul shape=(32, 64) = call_function[target=tp.matmul.default](args = "
        "(%primals_1, %primals_2))\n",
        "[FW] %gelu shape=(32, 64) = call_function[target=tp.gelu.default](args = (%matmul, "
        "'none'))\n",
        "[FW] %sum_0 shape=() = call_function[target=tp.sum.default](args = (%gelu,))\n",
        "[BW] %expand shape=(32, 64) = call_function[target=tp.expand.default](args = "
        "(%tangents_1, [32, 64]))\n",
        "[BW] %gelu_backward shape=(32, 64) = call_function[target=tp.gelu_backward.default]"
        "(args = (%expand, %matmul, 'none'))\n",
        "[BW] %t shape=(64, 32) = call_function[target=tp.t.default](args = (%primals_1,))\n",
        "[BW] %matmul_0 shape=(64, 64) = call_function[target=tp.matmul.default](args = (%t, "
        "%gelu_backward))\n",
        "[FW] return (sum_0, matmul_0)\n"})
    EXPECT_TRUE(contains(r.out, line)) << line << "\n" << r.out;
  // Table 5.1: capacities, the one s-t path, the max flow and the cut.
  EXPECT_TRUE(contains(r.out, "9011")) << r.out;
  EXPECT_TRUE(contains(r.out, "225781552")) << r.out;
  EXPECT_TRUE(contains(r.out, "matmul_in -> matmul_out        9011       flow 9011  [cut]"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "max flow = min cut = 9011")) << r.out;
  EXPECT_TRUE(contains(r.out, "summary: max flow 9011, saved = {matmul} (8192 bytes)")) << r.out;
  // The forward and backward graphs.
  EXPECT_TRUE(contains(r.out, "    return (sum_0, matmul)\n")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "    %matmul shape=(32, 64) : [num_users=1] = "
                       "placeholder[target=matmul]\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "    return (matmul_0,)\n")) << r.out;
  // The compiled run.
  EXPECT_TRUE(contains(r.out, "== run (compiled) ==")) << r.out;
  EXPECT_TRUE(contains(r.out, "backend cpu_cpp")) << r.out;
  EXPECT_TRUE(contains(r.out, "grad primals_2: float32(64, 64)")) << r.out;
  EXPECT_TRUE(contains(r.out, "saved 8192 B/step")) << r.out;
}

TEST_F(CliGrad, SavedGradientEqualsTheInterpreter) {
  Tensor x = Tensor::randn({32, 64}, DType::Float32, 3);
  Tensor w = Tensor::randn({64, 64}, DType::Float32, 4);
  fs::path xf = write_npy("x.npy", x), wf = write_npy("w.npy", w);
  fs::path out = dir_ / "out", out_i = dir_ / "out_interp";
  std::string inputs = " --input primals_1=" + xf.string() + " --input primals_2=" + wf.string();
  Result r = grad(example("example_5_1_forward.stax") + " --wrt primals_2" + inputs + " --save " +
                  out.string() + " --check");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_TRUE(contains(r.out, "check against the interpreter's joint graph: ok")) << r.out;
  Result ri = grad(example("example_5_1_forward.stax") + " --wrt primals_2" + inputs +
                   " --interpret --save " + out_i.string());
  ASSERT_EQ(ri.code, 0) << ri.err;
  EXPECT_TRUE(contains(ri.out, "== run (reference interpreter) ==")) << ri.out;

  // The oracle: the joint graph on the interpreter, upstream gradient 1.
  JointGraph j =
      build_joint_graph(parse_graph_file(example("example_5_1_forward.stax")), {"primals_2"});
  std::vector<Tensor> ref = interpret(j.graph, {x, w, Tensor::scalar(1.0)});
  ASSERT_EQ(ref.size(), 2u);
  ASSERT_TRUE(fs::exists(out / "out0.npy"));
  ASSERT_TRUE(fs::exists(out / "grad_primals_2.npy"));
  Tensor loss = load_npy((out / "out0.npy").string());
  Tensor gw = load_npy((out / "grad_primals_2.npy").string());
  EXPECT_TRUE(loss.allclose(ref[0], kGradientRtol, kGradientAtol)) << loss.summary();
  EXPECT_TRUE(gw.allclose(ref[1], kGradientRtol, kGradientAtol)) << gw.summary() << "\n"
                                                                 << ref[1].summary();
  // --interpret runs the partitioned graphs on the interpreter: bitwise the joint graph's.
  EXPECT_TRUE(load_npy((out_i / "grad_primals_2.npy").string()).equal(ref[1]));
  EXPECT_TRUE(load_npy((out_i / "out0.npy").string()).equal(ref[0]));
}

TEST_F(CliGrad, DotFileHasTheNetworkAndItsCut) {
  fs::path dot = dir_ / "cut.dot";
  Result r = grad(example("example_5_1_forward.stax") + " --wrt primals_2 --dot " + dot.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "wrote the network and its cut (Graphviz DOT) to")) << r.out;
  std::string text = slurp(dot);
  EXPECT_TRUE(contains(text, "digraph")) << text;
  EXPECT_TRUE(contains(text, "matmul_in")) << text;
  EXPECT_TRUE(contains(text, "9011/9011")) << text;
  EXPECT_TRUE(contains(text, "color=red")) << text;
}

TEST_F(CliGrad, UpstreamGradientsOfNonScalarOutputs) {
  // mlp_layer.stax returns gelu(x @ weight + bias) of shape (32, 128): tangents_1 is an input.
  Tensor t1 = Tensor::randn({32, 128}, DType::Float32, 8);
  fs::path tf = write_npy("t1.npy", t1);
  fs::path out = dir_ / "out";
  Result r =
      grad(example("mlp_layer.stax") + " --wrt weight,bias --input tangents_1=" + tf.string() +
           " --save " + out.string() + " --seed 5 --check");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_TRUE(contains(r.out, "upstream tangents_1 (" + tf.string() + "): float32(32, 128)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "check against the interpreter's joint graph: ok")) << r.out;
  EXPECT_EQ(load_npy((out / "grad_weight.npy").string()).sizes(), (Shape{64, 128}));
  EXPECT_EQ(load_npy((out / "grad_bias.npy").string()).sizes(), (Shape{128}));
  // Default: ones.
  Result d = grad(example("mlp_layer.stax") + " --wrt weight --check");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_TRUE(contains(d.out, "upstream tangents_1 (ones): float32(32, 128) min=1 max=1")) << d.out;
}

TEST_F(CliGrad, BudgetAlgorithmAndDump) {
  Result r = grad(example("example_5_1_forward.stax") +
                  " --wrt primals_2 --algorithm edmonds-karp --budget 8192 --dump loop_ir,kernels");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "max flow by edmonds-karp")) << r.out;
  EXPECT_TRUE(contains(r.out, "== loop_ir (forward) ==")) << r.out;
  EXPECT_TRUE(contains(r.out, "== kernels (backward) ==")) << r.out;
  // Example 5.1 must save matmul (8192 bytes): a smaller budget is infeasible.
  Result b = grad(example("example_5_1_forward.stax") + " --wrt primals_2 --budget 8191");
  EXPECT_EQ(b.code, 1);
  EXPECT_TRUE(contains(b.err, "needs is 8192")) << b.err;
  Result u = grad(example("example_5_1_forward.stax") + " --wrt primals_2 --dump bogus");
  EXPECT_EQ(u.code, 1);
  EXPECT_TRUE(contains(u.err, "unknown stage")) << u.err;
  Result a = grad(example("example_5_1_forward.stax") + " --wrt primals_2 --algorithm simplex");
  EXPECT_EQ(a.code, 2) << a.err;
}

TEST_F(CliGrad, BadWrtIsAClearError) {
  Result r = grad(example("example_5_1_forward.stax") + " --wrt nope");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(contains(r.err,
                       "--wrt nope: error: the graph has no placeholder named 'nope' "
                       "(placeholders: primals_1, primals_2)"))
      << r.err;
  Result m = grad(example("example_5_1_forward.stax"));  // --wrt is required: a usage error
  EXPECT_EQ(m.code, 2);
  EXPECT_TRUE(contains(m.err, "--wrt")) << m.err;
  Result i = grad(example("example_5_1_forward.stax") + " --wrt primals_2 --input foo=x.npy");
  EXPECT_EQ(i.code, 1);
  EXPECT_TRUE(contains(i.err, "no placeholder or upstream gradient named 'foo'")) << i.err;
}
