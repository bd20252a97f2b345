// The cpu_cpp backend (libstax_cpu_cpp.so): prints each kernel as scalar C++ (cpp_printer.h),
// compiles it in-process with Clang + ORC (clang_jit.h, in cpu_cpp_jit.so, loaded by the first
// compile: jit_library.h; a kernel-cache hit is linked by the plugin's own ObjectLoader, so a
// process of hits never maps libLLVM) and runs it through its function pointer,
// optionally over a host thread pool (thread_pool.h). Extern kernels: the matmul family and
// convolution (extern_kernels.h) on the `blas:` GEMM library (gemm_library.h), on the same pool.
//
// Options (`devices.cpu.options` in the YAML config; unknown keys are errors naming the file line):
//   opt_level: 2             -O level of Clang and of LLVM code generation (0..3). 2, not 3: the
//                            kernels ran as fast at 2 (bench_cpu W1-W5 at 1024 and 4096, the GPT
//                            block's training step) and compiled in 15% less CPU time
//                            (docs/jit_compile.md)
//   threads: <cores>         threads a kernel (and an extern gemm) runs on: the outermost loop is
//                            cut into chunks claimed dynamically by the pool's threads; kernels
//                            with fewer than kParallelMinPoints points run on the calling thread.
//                            Default: the physical cores the process may run on (machine_threads;
//                            docs/cpu_kernels.md, bench/RECORDS.md: why).
//   native_cpu: true         -march=native (false: the baseline x86-64 target)
//   strict_order: false      false: reductions accumulate in the fixed segmented order
//                            (stax/sdk/reduction_order.hpp: 16 vector chains and a tree; the
//                            interpreter's ReductionOrder::Segmented bit for bit, within the §6.5
//                            bound of the sequential order, the same for any thread count);
//                            true: sequential, bit-identical to the interpreter's default order
//   vector_printer: false    true: the innermost loop of pointwise kernels and of segmented
//                            reduction bodies printed as explicit AVX-512 vector code
//                            (vector_printer.h; the same bits); needs native_cpu and AVX-512,
//                            else ignored (scalar loops, Clang's vectoriser)
//   fuse_bodies: true        a store-only body (softmax's exp over the row) runs in the loop of
//                            the segmented reduction after it (PrintOptions::fuse_bodies; the
//                            same bits); false: each body its own loop
//   row_tiles: true          strict_order's row reductions run 16 rows at a time in 16 vector
//                            lanes over 16 x 16 tiles transposed in registers (the same bits
//                            as the 8 scalar row chains of false); needs native_cpu and
//                            AVX-512, else ignored
//   streaming_store_bytes: auto
//                            a float32 kernel output of more than this many bytes that the
//                            kernel does not read back is written with streaming
//                            (non-temporal) stores where 64-byte aligned: no read of each line
//                            before it is written (streaming_store.h, DECISIONS 71; the same
//                            bits). auto: the last-level cache's size (sysfs, else CPUID; off if
//                            unknown); 0: off; N: a byte count
//   blas: stax               the GEMM library of the float32 / float64 products and
//                            convolutions: stax (Stax's own, the interpreter's bits), openblas,
//                            blis, mkl, onednn (gemm_library.h; loaded when named, run
//                            single-threaded on the pool); a library that is not installed is
//                            an error naming the files tried
//   blas_library: ""         the file to load for `blas:` instead of the usual ones
//   epilogues: true          the scheduler may fuse a pointwise kernel after a matrix product
//                            into it (ABI 1.5, core/scheduler/extern_epilogue.h): the kernel runs
//                            on each block of rows the product finishes, while it is in cache
//                            (the same bits); false: every such kernel runs after the product
//   pool_spin_us: 100        how long the pool's idle threads spin for the next kernel before
//                            they sleep (a sleeping thread costs a futex wake-up; spinning costs
//                            its core while nothing runs)
//   chunk_points: 262144     a large kernel's outer loop is cut into chunks of about this many
//                            iteration points (times the reduction length; at most 32 per
//                            thread, at least 4 per thread of 2^15 points), claimed by the
//                            threads from their home ranges, then stolen (the same bits)
//   openmp_runtime: ""       run the parallel loops on the team of this OpenMP runtime (a path
//                            or soname the process has already loaded, e.g. torch's libgomp;
//                            thread_pool.h) instead of the pool's own threads: one pool, not
//                            two spinning against each other; at most `threads` wide, and as
//                            wide as the runtime's omp_get_max_threads() at each launch
//   dump_source: false       print every kernel's source to stderr when it is compiled
//   test_inject_source: ""   TESTING ONLY: text appended to every kernel's source (to provoke a
//                            compile error in tests)
// Thresholds: the seed's CPU values (§6.6: op limit 50, users 5 near 40 ops, 4 reads, 12
// accumulated reads, transcendental exp log log10 log1p log2 sigmoid tanh). split_reduction: the
// segmented order's blocks (1 under strict_order).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <string_view>
#include <system_error>
#include <vector>

