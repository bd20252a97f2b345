// The persistent kernel cache (issue 11): core/cache/disk_cache.h (the crash-safe store) and
// core/driver/kernel_cache.h (its two levels around the plugin's compile) with cpu_cpp.
//   * hit and miss, in process and on disk; a hit's results equal the cold compile's bit for bit
//     (and the interpreter's) on Example 1.1, softmax and a gather with a bounds check;
//   * the key changes with the backend's options, the plugin's version, ABI, identity (CPU
//     features: cpu_cpp's identity with and without -march=native) and device;
//   * corrupt, truncated and zero-length entries, and bytes the plugin rejects: detected,
//     removed, rebuilt;
//   * a process killed in the middle of writing an entry: the next run rebuilds it;
//   * two processes compiling the same graphs into one cache at once;
//   * LRU eviction under the size limit; an unwritable directory (one warning, no disk cache);
//   * a fresh process whose kernels all come from disk never loads libclang-cpp (cpu_cpp's
//     Clang frontend is a library of its own, loaded by the first compile that misses).
// Every test uses its own temporary cache directory (the suite's STAX_CACHE_DIR=off is unset
// here). Child processes are this binary again (fork + exec, --gtest_filter=KernelCacheChild.*),
// so no LLVM state is shared over a fork.
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

#include "core/cache/disk_cache.h"
#include "core/driver/kernel_cache.h"
#include "core/graph/parser.h"
#include "tests/support/cli_runner.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

namespace fs = std::filesystem;

// Replaces a well-formed cache entry's payload with payload(old payload length), sealed again
// with the MAC key of the cache at `root` (DiskCache::encode_entry), so that only the plugin's
// deserialize can refuse it.
void replace_payload(const fs::path& root, std::string& b,
                     const std::function<std::string(uint64_t)>& payload) {
  std::optional<std::pair<std::string, std::string>> f = DiskCache::entry_fields(b);
  ASSERT_TRUE(f.has_value());
  DiskCache c(root, uint64_t(1) << 30);
  b = c.encode_entry(f->first, payload(f->second.size()));
}

// A cpu_cpp payload field: its length (8 bytes, little-endian), then its bytes.
std::string length_prefixed(const std::string& f) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((uint64_t(f.size()) >> (8 * i)) & 0xff);
  return out + f;
}

// Every directory fresh_dir made, removed when the test binary exits.
struct Cleanup {
  std::vector<fs::path> dirs;
  ~Cleanup() {
    for (const fs::path& d : dirs) {
      std::error_code ec;
      fs::permissions(d, fs::perms::owner_all, ec);
      fs::remove_all(d, ec);
    }
  }
};
Cleanup cleanup;

fs::path fresh_dir(const std::string& what) {
  static int counter = 0;
  fs::path d = fs::temp_directory_path() /
               ("stax_kernel_cache_test_" + std::to_string(::getpid()) + "_" + what + "_" +
                std::to_string(counter++));
  fs::remove_all(d);
  fs::create_directories(d);
  cleanup.dirs.push_back(d);
  return d;
}

std::vector<fs::path> files_with(const fs::path& root, const std::string& ext) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(root / "kernels", ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ext) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

Config cached_config(const fs::path& dir, OptionValue options = OptionValue::map()) {
  Config c = test::cpu_config(std::move(options));
  c.cache_dir = dir;
  return c;
}

// Example 1.1 (one kernel), softmax (a fused kernel, transcendental) and a gather with a bounds
// check (index_select: an indirect load).
struct Case {
  std::string name;
  Graph graph;
  std::vector<Tensor> inputs;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* file : {"example_1_1.stax", "softmax.stax"}) {
    Graph g = parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/" + file);
    std::vector<Tensor> in = test::random_inputs(g, 7);
    out.push_back({file, std::move(g), std::move(in)});
  }
  Graph g;
  Node* x = g.placeholder("x", {16, 8}, DType::Float32);
  Node* idx = g.placeholder("idx", {5}, DType::Int64);
  Node* sel = g.call("index_select", {x, 0, idx});
  g.output({g.call("mul.Tensor", {sel, sel})});
  Tensor ix = Tensor::zeros({5}, DType::Int64);
  for (int64_t i = 0; i < 5; ++i) ix.set_double(i, static_cast<double>((i * 7) % 16));
  Tensor xv = test::random_inputs(g, 3)[0];
  out.push_back({"gather", std::move(g), {xv, ix}});
  return out;
}

struct Compiled {
  CompileStats stats;
  std::vector<std::vector<Tensor>> outputs;  // per case
  std::vector<std::string> sources;          // every kernel's source, per case in order
};

Compiled compile_all(Compiler& compiler) {
  Compiled r;
  for (Case& c : cases()) {
    CompiledGraph cg = compiler.compile(c.graph);
    const CompileStats& s = cg.stats();
    r.stats.kernels_compiled += s.kernels_compiled;
    r.stats.kernels_from_memory += s.kernels_from_memory;
    r.stats.kernels_from_disk += s.kernels_from_disk;
    r.outputs.push_back(cg.run(c.inputs));
    for (const CompiledKernelInfo& k : cg.kernels()) r.sources.push_back(k.source);
  }
  return r;
}

