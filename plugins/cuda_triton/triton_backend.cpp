// The cuda_triton backend (libstax_cuda_triton.so): prints each kernel as a Triton function
// (triton_printer.h), compiles it with the Triton compiler from PyPI in persistent Python worker
// processes (triton_worker.h) to a cubin for GPUTarget("cuda", arch, 32), and launches it through
// plugins/cuda_common with the metadata Triton reports (kernel name, num_warps -> block size,
// dynamic shared memory, the extra scratch parameters of Triton 3.x kernels).
// Compiles are asynchronous: compile() prints the kernel and hands it to the next worker of the
// pool, so a graph's kernels compile in parallel; a kernel waits for its cubin on first use, and
// a compile error (the Python traceback, naming the kernel) is thrown there.
// With `interpret: true` the workers run the same Triton kernels under Triton's interpreter
// (TRITON_INTERPRET=1, numpy on the CPU) on the buffers, copied into a shared memory file: a
// CPU-only machine runs and checks the Triton kernels.
//
// Options (`devices.cuda.options` in the YAML config):
//   arch: sm_90          the architecture (sm_<digits>); default the device's, else sm_90
//   interpret: false     run kernels under Triton's interpreter on the CPU
//   python: python3      the Python interpreter with the `triton` package (also $STAX_PYTHON)
//   workers: 2           Python worker processes (parallel compiles)
//   dump_source: false   print each kernel's Triton source to stderr when it is compiled
//   verbose: false       print each kernel's compile time and metadata to stderr
//   pointer_hints: true  compile every pointer argument with tt.divisibility = 16 (vectorized
//                        loads / stores) and refuse, at launch, a pointer that is not 16-byte
//                        aligned (docs/DECISIONS.md); false: no hint, no check
// Launch: a kernel whose metadata asks for more than 48 KB of dynamic shared memory opts in
// (cuda_common's plan_shared_memory / prepare_shared_memory); more than the device's opt-in limit
// is an error naming the kernel, the amount and the limit, also at compile time against the
// architecture's limit (shared_memory_optin_for_arch).
// Thresholds and splits: the SDK's GPU policy on gpu_properties() (cuda_common), as cuda_nvrtc.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "plugins/cuda_common/cuda_driver.h"
#include "plugins/cuda_common/gpu_backend_support.h"
#include "plugins/cuda_triton/triton_attention.h"
#include "plugins/cuda_triton/triton_printer.h"
#include "plugins/cuda_triton/triton_worker.h"
#include "stax/sdk/plugin.hpp"

namespace stax::triton {

namespace {

using cuda::CudaDevice;
using cuda::LazyDevice;

[[noreturn]] void fail(StaxErrorCode code, const std::string& msg) {
  throw sdk::PluginError(code, "cuda_triton: " + msg);
}

// A shared memory file both the plugin and a worker map: the interpreter's "device" memory.
class SharedRegion {
 public:
  explicit SharedRegion(std::string path) : path_(std::move(path)) {}
  ~SharedRegion() {
    if (data_) ::munmap(data_, size_);
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(path_.c_str());
    }
  }
  // At least `bytes` mapped (grown by remapping).
  char* reserve(size_t bytes) {
    bytes = std::max<size_t>(bytes, 4096);
    if (bytes <= size_) return data_;
    if (fd_ < 0) {
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd_ < 0) fail(STAX_ERROR_RUNTIME, "cannot create " + path_ + ": " + std::strerror(errno));
    }
    size_t want = std::max(bytes, 2 * size_);
    if (::ftruncate(fd_, static_cast<off_t>(want)) != 0)
      fail(STAX_ERROR_RUNTIME, "cannot size " + path_ + ": " + std::strerror(errno));
    if (data_) ::munmap(data_, size_);
    void* p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) {
      data_ = nullptr;
      size_ = 0;
      fail(STAX_ERROR_RUNTIME, "cannot map " + path_ + ": " + std::strerror(errno));
    }
    data_ = static_cast<char*>(p);
    size_ = want;
    return data_;
  }
  const std::string& path() const { return path_; }
  size_t size() const { return size_; }

 private:
  std::string path_;
  int fd_ = -1;
  char* data_ = nullptr;
  size_t size_ = 0;
};