#include "plugins/cpu_cpp/address_space.h"
#include "plugins/cpu_cpp/clang_jit.h"
#include "plugins/cpu_cpp/cpp_printer.h"
#include "plugins/cpu_cpp/epilogue_blocks.h"
#include "plugins/cpu_cpp/extern_kernels.h"
#include "plugins/cpu_cpp/gemm_library.h"
#include "plugins/cpu_cpp/jit_identity.h"
#include "plugins/cpu_cpp/jit_library.h"
#include "plugins/cpu_cpp/object_check.h"
#include "plugins/cpu_cpp/object_loader.h"
#include "plugins/cpu_cpp/thread_pool.h"
#include "plugins/cpu_cpp/streaming_store.h"
#include "plugins/cpu_cpp/vector_printer.h"
#include "stax/sdk/plugin.hpp"
#include "stax/sdk/reduction_order.hpp"

namespace stax::cpu {

namespace {

// What a failed STAX_CHECK leaves (the layout of the prelude's `struct stax_fault`,
// cpp_op_printer.cpp): a fixed message, and for an indirect index out of bounds the index as loaded
// and the size of the dimension it indexes.
struct KernelFault {
  const char* message;
  long long index;
  long long size;
  int has_index;
};
using KernelFn = void(void* const*, long long, long long, KernelFault*);

// The serialized kernel (ABI 1.3): this magic (its last digit is the format's version), then
// three length-prefixed fields (8-byte little-endian length, then the bytes): the names of the
// description it was printed from (names_key), its source after the prelude (source_prefix(),
// the same for every kernel of a plugin build: ~21 KB not stored with each kernel), and the
// object file whose entry point is kEntry. A hit whose description has the same names takes the
// stored source: printing the kernel again costs about as much as linking it (0.05-0.25 ms).
constexpr const char kBlobMagic[] = "STAXCPU2";
constexpr size_t kBlobMagicSize = sizeof(kBlobMagic) - 1;

// Everything of a description that its canonical bytes (the cache key) leave out and the printer
// prints: the kernel's, buffers' and bodies' names.
std::string names_key(const sdk::Kernel& k) {
  std::string out = k.name();
  out += '\0';
  for (size_t i = 0; i < k.num_buffers(); ++i) out += k.buffer(i).name() + '\0';
  out += '\0';
  for (size_t i = 0; i < k.num_bodies(); ++i) out += k.body(i).name() + '\0';
  return out;
}

// What every kernel's source starts with.
const std::string& source_prefix() {
  static const std::string prefix = kernel_prelude() + kKernelMarker + "\n";
  return prefix;
}

void put_field(std::string& out, std::string_view field) {
  uint64_t n = field.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  out.append(field.data(), field.size());
}

// The next field of a blob; false when the bytes end early.
bool take_field(std::string_view& in, std::string_view* field) {
  if (in.size() < 8) return false;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(in[i])) << (8 * i);
  in.remove_prefix(8);
  if (n > in.size()) return false;
  *field = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}
// Every module has a JITDylib of its own (clang_jit.h), so one entry name serves every kernel.
constexpr const char kEntry[] = "stax_entry";

// Below this many iteration points (times the reduction length) a kernel runs on the calling
// thread and wakes nobody: ~20 us of streaming work on one core, against a parallel_for that costs
// 0.4 us with the workers spinning and 3-8 us with them asleep (measured on the 2-vCPU guest at
// loadavg 9; bench/RECORDS.md, cpu_cpp kernels, "Threads"). At 2^16 points 2 threads only broke even there.
constexpr int64_t kParallelMinPoints = 1 << 17;
// Larger kernels are cut into up to kChunksPerThread chunks per thread of at least
// kMinChunkPoints points, claimed dynamically (thread_pool.h): a thread the OS deschedules holds
// back one small chunk, not half of the kernel. Rows are independent and every output keeps its
// own order, so the chunking never changes a bit.
constexpr int64_t kChunksPerThread = 4;
constexpr int64_t kMinChunkPoints = 1 << 15;
// A large kernel is cut finer still, into chunks of about `chunk_points` (the option; default
// kDefaultChunkPoints, ~60 us of streaming on one core), up to kMaxChunksPerThread per thread. The
// threads then finish a launch within about one such chunk of each other, so a thread done early
// still spins (pool_spin_us) when the next launch comes instead of sleeping: with 4 chunks per
// thread a W1 4096² launch (16 MB per chunk) left one thread up to ~0.5 ms of the other's last
// chunk to wait, it went to sleep, and every launch paid a futex wake-up of a halted vCPU (1.10x
// hand C++'s time on 2 threads, 0.95x with 64 chunks or with the threads of an OpenMP team, whose
// threads spin for milliseconds; bench/RECORDS.md, phase 12). Claiming a chunk costs one
// compare-and-swap; the home ranges (thread_pool.h) keep each thread on the same rows.
constexpr int64_t kDefaultChunkPoints = 1 << 18;
constexpr int64_t kMaxChunksPerThread = 32;

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "cpu" : line.substr(start);
  }
  return "cpu";
}