void expect_same_bits(const Compiled& a, const Compiled& b) {
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t c = 0; c < a.outputs.size(); ++c) {
    ASSERT_EQ(a.outputs[c].size(), b.outputs[c].size());
    for (size_t i = 0; i < a.outputs[c].size(); ++i)
      EXPECT_TRUE(test::bitwise_equal(a.outputs[c][i], b.outputs[c][i]))
          << "case " << c << " output " << i;
  }
  EXPECT_EQ(a.sources, b.sources);
}

// Against the interpreter (in cpu_cpp's segmented order): bit for bit, except softmax, whose
// expf is libm's in the kernel and the interpreter's own (within 1e-6 relative).
void expect_reference(const Compiled& got) {
  std::vector<Case> cs = cases();
  for (size_t c = 0; c < cs.size(); ++c) {
    std::vector<Tensor> want = test::reference(cs[c].graph, cs[c].inputs);
    ASSERT_EQ(got.outputs[c].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      if (cs[c].name == "softmax.stax")
        EXPECT_TRUE(got.outputs[c][i].allclose(want[i], 1e-6, 1e-7)) << cs[c].name;
      else
        EXPECT_TRUE(test::bitwise_equal(got.outputs[c][i], want[i])) << cs[c].name;
    }
  }
}

class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // ctest runs the suite with STAX_CACHE_DIR=off; these tests choose their own directories.
    ::unsetenv("STAX_CACHE_DIR");
    ::unsetenv("STAX_CACHE_MAX_BYTES");
  }
  // Compiles `g` with a disk cache in `dir`, keeps the compile's stats and runs it on `in`.
  static std::vector<Tensor> compile_run(const fs::path& dir, const Graph& g,
                                         const std::vector<Tensor>& in, CompileStats* stats) {
    Compiler compiler(cached_config(dir));
    CompiledGraph cg = compiler.compile(g);
    *stats = cg.stats();
    return cg.run(in);
  }
  static void same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(test::bitwise_equal(a[i], b[i])) << i;
  }
};

// ---- the store ------------------------------------------------------------------------------

TEST_F(KernelCacheTest, StoreLoadAndMiss) {
  fs::path dir = fresh_dir("store");
  DiskCache c(dir, 1 << 20);
  ASSERT_TRUE(c.usable());
  EXPECT_FALSE(c.load("key a"));
  c.store("key a", std::string("payload\0a", 9), "source a");
  std::optional<std::string> got = c.load("key a");
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, std::string("payload\0a", 9));
  EXPECT_FALSE(c.load("key b"));
  EXPECT_EQ(read_all(fs::path(c.entry_path("key a")).replace_extension(".src")), "source a");
  CacheStats s = c.stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.stores, 1u);
  EXPECT_EQ(DiskCache::clear(dir), 2u);  // the entry and its source
  EXPECT_FALSE(c.load("key a"));
}

TEST_F(KernelCacheTest, DamagedEntriesAreRemovedNeverLoaded) {
  fs::path dir = fresh_dir("damaged");
  DiskCache c(dir, 1 << 20);
  const std::string payload(1000, 'x');
  auto damage = [&](const std::function<void(std::string&)>& f) {
    c.store("k", payload);
    fs::path p = c.entry_path("k");
    std::string bytes = read_all(p);
    f(bytes);
    write_all(p, bytes);
    uint64_t corrupt = c.stats().corrupt;
    EXPECT_FALSE(c.load("k"));
    EXPECT_FALSE(fs::exists(p)) << "a damaged entry stays on disk";
    EXPECT_EQ(c.stats().corrupt, corrupt + 1);
  };
  damage([](std::string& b) { b[b.size() / 2] ^= 0x40; });       // corrupt payload
  damage([](std::string& b) { b[10] ^= 1; });                     // corrupt header
  damage([](std::string& b) { b.resize(b.size() - 1); });         // truncated by a byte
  damage([](std::string& b) { b.resize(b.size() / 2); });         // torn in the middle
  damage([](std::string& b) { b.resize(20); });                   // shorter than the header
  damage([](std::string& b) { b.clear(); });                      // zero length
  damage([](std::string& b) { b += "tail"; });                    // trailing bytes
  damage([](std::string& b) { b.append(2 << 20, 'z'); });         // larger than the cache
  // A different key under the same file name (a collision): a miss, the entry is kept.
  c.store("k", payload);
  std::string other = read_all(c.entry_path("k"));
  fs::path q = c.entry_path("k2");
  write_all(q, other);
  EXPECT_FALSE(c.load("k2"));
  EXPECT_TRUE(c.load("k"));
}

TEST_F(KernelCacheTest, LeastRecentlyUsedEntriesAreEvicted) {
  fs::path dir = fresh_dir("lru");
  const std::string payload(4000, 'p');
  DiskCache c(dir, 10000);  // room for two entries (each ~4 KB plus key and header)
  c.store("a", payload);
  ::usleep(20000);
  c.store("b", payload);
  ::usleep(20000);
  ASSERT_TRUE(c.load("a"));  // a is now the most recently used
  ::usleep(20000);
  c.store("c", payload);     // over the limit: b, the least recently used, goes
  EXPECT_TRUE(c.load("a"));
  EXPECT_FALSE(c.load("b"));
  EXPECT_TRUE(c.load("c"));
  EXPECT_EQ(c.stats().evicted, 1u);
  EXPECT_LE(DiskCache::scan(dir).bytes, 10000u);
}

