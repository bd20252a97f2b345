// The cuda_nvrtc backend (libstax_cuda_nvrtc.so): prints each kernel as CUDA C (cuda_printer.h),
// compiles it with NVRTC to a cubin (nvrtc_compiler.h) and launches it through the CUDA driver
// API, which plugins/cuda_common loads with dlopen at run time: the plugin builds, loads and
// compiles on machines without a driver; running a kernel there fails with
// "no CUDA driver (libcuda.so.1 not found)".
// With `emulate: true` the same CUDA C (with the host prelude, cuda_printer.h Target) is compiled
// by cpu_cpp's in-process Clang JIT and run over the whole grid by the fiber emulator
// (grid_emulator.h) on host memory: a CPU-only machine runs and checks the CUDA kernels.
//
// Options (`devices.cuda.options` in the YAML config):
//   arch: sm_90              the architecture NVRTC compiles for (sm_<digits>). Default: the
//                            device's compute capability when a device is present, else sm_90.
//   emulate: false           run kernels in the host emulation instead of on a device
//   dump_source: false       print every kernel's source to stderr when it is compiled
//   test_inject_source: ""   TESTING ONLY: text appended to every kernel's source
//   trace_copies: false      emulate only: one stderr line per device_copy / launch / sync
// Thresholds: the seed's GPU values (§6.6: op limit 30, 4 reads, 8 accumulated reads, no
// transcendental or users rule). split_reduction: Algorithm 6.1 (sdk::split_reduction_gpu) on the
// device's properties; without a device on those of an H200 for sm_90 (132 SMs, warp 32, 2048
// threads per SM), so that a compile without a device plans like one with it.
//
// ABI 1.2 device memory: cuMemAlloc / cuMemFree / cuMemcpy*Async on the given stream (synchronous
// cuMemcpy on the NULL stream), cuStreamSynchronize / cuCtxSynchronize; run_on_device() launches
// on those pointers directly, on the given stream. ABI 1.3 streams: cuStreamCreate
// (non-blocking) / cuStreamDestroy; concurrent_runs is 1 (launches and copies are reentrant; the
// module of a kernel is loaded once under a mutex), so the host gives each concurrent run its own
// stream. run() on host memory (a host older than ABI 1.2) copies every buffer to the device,
// launches, synchronises and copies OUTPUT / INOUT / TEMP buffers back.
// Emulated, device memory is host memory, but kept apart (EmulatedMemory): every allocation is
// registered, a copy must name a registered range on its device side and host memory on its
// host side, and a launch on device buffers must get registered pointers; so the emulation
// checks the host's device discipline (a host pointer passed as device memory is an error, as it
// would be on a GPU). Streams are tokens, checked the same way; kernels run at call time.
// `trace_copies: true` prints one line per copy to stderr ("cuda_nvrtc (emulated): copy
// host_to_device 4096 bytes"), which tests count.
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/cpu_cpp/clang_jit.h"
#include "plugins/cuda_nvrtc/attention_extern.h"
#include "plugins/cuda_common/cuda_driver.h"
#include "plugins/cuda_common/gpu_backend_support.h"
#include "plugins/cuda_nvrtc/cuda_printer.h"
#include "plugins/cuda_nvrtc/grid_emulator.h"
#include "plugins/cuda_nvrtc/nvrtc_compiler.h"
#include "stax/sdk/plugin.hpp"

namespace stax::cuda {

namespace {

struct KernelBuffer {
  size_t bytes;
  bool copy_back;  // OUTPUT, INOUT, TEMP
};

// ABI 1.3 serialized kernels: a magic (the last digit is the format's version), then fields
// each as u64 length + bytes. Device: function name, arch, grid, block, cubin. Emulated: the
// relocatable object of the host build (entry point kEmuEntry).
constexpr const char kCubinMagic[] = "STAXCUB2";  // 2: kernels take the fault record
constexpr const char kEmuMagic[] = "STAXCUE2";
constexpr size_t kMagicSize = 8;
// Every JIT module has a JITDylib of its own (clang_jit.h): one entry name serves every kernel.
constexpr const char kEmuEntry[] = "stax_emu_entry";

void put_field(std::string& out, std::string_view bytes) {
  uint64_t n = bytes.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.append(bytes);
}

// Reads the fields put_field wrote, checking every length against the bytes left.
class FieldReader {
 public:
  FieldReader(const void* data, size_t size, std::string kernel)
      : p_(static_cast<const char*>(data)), left_(size), kernel_(std::move(kernel)) {}
  std::string_view magic() { return take(kMagicSize); }
  std::string_view field() {
    std::string_view n = take(8);
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(n[i]);
    return take(len);
  }
  void end() const {
    if (left_ != 0) fail(std::to_string(left_) + " trailing bytes");
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT,
                           "cuda_nvrtc: serialized kernel '" + kernel_ + "': " + why);
  }

