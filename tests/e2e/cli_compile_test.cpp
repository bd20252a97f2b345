// The stax CLI's compile path, run as a process (popen): `stax plugins`, `stax compile --dump`,
// `stax run --config ... --check` on the examples, and their failures (a kernel that does not
// compile, bad options, unknown stages). Configs are written per test and point at this build
// tree's plugin directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "stax/plugin_api.h"
#include "tests/support/cli_runner.h"

namespace fs = std::filesystem;
using namespace stax::test;

namespace {

using Result = CliResult;

class CliCompile : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    config_ = write_config("{ opt_level: 3 }");
  }

  // A config selecting cpu_cpp from this build tree with the given options (a YAML flow map).
  std::string write_config(const std::string& options, const std::string& name = "cpu.yaml") {
    std::string text = "plugin_path: [" + std::string(STAX_PLUGIN_DIR) + "]\n" +
                       "devices:\n"
                       "  cpu:\n"
                       "    backend: cpu_cpp\n"
                       "    options: " +
                       options + "\n";
    return write(name, text).string();
  }

  std::string config_;
};

TEST_F(CliCompile, PluginsListsTheCpuBackend) {
  Result r = stax("plugins --config " + config_);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "plugins (")) << r.out;
  EXPECT_TRUE(contains(r.out, "  cpu_cpp  " + std::string(STAX_PLUGIN_DIR) + "/libstax_cpu_cpp.so"))
      << r.out;
  const std::string abi = std::to_string(STAX_PLUGIN_API_MAJOR) + "." +
                          std::to_string(STAX_PLUGIN_API_MINOR);
  EXPECT_TRUE(contains(r.out, "ABI " + abi + " (host " + abi + ")")) << r.out;
  EXPECT_TRUE(contains(r.out, "device: cpu '")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "thresholds: op_limit 50, users_limit 5 (at >= 40 ops), "
                       "max_reads 4, max_accumulated_reads 12, transcendental: exp log "
                       "log10 log1p log2 sigmoid tanh"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "split_reduction: 1 segment(s)")) << r.out;
  EXPECT_TRUE(contains(r.out, "extern kernels: mm bmm addmm matmul")) << r.out;
  EXPECT_TRUE(contains(r.out, "configured for: cpu")) << r.out;
  EXPECT_TRUE(contains(r.out, "  cpu -> cpu_cpp\n")) << r.out;
}

TEST_F(CliCompile, PluginsReportsAMissingBackend) {
  fs::path p = dir_ / "missing.yaml";
  std::ofstream(p) << "plugin_path: [" << dir_.string()
                   << "]\ndevices:\n  cpu: { backend: nope }\n";
  Result r = stax("plugins --config " + p.string());
  EXPECT_TRUE(contains(r.out, "  cpu -> nope (not found)")) << r.out << r.err;
}

TEST_F(CliCompile, CompileDumpAll) {
  Result r =
      stax("compile " + example("example_1_1.stax") + " --config " + config_ + " --dump all");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // graph, loop IR (Listing 6.2), kernel source, summary: in this order
  size_t graph = r.out.find("# graph"), ir = r.out.find("# loop IR"),
         kernel = r.out.find("# kernel kernel0 (computes buf2)"),
         summary = r.out.find("kernels: 1");
  ASSERT_NE(graph, std::string::npos) << r.out;
  ASSERT_NE(ir, std::string::npos) << r.out;
  ASSERT_NE(kernel, std::string::npos) << r.out;
  ASSERT_NE(summary, std::string::npos) << r.out;
  EXPECT_LT(graph, ir);
  EXPECT_LT(ir, kernel);
  EXPECT_LT(kernel, summary);
  EXPECT_TRUE(contains(r.out, "call_function[target=tensorplay.ops.tp.sum.dim_IntList]")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "ComputedBuffer(name='buf2', layout=FixedLayout('cpu', float32, "
                       "size=[64], stride=[1]), data=Reduction("))
      << r.out;
  EXPECT_TRUE(contains(r.out, "      tmp0 = ops.load('primals_1', 128*i0 + r0_0)")) << r.out;
  EXPECT_TRUE(contains(r.out, "prelude lines omitted")) << r.out;
  EXPECT_TRUE(contains(r.out, "extern \"C\" void kernel0(")) << r.out;
  // the default segmented order: 16 chains
  EXPECT_TRUE(contains(r.out, "      acc0[stax_seg] = stax_scalar::add(acc0[stax_seg], tmp5);"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "kernels: 1 (kernel0 ")) << r.out;
  EXPECT_TRUE(contains(r.out, "| extern kernels: 0 | fallbacks: 0 | backend cpu_cpp | lowering "))
      << r.out;
}