void unwritable_cache_compiles(const fs::path& dir, const fs::path& cache_dir);

TEST_F(KernelCacheTest, UnwritableDirectoryWarnsOnceAndCompiles) {
  // A cache_dir that cannot be created (its parent is a plain file: fails even for root).
  fs::path dir = fresh_dir("file");
  write_all(dir / "plain", "x");
  unwritable_cache_compiles(dir, dir / "plain" / "cache");
}

TEST_F(KernelCacheTest, ReadOnlyDirectoryWarnsOnceAndCompiles) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes anywhere (the plain-file case covers root)";
  fs::path dir = fresh_dir("ro");
  fs::create_directories(dir / "cache" / "kernels");
  fs::permissions(dir / "cache" / "kernels", fs::perms::owner_read | fs::perms::owner_exec);
  unwritable_cache_compiles(dir / "cache" / "kernels", dir / "cache");
}

// Compiles the cases twice with the cache in `cache_dir` (unusable): one warning naming it,
// every kernel compiled, results right. `dir` is made writable again at the end.
void unwritable_cache_compiles(const fs::path& dir, const fs::path& cache_dir) {
  Config config = cached_config(cache_dir);
  ::testing::internal::CaptureStderr();
  Compiled got;
  {
    Compiler compiler(config);
    got = compile_all(compiler);
    Compiler again(config);  // a second cache on the same root: no second warning
    compile_all(again);
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  fs::permissions(dir, fs::perms::owner_all);
  size_t first = err.find("warning: kernel cache");
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("warning: kernel cache", first + 1), std::string::npos) << err;
  EXPECT_NE(err.find(cache_dir.string()), std::string::npos) << err;
  EXPECT_EQ(got.stats.kernels_from_disk, 0);
  EXPECT_GT(got.stats.kernels_compiled, 0);
  expect_reference(got);
}

// ---- the compile path with cpu_cpp ------------------------------------------------------------

TEST_F(KernelCacheTest, HitsInProcessAndOnDiskGiveTheColdBits) {
  fs::path dir = fresh_dir("hits");
  Compiled cold, memory, disk;
  {
    Compiler compiler(cached_config(dir));
    cold = compile_all(compiler);
    memory = compile_all(compiler);  // the same kernels again: no plugin call
  }
  const int n = cold.stats.kernels_compiled;
  ASSERT_GE(n, 3);
  EXPECT_EQ(cold.stats.kernels_from_disk, 0);
  EXPECT_EQ(memory.stats.kernels_from_memory, n);
  EXPECT_EQ(memory.stats.kernels_compiled, 0);
  EXPECT_EQ(static_cast<int>(files_with(dir, ".entry").size()), n);
  EXPECT_EQ(static_cast<int>(files_with(dir, ".src").size()), n);
  {
    Compiler compiler(cached_config(dir));  // a new process would see the same
    disk = compile_all(compiler);
  }
  EXPECT_EQ(disk.stats.kernels_from_disk, n);
  EXPECT_EQ(disk.stats.kernels_compiled, 0);
  expect_same_bits(cold, memory);
  expect_same_bits(cold, disk);
  expect_reference(disk);
  // A hit still reports kernel errors: an index out of bounds in the gather.
  Case gather = std::move(cases()[2]);
  gather.inputs[1].set_double(0, 99);
  Compiler compiler(cached_config(dir));
  CompiledGraph cg = compiler.compile(gather.graph);
  EXPECT_EQ(cg.stats().kernels_from_disk, 1);
  try {
    cg.run(gather.inputs);
    ADD_FAILURE() << "an out-of-bounds index ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index out of bounds"), std::string::npos) << e.what();
  }
}

TEST_F(KernelCacheTest, NamesAreNormalisedInTheKey) {
  // Example 1.1's kernel as the second kernel of another graph with other placeholder names:
  // the same canonical description, so it hits; the hit carries its own names.
  fs::path dir = fresh_dir("names");
  Graph one = cases()[0].graph.clone();
  Graph two = parse_graph(R"(graph(
    %z shape=(3,) : [num_users=1] = placeholder[target=z]
    %a shape=(64, 128) : [num_users=1] = placeholder[target=a]
    %b shape=(64, 128) : [num_users=1] = placeholder[target=b]
    %neg shape=(3,) : [num_users=1] = call_function[target=tensorplay.ops.tp.neg.default](args = (%z,), kwargs = {})
    %add shape=(64, 128) : [num_users=1] = call_function[target=tensorplay.ops.tp.add.Tensor](args = (%a, %b), kwargs = {alpha: 1})
    %relu shape=(64, 128) : [num_users=1] = call_function[target=tensorplay.ops.tp.relu.default](args = (%add,), kwargs = {})
    %mul shape=(64, 128) : [num_users=1] = call_function[target=tensorplay.ops.tp.mul.Scalar](args = (%relu, 2), kwargs = {})
    %s shape=(64,) : [num_users=1] = call_function[target=tensorplay.ops.tp.sum.dim_IntList](args = (%mul, [-1], False), kwargs = {dtype: tensorplay.undefined})
    return (neg, s)
))");
  {
    Compiler c1(cached_config(dir));
    EXPECT_EQ(c1.compile(one).stats().kernels_compiled, 1);
  }
  Compiler c2(cached_config(dir));
  CompiledGraph hit = c2.compile(two);
  ASSERT_EQ(hit.num_kernels(), 2u);
  EXPECT_EQ(hit.stats().kernels_compiled, 1);   // neg
  EXPECT_EQ(hit.stats().kernels_from_disk, 1);  // Example 1.1's kernel, renamed
  Compiler plain(test::cpu_config());
  CompiledGraph cold = plain.compile(two);
  EXPECT_EQ(hit.kernels()[1].source, cold.kernels()[1].source);
  EXPECT_NE(hit.kernels()[1].source.find(hit.kernels()[1].name), std::string::npos);
  std::vector<Tensor> in = test::random_inputs(two, 5);
  std::vector<Tensor> got = hit.run(in), want = cold.run(in);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(test::bitwise_equal(got[i], want[i]));
}

