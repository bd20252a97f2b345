// The kernel cache with cuda_nvrtc (ABI 1.3 serialization, issue 11 / issue 8):
//   * emulated (`emulate: true`): every kernel of the CUDA e2e set round-trips through the disk
//     cache as host object code; a hit runs and gives the cold compile's bits;
//   * ahead of time (`arch: sm_90`, no device needed): the cubin and its launch metadata round-
//     trip; a hit has the cold kernel's source and cubin (the stored bytes), and the key changes
//     with the arch; an entry whose metadata does not fit the plan is rejected and rebuilt;
//   * cuda_triton ahead of time (sm_90 cubins from the Triton compiler): the same, and a hit
//     takes no Python worker.
// Every test uses its own temporary cache directory (ctest runs with STAX_CACHE_DIR=off).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "core/cache/disk_cache.h"
#include "tests/support/cuda_e2e.h"

namespace stax {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& what) {
  fs::path d = fs::temp_directory_path() /
               ("stax_cuda_cache_test_" + std::to_string(::getpid()) + "_" + what);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir / "kernels"))
    if (e.path().extension() == ".entry") {
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      out.push_back(ss.str());
    }
  std::sort(out.begin(), out.end());
  return out;
}

Config cuda_cached(const fs::path& dir, const std::map<std::string, std::string>& options) {
  OptionValue o = OptionValue::map();
  for (const auto& [k, v] : options) o.set(k, OptionValue::make_scalar(v));
  Config c = test::cuda_config(std::move(o));
  c.cache_dir = dir;
  return c;
}

class CudaCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv("STAX_CACHE_DIR"); }
};

TEST_F(CudaCacheTest, EmulatedKernelsRoundTripBitForBit) {
  fs::path dir = fresh_dir("emulated");
  const std::map<std::string, std::string> opts = {{"emulate", "true"}};
  std::vector<test::E2eCase> cases = test::cuda_e2e_cases();
  std::vector<std::vector<Tensor>> cold;
  int compiled = 0;
  {
    Compiler compiler(cuda_cached(dir, opts));
    for (test::E2eCase& c : cases) {
      CompiledGraph cg = compiler.compile(c.graph);
      compiled += cg.stats().kernels_compiled;
      cold.push_back(cg.run(c.inputs));
    }
  }
  ASSERT_GT(compiled, 10);
  Compiler compiler(cuda_cached(dir, opts));
  int from_disk = 0, recompiled = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    CompiledGraph cg = compiler.compile(cases[i].graph);
    from_disk += cg.stats().kernels_from_disk;
    recompiled += cg.stats().kernels_compiled;
    std::vector<Tensor> got = cg.run(cases[i].inputs);
    ASSERT_EQ(got.size(), cold[i].size());
    for (size_t o = 0; o < got.size(); ++o)
      EXPECT_TRUE(test::bitwise_equal(got[o], cold[i][o])) << "output " << o;
  }
  // Kernels equal up to their names appear more than once in the set: in process they are one
  // compile each, so at most `compiled` come from the disk and none is compiled again.
  EXPECT_EQ(recompiled, 0);
  EXPECT_GT(from_disk, 0);
  EXPECT_LE(from_disk, compiled);
}