// What the backend's kernels share: the worker pool, the shared regions (one per worker), the
// device, the module counter.
struct Runtime {
  std::string workdir;
  std::unique_ptr<WorkerPool> pool;
  std::vector<std::unique_ptr<SharedRegion>> regions;
  std::shared_ptr<LazyDevice> device;
  bool verbose = false;
  std::mutex stats_mutex;
  double compile_ms_total = 0;
  size_t compiles = 0;
  ~Runtime() {
    pool.reset();
    regions.clear();
    std::error_code ec;
    if (!workdir.empty()) std::filesystem::remove_all(workdir, ec);
  }
};

struct CubinResult {
  std::vector<char> cubin;
  std::string function;
  int cc = 0;  // the compute capability it was compiled for
  unsigned num_warps = 4;
  unsigned shared = 0;
  size_t num_params = 0;
  std::string aligned;  // the arguments compiled with tt.divisibility = 16 ("0,1,2"; "" none)
  int vector_memory_ops = 0;  // vectorized global loads / stores in the PTX (verbose)
  double ms = 0;
};

// The serialized kernel (ABI 1.3, the kernel cache; device kernels only): this magic (its last
// digit is the format's version), then length-prefixed fields (8-byte little-endian length, the
// bytes): the function name in the cubin, the compute capability, num_warps, the dynamic shared
// memory, the number of parameters, the grid, the arguments compiled with the alignment hint,
// and the cubin. A hit loads them without a worker.
constexpr const char kCubinMagic[] = "STAXTRI2";
constexpr size_t kMagicSize = sizeof(kCubinMagic) - 1;

void put_field(std::string& out, std::string_view field) {
  uint64_t n = field.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  out.append(field.data(), field.size());
}

// Reads the fields of a serialized kernel; a malformed one is a PluginError naming the kernel.
class FieldReader {
 public:
  FieldReader(const void* data, size_t size, std::string kernel)
      : p_(static_cast<const char*>(data)), left_(size), kernel_(std::move(kernel)) {
    if (left_ < kMagicSize || std::string_view(p_, kMagicSize) != kCubinMagic)
      fail("does not start with " + std::string(kCubinMagic));
    p_ += kMagicSize;
    left_ -= kMagicSize;
  }
  std::string_view field() {
    if (left_ < 8) fail("truncated");
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(p_[i])) << (8 * i);
    p_ += 8;
    left_ -= 8;
    if (n > left_) fail("truncated (a field of " + std::to_string(n) + " bytes, " +
                        std::to_string(left_) + " left)");
    std::string_view out(p_, n);
    p_ += n;
    left_ -= n;
    return out;
  }
  uint64_t number() {
    std::string_view f = field();
    uint64_t v = 0;
    if (f.empty() || f.size() > 19) fail("a malformed number");
    for (char c : f) {
      if (c < '0' || c > '9') fail("a malformed number");
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return v;
  }
  void end() {
    if (left_ != 0) fail(std::to_string(left_) + " bytes after the last field");
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT,
                           "cuda_triton: serialized kernel '" + kernel_ + "' " + why);
  }

 private:
  const char* p_;
  size_t left_;
  std::string kernel_;
};

std::string constexprs_of(const TritonLaunch& l) {
  std::string s = "XBLOCK:" + std::to_string(l.xblock);
  if (l.reduction) s += ",RBLOCK:" + std::to_string(l.rblock);
  return s;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s;
}

// The arguments a kernel of n buffers is compiled with tt.divisibility = 16 on: every pointer
// ("0,1,...,n-1"), or none without pointer hints.
std::string hinted_arguments(size_t n, bool hints) {
  std::vector<std::string> v;
  if (hints)
    for (size_t i = 0; i < n; ++i) v.push_back(std::to_string(i));
  return join(v);
}

// The compile-time check of a kernel's shared memory against the architecture's opt-in limit
// (the launch checks the device's own limits again).
void check_shared_for_arch(const std::string& kernel, unsigned shared, int cc) {
  try {
    cuda::plan_shared_memory(kernel, 0, shared, 48 * 1024, cuda::shared_memory_optin_for_arch(cc));
  } catch (const sdk::PluginError& e) {
    fail(e.code(), std::string(e.what()) + " on sm_" + std::to_string(cc));
  }
}

// Loads the kernel's module into worker w when w does not hold it (a new or restarted process).
void ensure_loaded(Worker& w, uint64_t& loaded_generation, const std::string& key,
                   const TritonKernelSource& k, const std::string& what) {
  w.ensure_started(what);
  if (loaded_generation == w.generation() && loaded_generation != 0) return;
  Request r{"LOAD", {}, triton_module_text(k)};
  r.add("key", key);
  r.add("name", k.name);
  w.call(r, what);
  loaded_generation = w.generation();
}