TEST_F(KernelCacheTest, KeyChangesWithOptionsVersionAbiIdentityAndDevice) {
  const std::string base = KernelCache::key_prefix("cpu_cpp", "0.1", "/p/lib.so size 1", "1.3",
                                                   "cpu avx512", "{}", "llvm 19; cpu znver4");
  EXPECT_NE(base, KernelCache::key_prefix("cpu_cpp", "0.2", "/p/lib.so size 1", "1.3",
                                          "cpu avx512", "{}", "llvm 19; cpu znver4"));
  EXPECT_NE(base, KernelCache::key_prefix("cpu_cpp", "0.1", "/p/lib.so size 2", "1.3",
                                          "cpu avx512", "{}", "llvm 19; cpu znver4"));
  EXPECT_NE(base, KernelCache::key_prefix("cpu_cpp", "0.1", "/p/lib.so size 1", "1.4",
                                          "cpu avx512", "{}", "llvm 19; cpu znver4"));
  EXPECT_NE(base, KernelCache::key_prefix("cpu_cpp", "0.1", "/p/lib.so size 1", "1.3",
                                          "cpu avx2", "{}", "llvm 19; cpu znver4"));
  EXPECT_NE(base, KernelCache::key_prefix("cpu_cpp", "0.1", "/p/lib.so size 1", "1.3",
                                          "cpu avx512", "{opt_level=2}", "llvm 19; cpu znver4"));
  EXPECT_NE(base, KernelCache::key_prefix("cpu_cpp", "0.1", "/p/lib.so size 1", "1.3",
                                          "cpu avx512", "{}", "llvm 19; cpu haswell"));
  // ABI 1.8 appended the bitwise opcodes: what a 1.7 build of the plugin stored is never a hit.
  EXPECT_NE(KernelCache::key_prefix("cpu_cpp", "0.1", "/p/lib.so size 1", "1.7", "cpu avx512", "{}",
                                    "llvm 19; cpu znver4"),
            KernelCache::key_prefix("cpu_cpp", "0.1", "/p/lib.so size 1", "1.8", "cpu avx512", "{}",
                                    "llvm 19; cpu znver4"));
  // No field can leak into the next: the fields are length-prefixed.
  EXPECT_NE(KernelCache::key_prefix("a", "bc", "", "", "", "", ""),
            KernelCache::key_prefix("ab", "c", "", "", "", "", ""));

  // cpu_cpp's identity names the compiler, the CPU it compiles for (CPUID's vendor, model and
  // feature words: computed without LLVM, DECISIONS item 54) and its JIT library's file.
  PluginRegistry reg(test::cpu_config());
  OptionValue baseline = OptionValue::map();
  baseline.set("native_cpu", OptionValue::make_scalar("false"));
  std::string native = reg.create("cpu_cpp", OptionValue::map())->cache_identity();
  std::string portable = reg.create("cpu_cpp", baseline)->cache_identity();
  EXPECT_NE(native.find("llvm 19"), std::string::npos) << native;
#if defined(__x86_64__)
  EXPECT_NE(native.find("; host vendor "), std::string::npos) << native;
  EXPECT_NE(native.find(" 00000001.0: "), std::string::npos) << native;  // family, features
#endif
  EXPECT_NE(native.find("cpu_cpp_jit.so "), std::string::npos) << native;
  EXPECT_NE(native, portable);

  // Through the compile path: other options miss, then hit.
  fs::path dir = fresh_dir("options");
  Graph g = cases()[0].graph.clone();
  auto origin_of = [&](OptionValue o) {
    Compiler c(cached_config(dir, std::move(o)));
    return c.compile(g).stats();
  };
  EXPECT_EQ(origin_of(OptionValue::map()).kernels_compiled, 1);
  EXPECT_EQ(origin_of(OptionValue::map()).kernels_from_disk, 1);
  OptionValue o2 = OptionValue::map();
  o2.set("opt_level", OptionValue::make_scalar("2"));
  EXPECT_EQ(origin_of(o2).kernels_compiled, 1);
  EXPECT_EQ(origin_of(baseline).kernels_compiled, 1);
  EXPECT_EQ(origin_of(o2).kernels_from_disk, 1);
  EXPECT_EQ(files_with(dir, ".entry").size(), 3u);
}