 private:
  std::string_view take(uint64_t n) {
    if (n > left_) fail("truncated (" + std::to_string(n) + " bytes wanted, " +
                        std::to_string(left_) + " left)");
    std::string_view out(p_, n);
    p_ += n;
    left_ -= n;
    return out;
  }
  const char* p_;
  size_t left_;
  std::string kernel_;
};

// "index out of bounds: index I for a dimension of size S" (cpu_cpp's words) from a fault record
// (cuda_printer.h: kFaultParam), or empty when no thread recorded one.
std::string describe_fault(const volatile unsigned long long* words) {
  if (words[0] != 1) return std::string();
  return "index out of bounds: index " + std::to_string(static_cast<long long>(words[1])) +
         " for a dimension of size " + std::to_string(static_cast<long long>(words[2]));
}

// The fault record of a backend's device kernels: kFaultWords of page-locked host memory mapped
// into the device, allocated on the first launch. One per backend: a fault traps, which loses
// the (primary) context, so the first fault recorded is the one to report; it is never reset.
class FaultRecord {
 public:
  explicit FaultRecord(std::shared_ptr<LazyDevice> device) : device_(std::move(device)) {}
  ~FaultRecord() {
    if (host_) device_->require().free_host_mapped(host_);
  }
  FaultRecord(const FaultRecord&) = delete;
  FaultRecord& operator=(const FaultRecord&) = delete;
  // The kernel parameter (a pointer to the device pointer, as cuLaunchKernel takes it).
  void* param() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!host_)
      host_ = static_cast<unsigned long long*>(
          device_->require().alloc_host_mapped(kFaultWords * sizeof(unsigned long long), &ptr_));
    return &ptr_;
  }
  std::string describe() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return host_ ? describe_fault(host_) : std::string();
  }
  // Rethrows `e` (a failed launch or synchronize) with the recorded fault, if any, in front.
  [[noreturn]] void rethrow(const sdk::PluginError& e, const std::string& kernel) const {
    std::string fault = describe();
    if (fault.empty()) throw e;
    throw sdk::PluginError(STAX_ERROR_RUNTIME, "cuda_nvrtc: " +
                                                   (kernel.empty() ? std::string("a kernel")
                                                                   : "kernel '" + kernel + "'") +
                                                   ": " + fault + " (" + e.what() + ")");
  }

 private:
  std::shared_ptr<LazyDevice> device_;
  mutable std::mutex mutex_;
  unsigned long long* host_ = nullptr;
  CUdeviceptr ptr_ = 0;
};

class CudaKernel : public sdk::CompiledKernel {
 public:
  // `function`: the kernel's name in the cubin (the name it was compiled under; `name` may
  // differ for a kernel from the cache).
  CudaKernel(std::shared_ptr<LazyDevice> device, std::shared_ptr<FaultRecord> fault,
             std::string name, std::string function, std::string arch, std::string source,
             std::vector<char> cubin, LaunchPlan plan, std::vector<KernelBuffer> buffers)
      : device_(std::move(device)),
        fault_(std::move(fault)),
        name_(std::move(name)),
        function_name_(std::move(function)),
        arch_(std::move(arch)),
        source_(std::move(source)),
        cubin_(std::move(cubin)),
        plan_(plan),
        buffers_(std::move(buffers)) {}

  const std::string& source() const override { return source_; }

  std::string serialize() const override {
    std::string out(kCubinMagic, kMagicSize);
    put_field(out, function_name_);
    put_field(out, arch_);
    put_field(out, std::to_string(plan_.grid));
    put_field(out, std::to_string(plan_.block));
    put_field(out, std::string_view(cubin_.data(), cubin_.size()));
    return out;
  }
  const std::vector<char>& cubin() const { return cubin_; }