class TritonKernel : public sdk::CompiledKernel {
 public:
  TritonKernel(std::shared_ptr<Runtime> rt, TritonKernelSource src, std::string key,
               size_t worker, uint64_t generation, std::vector<size_t> bytes,
               std::vector<bool> copy_back, std::shared_future<CubinResult> cubin,
               bool pointer_hints)
      : pointer_hints_(pointer_hints),
        rt_(std::move(rt)),
        src_(std::move(src)),
        key_(std::move(key)),
        worker_(worker),
        generation_(generation),
        bytes_(std::move(bytes)),
        copy_back_(std::move(copy_back)),
        cubin_(std::move(cubin)),
        what_("kernel '" + src_.name + "'") {}

  ~TritonKernel() override {
    if (cubin_.valid()) cubin_.wait();  // a compile in flight uses this kernel's runtime
  }

  const std::string& source() const override { return src_.text; }

  // ABI 1.3: kCubinMagic's format. Waits for the compile; an interpreted kernel is not
  // serialized (the backend has no cache identity then).
  std::string serialize() const override {
    if (!cubin_.valid()) return std::string();
    const CubinResult& c = cubin_.get();
    std::string out = kCubinMagic;
    put_field(out, c.function);
    put_field(out, std::to_string(c.cc));
    put_field(out, std::to_string(c.num_warps));
    put_field(out, std::to_string(c.shared));
    put_field(out, std::to_string(c.num_params));
    put_field(out, std::to_string(src_.launch.grid));
    put_field(out, c.aligned);
    put_field(out, std::string_view(c.cubin.data(), c.cubin.size()));
    return out;
  }

  void run(void* const* buffers, size_t n, void* stream) override {
    check_count(n);
    if (!cubin_.valid()) return run_interpreted(buffers);
    const CubinResult& c = cubin();
    const CudaDevice& dev = rt_->device->require();
    if (src_.launch.grid == 0) return;
    std::vector<CUdeviceptr> ptrs(n, 0);
    struct Release {
      const CudaDevice& dev;
      std::vector<CUdeviceptr>& ptrs;
      ~Release() {
        for (CUdeviceptr p : ptrs) try {
            if (p) dev.free(p);
          } catch (const sdk::PluginError&) {
          }
      }
    } release{dev, ptrs};
    std::vector<void*> raw(n);
    for (size_t i = 0; i < n; ++i) {
      ptrs[i] = dev.alloc(bytes_[i]);
      dev.copy_to_device(ptrs[i], buffers[i], bytes_[i]);
      raw[i] = reinterpret_cast<void*>(ptrs[i]);
    }
    launch(dev, c, raw.data(), stream);
    dev.synchronize();
    for (size_t i = 0; i < n; ++i)
      if (copy_back_[i]) dev.copy_to_host(buffers[i], ptrs[i], bytes_[i]);
  }

  void run_on_device(void* const* buffers, size_t n, void* stream) override {
    check_count(n);
    // The caller's pointers (device-resident runs, user buffers) against the alignment the cubin
    // assumes; under the interpreter too, which runs the same kernels (the contract is one).
    if (pointer_hints_)
      cuda::check_pointer_alignment("cuda_triton", src_.name, buffers, n, src_.arg_names);
    if (!cubin_.valid()) return run_interpreted(buffers);  // interpreter: device = host memory
    const CubinResult& c = cubin();
    const CudaDevice& dev = rt_->device->require();
    if (src_.launch.grid == 0) return;
    launch(dev, c, const_cast<void**>(buffers), stream);
  }

 private:
  const CubinResult& cubin() {
    try {
      return cubin_.get();
    } catch (const sdk::PluginError&) {
      throw;
    }
  }

  void launch(const CudaDevice& dev, const CubinResult& c, void** buffers, void* stream) {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    if (!function_) {
      cuda::CudaModule module = dev.load_module(c.cubin);
      CUfunction f = module.function(c.function);
      dev.prepare_shared_memory(f, src_.name, c.shared);  // > 48 KB: the opt-in
      module_ = std::move(module);
      function_ = f;
    }
    size_t n = bytes_.size();
    // Triton 3.x kernels take the global and profile scratch pointers after the buffers; this
    // printer's kernels need neither (their sizes were checked at compile time): null.
    std::vector<CUdeviceptr> args(c.num_params, 0);
    for (size_t i = 0; i < n; ++i) args[i] = reinterpret_cast<CUdeviceptr>(buffers[i]);
    std::vector<void*> params(c.num_params);
    for (size_t i = 0; i < c.num_params; ++i) params[i] = &args[i];
    dev.launch(function_, cuda::Dim3{static_cast<unsigned>(src_.launch.grid), 1, 1},
               cuda::Dim3{32 * c.num_warps, 1, 1}, params.data(), static_cast<CUstream>(stream),
               c.shared);
  }

