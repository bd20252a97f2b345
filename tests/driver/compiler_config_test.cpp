// The Compiler and its Config: `dump: {dir, stages}` writes exactly the listed stages to
// <dir>/<name>.<stage>.txt, and a config naming a device whose plugin is missing is an error when
// the Compiler is created (never a silent fall-back), for a test config and the shipped ones.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/driver/compiler.h"
#include "core/graph/graph.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"

namespace fs = std::filesystem;
using namespace stax;

namespace {

Graph example_1_1() {
  Graph g;
  Node* x = g.placeholder("primals_1", {8, 16});
  Node* y = g.placeholder("primals_2", {8, 16});
  Node* relu = g.call("relu", {g.call("add.Tensor", {x, y})});
  Node* mul = g.call("mul.Scalar", {relu, 2});
  g.output({g.call("sum.dim_IntList", {mul, std::vector<int64_t>{-1}})});
  return g;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class CompilerConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stax_compiler_config_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string plugin_path() const {
    return "plugin_path: [" + std::string(STAX_PLUGIN_DIR) + "]\n";
  }
  // Compiles Example 1.1 (named ex11) with `dump: {dir: out, stages: <stages>}`; the files
  // written.
  std::set<std::string> compile_with_dumps(const fs::path& out, const std::string& stages) {
    Config c = Config::parse(plugin_path() + "devices: {cpu: {backend: cpu_cpp}}\n" +
                                 "dump: {dir: " + out.string() + ", stages: " + stages + "}\n",
                             "dump.yaml", dir_);
    CompileOptions options;
    options.name = "ex11";
    Compiler compiler(std::move(c), options);
    compiler.compile(example_1_1());
    std::set<std::string> files;
    for (const fs::directory_entry& e : fs::directory_iterator(out))
      files.insert(e.path().filename().string());
    return files;
  }
  fs::path dir_;
};

// The message a Compiler built from `config` throws, or "" when it is created.
std::string creation_error(Config config) {
  try {
    Compiler compiler(std::move(config));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_F(CompilerConfig, DumpWritesExactlyTheListedStages) {
  fs::path out = dir_ / "dumps";  // created by the Compiler
  EXPECT_EQ(compile_with_dumps(out, "[loop_ir, kernels]"),
            (std::set<std::string>{"ex11.loop_ir.txt", "ex11.kernels.txt"}));
  std::string loop_ir = slurp(out / "ex11.loop_ir.txt");
  EXPECT_TRUE(contains(loop_ir, "ComputedBuffer(")) << loop_ir;
  std::string kernels = slurp(out / "ex11.kernels.txt");
  EXPECT_TRUE(contains(kernels, "# kernel kernel0 (computes ")) << kernels;
  EXPECT_TRUE(contains(kernels, "extern \"C\" void kernel0(")) << kernels;
}

TEST_F(CompilerConfig, YamlDumpOfTheScheduleStage) {
  fs::path out = dir_ / "sched";
  EXPECT_EQ(compile_with_dumps(out, "[schedule]"),
            (std::set<std::string>{"ex11.schedule.txt", "ex11.schedule.dot"}));
  std::string text = slurp(out / "ex11.schedule.txt");
  EXPECT_TRUE(contains(text, "step 0: kernel0 ranges=[8] reduction_ranges=[16]")) << text;
  EXPECT_TRUE(contains(text, "buf2: reduction sum")) << text;
  EXPECT_TRUE(contains(text, "arena: 0 bytes")) << text;
}

TEST_F(CompilerConfig, NoDumpDirWritesNothing) {
  Config c = Config::parse(plugin_path() + "devices: {cpu: {backend: cpu_cpp}}\n" +
                               "dump: {dir: null, stages: [graph, loop_ir, kernels]}\n",
                           "nodump.yaml", dir_);
  Compiler compiler(std::move(c));
  compiler.compile(example_1_1());
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST(DumpConfig, OneListOfStagesInPipelineOrder) {
  EXPECT_EQ(DumpConfig::all_stages(), (std::vector<std::string>{"graph", "joint", "partition",
                                                                "loop_ir", "schedule", "kernels"}));
}

TEST_F(CompilerConfig, MissingPluginIsAnErrorAtLoad) {
  Config c = Config::parse(
      plugin_path() + "devices:\n  cpu: {backend: cpu_cpp}\n  cuda: {backend: no_such_gpu}\n",
      "missing.yaml", dir_);
  std::string what = creation_error(std::move(c));
  EXPECT_TRUE(contains(what, "missing.yaml:4:")) << what;
  EXPECT_TRUE(contains(what, "device 'cuda' is configured with backend 'no_such_gpu'")) << what;
  EXPECT_TRUE(contains(what, "no libstax_no_such_gpu.so in the plugin path; searched:")) << what;
  EXPECT_TRUE(contains(what, std::string(STAX_PLUGIN_DIR))) << what;
}

TEST_F(CompilerConfig, GraphOnAnUnconfiguredDeviceIsAnError) {
  Config c = Config::parse(plugin_path() + "devices: {}\n", "empty.yaml", dir_);
  Compiler compiler(std::move(c));
  try {
    compiler.compile(example_1_1());
    FAIL() << "compiled a cpu graph without a cpu backend";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "no backend configured for device 'cpu'")) << e.what();
  }
}

// The shipped configs: cpu.yaml compiles; a cuda config whose plugin is not built fails at load,
// naming the device, the backend and the search path (a CPU graph does not fall back to cpu_cpp).
TEST(ShippedConfigs, CpuWorksAndCudaWithoutItsPluginFailsAtLoad) {
  const fs::path configs = fs::path(STAX_SOURCE_DIR) / "configs";
  Compiler cpu(Config::load(configs / "cpu.yaml"));
  EXPECT_EQ(cpu.compile(example_1_1()).num_kernels(), 1u);
  const std::vector<std::pair<std::string, std::string>> cuda_configs = {
      {"cuda.yaml", "cuda_nvrtc"}, {"cuda_triton.yaml", "cuda_triton"}};
  for (const auto& [file, backend] : cuda_configs) {
    if (fs::exists(fs::path(STAX_PLUGIN_DIR) / ("libstax_" + backend + ".so"))) continue;
    std::string what = creation_error(Config::load(configs / file));
    EXPECT_TRUE(contains(what, "device 'cuda' is configured with backend '" + backend + "'"))
        << file << ": " << what;
    EXPECT_TRUE(contains(what, "searched:")) << what;
    EXPECT_TRUE(contains(what, std::string(STAX_PLUGIN_DIR))) << what;
  }
}

// Truthful summaries: toy_cpu (tests/plugins) offers the extern mm but not bmm; the bmm runs on
// the interpreter, so it counts and is listed as a fallback, and both results are right.
TEST_F(CompilerConfig, ExternNotOfferedByThePluginIsAFallback) {
  Config c = Config::parse("plugin_path: [" + std::string(STAX_BINARY_DIR) +
                               "/test_plugins]\ndevices: {cpu: {backend: toy_cpu}}\n",
                           "toy.yaml", dir_);
  Compiler compiler(std::move(c));
  Graph g;
  Node* a = g.placeholder("a", {3, 4});
  Node* b = g.placeholder("b", {4, 2});
  Node* p = g.placeholder("p", {2, 3, 4});
  Node* q = g.placeholder("q", {2, 4, 5});
  g.output({g.call("mm", {a, b}), g.call("bmm", {p, q})});
  CompiledGraph cg = compiler.compile(g);
  EXPECT_EQ(cg.num_externs(), 1u);
  EXPECT_EQ(cg.num_fallbacks(), 1u);
  std::string s = cg.summary();
  EXPECT_TRUE(contains(s, "| extern kernels: 1 (buf")) << s;
  EXPECT_TRUE(contains(s, " = mm) | fallbacks: 1 (buf")) << s;
  EXPECT_TRUE(contains(s, " = bmm (extern, not offered by the backend: interpreter)) |")) << s;
  std::vector<Tensor> in = {Tensor::randn({3, 4}, DType::Float32, 1),
                            Tensor::randn({4, 2}, DType::Float32, 2),
                            Tensor::randn({2, 3, 4}, DType::Float32, 3),
                            Tensor::randn({2, 4, 5}, DType::Float32, 4)};
  std::vector<Tensor> got = cg.run(in), want = interpret(g, in);
  EXPECT_TRUE(got[0].allclose(want[0], 1e-5, 1e-6));
  EXPECT_TRUE(got[1].equal(want[1]));  // the interpreter's own kernel
}

// Open device kinds: toy_npu (tests/plugins) names its own kind, "npu". A config routes graphs
// whose tensors live on "npu" to it; the results are the interpreter's; a cpu graph on a config
// without a cpu device is an error naming the device.
TEST_F(CompilerConfig, APluginOfANewDeviceKindRunsGraphsOnIt) {
  Config c = Config::parse("plugin_path: [" + std::string(STAX_BINARY_DIR) +
                               "/test_plugins]\ndevices: {npu: {backend: toy_npu}}\n",
                           "npu.yaml", dir_);
  Compiler compiler(std::move(c));
  EXPECT_EQ(compiler.registry().backend("npu").device_kind_name(), "npu");
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({6, 10}, DType::Float32, "npu:0"));
  Node* y = g.placeholder("y", TensorMeta::contiguous({10}, DType::Float32, "npu:0"));
  Node* e = g.call("relu", {g.call("sub.Tensor", {x, y})});
  g.output({e, g.call("sum.dim_IntList", {e, std::vector<int64_t>{1}})});
  EXPECT_EQ(graph_device_kind(g), "npu");
  CompiledGraph cg = compiler.compile(g);
  EXPECT_EQ(cg.backend_name(), "toy_npu");
  EXPECT_GE(cg.num_kernels(), 1u);
  std::vector<Tensor> in = {Tensor::randn({6, 10}, DType::Float32, 1),
                            Tensor::randn({10}, DType::Float32, 2)};
  std::vector<Tensor> got = cg.run(in), want = interpret(g, in);
  EXPECT_TRUE(got[0].equal(want[0]));
  EXPECT_TRUE(got[1].equal(want[1]));  // sequential accumulation, the interpreter's order
  try {
    compiler.compile(example_1_1());
    FAIL() << "compiled a cpu graph on a config with only an npu device";
  } catch (const Error& err) {
    EXPECT_TRUE(contains(err.what(), "no backend configured for device 'cpu'")) << err.what();
  }
}

// Compiler::prepare sets up, before any compile, what the first compile would: the backend (its
// options checked: an error now, naming the option) and the kernel cache's key for it (the disk
// level opened). A prepared Compiler in a fresh cache state compiles from disk what another one
// stored, to the same bits.
TEST_F(CompilerConfig, PrepareSetsUpTheBackendAndTheCacheBeforeTheFirstCompile) {
  {
    Compiler bad(Config::parse(plugin_path() + "devices: {cpu: {backend: cpu_cpp, options: "
                                                "{opt_level: 9}}}\n",
                               "bad.yaml", dir_));  // the plugin is not loaded yet: no error
    try {
      bad.prepare();
      FAIL() << "prepare() accepted opt_level 9";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "opt_level")) << e.what();
      EXPECT_TRUE(contains(e.what(), "must be 0..3")) << e.what();
    }
    Compiler none(Config::parse(plugin_path() + "devices: {}\n", "none.yaml", dir_));
    try {
      none.prepare();
      FAIL() << "prepare() found a cpu backend in a config without devices";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "no backend configured for device 'cpu'")) << e.what();
    }
  }
  const char* old = std::getenv("STAX_CACHE_DIR");  // ctest sets it to off
  const std::string saved = old ? old : "";
  const fs::path cache = dir_ / "cache";
  ::setenv("STAX_CACHE_DIR", cache.c_str(), 1);
  const std::string yaml = plugin_path() + "devices: {cpu: {backend: cpu_cpp}}\n";
  const Graph g = example_1_1();
  const std::vector<Tensor> in = {Tensor::randn({8, 16}, DType::Float32, 1),
                                  Tensor::randn({8, 16}, DType::Float32, 2)};
  Tensor cold, hit;
  {
    Compiler first(Config::parse(yaml, "cpu.yaml", dir_));
    first.prepare();
    EXPECT_TRUE(fs::is_directory(cache / "kernels"));  // the disk level, opened by prepare()
    CompiledGraph cg = first.compile(g);
    EXPECT_EQ(cg.stats().kernels_compiled, 1);
    cold = cg.run(in).at(0);
  }
  {
    Compiler second(Config::parse(yaml, "cpu.yaml", dir_));
    second.prepare();
    CompiledGraph cg = second.compile(g);
    EXPECT_EQ(cg.stats().kernels_from_disk, 1);
    EXPECT_EQ(cg.stats().kernels_compiled, 0);
    hit = cg.run(in).at(0);
  }
  if (old) ::setenv("STAX_CACHE_DIR", saved.c_str(), 1);
  else ::unsetenv("STAX_CACHE_DIR");
  EXPECT_TRUE(hit.equal(cold));
  EXPECT_TRUE(cold.allclose(interpret(g, in).at(0), 1e-5, 1e-6));
}