TEST_F(KernelCacheTest, DamagedOrRejectedEntriesAreRebuilt) {
  fs::path dir = fresh_dir("rebuild");
  Compiled cold;
  {
    Compiler compiler(cached_config(dir));
    cold = compile_all(compiler);
  }
  const int n = cold.stats.kernels_compiled;
  auto damage_all_then_compile = [&](const std::function<void(std::string&)>& f) {
    for (const fs::path& p : files_with(dir, ".entry")) {
      std::string bytes = read_all(p);
      f(bytes);
      write_all(p, bytes);
    }
    Compiler compiler(cached_config(dir));
    Compiled r = compile_all(compiler);
    EXPECT_EQ(r.stats.kernels_compiled, n);
    EXPECT_EQ(r.stats.kernels_from_disk, 0);
    expect_same_bits(cold, r);
    EXPECT_EQ(static_cast<int>(files_with(dir, ".entry").size()), n);  // stored again
    Compiler next(cached_config(dir));
    EXPECT_EQ(compile_all(next).stats.kernels_from_disk, n);
  };
  damage_all_then_compile([](std::string& b) { b[b.size() - 100] ^= 0x10; });  // object code
  damage_all_then_compile([](std::string& b) { b.resize(b.size() * 2 / 3); });  // truncated
  damage_all_then_compile([](std::string& b) { b.clear(); });                   // zero length
  // Well-formed entries whose payload the plugin rejects: their checksums are right, so only
  // cpu_cpp's deserialize can refuse them.
  // The format of an older plugin (STAXCPU1: the object only).
  damage_all_then_compile([&](std::string& b) {
    replace_payload(dir, b, [](uint64_t n) { return "STAXCPU1" + std::string(n - 8, '\x7f'); });
  });
  // The current format whose object is not an object file.
  damage_all_then_compile([&](std::string& b) {
    replace_payload(dir, b, [&](uint64_t n) {
      return "STAXCPU2" + length_prefixed("names") + length_prefixed("source") +
             length_prefixed(std::string(n, '\x7f'));
    });
  });
  // Field lengths that run past the end.
  damage_all_then_compile([&](std::string& b) {
    replace_payload(dir, b, [&](uint64_t n) {
      std::string p =
          "STAXCPU2" + length_prefixed("names") + length_prefixed(std::string(n, 's'));
      p[8 + 8 + 5 + 7] = '\x7f';  // the source's length: ~2^63
      return p;
    });
  });
}

// ---- the CLI ---------------------------------------------------------------------------------

// A graph of several kernels found on disk is linked in one batch (Plugin::deserialize_batch:
// cpu_cpp's one JITDylib, one lookup); with some kernels missing and one entry the plugin
// rejects inside the batch, the batch falls back to one by one: the good entries still come from
// disk, the rejected one is removed and compiled again, the missing one compiled, and every
// result keeps the cold compile's bits (and the interpreter's).
TEST_F(KernelCacheTest, AGraphsKernelsLinkInOneBatchAndHitsMixWithMisses) {
  Graph g;
  Node* x = g.placeholder("x", {64, 48});
  Node* cols = g.call("sum.dim_IntList", {g.call("exp", {x}), std::vector<int64_t>{0}, true});
  Node* rows = g.call("amax", {x, std::vector<int64_t>{1}, true});
  Node* y = g.call("mul.Tensor", {g.call("sub.Tensor", {x, rows}), cols});
  Node* z = g.call("sum.dim_IntList", {g.call("tanh", {y}), std::vector<int64_t>{1}});
  Node* w = g.call("sum.dim_IntList", {g.call("mul.Tensor", {y, y}), std::vector<int64_t>{0}});
  g.output({y, g.call("log", {g.call("abs", {z})}), g.call("sqrt", {w})});
  std::vector<Tensor> in = test::random_inputs(g, 11);
  fs::path dir = fresh_dir("batch");
  CompileStats st;
  std::vector<Tensor> cold = compile_run(dir, g, in, &st);
  const int n = st.kernels_compiled;
  ASSERT_GE(n, 3) << "the graph should need several kernels";
  same_bits(cold, test::reference(g, in));
  same_bits(cold, compile_run(dir, g, in, &st));  // every kernel from disk, in one batch
  EXPECT_EQ(st.kernels_from_disk, n);
  EXPECT_EQ(st.kernels_compiled, 0);

  std::vector<fs::path> entries = files_with(dir, ".entry");
  ASSERT_EQ(static_cast<int>(entries.size()), n);
  fs::remove(entries[0]);  // a miss
  std::string b = read_all(entries[1]);  // an entry whose object the JIT rejects, checksum right
  replace_payload(dir, b, [](uint64_t) {
    return "STAXCPU2" + length_prefixed("names") + length_prefixed("source") +
           length_prefixed("\x7f" "ELF not an object");
  });
  write_all(entries[1], b);

  same_bits(cold, compile_run(dir, g, in, &st));
  EXPECT_EQ(st.kernels_from_disk, n - 2);
  EXPECT_EQ(st.kernels_compiled, 2);
  EXPECT_EQ(static_cast<int>(files_with(dir, ".entry").size()), n);  // both stored again
  same_bits(cold, compile_run(dir, g, in, &st));
  EXPECT_EQ(st.kernels_from_disk, n);
}