  // Host buffers: copied to the device around the launch.
  void run(void* const* buffers, size_t num_buffers, void* stream) override {
    check_count(num_buffers);
    const CudaDevice& dev = device_->require();
    CUfunction f = function();
    if (plan_.points == 0) return;
    std::vector<CUdeviceptr> ptrs(num_buffers, 0);
    struct Release {  // frees the device copies on every path
      const CudaDevice& dev;
      std::vector<CUdeviceptr>& ptrs;
      ~Release() {
        for (CUdeviceptr p : ptrs) try {
            dev.free(p);
          } catch (const sdk::PluginError&) {  // the launch error is the one to report
          }
      }
    } release{dev, ptrs};
    std::vector<void*> params(num_buffers + 1);
    for (size_t i = 0; i < num_buffers; ++i) {
      ptrs[i] = dev.alloc(buffers_[i].bytes);
      dev.copy_to_device(ptrs[i], buffers[i], buffers_[i].bytes);
      params[i] = &ptrs[i];
    }
    params[num_buffers] = fault_->param();
    try {
      dev.launch(f, Dim3{plan_.grid, 1, 1}, Dim3{plan_.block, 1, 1}, params.data(),
                 static_cast<CUstream>(stream));
      dev.synchronize();
    } catch (const sdk::PluginError& e) {
      fault_->rethrow(e, name_);
    }
    for (size_t i = 0; i < num_buffers; ++i)
      if (buffers_[i].copy_back) dev.copy_to_host(buffers[i], ptrs[i], buffers_[i].bytes);
  }

  // Buffers already on the device (ABI 1.2): launched on directly, asynchronously.
  void run_on_device(void* const* buffers, size_t num_buffers, void* stream) override {
    check_count(num_buffers);
    CUfunction f = function();
    if (plan_.points == 0) return;
    std::vector<CUdeviceptr> ptrs(num_buffers);
    std::vector<void*> params(num_buffers + 1);
    for (size_t i = 0; i < num_buffers; ++i) {
      ptrs[i] = reinterpret_cast<CUdeviceptr>(buffers[i]);
      params[i] = &ptrs[i];
    }
    params[num_buffers] = fault_->param();
    // Asynchronous: a fault shows at the stream's synchronize (device_synchronize reports it).
    try {
      device_->require().launch(f, Dim3{plan_.grid, 1, 1}, Dim3{plan_.block, 1, 1},
                                params.data(), static_cast<CUstream>(stream));
    } catch (const sdk::PluginError& e) {
      fault_->rethrow(e, name_);
    }
  }

 private:
  void check_count(size_t num_buffers) const {
    if (num_buffers != buffers_.size())
      throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT,
                             "cuda_nvrtc: kernel '" + name_ + "' takes " +
                                 std::to_string(buffers_.size()) + " buffers, got " +
                                 std::to_string(num_buffers));
  }
  // The kernel's function; its module is loaded on first use (once, also under concurrent runs).
  CUfunction function() {
    std::lock_guard<std::mutex> lock(function_mutex_);
    if (!function_) {
      module_ = device_->require().load_module(cubin_);
      function_ = module_.function(function_name_);
    }
    return function_;
  }

  std::shared_ptr<LazyDevice> device_;
  std::shared_ptr<FaultRecord> fault_;
  std::string name_;
  std::string function_name_;
  std::string arch_;
  std::string source_;
  std::vector<char> cubin_;
  LaunchPlan plan_;
  std::vector<KernelBuffer> buffers_;
  CudaModule module_;
  CUfunction function_ = nullptr;
  std::mutex function_mutex_;
};

// The emulation's device memory and streams (see the file comment): host memory, registered.
class EmulatedMemory {
 public:
  explicit EmulatedMemory(bool trace) : trace_(trace) {}