TEST_F(CudaCacheTest, AheadOfTimeCubinRoundTrips) {
  fs::path dir = fresh_dir("cubin");
  const std::map<std::string, std::string> sm90 = {{"arch", "sm_90"}};
  Graph g = parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/softmax.stax");
  std::vector<CompiledKernelInfo> cold_kernels;
  {
    Compiler compiler(cuda_cached(dir, sm90));
    CompiledGraph cg = compiler.compile(g);
    EXPECT_EQ(cg.backend_name(), "cuda_nvrtc");
    EXPECT_GT(cg.stats().kernels_compiled, 0);
    cold_kernels = cg.kernels();
  }
  std::vector<std::string> stored = entries(dir);
  ASSERT_EQ(stored.size(), cold_kernels.size());
  for (const std::string& e : stored) {
    EXPECT_NE(e.find("STAXCUB2"), std::string::npos);
    EXPECT_NE(e.find("\x7f" "ELF"), std::string::npos) << "no cubin in the entry";
    EXPECT_NE(e.find("sm_90"), std::string::npos);
  }
  {
    Compiler compiler(cuda_cached(dir, sm90));
    CompiledGraph cg = compiler.compile(g);
    EXPECT_EQ(cg.stats().kernels_compiled, 0);
    EXPECT_EQ(cg.stats().kernels_from_disk, static_cast<int>(cold_kernels.size()));
    ASSERT_EQ(cg.kernels().size(), cold_kernels.size());
    for (size_t i = 0; i < cold_kernels.size(); ++i)
      EXPECT_EQ(cg.kernels()[i].source, cold_kernels[i].source);
  }
  EXPECT_EQ(entries(dir), stored);  // a hit writes nothing
  // Another arch is another key: compiled and stored beside the sm_90 entries.
  {
    Compiler compiler(cuda_cached(dir, {{"arch", "sm_80"}}));
    EXPECT_EQ(compiler.compile(g).stats().kernels_from_disk, 0);
  }
  EXPECT_EQ(entries(dir).size(), 2 * stored.size());
}

// Rewrites every entry's payload with `edit`, sealed again with the cache's MAC key
// (DiskCache::encode_entry), so that only the plugin's deserialize can refuse it.
void edit_payloads(const fs::path& dir, const std::function<void(std::string&)>& edit) {
  DiskCache cache(dir, uint64_t(1) << 30);
  for (const auto& e : fs::directory_iterator(dir / "kernels")) {
    if (e.path().extension() != ".entry") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::optional<std::pair<std::string, std::string>> f = DiskCache::entry_fields(ss.str());
    ASSERT_TRUE(f.has_value()) << e.path();
    std::string p = f->second;
    edit(p);
    std::ofstream out(e.path(), std::ios::binary | std::ios::trunc);
    out << cache.encode_entry(f->first, p);
  }
}

TEST_F(CudaCacheTest, MetadataThatDoesNotFitThePlanIsRejected) {
  // An entry whose launch metadata was edited (checksum fixed up): cuda_nvrtc's deserialize
  // compares it with the plan for the description and refuses; the kernel is compiled again.
  fs::path dir = fresh_dir("metadata");
  const std::map<std::string, std::string> sm90 = {{"arch", "sm_90"}};
  Graph g = parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/example_1_1.stax");
  {
    Compiler compiler(cuda_cached(dir, sm90));
    ASSERT_EQ(compiler.compile(g).stats().kernels_compiled, 1);
  }
  edit_payloads(dir, [](std::string& p) {
    auto u64 = [&](size_t at) {
      uint64_t v = 0;
      for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[at + i]);
      return v;
    };
    // The payload's fields: magic, function name, arch, grid, block, cubin. Change the block.
    size_t at = 8;
    for (int field = 0; field < 3; ++field) at += 8 + u64(at);
    ASSERT_LT(at + 8, p.size());
    p[at + 8] = p[at + 8] == '1' ? '2' : '1';  // the block size's first digit
  });
  Compiler compiler(cuda_cached(dir, sm90));
  CompiledGraph cg = compiler.compile(g);
  EXPECT_EQ(cg.stats().kernels_from_disk, 0);
  EXPECT_EQ(cg.stats().kernels_compiled, 1);
}

// ---- cuda_triton: cubins from the Triton compiler (sm_90, no device needed) ---------------------

bool triton_available() {
  static const bool ok = std::system("python3 -c 'import triton' >/dev/null 2>&1") == 0;
  return ok;
}