// Compiler::compile_pair (two graphs' kernels in one batch): each kernel is stored on disk once,
// by its compiling thread, a kernel both graphs hold once too; a later compile of either graph
// finds every kernel on disk and runs to the same bits.
TEST_F(KernelCacheTest, ACompilePairStoresEachKernelOnce) {
  std::vector<Case> cs = cases();
  const Case& first = cs[1];  // softmax (two kernels at least)
  const Case& second = cs[2];  // the gather
  for (bool repeat : {false, true}) {
    const Graph& g2 = repeat ? first.graph : second.graph;
    fs::path dir = fresh_dir(repeat ? "pair_repeat" : "pair");
    Compiler compiler(cached_config(dir));
    auto [a, b] =
        compiler.compile_pair(first.graph, [&](const LoweredGraph&) { return g2.clone(); });
    const int n = a.stats().kernels_compiled + b.stats().kernels_compiled;
    ASSERT_GE(a.stats().kernels_compiled, 1);
    EXPECT_EQ(b.stats().kernels_from_memory, repeat ? a.stats().kernels_compiled : 0);
    EXPECT_EQ(static_cast<int>(files_with(dir, ".entry").size()), n);
    std::vector<Tensor> a_out = a.run(first.inputs);
    std::vector<Tensor> b_out = b.run(repeat ? first.inputs : second.inputs);
    CompileStats st;
    same_bits(a_out, compile_run(dir, first.graph, first.inputs, &st));
    EXPECT_EQ(st.kernels_from_disk, a.stats().kernels_compiled);
    EXPECT_EQ(st.kernels_compiled, 0);
    same_bits(b_out, compile_run(dir, g2, repeat ? first.inputs : second.inputs, &st));
    EXPECT_EQ(st.kernels_compiled, 0);
  }
}

TEST_F(KernelCacheTest, CliRunsThroughTheCacheAndStaxCacheManagesIt) {
  fs::path dir = fresh_dir("cli");
  const std::string env = "STAX_CACHE_DIR='" + dir.string() + "' ";
  const std::string stax = test::binary("stax");
  const std::string config = std::string(STAX_SOURCE_DIR) + "/configs/cpu.yaml";
  const std::string run =
      env + stax + " run " + test::example("example_1_1.stax") + " --config " + config +
      " --check";
  test::CliResult r = test::run_command(run);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(files_with(dir, ".entry").size(), 1u);
  r = test::run_command(run);  // a hit: the same check passes
  ASSERT_EQ(r.code, 0) << r.out;
  r = test::run_command(env + stax + " cache path --config " + config);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, dir.string() + "\n");
  r = test::run_command(env + stax + " cache stats --config " + config);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("entries: 1\n"), std::string::npos) << r.out;
  r = test::run_command(env + stax + " cache clear --config " + config);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("removed 2 files"), std::string::npos) << r.out;
  EXPECT_TRUE(files_with(dir, ".entry").empty());
  r = test::run_command(env + stax + " cache stats --config " + config);
  EXPECT_NE(r.out.find("entries: 0\n"), std::string::npos) << r.out;
  r = test::run_command("STAX_CACHE_DIR=off " + stax + " cache path --config " + config);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("kernel cache: disabled"), std::string::npos) << r.out;
  // `cache: off` in the config.
  write_all(dir / "off.yaml", "devices: {cpu: {backend: cpu_cpp}}\ncache: off\ncache_dir: " +
                                  dir.string() + "\n");
  r = test::run_command("env -u STAX_CACHE_DIR " + stax + " cache path --config " +
                        (dir / "off.yaml").string());
  EXPECT_NE(r.out.find("kernel cache: disabled"), std::string::npos) << r.out;
  r = test::run_command(stax + " cache frobnicate");
  EXPECT_EQ(r.code, 2) << r.out;
}

// ---- several processes ------------------------------------------------------------------------

// Runs this binary as a child: KernelCacheChild.<test> with `env` added. Returns the pid.
pid_t spawn_child(const std::string& test, const std::vector<std::string>& env) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  for (const std::string& e : env) ::putenv(const_cast<char*>((new std::string(e))->c_str()));
  std::string filter = "--gtest_filter=KernelCacheChild." + test;
  ::execl("/proc/self/exe", "kernel_cache_test", filter.c_str(), static_cast<char*>(nullptr));
  ::_exit(127);
}

int wait_child(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return 1000 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The children: they do nothing unless the parent set STAX_CACHE_TEST_CHILD_DIR.
// The object field of a cpu_cpp payload (STAXCPU2, three length-prefixed fields) with the first
// undefined symbol of its symbol table renamed ("Q" for its first letter): a well-formed object
// that neither cpu_cpp's own loader nor the JIT can link. False when it has no undefined symbol.
bool rename_an_external(std::string& payload) {
  size_t at = 8;
  for (int field = 0; field < 2; ++field) {
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(payload[at + i])) << (8 * i);
    at += 8 + n;
  }
  char* obj = payload.data() + at + 8;
  Elf64_Ehdr eh;
  std::memcpy(&eh, obj, sizeof eh);
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh, strtab;
    std::memcpy(&sh, obj + eh.e_shoff + i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_SYMTAB) continue;
    std::memcpy(&strtab, obj + eh.e_shoff + sh.sh_link * sizeof sh, sizeof sh);
    for (uint64_t k = 1; k < sh.sh_size / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym sym;
      std::memcpy(&sym, obj + sh.sh_offset + k * sizeof sym, sizeof sym);
      if (sym.st_shndx != SHN_UNDEF || sym.st_name == 0) continue;
      obj[strtab.sh_offset + sym.st_name] = 'Q';
      return true;
    }
  }
  return false;
}