  void add(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_[reinterpret_cast<uintptr_t>(p)] = bytes;
  }
  void remove(void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!blocks_.erase(reinterpret_cast<uintptr_t>(p)))
      throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT,
                             "cuda_nvrtc (emulated): device_free of a pointer that device_alloc "
                             "did not return (or freed twice)");
  }
  // Whether [p, p + bytes) lies inside one live allocation (a zero-byte range: p inside or at its
  // end).
  bool is_device(const void* p, size_t bytes) const {
    std::lock_guard<std::mutex> lock(mutex_);
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return false;
    --it;
    size_t size = it->second == 0 ? 1 : it->second;
    return a >= it->first && a - it->first + bytes <= size && a - it->first <= size;
  }
  // Throws unless [p, p + bytes) is device memory (`device`) or host memory (!device).
  void require(const void* p, size_t bytes, bool device, const std::string& what) const {
    if (is_device(p, bytes) == device) return;
    throw sdk::PluginError(
        STAX_ERROR_INVALID_ARGUMENT,
        "cuda_nvrtc (emulated): " + what + " is " + (device ? "not " : "") +
            "device memory from device_alloc (a GPU would fault or read garbage here)");
  }

  void* stream_create() {
    std::lock_guard<std::mutex> lock(mutex_);
    auto token = std::make_unique<int>(0);
    void* p = token.get();
    streams_.push_back(std::move(token));
    return p;
  }
  void stream_destroy(void* stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = streams_.begin(); it != streams_.end(); ++it)
      if (it->get() == stream) {
        streams_.erase(it);
        return;
      }
    throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT,
                           "cuda_nvrtc (emulated): stream_destroy of an unknown stream");
  }
  void require_stream(void* stream) const {
    if (!stream) return;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& s : streams_)
      if (s.get() == stream) return;
    throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT,
                           "cuda_nvrtc (emulated): unknown stream (not from stream_create, or "
                           "destroyed)");
  }
  // stderr trace line (trace_copies).
  void trace(const std::string& line) const {
    if (!trace_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    std::cerr << "cuda_nvrtc (emulated): " << line << "\n";
  }

 private:
  bool trace_;
  mutable std::mutex mutex_;
  std::map<uintptr_t, size_t> blocks_;
  std::vector<std::unique_ptr<int>> streams_;
};

// A kernel compiled for the host emulation: its JIT module and entry point.
class EmulatedKernel : public sdk::CompiledKernel {
 public:
  EmulatedKernel(std::shared_ptr<GridEmulator> emulator, std::shared_ptr<EmulatedMemory> memory,
                 cpu::CompiledModule module, EmuEntry* entry, std::string name,
                 std::string source, LaunchPlan plan, size_t num_buffers)
      : emulator_(std::move(emulator)),
        memory_(std::move(memory)),
        module_(std::move(module)),
        entry_(entry),
        name_(std::move(name)),
        source_(std::move(source)),
        plan_(plan),
        num_buffers_(num_buffers) {}

  const std::string& source() const override { return source_; }

  std::string serialize() const override {
    std::string out(kEmuMagic, kMagicSize);
    put_field(out, module_.object());
    return out;
  }

  void run(void* const* buffers, size_t num_buffers, void*) override {
    if (num_buffers != num_buffers_)
      throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT,
                             "cuda_nvrtc (emulated): kernel '" + name_ + "' takes " +
                                 std::to_string(num_buffers_) + " buffers, got " +
                                 std::to_string(num_buffers));
    if (plan_.points == 0) return;
    // The buffers, then this launch's fault record (kFaultParam), in host memory.
    unsigned long long fault[kFaultWords] = {};
    std::vector<void*> args(buffers, buffers + num_buffers);
    args.push_back(fault);
    try {
      emulator_->launch(entry_, args.data(), plan_.grid, plan_.block, name_);
    } catch (const sdk::PluginError& e) {
      std::string what = describe_fault(fault);
      if (what.empty()) throw;
      throw sdk::PluginError(STAX_ERROR_RUNTIME, std::string(e.what()) + ": " + what);
    }
  }

  // Device buffers: each must be device_alloc memory (checked), then the same launch.
  void run_on_device(void* const* buffers, size_t num_buffers, void* stream) override {
    memory_->require_stream(stream);
    for (size_t i = 0; i < num_buffers && i < num_buffers_; ++i)
      memory_->require(buffers[i], 0, true,
                       "buffer " + std::to_string(i) + " of kernel '" + name_ + "'");
    memory_->trace("launch " + name_);
    run(buffers, num_buffers, stream);
  }

 private:
  std::shared_ptr<GridEmulator> emulator_;
  std::shared_ptr<EmulatedMemory> memory_;
  cpu::CompiledModule module_;
  EmuEntry* entry_;
  std::string name_;
  std::string source_;
  LaunchPlan plan_;
  size_t num_buffers_;
};