  // Interpreter: the buffers go through this worker's shared region.
  void run_interpreted(void* const* buffers) {
    if (src_.launch.grid == 0) return;
    Worker& w = rt_->pool->at(worker_);
    std::lock_guard<std::mutex> lock(w.lock());
    ensure_loaded(w, generation_, key_, src_, what_);
    SharedRegion& region = *rt_->regions[worker_];
    std::vector<size_t> offsets;
    size_t total = 0;
    for (size_t b : bytes_) {
      offsets.push_back(total);
      total += (b + 63) / 64 * 64;
    }
    char* base = region.reserve(total);
    for (size_t i = 0; i < bytes_.size(); ++i)
      if (bytes_[i]) std::memcpy(base + offsets[i], buffers[i], bytes_[i]);
    Request r{"RUN", {}, ""};
    r.add("key", key_);
    r.add("shm", region.path());
    r.add("shm_size", std::to_string(region.size()));
    r.add("grid", std::to_string(src_.launch.grid));
    r.add("constexprs", constexprs_of(src_.launch));
    for (size_t i = 0; i < bytes_.size(); ++i)
      r.add("buf", std::to_string(offsets[i]) + ":" + src_.dtypes[i]);
    try {
      w.call(r, what_);
    } catch (const sdk::PluginError& e) {
      // A Python error while running is a run-time error of the kernel (a failed bounds check).
      throw sdk::PluginError(STAX_ERROR_RUNTIME, e.what());
    }
    for (size_t i = 0; i < bytes_.size(); ++i)
      if (copy_back_[i] && bytes_[i]) std::memcpy(buffers[i], base + offsets[i], bytes_[i]);
  }

  void check_count(size_t n) const {
    if (n != bytes_.size())
      fail(STAX_ERROR_INVALID_ARGUMENT, what_ + " takes " + std::to_string(bytes_.size()) +
                                            " buffers, got " + std::to_string(n));
  }

  bool pointer_hints_;
  std::shared_ptr<Runtime> rt_;
  TritonKernelSource src_;
  std::string key_;
  size_t worker_;
  uint64_t generation_;
  std::vector<size_t> bytes_;
  std::vector<bool> copy_back_;
  std::shared_future<CubinResult> cubin_;  // invalid under the interpreter
  std::string what_;
  std::mutex launch_mutex_;
  cuda::CudaModule module_;
  CUfunction function_ = nullptr;
};

// Each buffer's size in bytes, and whether the kernel writes it (copied back after a launch).
std::pair<std::vector<size_t>, std::vector<bool>> buffer_layout(const sdk::Kernel& k) {
  std::vector<size_t> bytes;
  std::vector<bool> copy_back;
  for (size_t i = 0; i < k.num_buffers(); ++i) {
    sdk::Buffer b = k.buffer(i);
    bytes.push_back(cuda::buffer_bytes(b));
    copy_back.push_back(!b.is_input());
  }
  return {std::move(bytes), std::move(copy_back)};
}

class CudaTritonBackend : public sdk::Backend {
 public:
  static constexpr size_t kDriverAlignment = 256;
  static constexpr const char* kName = "cuda_triton";
  static constexpr const char* kVersion = "0.1 (Triton)";

  void configure(const sdk::Options& o) override {
    o.check_known(
        {"arch", "interpret", "python", "workers", "dump_source", "verbose", "pointer_hints"});
    arch_ = o.get_string("arch", "");
    if (!arch_.empty() && !std::regex_match(arch_, std::regex("sm_[0-9]+")))
      o.at("arch").fail("must be sm_<digits> (e.g. sm_90), got " + sdk::option_excerpt(arch_));
    interpret_ = o.get_bool("interpret", false);
    const char* env_python = std::getenv("STAX_PYTHON");
    python_ = o.get_string("python", env_python && *env_python ? env_python : "python3");
    int64_t workers = o.get_int("workers", 2);
    if (workers < 1 || workers > 64) o.at("workers").fail("must be in [1, 64]");
    workers_ = static_cast<size_t>(workers);
    dump_source_ = o.get_bool("dump_source", false);
    verbose_ = o.get_bool("verbose", false);
    pointer_hints_ = o.get_bool("pointer_hints", true);
    device_ = std::make_shared<LazyDevice>(device_index(), "cuda_triton");
  }