TEST_F(CliCompile, CompileDumpDirWritesCompleteFiles) {
  fs::path out = dir_ / "dump";
  Result r = stax("compile " + example("softmax.stax") + " --config " + config_ + " --dump-dir " +
                  out.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(out / "softmax.graph.txt"));
  EXPECT_TRUE(contains(slurp(out / "softmax.loop_ir.txt"), "ComputedBuffer("));
  std::string k0 = slurp(out / "softmax.kernels.txt");
  EXPECT_TRUE(contains(k0, "namespace stax_scalar {")) << "the full source, prelude included";
  EXPECT_TRUE(contains(k0, "extern \"C\" void kernel0("));
  EXPECT_TRUE(contains(r.out, "wrote " + (out / "softmax.kernels.txt").string())) << r.out;
  // The dumped graph is a valid graph: stax check reads it back.
  EXPECT_EQ(stax("check " + (out / "softmax.graph.txt").string()).code, 0);
}

TEST_F(CliCompile, CompileDumpScheduleShowsTheFusion) {
  Result r = stax("compile " + example("softmax.stax") + " --config " + config_ +
                  " --dump schedule");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "# schedule")) << r.out;
  EXPECT_TRUE(contains(r.out, "1 kernels for 8 computed buffers")) << r.out;
  EXPECT_TRUE(contains(r.out, "step 0: kernel0 ranges=[8] reduction_ranges=[32]")) << r.out;
  EXPECT_TRUE(contains(r.out, "arena: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "kernels: 1 (kernel0 ")) << r.out;
  // With a directory: the text and the kernel graph as DOT.
  fs::path out = dir_ / "sched";
  r = stax("compile " + example("softmax.stax") + " --config " + config_ +
           " --dump schedule --dump-dir " + out.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(slurp(out / "softmax.schedule.txt"), "buf1: reduction max"));
  EXPECT_TRUE(contains(slurp(out / "softmax.schedule.dot"), "digraph schedule"));
  EXPECT_FALSE(fs::exists(out / "softmax.kernels.txt"));
  EXPECT_TRUE(contains(r.out, "wrote " + (out / "softmax.schedule.dot").string())) << r.out;
}

TEST_F(CliCompile, CompileRejectsAnUnknownStage) {
  Result r = stax("compile " + example("example_1_1.stax") + " --config " + config_ +
                  " --dump loop_ir,bogus");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "unknown stage 'bogus'")) << r.err;
}

TEST_F(CliCompile, RunCheckOnEveryExample) {
  for (const char* name : {"example_1_1.stax", "softmax.stax", "mlp_layer.stax", "layer_norm.stax",
                           "example_5_1_forward.stax", "example_5_1_joint.stax"}) {
    SCOPED_TRACE(name);
    Result r = stax("run " + example(name) + " --config " + config_ + " --check --seed 3");
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "compiled: kernels: ")) << r.out;
    EXPECT_TRUE(contains(r.out, "ms (compiled, backend cpu_cpp)")) << r.out;
    EXPECT_TRUE(contains(r.out, "check out0 ")) << r.out;
    EXPECT_TRUE(contains(r.out, "max abs diff ")) << r.out;
    EXPECT_TRUE(contains(r.out, "output(s) agree with the reference interpreter")) << r.out;
  }
  // Example 1.1 with strict_order: the compiled sum is bit for bit the interpreter's.
  std::string strict = write_config("{ strict_order: true }", "strict.yaml");
  Result r = stax("run " + example("example_1_1.stax") + " --config " + strict + " --check");
  EXPECT_TRUE(contains(r.out,
                       "check out0 sum_0: max abs diff 0, max rel diff 0, bit-identical "
                       "yes: ok"))
      << r.out;
}