// DECISIONS item 54: a stored object cpu_cpp's loader refuses (an external the process lacks)
// goes to the JIT, which refuses it too; the host then takes the batch one by one: that entry is
// removed and compiled again, the others still come from disk, the bits are the cold compile's.
TEST_F(KernelCacheTest, AnObjectNoLoaderCanLinkIsRebuiltAndTheOthersComeFromDisk) {
  Graph g;
  Node* x = g.placeholder("x", {64, 48});
  Node* cols = g.call("sum.dim_IntList", {g.call("exp", {x}), std::vector<int64_t>{0}, true});
  Node* y = g.call("mul.Tensor", {g.call("tanh", {x}), cols});
  g.output({g.call("log", {g.call("abs", {y})}), g.call("sum.dim_IntList", {g.call("sin", {y}), std::vector<int64_t>{1}})});
  std::vector<Tensor> in = test::random_inputs(g, 5);
  fs::path dir = fresh_dir("loader_refuses");
  CompileStats st;
  std::vector<Tensor> cold = compile_run(dir, g, in, &st);
  const int n = st.kernels_compiled;
  ASSERT_GE(n, 2);
  bool renamed = false;
  for (const fs::path& p : files_with(dir, ".entry")) {
    std::string b = read_all(p);
    std::optional<std::pair<std::string, std::string>> f = DiskCache::entry_fields(b);
    ASSERT_TRUE(f.has_value());
    std::string payload = f->second;
    if (!rename_an_external(payload)) continue;
    replace_payload(dir, b, [&](uint64_t) { return payload; });
    write_all(p, b);
    renamed = true;
    break;
  }
  ASSERT_TRUE(renamed) << "no kernel of the graph calls an external function";
  same_bits(cold, compile_run(dir, g, in, &st));
  EXPECT_EQ(st.kernels_from_disk, n - 1);
  EXPECT_EQ(st.kernels_compiled, 1);
  same_bits(cold, compile_run(dir, g, in, &st));  // stored again: every kernel from disk
  EXPECT_EQ(st.kernels_from_disk, n);
}

TEST(KernelCacheChild, CompileAndWrite) {
  const char* dir = std::getenv("STAX_CACHE_TEST_CHILD_DIR");
  if (!dir) GTEST_SKIP() << "run by KernelCacheTest only";
  ::unsetenv("STAX_CACHE_DIR");
  Compiler compiler(cached_config(dir));
  Compiled r = compile_all(compiler);
  // Outputs as bytes, for the parent to compare.
  std::string bytes;
  for (const auto& outs : r.outputs)
    for (const Tensor& t : outs) {
      Tensor c = t.contiguous();
      bytes.append(reinterpret_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.nbytes()));
    }
  write_all(std::string(std::getenv("STAX_CACHE_TEST_CHILD_OUT")), bytes);
}

TEST(KernelCacheChild, DieWhileWriting) {
  const char* dir = std::getenv("STAX_CACHE_TEST_CHILD_DIR");
  if (!dir) GTEST_SKIP() << "run by KernelCacheTest only";
  ::unsetenv("STAX_CACHE_DIR");
  Compiler compiler(cached_config(dir));
  DiskCache* disk = compiler.kernel_cache().disk();
  ASSERT_NE(disk, nullptr);
  disk->test_after_partial_write = [] { ::raise(SIGKILL); };
  compile_all(compiler);
}

// Whether a shared object whose file name contains `part` is loaded in this process.
bool object_loaded(const std::string& part) {
  struct Search {
    const std::string* part;
    bool found;
  } search{&part, false};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name && std::string(info->dlpi_name).find(*s->part) != std::string::npos)
          s->found = true;
        return 0;
      },
      &search);
  return search.found;
}

// Compiles the cases with the disk cache at STAX_CACHE_TEST_CHILD_DIR and writes to
// STAX_CACHE_TEST_CHILD_OUT "<compiled> <from disk> <clang before> <clang after> <llvm after>"
// (libclang-cpp, libLLVM mapped) and the outputs' bytes on the next line.
TEST(KernelCacheChild, CompileAndReportClang) {
  const char* dir = std::getenv("STAX_CACHE_TEST_CHILD_DIR");
  if (!dir) GTEST_SKIP() << "run by KernelCacheTest only";
  ::unsetenv("STAX_CACHE_DIR");
  const bool before = object_loaded("libclang-cpp");
  Compiler compiler(cached_config(dir));
  compiler.prepare();
  Compiled r = compile_all(compiler);
  std::string bytes;
  for (const auto& outs : r.outputs)
    for (const Tensor& t : outs) {
      Tensor c = t.contiguous();
      bytes.append(reinterpret_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.nbytes()));
    }
  write_all(std::string(std::getenv("STAX_CACHE_TEST_CHILD_OUT")),
            std::to_string(r.stats.kernels_compiled) + " " +
                std::to_string(r.stats.kernels_from_disk) + " " + (before ? "1" : "0") + " " +
                (object_loaded("libclang-cpp") ? "1" : "0") + " " +
                (object_loaded("libLLVM") ? "1" : "0") + "\n" + bytes);
}

std::string output_bytes(const Compiled& r) {
  std::string bytes;
  for (const auto& outs : r.outputs)
    for (const Tensor& t : outs) {
      Tensor c = t.contiguous();
      bytes.append(reinterpret_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.nbytes()));
    }
  return bytes;
}