// The default thread count: the physical cores this process may run on (its affinity mask, SMT
// siblings counted once: the kernels are memory-bound and a sibling adds no bandwidth).
int64_t machine_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return std::max<int64_t>(1, std::thread::hardware_concurrency());
  auto read_id = [](int cpu, const char* what) {
    std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/" + what);
    long long id = -1;
    return (in >> id) ? id : -1LL;
  };
  std::set<std::pair<long long, long long>> cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    long long package = read_id(cpu, "physical_package_id"), core = read_id(cpu, "core_id");
    if (core < 0) cores.insert({-1, cpu});  // no topology: every CPU counts
    else cores.insert({package, core});
  }
  return std::clamp<int64_t>(static_cast<int64_t>(cores.size()), 1, 1024);
}

// -O2: measured as fast as -O3 on these kernels, for 15% less compile time (docs/jit_compile.md).
constexpr int64_t kDefaultOptLevel = 2;

// The vector printer's default (docs/vector_math.md: bench_cpu with it on and off).
constexpr bool kVectorPrinterDefault = false;

int32_t simd_bytes() {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512f")) return 64;
  if (__builtin_cpu_supports("avx2")) return 32;
#endif
  return 16;
}

// A kernel's machine code, linked by the JIT (a compile, or a stored object the loader refused)
// or by the plugin's ObjectLoader (a kernel-cache hit): its entry point and the relocatable
// object (what the cache stores); `owner` keeps both alive and frees the code.
struct LinkedCode {
  KernelFn* fn = nullptr;
  std::string_view object;
  std::shared_ptr<void> owner;
};

// STAX_CPU_LOADER=off: every stored object is linked by the JIT, as before the loader (A/B runs,
// and a way around a loader bug).
bool object_loader_enabled() {
  static const bool on = [] {
    const char* env = std::getenv("STAX_CPU_LOADER");
    return !(env && std::string(env) == "off");
  }();
  return on;
}

bool cache_trace() {
  static const bool on = [] {
    const char* env = std::getenv("STAX_CACHE_TRACE");
    return env && std::string(env) == "1";
  }();
  return on;
}

class CpuKernel : public sdk::CompiledKernel {
 public:
  CpuKernel(LinkedCode code, std::string source, std::string names,
            std::string name, size_t num_buffers, int64_t outer, int64_t points, int64_t align,
            std::shared_ptr<ThreadPool> pool, int64_t chunk_points)
      : code_(std::move(code)),
        fn_(code_.fn),
        source_(std::move(source)),
        names_(std::move(names)),
        name_(std::move(name)),
        num_buffers_(num_buffers),
        outer_(outer),
        points_(points),
        align_(std::max<int64_t>(1, align)),
        pool_(std::move(pool)),
        chunk_points_(std::max<int64_t>(1, chunk_points)) {}

  const std::string& source() const override { return source_; }

  // ABI 1.3: kBlobMagic's format; the object is clang_jit.h's CompiledModule::object().
  std::string serialize() const override {
    std::string out = kBlobMagic;
    out.reserve(kBlobMagicSize + 24 + names_.size() + source_.size() + code_.object.size());
    std::string_view source = source_;
    if (source.substr(0, source_prefix().size()) == source_prefix())
      source.remove_prefix(source_prefix().size());
    else
      return std::string();  // not printed by kernel_source() (cannot happen): not cached
    put_field(out, names_);
    put_field(out, source);
    put_field(out, code_.object);
    return out;
  }