Config triton_cached(const fs::path& dir, const std::string& arch) {
  Config c = cuda_cached(dir, {{"arch", arch}});
  c.devices["cuda"].backend = "cuda_triton";
  return c;
}


// The cubin and its launch metadata round-trip: a hit takes no worker (the kernel is built from
// the stored bytes), has the cold kernel's source, and stores the same bytes again; the key
// changes with the arch; metadata that does not fit the printed kernel, another arch's cubin and
// a malformed entry are refused and rebuilt.
TEST_F(CudaCacheTest, TritonCubinRoundTrips) {
  if (!triton_available()) GTEST_SKIP() << "the triton Python package is not installed";
  fs::path dir = fresh_dir("triton");
  Graph g = parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/example_1_1.stax");
  std::string cold_source;
  {
    Compiler compiler(triton_cached(dir, "sm_90"));
    CompiledGraph cg = compiler.compile(g);
    EXPECT_EQ(cg.backend_name(), "cuda_triton");
    ASSERT_EQ(cg.stats().kernels_compiled, 1);
    cold_source = cg.kernels()[0].source;
  }
  std::vector<std::string> stored = entries(dir);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_NE(stored[0].find("STAXTRI2"), std::string::npos);
  EXPECT_NE(stored[0].find("\x7f" "ELF"), std::string::npos) << "no cubin in the entry";
  EXPECT_NE(stored[0].find("cuda_triton"), std::string::npos) << "the key names no plugin";
  {
    Compiler compiler(triton_cached(dir, "sm_90"));
    CompiledGraph cg = compiler.compile(g);
    EXPECT_EQ(cg.stats().kernels_compiled, 0);
    EXPECT_EQ(cg.stats().kernels_from_disk, 1);
    EXPECT_EQ(cg.kernels()[0].source, cold_source);
  }
  {
    Compiler compiler(triton_cached(dir, "sm_80"));  // another key
    EXPECT_EQ(compiler.compile(g).stats().kernels_compiled, 1);
  }
  std::vector<std::string> both = entries(dir);
  EXPECT_EQ(both.size(), 2u);
  auto refused_then_rebuilt = [&](const std::function<void(std::string&)>& edit) {
    fs::path d = fresh_dir("triton_edit");
    {
      Compiler compiler(triton_cached(d, "sm_90"));
      ASSERT_EQ(compiler.compile(g).stats().kernels_compiled, 1);
    }
    edit_payloads(d, edit);
    Compiler compiler(triton_cached(d, "sm_90"));
    CompiledGraph cg = compiler.compile(g);
    EXPECT_EQ(cg.stats().kernels_from_disk, 0);
    EXPECT_EQ(cg.stats().kernels_compiled, 1);
    fs::remove_all(d);
  };
  // After the magic, fields 0..7: function, cc, num_warps, shared, num_params, grid, the
  // arguments compiled with tt.divisibility = 16 ("0,1,2"), cubin.
  auto field_at = [](const std::string& p, int index) {
    size_t at = 8;
    for (int f = 0; f < index; ++f) {
      uint64_t n = 0;
      for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(p[at + i]);
      at += 8 + n;
    }
    return at + 8;  // the field's first byte
  };
  refused_then_rebuilt([&](std::string& p) { p[field_at(p, 1)] = '8'; });  // sm_80's cubin
  refused_then_rebuilt([&](std::string& p) {                           // num_warps
    char& c = p[field_at(p, 2)];
    c = c == '8' ? '4' : '8';
  });
  refused_then_rebuilt([&](std::string& p) {  // the grid
    char& c = p[field_at(p, 5)];
    c = c == '9' ? '1' : '9';
  });
  refused_then_rebuilt([&](std::string& p) { p[field_at(p, 6)] = '1'; });  // other hints
  refused_then_rebuilt([&](std::string& p) { p.resize(p.size() / 2); });  // truncated
  refused_then_rebuilt([&](std::string& p) { p.replace(0, 8, "STAXTRI0"); });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stax