  sdk::DeviceProperties properties() const override {
    const CudaDevice* dev = interpret_ ? nullptr : device();  // opens it: reason() is known
    std::string name = interpret_ ? "Triton interpreter on the CPU (TRITON_INTERPRET=1), "
                                    "planned as " + arch()
                                  : "no device present (" +
                                        (device_ ? device_->reason() : std::string("-")) +
                                        "); compiling for " + arch();
    return cuda::gpu_properties(dev, std::stoi(arch().substr(3)), name);
  }

  sdk::RealizationThresholds thresholds() const override {
    return sdk::RealizationThresholds::gpu();
  }

  void* device_alloc(size_t bytes, size_t alignment) override {
    if (interpret_) return sdk::Backend::device_alloc(bytes, alignment);
    if (alignment > kDriverAlignment)
      fail(STAX_ERROR_UNSUPPORTED, "device_alloc aligns to at most " +
                                       std::to_string(kDriverAlignment) + " bytes");
    return reinterpret_cast<void*>(device_->require().alloc(bytes));
  }
  void device_free(void* data) override {
    if (interpret_) return sdk::Backend::device_free(data);
    device_->require().free(reinterpret_cast<CUdeviceptr>(data));
  }
  void device_copy(StaxCopyKind kind, void* dst, const void* src, size_t bytes,
                   void* stream) override {
    if (interpret_) return sdk::Backend::device_copy(kind, dst, src, bytes, stream);
    const CudaDevice& dev = device_->require();
    auto dptr = [](const void* p) { return reinterpret_cast<CUdeviceptr>(p); };
    switch (kind) {
      case STAX_COPY_HOST_TO_DEVICE: return dev.copy_to_device(dptr(dst), src, bytes);
      case STAX_COPY_DEVICE_TO_HOST: return dev.copy_to_host(dst, dptr(src), bytes);
      case STAX_COPY_DEVICE_TO_DEVICE: return dev.copy_on_device(dptr(dst), dptr(src), bytes);
    }
  }
  void device_synchronize(void* stream) override {
    if (interpret_) return sdk::Backend::device_synchronize(stream);
    device_->require().synchronize();
  }

  std::unique_ptr<sdk::CompiledKernel> compile(const sdk::Kernel& k) override {
    TritonKernelSource src = print_triton_kernel(k);
    if (dump_source_) std::cerr << "# cuda_triton kernel '" << k.name() << "'\n" << src.text << "\n";
    auto [bytes, copy_back] = buffer_layout(k);
    std::shared_ptr<Runtime> rt = runtime();
    std::string key = "k" + std::to_string(next_key_++);
    size_t wi = rt->pool->next();
    std::string what = "kernel '" + k.name() + "'";
    if (interpret_) {
      // Loaded now, so a module Python rejects is a compile error.
      Worker& w = rt->pool->at(wi);
      uint64_t gen = 0;
      {
        std::lock_guard<std::mutex> lock(w.lock());
        ensure_loaded(w, gen, key, src, what);
      }
      return std::make_unique<TritonKernel>(rt, std::move(src), key, wi, gen, std::move(bytes),
                                            std::move(copy_back),
                                            std::shared_future<CubinResult>(), pointer_hints_);
    }
    int cc = std::stoi(arch().substr(3));
    size_t num_buffers = k.num_buffers();
    const std::string hinted = hinted_arguments(num_buffers, pointer_hints_);
    std::shared_future<CubinResult> fut =
        std::async(std::launch::async, [rt, src, key, wi, what, cc, num_buffers, hinted]() {
          Worker& w = rt->pool->at(wi);
          std::lock_guard<std::mutex> lock(w.lock());
          uint64_t gen = 0;
          ensure_loaded(w, gen, key, src, what);
          Request r{"COMPILE", {}, ""};
          r.add("key", key);
          r.add("arch", std::to_string(cc));
          r.add("num_warps", std::to_string(src.launch.num_warps));
          r.add("signature", join(src.signature));
          r.add("constexprs", constexprs_of(src.launch));
          r.add("aligned", hinted);
          // Debug mode keeps tl.device_assert (the bounds checks of indirect indexing).
          r.add("debug", src.text.find("tl.device_assert") != std::string::npos ? "1" : "0");
          Reply rep = w.call(r, what);
          CubinResult c;
          c.cc = cc;
          c.cubin.assign(rep.body.begin(), rep.body.end());
          c.function = rep.field("name");
          c.num_warps = static_cast<unsigned>(std::stoul(rep.field("num_warps")));
          c.shared = static_cast<unsigned>(std::stoul(rep.field("shared")));
          c.num_params = std::stoul(rep.field("num_params"));
          c.aligned = rep.field("aligned");
          c.vector_memory_ops = std::stoi(rep.field("vector_memory_ops"));
          c.ms = std::stod(rep.field("ms"));
          if (c.aligned != hinted)
            fail(STAX_ERROR_COMPILE, what + ": Triton compiled tt.divisibility = 16 on arguments [" +
                                         c.aligned + "], asked for [" + hinted + "]");
          check_shared_for_arch(src.name, c.shared, cc);
          if (c.num_params < num_buffers || c.cubin.empty())
            fail(STAX_ERROR_COMPILE, what + ": Triton's kernel has " +
                                         std::to_string(c.num_params) + " parameters for " +
                                         std::to_string(num_buffers) + " buffers");
          if (rep.field("global_scratch_size") != "0" || rep.field("profile_scratch_size") != "0")
            fail(STAX_ERROR_UNSUPPORTED, what + " needs Triton scratch memory (not supported)");
          {
            std::lock_guard<std::mutex> s(rt->stats_mutex);
            rt->compile_ms_total += c.ms;
            ++rt->compiles;
          }
          if (rt->verbose)
            std::cerr << "cuda_triton: " << what << " -> sm_" << cc << " cubin ("
                      << c.cubin.size() << " bytes), num_warps " << c.num_warps << ", shared "
                      << c.shared << " B, tt.divisibility=16 on [" << c.aligned << "], "
                      << c.vector_memory_ops << " vector loads/stores, " << c.ms << " ms\n";
          return c;
        }).share();
    return std::make_unique<TritonKernel>(rt, std::move(src), key, wi, 0, std::move(bytes),
                                          std::move(copy_back), std::move(fut), pointer_hints_);
  }