TEST_F(KernelCacheTest, ProcessKilledWhileWritingLeavesNoEntry) {
  fs::path dir = fresh_dir("killed");
  pid_t pid = spawn_child("DieWhileWriting", {"STAX_CACHE_TEST_CHILD_DIR=" + dir.string()});
  EXPECT_EQ(wait_child(pid), 1000 + SIGKILL);
  EXPECT_TRUE(files_with(dir, ".entry").empty()) << "a half-written entry became visible";
  // Its temporary file is left behind, half written.
  size_t temps = 0;
  for (const auto& e : fs::directory_iterator(dir / "kernels"))
    temps += e.path().filename().string().rfind(".tmp-", 0) == 0;
  EXPECT_GE(temps, 1u);
  // The next run compiles, stores, and removes the dead writer's temporary file.
  Compiled cold;
  {
    Compiler compiler(cached_config(dir));
    cold = compile_all(compiler);
  }
  EXPECT_GT(cold.stats.kernels_compiled, 0);
  EXPECT_EQ(cold.stats.kernels_from_disk, 0);
  temps = 0;
  for (const auto& e : fs::directory_iterator(dir / "kernels"))
    temps += e.path().filename().string().rfind(".tmp-", 0) == 0;
  EXPECT_EQ(temps, 0u);
  Compiler compiler(cached_config(dir));
  Compiled hit = compile_all(compiler);
  EXPECT_EQ(hit.stats.kernels_from_disk, cold.stats.kernels_compiled);
  expect_same_bits(cold, hit);
}

TEST_F(KernelCacheTest, TwoProcessesAtOnce) {
  fs::path dir = fresh_dir("two");
  Compiled want;
  {
    Compiler compiler(test::cpu_config());  // no disk cache: the reference bits
    want = compile_all(compiler);
  }
  for (int round = 0; round < 2; ++round) {  // both miss, then both hit
    SCOPED_TRACE(round);
    std::vector<pid_t> pids;
    for (int i = 0; i < 2; ++i)
      pids.push_back(spawn_child("CompileAndWrite",
                                 {"STAX_CACHE_TEST_CHILD_DIR=" + dir.string(),
                                  "STAX_CACHE_TEST_CHILD_OUT=" +
                                      (dir / ("out" + std::to_string(i))).string()}));
    for (pid_t p : pids) EXPECT_EQ(wait_child(p), 0);
    for (int i = 0; i < 2; ++i)
      EXPECT_EQ(read_all(dir / ("out" + std::to_string(i))), output_bytes(want)) << i;
    EXPECT_EQ(files_with(dir, ".entry").size(), want.sources.size());
  }
}

// Issue 27 (DECISIONS items 51 and 54): a process whose kernels all come from the disk cache maps
// neither libclang-cpp nor libLLVM (the plugin's ObjectLoader links the stored objects, the key
// is computed without LLVM), and its results are the miss path's bits. With STAX_CPU_LOADER=off
// the JIT links them (libLLVM mapped, libclang-cpp still not): the same bits again.
TEST_F(KernelCacheTest, AProcessThatOnlyHitsNeverLoadsClangOrLlvm) {
  fs::path dir = fresh_dir("lazy_clang");
  Compiled want;
  {
    Compiler compiler(test::cpu_config());  // no disk cache: the reference bits
    want = compile_all(compiler);
  }
  const int kernels = want.stats.kernels_compiled;
  ASSERT_GT(kernels, 0);
  auto run = [&](const std::string& out, std::vector<std::string> env = {}) {
    env.push_back("STAX_CACHE_TEST_CHILD_DIR=" + dir.string());
    env.push_back("STAX_CACHE_TEST_CHILD_OUT=" + out);
    pid_t pid = spawn_child("CompileAndReportClang", env);
    EXPECT_EQ(wait_child(pid), 0);
    return read_all(out);
  };
  // Cold: every kernel compiled, so the JIT and the frontend (libLLVM, libclang-cpp) are loaded.
  std::string cold = run((dir / "cold").string());
  ASSERT_NE(cold.find('\n'), std::string::npos) << cold;
  EXPECT_EQ(cold.substr(0, cold.find('\n')), std::to_string(kernels) + " 0 0 1 1");
  EXPECT_EQ(cold.substr(cold.find('\n') + 1), output_bytes(want));
  // Warm: every kernel from disk, neither library ever mapped; the same bits.
  std::string warm = run((dir / "warm").string());
  ASSERT_NE(warm.find('\n'), std::string::npos) << warm;
  EXPECT_EQ(warm.substr(0, warm.find('\n')), "0 " + std::to_string(kernels) + " 0 0 0");
  EXPECT_EQ(warm.substr(warm.find('\n') + 1), output_bytes(want));
  // Warm without the loader: the JIT links the stored objects (libLLVM, no Clang); the same bits.
  std::string jit = run((dir / "jit").string(), {"STAX_CPU_LOADER=off"});
  ASSERT_NE(jit.find('\n'), std::string::npos) << jit;
  EXPECT_EQ(jit.substr(0, jit.find('\n')), "0 " + std::to_string(kernels) + " 0 0 1");
  EXPECT_EQ(jit.substr(jit.find('\n') + 1), output_bytes(want));
}

}  // namespace
}  // namespace stax