// What the emulation compile appends to a kernel: the entry point EmuEntry, which calls the
// kernel with its buffers and the fault record (num_buffers + 1 pointers) converted to the
// parameter types.
std::string emulation_entry(const std::string& entry, const std::string& kernel,
                            size_t num_buffers) {
  return "\ntemplate <class T, T... I> struct stax_emu_seq {};\n"
         "template <class... P, unsigned long... I>\n"
         "inline void stax_emu_call(void (*f)(P...), void* const* a,\n"
         "                          stax_emu_seq<unsigned long, I...>) {\n"
         "  f(static_cast<P>(a[I])...);\n"
         "}\n"
         "extern \"C\" void " + entry + "(stax_emu_state* state, void* const* buffers) {\n"
         "  stax_emu = state;\n"
         "  stax_emu_call(" + kernel + ", buffers, __make_integer_seq<stax_emu_seq, unsigned long, " +
         std::to_string(num_buffers + 1) + ">{});\n"
         "}\n";
}

class CudaNvrtcBackend : public sdk::Backend {
 public:
  // cuMemAlloc's guaranteed alignment.
  static constexpr size_t kDriverAlignment = 256;

  static constexpr const char* kName = "cuda_nvrtc";
  static constexpr const char* kVersion = "0.1 (CUDA C, NVRTC)";

  void configure(const sdk::Options& o) override {
    o.check_known({"arch", "emulate", "dump_source", "test_inject_source", "trace_copies"});
    arch_ = o.get_string("arch", "");
    if (!arch_.empty() && !std::regex_match(arch_, std::regex("sm_[0-9]+a?")))
      o.at("arch").fail("must be sm_<digits> (a real architecture, e.g. sm_90), got " +
                        sdk::option_excerpt(arch_));
    emulate_ = o.get_bool("emulate", false);
    dump_source_ = o.get_bool("dump_source", false);
    inject_ = o.get_string("test_inject_source", "");
    bool trace = o.get_bool("trace_copies", false);
    if (trace && !emulate_) o.at("trace_copies").fail("is only available with emulate: true");
    device_ = std::make_shared<LazyDevice>(device_index(), "cuda_nvrtc");
    fault_ = std::make_shared<FaultRecord>(device_);
    if (emulate_) memory_ = std::make_shared<EmulatedMemory>(trace);
  }

  sdk::DeviceProperties properties() const override {
    // Emulated or no device: an H200 (the tuning target, TOOLCHAIN.md) compiled for arch().
    // Open the device first: reason() is empty until it has been tried (the operands of one `+`
    // chain are evaluated in an unspecified order: GCC happened to call arch(), which opens it,
    // before reason(); clang did not, and printed "no device present ()").
    const CudaDevice* dev = emulate_ ? nullptr : device();
    std::string name = emulate_ ? "host emulation of " + arch() + " (fibers on the CPU)"
                                : "no device present (" +
                                      (device_ ? device_->reason() : std::string("-")) +
                                      "); compiling for " + arch();
    sdk::DeviceProperties p = gpu_properties(dev, std::stoi(arch().substr(3)), name);
    p.concurrent_runs = 1;  // run / run_extern are reentrant; each run gets its own stream
    // ABI 1.6: compiles may run at once (NVRTC is thread-safe; the emulation's ClangJit compiles
    // concurrently; printing is a pure function): the host compiles a graph's kernels in parallel.
    p.concurrent_compiles = 1;
    return p;
  }

  sdk::RealizationThresholds thresholds() const override {
    return sdk::RealizationThresholds::gpu();
  }