  void run(void* const* buffers, size_t num_buffers, void*) override {
    if (num_buffers != num_buffers_)
      throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT, "cpu_cpp: kernel '" + name_ + "' takes " +
                                                              std::to_string(num_buffers_) +
                                                              " buffers, got " +
                                                              std::to_string(num_buffers));
    for (size_t i = 0; i < num_buffers; ++i)
      if (!buffers[i])
        throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT,
                               "cpu_cpp: kernel '" + name_ + "': null buffer " + std::to_string(i));
    if (outer_ <= 0) return;
    const int64_t chunks = chunk_count();
    if (chunks == 1) {  // small work, or one thread: no wake-up, no allocation
      KernelFault error{nullptr, 0, 0, 0};
      fn_(buffers, 0, outer_, &error);
      report(error);
      return;
    }
    std::vector<KernelFault> errors(static_cast<size_t>(chunks), KernelFault{nullptr, 0, 0, 0});
    const int64_t units = (outer_ + align_ - 1) / align_;  // chunk bounds are multiples of align_
    pool_->parallel_for(chunks, [&](int64_t c) {
      int64_t begin = std::min(outer_, units * c / chunks * align_);
      int64_t end = std::min(outer_, units * (c + 1) / chunks * align_);
      if (begin < end) fn_(buffers, begin, end, &errors[static_cast<size_t>(c)]);
    });
    for (const KernelFault& e : errors) report(e);
  }

  // The kernel as the epilogue of a matrix product (plugin_api.h EPILOGUES): `extern_run` runs
  // the product with an OutputDone that runs this kernel's outer loop over each finished block
  // (EpilogueBlocks), on the thread that finished it. False when the kernel is not pointwise
  // over `total` points (the caller then runs the product alone).
  bool run_as_epilogue(void* const* buffers, size_t num_buffers, int64_t total,
                       const std::function<void(const OutputDone&)>& extern_run) {
    if (num_buffers != num_buffers_ || points_ != total || outer_ <= 0) return false;
    for (size_t i = 0; i < num_buffers; ++i)
      if (!buffers[i]) return false;
    std::mutex mu;
    KernelFault first{nullptr, 0, 0, 0};
    EpilogueBlocks blocks(total, outer_, align_, [&](int64_t begin, int64_t end) {
      KernelFault error{nullptr, 0, 0, 0};
      fn_(buffers, begin, end, &error);
      if (error.message) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first.message) first = error;
      }
    });
    extern_run([&](int64_t begin, int64_t end) { blocks.finished(begin, end); });
    if (!blocks.complete())
      throw sdk::PluginError(STAX_ERROR_INTERNAL, "cpu_cpp: the epilogue '" + name_ +
                                                      "' did not see its whole product");
    report(first);
    return true;
  }

  // How many chunks of the outermost loop a run is cut into (1: the calling thread alone).
  int64_t chunk_count() const {
    if (!pool_ || pool_->threads() <= 1 || points_ < kParallelMinPoints) return 1;
    const int64_t threads = pool_->threads();
    const int64_t units = (outer_ + align_ - 1) / align_;
    int64_t chunks = std::min(threads * kChunksPerThread, points_ / kMinChunkPoints);
    chunks = std::max(chunks, std::min(threads * kMaxChunksPerThread, points_ / chunk_points_));
    chunks = std::max(chunks, threads);
    return std::max<int64_t>(1, std::min(chunks, units));
  }

 private:
  void report(const KernelFault& e) const {
    if (!e.message) return;
    std::string what = e.message;
    if (e.has_index)
      what = "index out of bounds: index " + std::to_string(e.index) +
             " for a dimension of size " + std::to_string(e.size);
    throw sdk::PluginError(STAX_ERROR_RUNTIME, "cpu_cpp: kernel '" + name_ + "': " + what);
  }

  LinkedCode code_;
  KernelFn* fn_;
  std::string source_;
  std::string names_;  // names_key() of the description it was printed from
  std::string name_;
  size_t num_buffers_;
  int64_t outer_;   // extent of the chunked loop (chunked_dim; 1 for a kernel without ranges)
  int64_t points_;  // iteration points times reduction length: the parallelism cut-off
  int64_t align_;   // chunk bounds are multiples of it (the printer's wide lanes along i0)
  std::shared_ptr<ThreadPool> pool_;
  int64_t chunk_points_;  // cpu_cpp's chunk_points: the finer cut of a large kernel
};

class CpuCppBackend : public sdk::Backend {
 public:
  static constexpr const char* kName = "cpu_cpp";
  static constexpr const char* kVersion = "0.2 (Clang/ORC in-process JIT, Stax GEMM)";