  // The fused-attention externs (triton_attention.h, docs/attention.md): offering them is what
  // makes the compiler rewrite sdpa into _stax_flash_attention for this backend.
  std::vector<std::string> extern_kernels() const override { return attention_externs(); }

  void run_extern(const std::string& name, const std::vector<sdk::TensorView>& tensors,
                  size_t num_inputs, const std::vector<double>& scalars, void* stream) override {
    AttentionPlan plan = plan_attention(name, tensors, num_inputs, scalars);
    std::shared_ptr<Runtime> rt = runtime();
    if (interpret_) return run_attention_interpreted(*rt, plan, name);
    const CudaDevice& dev = rt->device->require();
    for (const AttentionLaunch& l : plan.launches) {
      if (l.grid == 0) continue;
      const AttentionKernel& k = attention_kernel(*rt, dev, l);
      std::vector<uint64_t> values(k.num_params, 0);  // the scratch pointers stay null
      for (size_t i = 0; i < l.args.size(); ++i)
        values[i] = l.args[i].is_tensor
                        ? reinterpret_cast<uint64_t>(plan.tensors[l.args[i].tensor].base)
                        : static_cast<uint64_t>(l.args[i].value);
      std::vector<void*> params(k.num_params);
      for (size_t i = 0; i < k.num_params; ++i) params[i] = &values[i];
      dev.launch(k.function, cuda::Dim3{static_cast<unsigned>(l.grid), 1, 1},
                 cuda::Dim3{32 * k.num_warps, 1, 1}, params.data(), static_cast<CUstream>(stream),
                 k.shared);
    }
  }

  // ABI 1.3, the kernel cache, for device kernels (cubins): the plugin, the Triton version (one
  // short Python start per backend: importlib.metadata, no `import triton`), the Python used,
  // the target and the compile options the worker passes. Interpreted kernels are not cached
  // (empty identity): they run in the workers anyway.
  std::string cache_identity() const override {
    if (interpret_) return std::string();
    std::string version = triton_version();
    if (version.empty()) return std::string();  // no Triton: compiles fail and say why
    return std::string(kName) + " " + kVersion + "; triton " + version + "; python " +
           python_ + "; target cuda " + arch() +
           " warp 32; options enable_fp_fusion=False enable_reflect_ftz=False "
           "sanitize_overflow=False debug=<tl.device_assert in the source>; pointer hints " +
           (pointer_hints_ ? "tt.divisibility=16" : "none");
  }