  void* device_alloc(size_t bytes, size_t alignment) override {
    if (emulate_) {
      void* p = sdk::Backend::device_alloc(bytes, alignment);
      memory_->add(p, bytes);
      return p;
    }
    if (alignment > kDriverAlignment)
      throw sdk::PluginError(STAX_ERROR_UNSUPPORTED,
                             "cuda_nvrtc: device_alloc aligns to at most " +
                                 std::to_string(kDriverAlignment) + " bytes, asked " +
                                 std::to_string(alignment));
    return reinterpret_cast<void*>(device_->require().alloc(bytes));
  }
  void device_free(void* data) override {
    if (emulate_) {
      memory_->remove(data);
      return sdk::Backend::device_free(data);
    }
    device_->require().free(reinterpret_cast<CUdeviceptr>(data));
  }
  void device_copy(StaxCopyKind kind, void* dst, const void* src, size_t bytes,
                   void* stream) override {
    if (emulate_) {
      static const char* const names[] = {"host_to_device", "device_to_host", "device_to_device"};
      memory_->require_stream(stream);
      memory_->require(dst, bytes, kind != STAX_COPY_DEVICE_TO_HOST,
                       std::string("the destination of a ") + names[kind] + " copy");
      memory_->require(src, bytes, kind != STAX_COPY_HOST_TO_DEVICE,
                       std::string("the source of a ") + names[kind] + " copy");
      memory_->trace(std::string("copy ") + names[kind] + " " + std::to_string(bytes) + " bytes");
      return sdk::Backend::device_copy(kind, dst, src, bytes, stream);
    }
    const CudaDevice& dev = device_->require();
    auto dptr = [](const void* p) { return reinterpret_cast<CUdeviceptr>(p); };
    CUstream s = static_cast<CUstream>(stream);
    switch (kind) {
      case STAX_COPY_HOST_TO_DEVICE: return dev.copy_to_device(dptr(dst), src, bytes, s);
      case STAX_COPY_DEVICE_TO_HOST: return dev.copy_to_host(dst, dptr(src), bytes, s);
      case STAX_COPY_DEVICE_TO_DEVICE: return dev.copy_on_device(dptr(dst), dptr(src), bytes, s);
    }
  }
  void device_synchronize(void* stream) override {
    if (emulate_) {
      memory_->require_stream(stream);
      memory_->trace("synchronize");
      return;
    }
    try {
      device_->require().stream_synchronize(static_cast<CUstream>(stream));
    } catch (const sdk::PluginError& e) {
      fault_->rethrow(e, "");
    }
  }
  void* stream_create() override {
    if (emulate_) return memory_->stream_create();
    return device_->require().stream_create();
  }
  void stream_destroy(void* stream) override {
    if (emulate_) return memory_->stream_destroy(stream);
    device_->require().stream_destroy(static_cast<CUstream>(stream));
  }

  std::unique_ptr<sdk::CompiledKernel> compile(const sdk::Kernel& k) override {
    LaunchPlan plan = plan_launch(k);
    if (emulate_) return compile_emulated(k, plan);
    std::string source = print_kernel_source(k, plan) + inject_;
    if (dump_source_) dump("// cuda_nvrtc kernel '" + k.name() + "'\n" + source + "\n");
    NvrtcOutput out = nvrtc_compile(source, k.name() + ".cu", arch());
    return std::make_unique<CudaKernel>(device_, fault_, k.name(), k.name(), arch(),
                                        std::move(source), std::move(out.cubin), plan,
                                        kernel_buffers(k));
  }

  // The fused-attention externs (attention_extern.h, docs/attention.md): offering them is what
  // makes the compiler rewrite sdpa into _stax_flash_attention for this backend.
  std::vector<std::string> extern_kernels() const override { return attention_externs(); }

  void run_extern(const std::string& name, const std::vector<sdk::TensorView>& tensors,
                  size_t num_inputs, const std::vector<double>& scalars, void* stream) override {
    std::vector<unsigned char> params;
    std::vector<AttentionLaunch> launches =
        attention_launches(name, tensors, num_inputs, scalars, params);
    void* args[1] = {params.data()};
    if (emulate_) {
      memory_->require_stream(stream);
      for (size_t i = 0; i < tensors.size(); ++i)
        if (tensors[i].data)
          memory_->require(tensors[i].data, 0, true,
                           "tensor " + std::to_string(i) + " of extern '" + name + "'");
      const EmulatedAttention& m = emulated_attention();
      for (const AttentionLaunch& l : launches) {
        memory_->trace("launch " + l.kernel);
        emulator_->launch(m.entries.at(l.kernel), args, l.grid, l.block, l.kernel);
      }
      return;
    }
    const DeviceAttention& m = device_attention();
    const CudaDevice& dev = device_->require();
    for (const AttentionLaunch& l : launches)
      dev.launch(m.functions.at(l.kernel), Dim3{l.grid, 1, 1}, Dim3{l.block, 1, 1}, args,
                 static_cast<CUstream>(stream));
  }