  void configure(const sdk::Options& o) override {
    o.check_known({"opt_level", "threads", "native_cpu", "strict_order", "vector_printer",
                   "fuse_bodies", "row_tiles", "streaming_store_bytes", "blas", "blas_library",
                   "epilogues", "pool_spin_us", "chunk_points", "openmp_runtime", "dump_source",
                   "test_inject_source"});
    opt_level_ = o.get_int("opt_level", kDefaultOptLevel);
    if (opt_level_ < 0 || opt_level_ > 3) o.at("opt_level").fail("must be 0..3");
    threads_ = o.get_int("threads", machine_threads());
    if (threads_ < 1 || threads_ > 1024) o.at("threads").fail("must be 1..1024");
    native_cpu_ = o.get_bool("native_cpu", true);
    print_.strict_order = o.get_bool("strict_order", false);
    print_.vector_printer =
        o.get_bool("vector_printer", kVectorPrinterDefault) && native_cpu_ && simd_bytes() >= 64;
    print_.fuse_bodies = o.get_bool("fuse_bodies", true);
    print_.row_tiles = o.get_bool("row_tiles", true) && native_cpu_ && simd_bytes() >= 64;
    print_.streaming_store_bytes = streaming_store_option(o);
    dump_source_ = o.get_bool("dump_source", false);
    inject_ = o.get_string("test_inject_source", "");
    const int64_t spin_us = o.get_int("pool_spin_us", ThreadPool::kDefaultSpinMicros);
    if (spin_us < 0 || spin_us > 1000000) o.at("pool_spin_us").fail("must be 0..1000000");
    chunk_points_ = o.get_int("chunk_points", kDefaultChunkPoints);
    if (chunk_points_ < 1024 || chunk_points_ > (int64_t{1} << 40))
      o.at("chunk_points").fail("must be 1024..2^40");
    const std::string openmp = o.get_string("openmp_runtime", "");
    if (!openmp.empty() && threads_ > 1) {
      try {
        pool_ = std::make_shared<ThreadPool>(static_cast<int>(threads_), OpenMpTeam::find(openmp));
      } catch (const std::runtime_error& e) {
        o.at("openmp_runtime").fail(e.what());
      }
    } else if (threads_ > 1) {
      try {
        pool_ = std::make_shared<ThreadPool>(static_cast<int>(threads_), spin_us);
      } catch (const std::system_error& e) {
        throw sdk::PluginError(STAX_ERROR_RUNTIME, std::string("cpu_cpp: ") + e.what());
      }
    }
    configure_gemm(o);
    epilogues_ = o.get_bool("epilogues", true);
    // The prelude (~21 KB, every kernel's source starts with it) is assembled here, once per
    // process, not by the first kernel a process takes from the cache (~0.1 M instructions).
    source_prefix();
  }

  sdk::DeviceProperties properties() const override {
    sdk::DeviceProperties p;
    p.kind = sdk::DeviceKind::CPU;
    p.device_name = cpu_model_name();
    p.cores = static_cast<int32_t>(threads_);
    p.vector_bytes = simd_bytes();
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    p.l2_cache_bytes = l2 > 0 ? l2 : 0;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    p.memory_bytes = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
    // Kernels are pure functions of their buffers; the thread pool takes one parallel_for at a
    // time and the extern kernels are reentrant.
    p.concurrent_runs = true;
    // ABI 1.5: matrix products run their epilogue kernels on each finished block of rows.
    p.extern_epilogues = epilogues_;
    // ABI 1.6: compiles may run at once (ClangJit compiles concurrently, each with its own Clang
    // instance, LLVM context and target machine; the printer is a pure function): the host
    // compiles a graph's kernels on the machine's cores.
    p.concurrent_compiles = true;
    return p;
  }

  sdk::RealizationThresholds thresholds() const override {
    return sdk::RealizationThresholds::cpu();
  }

  // The segmented order's fixed blocks (stax/sdk/reduction_order.hpp): a reduction of 2^17 or
  // more elements is two levels, the blocks (as many outputs as blocks: the threads share them)
  // and their partials, exactly the interpreter's ReductionOrder::Segmented. A function of the
  // reduction's length alone, so any thread count gives the same bits. strict_order keeps one
  // sequential chain (unsplit).
  int64_t split_reduction(int64_t reduction_numel, int64_t, sdk::ReductionType) const override {
    return print_.strict_order ? 1 : sdk::reduction_blocks(reduction_numel);
  }

  std::unique_ptr<sdk::CompiledKernel> compile(const sdk::Kernel& k) override {
    require_address_space(kJitHeadroomBytes, "compiling kernel '" + k.name() + "'");
    std::string source = kernel_source(k);
    if (dump_source_) {
      std::lock_guard<std::mutex> lock(dump_mutex_);  // compiles may run on several threads
      std::cerr << "// cpu_cpp kernel '" << k.name() << "'\n" << source << "\n";
    }
    // The kernel function is wrapped by the entry point (the kernel itself becomes internal and
    // is inlined).
    std::string jit_source = source + "\nextern \"C\" void " + kEntry +
                             "(void* const* b, long long s, long long e, stax_fault* err) { " +
                             k.name() + "(b, s, e, err); }\n";
    const JitLibraryApi& api = jit_api();
    void* jit = this->jit();
    StaxErrorCode code = STAX_ERROR_INTERNAL;
    std::string error;
    void* module = api.compile(jit, jit_source, kEntry, k.name(), &code, &error);
    if (!module) throw sdk::PluginError(code, error);
    return make_kernel(k, jit_module(api, module), std::move(source));
  }