  // A cubin from the cache: no worker, no Python. The launch metadata must fit the kernel as
  // printed from the current description (grid, num_warps, the parameters) and the arch.
  std::unique_ptr<sdk::CompiledKernel> deserialize(const sdk::Kernel& k, const void* data,
                                                   size_t size) override {
    if (interpret_)
      fail(STAX_ERROR_UNSUPPORTED, "cuda_triton: interpreted kernels are not cached");
    TritonKernelSource src = print_triton_kernel(k);
    FieldReader r(data, size, k.name());
    CubinResult c;
    c.function = std::string(r.field());
    c.cc = static_cast<int>(r.number());
    c.num_warps = static_cast<unsigned>(r.number());
    c.shared = static_cast<unsigned>(r.number());
    c.num_params = r.number();
    uint64_t grid = r.number();
    c.aligned = std::string(r.field());
    std::string_view cubin = r.field();
    r.end();
    const int cc = std::stoi(arch().substr(3));
    if (c.cc != cc) r.fail("is for sm_" + std::to_string(c.cc) + ", not " + arch());
    const std::string hinted = hinted_arguments(k.num_buffers(), pointer_hints_);
    if (c.aligned != hinted)
      r.fail("has tt.divisibility = 16 on arguments [" + c.aligned + "], this configuration [" +
             hinted + "]");
    check_shared_for_arch(k.name(), c.shared, cc);
    if (grid != static_cast<uint64_t>(src.launch.grid) ||
        c.num_warps != static_cast<unsigned>(src.launch.num_warps) ||
        c.num_params < k.num_buffers() || cubin.empty() || c.function.empty())
      r.fail("does not fit the kernel (grid " + std::to_string(grid) + " vs " +
             std::to_string(src.launch.grid) + ", num_warps " + std::to_string(c.num_warps) +
             " vs " + std::to_string(src.launch.num_warps) + ", " +
             std::to_string(c.num_params) + " parameters for " +
             std::to_string(k.num_buffers()) + " buffers)");
    c.cubin.assign(cubin.begin(), cubin.end());
    if (dump_source_)
      std::cerr << "# cuda_triton kernel '" << k.name() << "' (from the kernel cache)\n"
                << src.text << "\n";
    auto [bytes, copy_back] = buffer_layout(k);
    std::promise<CubinResult> ready;
    ready.set_value(std::move(c));
    std::string key = "k" + std::to_string(next_key_++);
    return std::make_unique<TritonKernel>(runtime(), std::move(src), key, 0, 0, std::move(bytes),
                                          std::move(copy_back), ready.get_future().share(),
                                          pointer_hints_);
  }