  // ABI 1.3, the kernel cache. Device kernels: the cubin and its launch metadata (checked against
  // the plan for the current description); emulated ones: the host object code. The source is
  // printed again from the current description (names included).
  std::string cache_identity() const override {
    std::string id = std::string(kName) + " " + kVersion + "; nvrtc " + nvrtc_version() +
                     "; arch " + arch() + "; emulate " + (emulate_ ? "1" : "0") + "; inject " +
                     std::to_string(inject_.size());
    if (emulate_) id += "; " + const_cast<CudaNvrtcBackend*>(this)->emulation_jit().identity();
    return id;
  }

  std::unique_ptr<sdk::CompiledKernel> deserialize(const sdk::Kernel& k, const void* data,
                                                   size_t size) override {
    LaunchPlan plan = plan_launch(k);
    FieldReader r(data, size, k.name());
    std::string_view magic = r.magic();
    if (emulate_) {
      if (magic != std::string_view(kEmuMagic, kMagicSize)) r.fail("not an emulated kernel");
      std::string_view object = r.field();
      r.end();
      std::string source = print_kernel_source(k, plan, Target::HostEmulation) + inject_;
      if (dump_source_)
        std::cerr << "// cuda_nvrtc (emulated) kernel '" << k.name()
                  << "' (from the kernel cache)\n" << source << "\n";
      cpu::CompiledModule module = emulation_jit().load_object(object, {kEmuEntry}, k.name());
      EmuEntry* fn = module.function<EmuEntry>(kEmuEntry);
      return std::make_unique<EmulatedKernel>(emulator_, memory_, std::move(module), fn, k.name(),
                                              std::move(source), plan, k.num_buffers());
    }
    if (magic != std::string_view(kCubinMagic, kMagicSize)) r.fail("not a cubin kernel");
    std::string function(r.field());
    std::string stored_arch(r.field());
    std::string grid(r.field()), block(r.field());
    std::string_view cubin = r.field();
    r.end();
    if (stored_arch != arch()) r.fail("compiled for " + stored_arch + ", not " + arch());
    if (grid != std::to_string(plan.grid) || block != std::to_string(plan.block))
      r.fail("launch " + grid + "x" + block + " differs from the plan " +
             std::to_string(plan.grid) + "x" + std::to_string(plan.block));
    std::string source = print_kernel_source(k, plan) + inject_;
    if (dump_source_)
      std::cerr << "// cuda_nvrtc kernel '" << k.name() << "' (from the kernel cache)\n"
                << source << "\n";
    return std::make_unique<CudaKernel>(device_, fault_, k.name(), std::move(function), arch(),
                                        std::move(source),
                                        std::vector<char>(cubin.begin(), cubin.end()), plan,
                                        kernel_buffers(k));
  }

 private:
  std::unique_ptr<sdk::CompiledKernel> compile_emulated(const sdk::Kernel& k,
                                                        const LaunchPlan& plan) {
    std::string source = print_kernel_source(k, plan, Target::HostEmulation) + inject_;
    if (dump_source_) dump("// cuda_nvrtc (emulated) kernel '" + k.name() + "'\n" + source + "\n");
    cpu::CompiledModule module = emulation_jit().compile(
        source + emulation_entry(kEmuEntry, k.name(), k.num_buffers()), {kEmuEntry}, k.name());
    EmuEntry* fn = module.function<EmuEntry>(kEmuEntry);
    return std::make_unique<EmulatedKernel>(emulator_, memory_, std::move(module), fn, k.name(),
                                            std::move(source), plan, k.num_buffers());
  }