  // A digest of the prelude texts (scalar_ops.hpp, the vector ops and the streaming stores,
  // embedded at build time):
  // a change of the scalar semantics (an op's formula) never lets a cached object through.
  static size_t prelude_digest() {
    static const size_t d = std::hash<std::string>{}(kernel_prelude() + vector_prelude() +
                                                          streaming_prelude());
    return d;
  }

  // ABI 1.3, the kernel cache: the object code links again without Clang; the source (for dumps)
  // is printed again from the current description, so it carries the current names.
  std::string cache_identity() const override {
    return std::string(kName) + " " + kVersion + "; strict_order " +
           (print_.strict_order ? "1" : "0") + "; vector_printer " +
           (print_.vector_printer ? "1" : "0") + "; fuse_bodies " +
           (print_.fuse_bodies ? "1" : "0") + "; row_tiles " +
           (print_.row_tiles ? "1" : "0") + "; streaming_store_bytes " +
           std::to_string(print_.streaming_store_bytes) + "; printer " +
           std::to_string(kPrinterRevision) +
           "; preludes " + std::to_string(prelude_digest()) + "; inject " +
           std::to_string(inject_.size()) + "; " + const_cast<CpuCppBackend*>(this)->jit_key();
  }

  std::unique_ptr<sdk::CompiledKernel> deserialize(const sdk::Kernel& k, const void* data,
                                                   size_t size) override {
    require_address_space(kJitHeadroomBytes, "linking cached kernel '" + k.name() + "'");
    Stored st = parse(k, data, size);
    std::vector<LinkedCode> code = link_stored({st.object}, {k.name()});
    return make_kernel(k, std::move(code.front()), std::move(st.source));
  }

  // ABI 1.4: a graph's cached kernels linked together (ClangJit::load_objects: one JITDylib, one
  // lookup), all or nothing.
  std::vector<std::unique_ptr<sdk::CompiledKernel>> deserialize_batch(
      const std::vector<sdk::Kernel>& kernels, const std::vector<Serialized>& bytes) override {
    require_address_space(kJitHeadroomBytes, "linking " + std::to_string(kernels.size()) +
                                                 " cached kernels");
    std::vector<Stored> stored;
    std::vector<std::string_view> objects;
    std::vector<std::string> names;
    for (size_t i = 0; i < kernels.size(); ++i) stored.push_back(parse(kernels[i], bytes[i].data, bytes[i].size));
    for (size_t i = 0; i < kernels.size(); ++i) {
      objects.push_back(stored[i].object);
      names.push_back(kernels[i].name());
    }
    std::vector<LinkedCode> code = link_stored(objects, names);
    std::vector<std::unique_ptr<sdk::CompiledKernel>> out;
    for (size_t i = 0; i < kernels.size(); ++i)
      out.push_back(make_kernel(kernels[i], std::move(code[i]), std::move(stored[i].source)));
    return out;
  }

  std::vector<std::string> extern_kernels() const override { return extern_kernel_names(); }

  void run_extern(const std::string& name, const std::vector<sdk::TensorView>& tensors,
                  size_t num_inputs, const std::vector<double>& scalars, void*) override {
    ExternContext ctx;
    ctx.gemm = gemm_.get();
    ctx.pool = pool_.get();
    run_extern_kernel(name, tensors, num_inputs, scalars, ctx);
  }

  // ABI 1.5: the product with its epilogue kernel on each block of rows it finishes.
  bool run_extern_with_epilogue(const std::string& name,
                                const std::vector<sdk::TensorView>& tensors, size_t num_inputs,
                                const std::vector<double>& scalars, void* stream,
                                sdk::CompiledKernel& epilogue, void* const* epilogue_buffers,
                                size_t num_epilogue_buffers) override {
    auto* kernel = dynamic_cast<CpuKernel*>(&epilogue);
    int64_t total = tensors.size() > num_inputs ? 1 : 0;
    if (total)
      for (int64_t d : tensors[num_inputs].sizes) total *= d;
    auto product = [&](const OutputDone& done) {
      ExternContext ctx;
      ctx.gemm = gemm_.get();
      ctx.pool = pool_.get();
      ctx.done = done;
      run_extern_kernel(name, tensors, num_inputs, scalars, ctx);
    };
    if (kernel && total > 0 &&
        kernel->run_as_epilogue(epilogue_buffers, num_epilogue_buffers, total, product))
      return true;
    run_extern(name, tensors, num_inputs, scalars, stream);
    return false;
  }