// stax bench: compiles once, times the runs, reports traffic and bandwidth (values not checked:
// they are timings; the traffic of Example 1.1 is fixed: two 64 x 128 inputs, 64 outputs).
TEST_F(CliCompile, BenchPrintsMedianSpreadAndBandwidth) {
  Result r = stax("bench " + example("example_1_1.stax") + " --config " + config_ +
                  " --threads 2 --reps 5");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "compiled: kernels: 1 ")) << r.out;
  EXPECT_TRUE(contains(r.out, "runs: 5; median ")) << r.out;
  EXPECT_TRUE(contains(r.out, "spread: min ")) << r.out;
  EXPECT_TRUE(contains(r.out, "bytes moved: 65792 (inputs read once, outputs written once); "))
      << r.out;
  EXPECT_TRUE(contains(r.out, "of the measured read bandwidth")) << r.out;
  EXPECT_TRUE(contains(r.out, "(2 threads)")) << r.out;
  EXPECT_EQ(stax("bench " + example("example_1_1.stax") + " --reps 0").code, 2);
}

// --check holds sums to the §6.5 bound from Σ|a_i|: a 1M-element sum in cpu_cpp's default
// segmented order differs from the interpreter's sequential sum by more than a fixed rtol of the
// result may allow, yet within the bound; a mean and a matrix product (k terms)
// are bounded the same way; other outputs (an integer arange) keep the fixed tolerance.
TEST_F(CliCompile, RunCheckBoundsReductionsBySumOfMagnitudes) {
  fs::path graph = write("sum1m.stax",
                         "graph(\n"
                         "    %x shape=(1048576,) : [num_users=2] = placeholder[target=x]\n"
                         "    %s : [num_users=1] = call_function[target=sum.default](args = (%x,))\n"
                         "    %m : [num_users=1] = call_function[target=mean.default](args = (%x,))\n"
                         "    %a shape=(4, 300) : [num_users=1] = placeholder[target=a]\n"
                         "    %b shape=(300, 5) : [num_users=1] = placeholder[target=b]\n"
                         "    %p : [num_users=1] = call_function[target=mm.default](args = (%a, %b))\n"
                         "    %r : [num_users=1] = call_function[target=arange.default](args = (5,))\n"
                         "    return (s, m, p, r)\n"
                         ")\n");
  Result r = stax("run " + graph.string() + " --config " + config_ + " --check --seed 2");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "check out0 s: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "ok (the §6.5 bound 2(n-1)u*sum|a_i| + 2u_s|r|, n = 1048576)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "check out2 p: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "(the §6.5 bound 2(n-1)u*sum|a_i| + 2u_s|r|, n = 301)")) << r.out;
  EXPECT_TRUE(contains(r.out, "check out3 r: max abs diff 0")) << r.out;  // integer: exact
  EXPECT_TRUE(contains(r.out, "output(s) agree with the reference interpreter")) << r.out;
}

TEST_F(CliCompile, CompiledAndInterpretedRunsSaveTheSameOutputs) {
  fs::path a = dir_ / "a", b = dir_ / "b";
  Result ri = stax("run " + example("layer_norm.stax") + " --seed 5 --save " + a.string());
  ASSERT_EQ(ri.code, 0) << ri.err;
  EXPECT_TRUE(contains(ri.out, "(reference interpreter)")) << ri.out;
  EXPECT_FALSE(contains(ri.out, "compiled")) << ri.out;
  std::string strict = write_config("{ strict_order: true }", "strict.yaml");
  Result rc = stax("run " + example("layer_norm.stax") + " --seed 5 --config " + strict +
                   " --save " + b.string());
  ASSERT_EQ(rc.code, 0) << rc.err;
  EXPECT_EQ(slurp(a / "out0.npy"), slurp(b / "out0.npy"));
}

TEST_F(CliCompile, RunCheckFailsCleanlyWhenAKernelDoesNotCompile) {
  std::string bad = write_config("{ test_inject_source: 'int broken = nope;' }", "bad.yaml");
  Result r = stax("run " + example("example_1_1.stax") + " --config " + bad + " --check");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "compile of kernel 'kernel0' failed (compile error)")) << r.err;
  EXPECT_TRUE(contains(r.err, "error: use of undeclared identifier 'nope'")) << r.err;
  EXPECT_TRUE(contains(r.err, " | extern \"C\" void kernel0(")) << r.err;
}

TEST_F(CliCompile, BadConfigsAreErrorsWithLocations) {
  std::string bad = write_config("{ opt_level: 3, frobnicate: 1 }", "bad.yaml");
  Result r = stax("compile " + example("example_1_1.stax") + " --config " + bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "bad.yaml:5:")) << r.err;
  EXPECT_TRUE(contains(r.err, "unknown option 'frobnicate' for backend 'cpu_cpp'")) << r.err;
  r = stax("compile " + example("example_1_1.stax") + " --config " + (dir_ / "none.yaml").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "config file not found")) << r.err;
}

}  // namespace