 private:
  // importlib.metadata's version of the `triton` distribution for python_, once; empty when
  // Python or Triton is missing.
  std::string triton_version() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (version_tried_) return triton_version_;
    version_tried_ = true;
    std::string cmd = "'" + python_ +
                      "' -c 'import importlib.metadata as m; print(m.version(\"triton\"))' "
                      "2>/dev/null";
    if (python_.find('\'') != std::string::npos) return triton_version_;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[128];
      std::string out;
      while (std::fgets(buf, sizeof buf, p)) out += buf;
      if (::pclose(p) == 0) {
        while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
        triton_version_ = out;
      }
    }
    return triton_version_;
  }

  std::shared_ptr<Runtime> runtime() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (rt_) return rt_;
    auto rt = std::make_shared<Runtime>();
    std::string tmpl = (std::filesystem::temp_directory_path() / "stax_triton_XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
      fail(STAX_ERROR_RUNTIME, "cannot create a work directory: " + std::string(std::strerror(errno)));
    rt->workdir = tmpl;
    WorkerOptions wo;
    wo.python = python_;
    wo.interpret = interpret_;
    wo.workdir = rt->workdir;
    rt->pool = std::make_unique<WorkerPool>(wo, workers_);
    std::string shm_dir = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : rt->workdir;
    for (size_t i = 0; i < rt->pool->size(); ++i)
      rt->regions.push_back(std::make_unique<SharedRegion>(
          shm_dir + "/stax_triton_" + std::to_string(::getpid()) + "_" +
          std::filesystem::path(rt->workdir).filename().string() + "_" + std::to_string(i)));
    rt->device = device_;
    rt->verbose = verbose_;
    rt_ = rt;
    return rt_;
  }

  // The attention launches under the interpreter, in worker 0: the tensors' ranges copied into
  // its shared region, each kernel run there, the output copied back.
  void run_attention_interpreted(Runtime& rt, const AttentionPlan& plan, const std::string& name) {
    Worker& w = rt.pool->at(0);
    std::lock_guard<std::mutex> lock(w.lock());
    const std::string what = "extern kernel '" + name + "'";
    w.ensure_started(what);
    std::vector<size_t> offsets;
    size_t total = 0;
    for (const AttentionTensor& t : plan.tensors) {
      offsets.push_back(total);
      total += (t.bytes + 63) / 64 * 64;
    }
    SharedRegion& region = *rt.regions[0];
    char* base = region.reserve(total);
    for (size_t i = 0; i < plan.tensors.size(); ++i)
      if (plan.tensors[i].bytes) std::memcpy(base + offsets[i], plan.tensors[i].base, plan.tensors[i].bytes);
    for (const AttentionLaunch& l : plan.launches) {
      if (l.grid == 0) continue;
      const std::string key = "attn_" + l.kernel;
      {
        std::lock_guard<std::mutex> a(attention_mutex_);
        if (attention_loaded_[key] != w.generation()) {
          load_attention_kernel(w, key, l.kernel);
          attention_loaded_[key] = w.generation();
        }
      }
      Request r{"RUN", {}, ""};
      r.add("key", key);
      r.add("shm", region.path());
      r.add("shm_size", std::to_string(region.size()));
      r.add("grid", std::to_string(l.grid));
      r.add("constexprs", l.constexpr_text());
      for (const AttentionArg& a : l.args)
        r.add("arg", a.is_tensor ? "p:" + std::to_string(offsets[a.tensor]) + ":" +
                                       plan.tensors[a.tensor].dtype
                                 : "i:" + std::to_string(a.value));
      try {
        w.call(r, what);
      } catch (const sdk::PluginError& e) {
        throw sdk::PluginError(STAX_ERROR_RUNTIME, e.what());
      }
    }
    for (size_t i = 0; i < plan.tensors.size(); ++i)
      if (plan.tensors[i].written && plan.tensors[i].bytes)
        std::memcpy(plan.tensors[i].base, base + offsets[i], plan.tensors[i].bytes);
  }

  // A launch's cubin, compiled (worker 0) and loaded once per kernel, dtypes and constexprs.
  struct AttentionKernel {
    cuda::CudaModule module;
    CUfunction function = nullptr;
    unsigned num_warps = 4, shared = 0;
    size_t num_params = 0;
  };
  const AttentionKernel& attention_kernel(Runtime& rt, const CudaDevice& dev,
                                          const AttentionLaunch& l) {
    std::lock_guard<std::mutex> a(attention_mutex_);
    auto it = attention_kernels_.find(l.cache_key());
    if (it != attention_kernels_.end()) return *it->second;
    Worker& w = rt.pool->at(0);
    std::lock_guard<std::mutex> lock(w.lock());
    const std::string key = "attn_c" + std::to_string(attention_kernels_.size());
    w.ensure_started("extern kernel '" + l.kernel + "'");
    load_attention_kernel(w, key, l.kernel);
    AttentionCubin c = compile_attention_kernel(w, key, l, std::stoi(arch().substr(3)));
    auto k = std::make_unique<AttentionKernel>();
    k->module = dev.load_module(c.cubin);
    k->function = k->module.function(c.function);
    dev.prepare_shared_memory(k->function, l.kernel, c.shared);
    k->num_warps = c.num_warps;
    k->shared = c.shared;
    k->num_params = c.num_params;
    return *(attention_kernels_[l.cache_key()] = std::move(k));
  }

  const CudaDevice* device() const { return device_ ? device_->get() : nullptr; }

  std::string arch() const {
    if (!arch_.empty()) return arch_;
    if (const CudaDevice* d = interpret_ ? nullptr : device())
      return "sm_" + std::to_string(d->info().compute_capability);
    return "sm_90";
  }

  std::string arch_;
  bool interpret_ = false;
  std::string python_ = "python3";
  size_t workers_ = 2;
  bool dump_source_ = false;
  bool verbose_ = false;
  bool pointer_hints_ = true;
  std::shared_ptr<LazyDevice> device_;
  mutable std::mutex mutex_;
  mutable bool version_tried_ = false;
  mutable std::string triton_version_;
  std::shared_ptr<Runtime> rt_;
  std::atomic<uint64_t> next_key_{0};
  std::mutex attention_mutex_;                        // the two below
  std::map<std::string, uint64_t> attention_loaded_;  // interpreter: key -> worker generation
  std::map<std::string, std::unique_ptr<AttentionKernel>> attention_kernels_;  // device
};

}  // namespace

}  // namespace stax::triton

STAX_DEFINE_PLUGIN(stax::triton::CudaTritonBackend)