 private:
  // A serialized kernel taken apart: its object (pointing into the caller's bytes) and the
  // source as printed from the current description: the stored one when the names agree (the
  // canonical bytes, the print options and the prelude are in the key), else printed again.
  struct Stored {
    std::string_view object;
    std::string source;
  };
  Stored parse(const sdk::Kernel& k, const void* data, size_t size) const {
    const char* bytes = static_cast<const char*>(data);
    if (size < kBlobMagicSize || std::string_view(bytes, kBlobMagicSize) != kBlobMagic)
      throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT,
                             "cpu_cpp: serialized kernel '" + k.name() +
                                 "' does not start with " + kBlobMagic);
    std::string_view in(bytes + kBlobMagicSize, size - kBlobMagicSize), names, stored, object;
    if (!take_field(in, &names) || !take_field(in, &stored) || !take_field(in, &object) ||
        !in.empty())
      throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT,
                             "cpu_cpp: serialized kernel '" + k.name() +
                                 "' is malformed (its fields do not add up to its " +
                                 std::to_string(size) + " bytes)");
    // Checked before the JIT sees it: an object for another machine, or an entry symbol that
    // is data, would crash the process (object_check.h). Refused: the kernel is compiled again.
    if (std::string why = stored_object_problem(object, kEntry); !why.empty())
      throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT,
                             "cpu_cpp: serialized kernel '" + k.name() +
                                 "' is not an object this process can link: " + why);
    Stored out{object, {}};
    if (names == names_key(k)) {  // one copy, into a string of the right size
      out.source.reserve(source_prefix().size() + stored.size());
      out.source.append(source_prefix()).append(stored);
    } else {
      out.source = kernel_source(k);
    }
    if (dump_source_) {
      std::lock_guard<std::mutex> lock(dump_mutex_);
      std::cerr << "// cpu_cpp kernel '" << k.name() << "' (from the kernel cache)\n"
                << out.source << "\n";
    }
    return out;
  }

  // `streaming_store_bytes: auto | 0 | N` (streaming_store.h): the threshold in bytes, 0 = off.
  static int64_t streaming_store_option(const sdk::Options& o) {
    if (!o.has("streaming_store_bytes")) return last_level_cache_bytes();
    sdk::OptionNode n = o.at("streaming_store_bytes");
    if (!n.is_scalar()) n.fail("must be auto, 0 (off) or a byte count");
    const std::string v = n.as_string();
    if (v == "auto") return last_level_cache_bytes();
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 18)
      n.fail("must be auto, 0 (off) or a byte count (a nonnegative integer), got " +
             sdk::option_excerpt(v));
    return std::stoll(v);
  }

  // `blas:` and `blas_library:` (gemm_library.h): the library is loaded here, so a config that
  // names one that is not installed fails at once, naming the files tried.
  void configure_gemm(const sdk::Options& o) {
    const std::string name = o.get_string("blas", "stax");
    const auto& names = gemm_library_names();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      o.at("blas").fail("unknown GEMM library '" + name + "' (one of: " + list + ")");
    }
    const std::string file = o.get_string("blas_library", "");
    std::string why;
    gemm_ = load_gemm_library(name, file, pool_, static_cast<int>(threads_), &why);
    if (!gemm_) (o.has("blas") ? o.at("blas") : o.at("blas_library")).fail(why);
  }

  std::string kernel_source(const sdk::Kernel& k) const {
    return source_prefix() + print_kernel_function(k, print_) + inject_;
  }

  std::unique_ptr<sdk::CompiledKernel> make_kernel(const sdk::Kernel& k, LinkedCode code,
                                                   std::string source) {
    sdk::Span<int64_t> ranges = k.ranges();
    int64_t outer = ranges.empty() ? 1 : ranges[static_cast<size_t>(chunked_dim(k))];
    int64_t points = k.numel() * std::max<int64_t>(1, k.reduction_numel());
    return std::make_unique<CpuKernel>(std::move(code), std::move(source), names_key(k),
                                       k.name(), k.num_buffers(), outer, points,
                                       outer_chunk_alignment(k, print_), pool_, chunk_points_);
  }

  ClangJitOptions jit_options() const {
    ClangJitOptions o;
    o.opt_level = static_cast<int>(opt_level_);
    o.native_cpu = native_cpu_;
    o.load_sleef = true;  // scalar_ops.hpp's transcendentals are SLEEF's (libsleef.so.3)
    // Every kernel's source starts with the prelude: parsed once, into a precompiled header
    // (the objects are the same bytes as without it).
    o.prelude = source_prefix();
    return o;
  }

  // The JIT library (cpu_cpp_jit.so: Clang, LLVM, ORC), loaded by the first call; an
  // sdk::PluginError (STAX_ERROR_UNAVAILABLE) when it cannot be loaded.
  static const JitLibraryApi& jit_api() {
    std::string error;
    const JitLibraryApi* api = jit_library(&error);
    if (!api) throw sdk::PluginError(STAX_ERROR_UNAVAILABLE, "cpu_cpp: " + error);
    return *api;
  }

  // The ClangJit, created once, by the first compile or JIT link (compiles may come from several
  // threads at once: ClangJit compiles concurrently and serialises only its links).
  void* jit() {
    std::call_once(jit_once_, [&] {
      const JitLibraryApi& api = jit_api();
      StaxErrorCode code = STAX_ERROR_INTERNAL;
      std::string error;
      void* made = api.create(jit_options(), &code, &error);
      if (!made) throw sdk::PluginError(code, error);
      jit_ = std::unique_ptr<void, void (*)(void*)>(made, api.destroy);
    });
    return jit_.get();
  }

  // The JIT's part of the cache key: computed without LLVM (jit_identity.h) plus the files of
  // the JIT and frontend libraries; on a host without CPUID, the JIT's own identity.
  std::string jit_key() {
    std::call_once(key_once_, [&] {
      std::string id = jit_identity(jit_options());
      if (id.empty()) id = jit_api().identity(jit());
      key_ = id + "; " + jit_library_files_identity();
    });
    return key_;
  }

  // A JIT module as a kernel's code (the module frees its code with the last owner).
  static LinkedCode jit_module(const JitLibraryApi& api, void* module) {
    LinkedCode out;
    out.owner = std::shared_ptr<void>(module, api.free_module);
    out.fn = reinterpret_cast<KernelFn*>(api.module_symbol(module));
    out.object = api.module_object(module);
    return out;
  }

  // Stored objects (cache hits) linked: by the ObjectLoader when it takes every one of them
  // (no LLVM), else all of them by the JIT (ClangJit::load_objects: all or nothing; its error,
  // an sdk::PluginError, says which kernels). The objects' bytes are copied: they outlive the
  // caller's buffer (serialize() hands them out again).
  std::vector<LinkedCode> link_stored(const std::vector<std::string_view>& objects,
                                      const std::vector<std::string>& names) {
    std::vector<LinkedCode> out;
    if (object_loader_enabled()) {
      std::call_once(loader_once_, [&] { loader_.init(); });
      for (size_t i = 0; i < objects.size(); ++i) {
        struct Held {
          std::string object;
          LoadedObject loaded;
        };
        auto held = std::make_shared<Held>();
        held->object.assign(objects[i].data(), objects[i].size());
        std::string why = loader_.load(held->object, kEntry, &held->loaded);
        if (!why.empty()) {
          if (cache_trace())
            std::cerr << "cpu_cpp: the object loader does not link kernel '" << names[i]
                      << "' (" << why << "); the JIT links the batch\n";
          out.clear();
          break;
        }
        LinkedCode code;
        code.fn = reinterpret_cast<KernelFn*>(held->loaded.entry);
        code.object = held->object;
        code.owner = std::move(held);
        out.push_back(std::move(code));
      }
      if (out.size() == objects.size()) return out;
    }
    const JitLibraryApi& api = jit_api();
    void* jit = this->jit();
    std::vector<void*> modules;
    StaxErrorCode code = STAX_ERROR_INTERNAL;
    std::string error;
    if (!api.load_objects(jit, objects, kEntry, names, &modules, &code, &error))
      throw sdk::PluginError(code, error);
    out.clear();
    for (void* m : modules) out.push_back(jit_module(api, m));
    return out;
  }

  int64_t opt_level_ = kDefaultOptLevel;
  int64_t threads_ = 1;
  int64_t chunk_points_ = kDefaultChunkPoints;  // chunk_points
  bool native_cpu_ = true;
  bool dump_source_ = false;
  std::string inject_;
  PrintOptions print_;
  std::shared_ptr<ThreadPool> pool_;
  std::unique_ptr<GemmLibrary> gemm_;  // the `blas:` library, on pool_
  bool epilogues_ = true;
  mutable std::mutex dump_mutex_;  // dump_source's lines of concurrent compiles stay whole
  std::once_flag jit_once_;
  std::unique_ptr<void, void (*)(void*)> jit_{nullptr, nullptr};  // a ClangJit of cpu_cpp_jit.so
  std::once_flag key_once_;
  std::string key_;  // jit_key()
  std::once_flag loader_once_;
  ObjectLoader loader_;  // links stored objects without LLVM
};

}  // namespace

}  // namespace stax::cpu

STAX_DEFINE_PLUGIN(stax::cpu::CpuCppBackend)