  // The attention kernels, compiled once per backend on the first extern call: the emulation's
  // JIT module and its entry points, or NVRTC's cubin loaded into the device.
  struct EmulatedAttention {
    cpu::CompiledModule module;
    std::map<std::string, EmuEntry*> entries;
  };
  struct DeviceAttention {
    CudaModule module;
    std::map<std::string, CUfunction> functions;
  };
  const EmulatedAttention& emulated_attention() {
    std::call_once(attention_once_, [&] {
      std::vector<std::string> entries;
      for (const std::string& k : attention_kernel_names()) entries.push_back(emulation_entry_name(k));
      std::string source = attention_source(Target::HostEmulation);
      if (dump_source_) dump("// cuda_nvrtc (emulated) fused attention\n" + source + "\n");
      auto a = std::make_unique<EmulatedAttention>(
          EmulatedAttention{emulation_jit().compile(source, entries, "flash_attention"), {}});
      for (const std::string& k : attention_kernel_names())
        a->entries[k] = a->module.function<EmuEntry>(emulation_entry_name(k));
      emulated_attention_ = std::move(a);
    });
    return *emulated_attention_;
  }
  const DeviceAttention& device_attention() {
    std::call_once(attention_once_, [&] {
      std::string source = attention_source(Target::Nvrtc);
      if (dump_source_) dump("// cuda_nvrtc fused attention\n" + source + "\n");
      NvrtcOutput out = nvrtc_compile(source, "flash_attention.cu", arch());
      auto a = std::make_unique<DeviceAttention>();
      a->module = device_->require().load_module(out.cubin);
      for (const std::string& k : attention_kernel_names()) a->functions[k] = a->module.function(k);
      device_attention_ = std::move(a);
    });
    return *device_attention_;
  }

  // Created once, by the first emulated compile or cache hit (compiles may come from several
  // threads at once). Every emulated kernel starts with the host prelude: parsed once, into the
  // JIT's precompiled header.
  cpu::ClangJit& emulation_jit() {
    std::call_once(jit_once_, [&] {
      cpu::ClangJitOptions o;
      o.opt_level = 2;
      o.load_sleef = true;  // the emulation's prelude computes exp, tanh ... with SLEEF
      o.prelude = kernel_prelude(Target::HostEmulation) + kKernelMarker + "\n";
      jit_ = std::make_unique<cpu::ClangJit>(std::move(o));
      emulator_ = std::make_shared<GridEmulator>();
    });
    return *jit_;
  }

  // dump_source's text, whole even when compiles run on several threads.
  void dump(const std::string& text) const {
    std::lock_guard<std::mutex> lock(dump_mutex_);
    std::cerr << text;
  }

  static std::vector<KernelBuffer> kernel_buffers(const sdk::Kernel& k) {
    std::vector<KernelBuffer> buffers;
    for (size_t i = 0; i < k.num_buffers(); ++i) {
      sdk::Buffer b = k.buffer(i);
      buffers.push_back({buffer_bytes(b), !b.is_input()});
    }
    return buffers;
  }

  const CudaDevice* device() const { return device_ ? device_->get() : nullptr; }

  // The configured arch, else the device's, else sm_90.
  std::string arch() const {
    if (!arch_.empty()) return arch_;
    if (const CudaDevice* d = emulate_ ? nullptr : device()) return "sm_" + std::to_string(d->info().compute_capability);
    return "sm_90";
  }

  std::string arch_;
  bool emulate_ = false;
  bool dump_source_ = false;
  std::string inject_;
  std::shared_ptr<LazyDevice> device_;
  std::shared_ptr<FaultRecord> fault_;  // device kernels' (cuda_printer.h: kFaultParam)
  mutable std::mutex dump_mutex_;
  std::once_flag jit_once_;
  std::unique_ptr<cpu::ClangJit> jit_;           // emulate: created by the first compile
  std::shared_ptr<GridEmulator> emulator_;       // emulate: shared with the kernels
  std::shared_ptr<EmulatedMemory> memory_;       // emulate: device memory and streams
  std::once_flag attention_once_;                // the attention kernels: one of the two below
  std::unique_ptr<EmulatedAttention> emulated_attention_;
  std::unique_ptr<DeviceAttention> device_attention_;
};

}  // namespace

}  // namespace stax::cuda

STAX_DEFINE_PLUGIN(stax::cuda::CudaNvrtcBackend)
