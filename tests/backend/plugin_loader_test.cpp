// Plugin loading (core/backend): a working test plugin through the whole C ABI, and every way a
// plugin can fail to load or misbehave, each a clean stax::Error naming plugin, path, versions.
// The test plugins live in tests/plugins and are built into ${build}/test_plugins. The last
// test builds examples/out_of_tree_plugin against the build tree's StaxSDK package.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/backend/plugin.h"
#include "core/backend/plugin_loader.h"
#include "core/backend/plugin_registry.h"
#include "core/config/config.h"
#include "core/driver/compiler.h"
#include "core/support/error.h"
#include "stax/sdk/kernel_builder.hpp"
#include "tests/support/example11_kernel.h"

namespace fs = std::filesystem;
using stax::Error;
using stax::OptionValue;
using stax::Plugin;
using stax::PluginCallError;
using stax::PluginLibrary;
using stax::PluginRegistry;
using namespace stax::sdk;

namespace {

const fs::path kTestPlugins = fs::path(STAX_BINARY_DIR) / "test_plugins";

fs::path test_plugin(const std::string& name) {
  return kTestPlugins / stax::plugin_file_name(name);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The error text of f(), which must throw a stax::Error (of stage "plugin" unless told).
template <class F>
std::string error_of(F&& f, const char* stage = "plugin") {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.stage(), stage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("stax_plugin_test_" + std::to_string(getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

OptionValue opts(std::initializer_list<std::pair<const char*, const char*>> kv) {
  OptionValue o = OptionValue::map();
  for (const auto& [k, v] : kv) o.set(k, OptionValue::make_scalar(v, std::string("test:") + k));
  return o;
}

// Example 1.1 (Listing 6.2) as a kernel description: tests/support/example11_kernel.h.
using stax::sdk::test::Example11;

// Runs Example 1.1 on a compiled kernel and compares with a plain loop.
void check_example11(const stax::CompiledKernel& k) {
  std::vector<float> p1(64 * 128), p2(64 * 128), out(64, -1.0f);
  for (size_t i = 0; i < p1.size(); ++i) {
    p1[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
    p2[i] = static_cast<float>((i * 53) % 89) / 40.0f - 1.0f;
  }
  k.run({p1.data(), p2.data(), out.data()});
  for (int i = 0; i < 64; ++i) {
    float s = 0.0f;
    for (int r = 0; r < 128; ++r) {
      float v = p1[i * 128 + r] + p2[i * 128 + r];
      s += (v < 0.0f ? 0.0f : v) * 2.0f;
    }
    EXPECT_NEAR(out[i], s, 1e-4f * (1.0f + std::fabs(s))) << "row " << i;
  }
}

// ---- the working plugin ----------------------------------------------------------------------

TEST(PluginLoader, ToyCpuThroughTheCAbi) {
  PluginRegistry reg({kTestPlugins});
  std::shared_ptr<PluginLibrary> lib = reg.library("toy_cpu");
  EXPECT_EQ(lib->abi_major(), static_cast<uint32_t>(STAX_PLUGIN_API_MAJOR));
  EXPECT_EQ(lib->abi_minor(), static_cast<uint32_t>(STAX_PLUGIN_API_MINOR));
  EXPECT_EQ(lib->plugin_version(), "0.1-test");
  EXPECT_EQ(lib->path(), test_plugin("toy_cpu"));
  EXPECT_EQ(reg.library("toy_cpu"), lib);  // loaded once

  OptionValue o = opts({{"threads", "3"}});
  OptionValue tags;
  tags.kind = OptionValue::Kind::List;
  tags.items = {OptionValue::make_scalar("a"), OptionValue::make_scalar("b")};
  o.set("tags", tags);
  std::unique_ptr<Plugin> p = reg.create("toy_cpu", o);
  EXPECT_EQ(p->name(), "toy_cpu");
  EXPECT_EQ(p->kind(), DeviceKind::CPU);
  EXPECT_EQ(p->device_kind_name(), "cpu");
  EXPECT_EQ(p->properties().device_name, "toy cpu");
  EXPECT_EQ(p->properties().cores, 3);
  EXPECT_EQ(p->properties().l2_cache_bytes, 1 << 20);

  RealizationThresholds t = p->thresholds();
  EXPECT_EQ(t.op_limit, 50);
  EXPECT_EQ(t.users_limit, 5);
  EXPECT_EQ(t.max_reads, 4);
  EXPECT_EQ(t.max_accumulated_reads, 12);
  EXPECT_EQ(t.transcendental_ops,
            (std::vector<int32_t>{STAX_OP_exp, STAX_OP_log, STAX_OP_log10, STAX_OP_log1p,
                                  STAX_OP_log2, STAX_OP_sigmoid, STAX_OP_tanh}));
  EXPECT_EQ(p->split_reduction(16384, 64, ReductionType::Sum), 1);  // CPU default

  Example11 ex;
  std::unique_ptr<stax::CompiledKernel> k = p->compile(*ex.desc);
  EXPECT_EQ(k->name(), "kernel0");
  EXPECT_TRUE(contains(k->source(), "float tmp3 = stax_scalar::relu(tmp2);")) << k->source();
  EXPECT_TRUE(contains(k->source(), "for (long long r0_0 = 0; r0_0 < 128; ++r0_0) {"))
      << k->source();
  check_example11(*k);

  // extern kernels
  EXPECT_EQ(p->extern_kernels(), std::vector<std::string>{"mm"});
  EXPECT_TRUE(p->has_extern_kernel("mm"));
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1}, c(4, 0.0f);
  int64_t as[] = {2, 3}, ast[] = {3, 1}, bs[] = {3, 2}, bst[] = {2, 1}, cs[] = {2, 2},
          cst[] = {2, 1};
  auto desc = [](void* d, int64_t* s, int64_t* st) {
    StaxTensorDesc t = make_struct<StaxTensorDesc>();
    t.data = d;
    t.dtype = STAX_DTYPE_FLOAT32;
    t.ndim = 2;
    t.sizes = s;
    t.strides = st;
    return t;
  };
  p->run_extern("mm", {desc(a.data(), as, ast), desc(b.data(), bs, bst), desc(c.data(), cs, cst)},
                2);
  EXPECT_EQ(c, (std::vector<float>{4, 5, 10, 11}));
  std::string e = error_of([&] { p->run_extern("bmm", {}, 0); });
  EXPECT_TRUE(contains(e, "has no extern kernel 'bmm'")) << e;

  // a run-time failure crosses as an error too
  e = error_of([&] { k->run({nullptr, nullptr}); });
  EXPECT_TRUE(contains(e, "takes 3 buffers, got 2")) << e;
}

TEST(PluginLoader, CompiledKernelsOutliveTheirPlugin) {
  PluginRegistry reg({kTestPlugins});
  Example11 ex;
  std::unique_ptr<stax::CompiledKernel> k = reg.create("toy_cpu")->compile(*ex.desc);
  check_example11(*k);  // the backend (and library) stay alive for the kernel
}

TEST(PluginLoader, ConfigureRejectsUnknownAndBadOptions) {
  PluginRegistry reg({kTestPlugins});
  std::string e = error_of([&] { reg.create("toy_cpu", opts({{"threadz", "2"}})); });
  EXPECT_TRUE(contains(e, test_plugin("toy_cpu").string())) << e;
  EXPECT_TRUE(contains(e, "plugin 'toy_cpu': configure failed (invalid option): test:threadz: "
                          "unknown option 'threadz' for backend 'toy_cpu' (known options: "
                          "threads, op_limit, vector_bytes, tags)"))
      << e;
  e = error_of([&] { reg.create("toy_cpu", opts({{"threads", "lots"}})); });
  EXPECT_TRUE(contains(e, "test:threads: option 'threads' of backend 'toy_cpu' must be an "
                          "integer, got 'lots'"))
      << e;
  e = error_of([&] { reg.create("toy_cpu", opts({{"threads", "0"}})); });
  EXPECT_TRUE(contains(e, "must be at least 1")) << e;
  try {
    reg.create("toy_cpu", opts({{"bogus", "1"}}));
  } catch (const PluginCallError& err) {
    EXPECT_EQ(err.code(), STAX_ERROR_INVALID_OPTION);
  }
}

TEST(PluginLoader, RegistryFromConfig) {
  TempDir tmp;
  fs::path cfg = tmp.path() / "toy.yaml";
  std::ofstream(cfg) << "plugin_path: [" << kTestPlugins.string() << "]\n"
                     << "devices:\n"
                     << "  cpu: { backend: toy_cpu, options: { threads: 2, op_limit: 44 } }\n"
                     << "  cuda: { backend: throwing, options: { mode: none } }\n"
                     << "realization: { max_reads: 3, transcendental: [exp] }\n";
  PluginRegistry reg(stax::Config::load(cfg));
  EXPECT_TRUE(reg.has_device("cpu"));
  Plugin& cpu = reg.backend("cpu");
  EXPECT_EQ(&cpu, &reg.backend("cpu"));  // created once
  EXPECT_EQ(cpu.properties().cores, 2);
  RealizationThresholds t = reg.thresholds("cpu");
  EXPECT_EQ(t.op_limit, 44);  // the backend's own value (from its option)
  EXPECT_EQ(t.max_reads, 3);  // the config's override
  EXPECT_EQ(t.transcendental_ops, std::vector<int32_t>{STAX_OP_exp});

  // the GPU-like test backend: Algorithm 6.1 through the C ABI (Example 6.2), GPU thresholds
  Plugin& gpu = reg.backend("cuda");
  EXPECT_EQ(gpu.kind(), DeviceKind::CUDA);
  EXPECT_EQ(gpu.split_reduction(16384, 64, ReductionType::Sum), 2);
  EXPECT_EQ(gpu.thresholds().op_limit, 30);
  EXPECT_EQ(gpu.thresholds().max_accumulated_reads, 8);

  // the YAML location of a rejected option reaches the message
  fs::path bad = tmp.path() / "bad.yaml";
  std::ofstream(bad) << "plugin_path: [" << kTestPlugins.string() << "]\n"
                     << "devices:\n"
                     << "  cpu:\n"
                     << "    backend: toy_cpu\n"
                     << "    options:\n"
                     << "      thread: 2\n";
  PluginRegistry reg2(stax::Config::load(bad));
  std::string e = error_of([&] { reg2.backend("cpu"); });
  EXPECT_TRUE(contains(e, bad.string() + ":6:15: unknown option 'thread' for backend 'toy_cpu'"))
      << e;

  e = error_of([&] { reg2.backend("cuda"); });
  EXPECT_TRUE(contains(e, "no backend configured for device 'cuda'")) << e;
}

TEST(PluginLoader, BackendForTheWrongDeviceKind) {
  stax::Config c;
  c.plugin_path = {kTestPlugins};
  stax::DeviceConfig d;
  d.backend = "throwing";
  d.options = opts({{"mode", "none"}});
  d.location = "test.yaml:3:3";
  c.devices["cpu"] = d;
  PluginRegistry reg(c);
  std::string e = error_of([&] { reg.backend("cpu"); });
  EXPECT_EQ(e, "test.yaml:3:3: error: backend 'throwing' drives a cuda device but is configured "
               "for 'cpu'");
}

// ---- broken plugins ---------------------------------------------------------------------------

TEST(PluginLoader, MissingPluginListsTheDirectoriesSearched) {
  TempDir tmp;
  fs::path nowhere = tmp.path() / "nowhere";
  PluginRegistry reg({tmp.path(), nowhere});
  std::string e = error_of([&] { reg.library("missing_backend"); });
  EXPECT_EQ(e, "missing_backend: error: plugin 'missing_backend' not found: no "
               "libstax_missing_backend.so in the plugin path; searched:\n  " +
                   tmp.path().string() + "\n  " + nowhere.string() + " (does not exist)");
  PluginRegistry empty(std::vector<fs::path>{});
  e = error_of([&] { empty.library("x"); });
  EXPECT_TRUE(contains(e, "(the search path is empty)")) << e;
}

TEST(PluginLoader, NotASharedLibrary) {
  TempDir tmp;
  std::ofstream garbage(tmp.path() / "libstax_garbage.so");
  for (int i = 0; i < 20; ++i) garbage << "this is not an ELF file\n";
  garbage.close();
  PluginRegistry reg({tmp.path()});
  std::string e = error_of([&] { reg.library("garbage"); });
  fs::path p = tmp.path() / "libstax_garbage.so";
  EXPECT_TRUE(contains(e, p.string() + ": error: plugin 'garbage': not a shared library (")) << e;
  EXPECT_TRUE(contains(e, "invalid ELF header")) << e;  // the dlopen text

  // an ELF magic number followed by junk: rejected before dlopen
  std::ofstream(tmp.path() / "libstax_truncated.so", std::ios::binary)
      << std::string("\x7f" "ELF\x02\x01\x01", 7) << std::string(40, '\0');
  e = error_of([&] { reg.library("truncated"); });
  EXPECT_EQ(e, (tmp.path() / "libstax_truncated.so").string() +
                   ": error: plugin 'truncated': not a valid shared library: the file (47 bytes) "
                   "is shorter than an ELF header");
}

// Issue 12 row 3: dlopen of a truncated copy of a real plugin died of SIGBUS; the headers are
// now checked against the file size first.
TEST(PluginLoader, TruncatedPluginIsRejectedBeforeDlopen) {
  fs::path real = fs::path(STAX_PLUGIN_DIR) / "libstax_cpu_cpp.so";
  std::ifstream in(real, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 4096u);
  for (size_t keep : {size_t{1024}, bytes.size() / 2}) {
    SCOPED_TRACE(keep);
    TempDir tmp;
    fs::path p = tmp.path() / "libstax_cpu_cpp.so";
    std::ofstream(p, std::ios::binary) << bytes.substr(0, keep);
    PluginRegistry reg({tmp.path()});
    std::string e = error_of([&] { reg.library("cpu_cpp"); });
    EXPECT_TRUE(contains(e, p.string() + ": error: plugin 'cpu_cpp': not a valid shared library: "))
        << e;
    EXPECT_TRUE(contains(e, ", past the end of the file (" + std::to_string(keep) + " bytes)"))
        << e;
  }
}

TEST(PluginLoader, MissingEntryPoint) {
  std::string e = error_of([] { PluginLibrary::load(test_plugin("no_entry"), "no_entry"); });
  EXPECT_EQ(e, test_plugin("no_entry").string() +
                   ": error: plugin 'no_entry': missing entry point 'stax_plugin_api' (a Stax "
                   "plugin exports it with STAX_DEFINE_PLUGIN)");
}

TEST(PluginLoader, MajorVersionMismatch) {
  std::string e = error_of([] { PluginLibrary::load(test_plugin("abi_major"), "abi_major"); });
  std::string theirs = std::to_string(STAX_PLUGIN_API_MAJOR + 1) + ".0";
  std::string ours = std::to_string(STAX_PLUGIN_API_MAJOR) + "." +
                     std::to_string(STAX_PLUGIN_API_MINOR);
  EXPECT_EQ(e, test_plugin("abi_major").string() +
                   ": error: plugin 'abi_major': plugin ABI version " + theirs +
                   " is incompatible with the host's " + ours +
                   " (major versions differ; rebuild the plugin against this SDK)");
}

TEST(PluginLoader, MinorVersionTooOld) {
  // The host requires MINOR + 1 (a plugin cannot be older than MINOR 0 today).
  const uint32_t required = STAX_PLUGIN_API_MINOR + 1;
  std::string e = error_of(
      [&] { PluginLibrary::load(test_plugin("abi_old_minor"), "abi_old_minor", required); });
  std::string req = std::to_string(STAX_PLUGIN_API_MAJOR) + "." + std::to_string(required);
  EXPECT_TRUE(contains(e, "plugin 'abi_old_minor': plugin ABI version " +
                              std::to_string(STAX_PLUGIN_API_MAJOR) + ".0 is older than the "
                                                                      "required " +
                              req))
      << e;
  // at the current minor the version passes, and the empty function table is caught
  e = error_of([] { PluginLibrary::load(test_plugin("abi_old_minor"), "abi_old_minor"); });
  EXPECT_TRUE(contains(e, "plugin 'abi_old_minor': the function table lacks 'error_destroy'"))
      << e;
}

// ABI 1.1 appended only a field the host writes (StaxKernelDesc.index_bits), so a plugin built
// against 1.0 still loads, compiles and runs (it indexes in 64 bits).
TEST(PluginLoader, MinorZeroPluginStillLoadsAndRuns) {
  EXPECT_EQ(stax::kRequiredPluginMinor, 0u);
  PluginRegistry reg({kTestPlugins});
  std::shared_ptr<PluginLibrary> lib = reg.library("abi_minor0");
  EXPECT_EQ(lib->abi_major(), static_cast<uint32_t>(STAX_PLUGIN_API_MAJOR));
  EXPECT_EQ(lib->abi_minor(), 0u);
  Example11 ex;
  std::unique_ptr<stax::CompiledKernel> k = reg.create("abi_minor0")->compile(*ex.desc);
  check_example11(*k);
  // A backend that does not opt into concurrent runs (the SDK's default) is run serialised.
  EXPECT_FALSE(reg.create("abi_minor0")->properties().concurrent_runs);
}

// Issue 12 "Also": runs of one CompiledGraph were serialised by a per-Compiler mutex, so two
// threads never ran in parallel. The rendezvous plugin (tests/plugins/rendezvous.cpp) reports
// concurrent_runs and its kernel waits until a kernel of another run is inside at the same time,
// failing after 60 s: serialised runs fail here, overlapping ones pass.
TEST(PluginLoader, ConcurrentRunsOverlapInTime) {
  stax::Config c;
  c.source = "<test>";
  c.plugin_path = {kTestPlugins};
  c.cache = false;
  stax::DeviceConfig d;
  d.backend = "rendezvous";
  d.location = "<test>";
  c.devices["cpu"] = d;
  stax::Compiler compiler(c);
  stax::Graph g;
  stax::Node* x = g.placeholder("x", {8});
  g.output({g.call("relu", {g.call("add.Scalar", {x, -3.0})})});
  stax::CompiledGraph cg = compiler.compile(g);
  const int kThreads = 2;
  std::vector<std::string> errors(kThreads);
  std::vector<std::vector<float>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        got[t] = cg.run({stax::Tensor::arange(8, stax::DType::Float32)})[0].to_vector<float>();
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_EQ(got[t], (std::vector<float>{0, 0, 0, 0, 1, 2, 3, 4})) << "thread " << t;
  }
}

// ABI 1.8 appended the bitwise_and / or / xor opcodes: the host emits them only for a plugin of
// minor 8 or later. An older plugin (abi_minor0, the toy backend stamped 1.0) gets the same graph
// with integer and / or / xor as counted interpreter fallbacks, never an opcode it would reject;
// the current toy_cpu compiles them (no fallback). Both give torch's values (torch 2.15:
// tensor([12, -7, 5]) & tensor([10, 3, -1]) = [8, 1, 5], | = [14, -5, -1], ^ = [6, -6, -6]).
TEST(PluginLoader, BitwiseOpcodesOnlyForPluginsOfMinorEight) {
  EXPECT_EQ(stax::kBitwiseOpcodesMinor, 8u);
  for (const char* backend : {"abi_minor0", "toy_cpu"}) {
    stax::Config c;
    c.source = "<test>";
    c.plugin_path = {kTestPlugins};
    c.cache = false;
    stax::DeviceConfig d;
    d.backend = backend;
    d.location = "<test>";
    c.devices["cpu"] = d;
    stax::Compiler compiler(c);
    stax::Graph g;
    stax::Node* x = g.placeholder("x", {3}, stax::DType::Int64);
    stax::Node* y = g.placeholder("y", {3}, stax::DType::Int64);
    g.output({g.call("bitwise_and.Tensor", {x, y}), g.call("bitwise_or.Tensor", {x, y}),
              g.call("bitwise_xor.Tensor", {x, y})});
    stax::CompiledGraph cg = compiler.compile(g);
    const bool old = std::string(backend) == "abi_minor0";
    EXPECT_EQ(cg.num_fallbacks(), old ? 3u : 0u) << backend << ": " << cg.summary();
    std::vector<stax::Tensor> out =
        cg.run({stax::Tensor::from_vector({3}, std::vector<int64_t>{12, -7, 5}),
                stax::Tensor::from_vector({3}, std::vector<int64_t>{10, 3, -1})});
    EXPECT_EQ(out[0].to_vector<int64_t>(), (std::vector<int64_t>{8, 1, 5})) << backend;
    EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{14, -5, -1})) << backend;
    EXPECT_EQ(out[2].to_vector<int64_t>(), (std::vector<int64_t>{6, -6, -6})) << backend;
  }
}

TEST(PluginLoader, LibraryNamedDifferentlyThanItsFile) {
  TempDir tmp;
  fs::copy_file(test_plugin("toy_cpu"), tmp.path() / "libstax_impostor.so");
  PluginRegistry reg({tmp.path()});
  std::string e = error_of([&] { reg.library("impostor"); });
  EXPECT_TRUE(contains(e, "plugin 'impostor': the library calls itself 'toy_cpu' (expected "
                          "'impostor', from the file name libstax_impostor.so)"))
      << e;
}

TEST(PluginLoader, ThrowingPluginGivesCleanErrors) {
  PluginRegistry reg({kTestPlugins});
  std::string e = error_of([&] { reg.create("throwing", opts({{"mode", "std"}})); });
  EXPECT_EQ(e, test_plugin("throwing").string() +
                   ": error: plugin 'throwing': configure failed (internal error): configure: "
                   "configure exploded");
  e = error_of([&] { reg.create("throwing", opts({{"mode", "int"}})); });
  EXPECT_TRUE(contains(e, "configure failed (internal error): configure: unknown exception"))
      << e;
  e = error_of([&] { reg.create("throwing", opts({{"mode", "plugin"}})); });
  EXPECT_TRUE(contains(e, "configure failed (invalid option): mode 'plugin' rejected")) << e;

  std::unique_ptr<Plugin> p = reg.create("throwing", opts({{"mode", "none"}}));
  Example11 ex;
  e = error_of([&] { p->compile(*ex.desc); });
  EXPECT_TRUE(contains(e, "plugin 'throwing': compile of kernel 'kernel0' failed (internal "
                          "error): compile: compile exploded"))
      << e;

  // an invalid description is rejected by the SDK before the backend sees it
  StaxKernelDesc broken = *ex.desc;
  broken.reduction_type = 99;
  e = error_of([&] { p->compile(broken); });
  EXPECT_TRUE(contains(e, "failed (invalid argument): invalid kernel description: kernel0: "
                          "unknown reduction type 99"))
      << e;
}

TEST(PluginLoader, DiscoverListsPlugins) {
  PluginRegistry reg({kTestPlugins});
  std::vector<std::string> names;
  for (const fs::path& p : reg.discover()) names.push_back(p.filename().string());
  for (const char* n : {"libstax_toy_cpu.so", "libstax_throwing.so", "libstax_no_entry.so",
                        "libstax_abi_minor0.so"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}

// ---- out of tree ----------------------------------------------------------------------------

TEST(OutOfTreePlugin, BuildsAgainstThePackageAndRuns) {
  const fs::path src = fs::path(STAX_SOURCE_DIR) / "examples/out_of_tree_plugin";
  const fs::path build = fs::path(STAX_BINARY_DIR) / "out_of_tree_plugin";
  const fs::path log = build.string() + ".log";
  std::string cmd = "cmake -S '" + src.string() + "' -B '" + build.string() +
                    "' -DStaxSDK_DIR='" + STAX_BINARY_DIR + "/StaxSDK' > '" + log.string() +
                    "' 2>&1 && cmake --build '" + build.string() + "' >> '" + log.string() +
                    "' 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream in(log);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << cmd << "\n" << out;

  PluginRegistry reg({build / "plugins"});
  std::unique_ptr<Plugin> p = reg.create("example_cc", opts({{"opt_level", "1"}}));
  EXPECT_EQ(p->library().plugin_version(), "1.0");
  EXPECT_EQ(p->properties().device_name, "host CPU (example_cc)");
  Example11 ex;
  std::unique_ptr<stax::CompiledKernel> k = p->compile(*ex.desc);
  EXPECT_TRUE(contains(k->source(), "#include \"stax/sdk/scalar_ops.hpp\"")) << k->source();
  check_example11(*k);

  std::string e = error_of([&] { reg.create("example_cc", opts({{"opt_level", "9"}})); });
  EXPECT_TRUE(contains(e, "option 'opt_level' of backend 'example_cc' must be 0..3")) << e;
}

}  // namespace
