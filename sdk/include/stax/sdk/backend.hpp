// The C++ side of a backend: what a plugin author subclasses. STAX_DEFINE_PLUGIN (plugin.hpp)
// adapts a Backend subclass to the C table of plugin_api.h. This header has no Boost dependency,
// so the host may use its helpers too (default thresholds, Algorithm 6.1).
#ifndef STAX_SDK_BACKEND_HPP
#define STAX_SDK_BACKEND_HPP

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "stax/sdk/loop_body.hpp"
#include "stax/sdk/options.hpp"
#include "stax/sdk/threshold_defaults.h"
#include "stax/sdk/types.hpp"

namespace stax {
namespace sdk {

struct DeviceProperties {
  DeviceKind kind = DeviceKind::CPU;
  // The kind's name (ABI 1.2): required with DeviceKind::Other ("npu"), empty otherwise (the host
  // then uses "cpu" / "cuda"). The config's `devices:` entry of that name selects this backend.
  std::string kind_name;
  std::string device_name;
  int32_t multiprocessor_count = 0;            // GPU: S (132 on H200)
  int32_t warp_size = 1;                       // GPU: w (32)
  int32_t max_threads_per_multiprocessor = 0;  // GPU: T (2048)
  int32_t max_threads_per_block = 0;
  int32_t cores = 0;         // CPU: threads the backend uses
  int32_t vector_bytes = 0;  // CPU: SIMD width
  int32_t compute_capability = 0;
  int64_t memory_bytes = 0;
  int64_t l2_cache_bytes = 0;
  int64_t shared_memory_per_block = 0;
  // run / run_extern may be called concurrently (plugin_api.h, OWNERSHIP AND THREADS).
  bool concurrent_runs = false;
  // ABI 1.5: run_extern_with_epilogue runs epilogue kernels fused into matrix products
  // (plugin_api.h, EPILOGUES); the host's scheduler then fuses them.
  bool extern_epilogues = false;
  // ABI 1.6: compile may be called from several threads at once (plugin_api.h, OWNERSHIP AND
  // THREADS): the host then compiles a graph's kernels in parallel.
  bool concurrent_compiles = false;
};

// Seed §6.6. Defaults per device kind: cpu() / gpu() (the values: threshold_defaults.h).
struct RealizationThresholds {
  int32_t op_limit = STAX_CPU_OP_LIMIT;
  int32_t users_limit = STAX_CPU_USERS_LIMIT;                  // 0 = rule 2 off
  int32_t users_near_op_limit = STAX_CPU_USERS_NEAR_OP_LIMIT;  // "close to the limit"
  int32_t max_reads = STAX_CPU_MAX_READS;
  int32_t max_accumulated_reads = STAX_CPU_MAX_ACCUMULATED_READS;
  std::vector<int32_t> transcendental_ops;  // opcodes

  static RealizationThresholds cpu() {
    RealizationThresholds t;
#define STAX_SDK_OPCODE(name) STAX_OP_##name,
    t.transcendental_ops = {STAX_CPU_TRANSCENDENTAL_OPS(STAX_SDK_OPCODE)};
#undef STAX_SDK_OPCODE
    return t;
  }
  static RealizationThresholds gpu() {
    RealizationThresholds t;
    t.op_limit = STAX_GPU_OP_LIMIT;
    t.users_limit = STAX_GPU_USERS_LIMIT;
    t.users_near_op_limit = STAX_GPU_USERS_NEAR_OP_LIMIT;
    t.max_reads = STAX_GPU_MAX_READS;
    t.max_accumulated_reads = STAX_GPU_MAX_ACCUMULATED_READS;
    return t;
  }
  // GPU thresholds for CUDA, the CPU ones for CPUs and other kinds (override thresholds()).
  static RealizationThresholds for_kind(DeviceKind k) {
    return k == DeviceKind::CUDA ? gpu() : cpu();
  }
};

// Parameters of Algorithm 6.1 the seed leaves open; the defaults are Stax's choices.
struct SplitReductionParams {
  int64_t min_elements_per_thread = 0;  // e_min; 0 = the warp size w
  int64_t max_elements_per_thread = 512;  // e_max
  int64_t threads_per_block = 0;        // m; 0 = 8w
  int64_t no_split_numel = 8192;        // line 4: n_r <= this is never split
  int64_t divisor_slack_mid = 30;       // line 6: a divisor within this of the target is used
  int64_t divisor_slack_max = 50;       // line 7: "within 50" of e_max
};

namespace detail {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The divisor of n closest to target (the smaller one on a tie).
inline int64_t closest_divisor(int64_t n, int64_t target) {
  int64_t best = 1;
  auto consider = [&](int64_t d) {
    int64_t db = best > target ? best - target : target - best;
    int64_t dd = d > target ? d - target : target - d;
    if (dd < db || (dd == db && d < best)) best = d;
  };
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d) continue;
    consider(d);
    consider(n / d);
  }
  return best;
}

inline int64_t abs_diff(int64_t a, int64_t b) { return a > b ? a - b : b - a; }

}  // namespace detail

// Algorithm 6.1 (seed §6.5): the number of segments k for an inner reduction of n_r elements
// per output and n outputs on a GPU with S SMs, warp w and T threads per SM.
//   1 e_min = w, e_max = 512, m = 8w         2 D_min = e_min*S*T, D_max = e_max*S*T
//   3 n >= 2S -> 1                           4 n_r <= no-split threshold -> 1
//   5 n*n_r <= D_min: s = e_min
//   6 n*n_r <  D_max: b = S*T/(2m); t = ceil(n_r / (m*ceil(b/n))); s = the divisor of n_r
//     closest to t if within `divisor_slack_mid` (and at least e_min), else t
//   7 else: s = the divisor of n_r closest to e_max if within 50, else e_max
//   8 k = ceil(n_r / (s*m))
// Reductions that carry an index (argmax, argmin) are never split.
// Example 6.2: n_r = 16384, n = 64, S = 132, w = 32, T = 2048 -> k = 2.
inline int64_t split_reduction_gpu(int64_t reduction_numel, int64_t output_numel,
                                   ReductionType type, const DeviceProperties& dev,
                                   const SplitReductionParams& p = SplitReductionParams()) {
  using detail::abs_diff;
  using detail::ceil_div;
  using detail::closest_divisor;
  if (type == ReductionType::ArgMax || type == ReductionType::ArgMin) return 1;
  const int64_t S = dev.multiprocessor_count, w = dev.warp_size > 0 ? dev.warp_size : 32;
  const int64_t T = dev.max_threads_per_multiprocessor;
  const int64_t n_r = reduction_numel, n = output_numel;
  if (S <= 0 || T <= 0 || n_r <= 0 || n <= 0) return 1;
  const int64_t e_min = p.min_elements_per_thread > 0 ? p.min_elements_per_thread : w;
  const int64_t e_max = p.max_elements_per_thread;
  const int64_t m = p.threads_per_block > 0 ? p.threads_per_block : 8 * w;
  const int64_t d_min = e_min * S * T, d_max = e_max * S * T;
  if (n >= 2 * S) return 1;                 // line 3
  if (n_r <= p.no_split_numel) return 1;    // line 4
  int64_t s;
  if (n * n_r <= d_min) {                   // line 5
    s = e_min;
  } else if (n * n_r < d_max) {             // line 6
    int64_t b = S * T / (2 * m);
    int64_t blocks_per_output = ceil_div(b, n);
    int64_t target = ceil_div(n_r, m * blocks_per_output);
    int64_t d = closest_divisor(n_r, target);
    s = abs_diff(d, target) < p.divisor_slack_mid ? (d > e_min ? d : e_min) : target;
  } else {                                  // line 7
    int64_t d = closest_divisor(n_r, e_max);
    s = abs_diff(d, e_max) < p.divisor_slack_max ? d : e_max;
  }
  return ceil_div(n_r, s * m);              // line 8
}

// A tensor argument of an extern kernel.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // elements
  int64_t offset = 0;            // elements
};

class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  // The generated source (for dumps and error messages).
  virtual const std::string& source() const = 0;
  // buffers: one data pointer per kernel buffer, in description order (host memory).
  virtual void run(void* const* buffers, size_t num_buffers, void* stream) = 0;
  // ABI 1.2: the same with buffers from the backend's device_alloc. Default: run(), right for a
  // backend whose device memory is host memory.
  virtual void run_on_device(void* const* buffers, size_t num_buffers, void* stream) {
    run(buffers, num_buffers, stream);
  }
  // ABI 1.3 (the persistent kernel cache): this kernel as bytes that the backend's deserialize()
  // turns back into an equal kernel without compiling (the object code, a cubin, ...). Default:
  // unsupported (the kernel is then cached in process only).
  virtual std::string serialize() const {
    throw PluginError(STAX_ERROR_UNSUPPORTED, "this backend's kernels cannot be serialized");
  }
};

// Subclass this and register it with STAX_DEFINE_PLUGIN(MyBackend). The class needs a default
// constructor and `static constexpr const char* kName = "my_backend";` (the <name> of
// libstax_<name>.so); optionally `static constexpr const char* kVersion = "1.2";`.
// Every method may throw: PluginError picks the error code, anything else is INTERNAL.
class Backend {
 public:
  virtual ~Backend() = default;

  // The device this instance drives. The adapter sets name and index before configure().
  virtual DeviceProperties properties() const = 0;

  // The backend's YAML subtree (`devices.<kind>.options`). The default accepts no option.
  virtual void configure(const Options& options) { options.check_known({}); }

  // Seed §6.6 thresholds; default: the seed's values for the device kind.
  virtual RealizationThresholds thresholds() const {
    return RealizationThresholds::for_kind(properties().kind);
  }

  // Seed §6.5: segments for an inner reduction. Default: Algorithm 6.1 on GPUs, 1 elsewhere (CPUs
  // parallelise over outputs; other kinds override it).
  virtual int64_t split_reduction(int64_t reduction_numel, int64_t output_numel,
                                  ReductionType type) const {
    DeviceProperties p = properties();
    if (p.kind != DeviceKind::CUDA) return 1;
    return split_reduction_gpu(reduction_numel, output_numel, type, p);
  }

  // Prints and compiles a kernel (already validated). A compiler failure should throw
  // PluginError(STAX_ERROR_COMPILE, message + source).
  virtual std::unique_ptr<CompiledKernel> compile(const Kernel& kernel) = 0;

  // ABI 1.3, the persistent kernel cache (plugin_api.h: StaxCacheIdentityArgs). A backend opts
  // in by returning a nonempty identity (everything besides the kernel description and its
  // options that decides the compiled code: compiler version, target CPU and features, GPU
  // arch) and overriding deserialize() and CompiledKernel::serialize(). deserialize() gets the
  // current description and bytes serialize() made for an equal one; it throws (any code) when
  // the bytes are stale or malformed, and the host then compiles.
  virtual std::string cache_identity() const { return std::string(); }
  virtual std::unique_ptr<CompiledKernel> deserialize(const Kernel& kernel, const void* data,
                                                      size_t size) {
    (void)kernel;
    (void)data;
    (void)size;
    throw PluginError(STAX_ERROR_UNSUPPORTED,
                      "backend '" + name_ + "' cannot deserialize compiled kernels");
  }
  // ABI 1.4: deserialize() of several kernels at once (a graph's kernels found in the kernel
  // cache), for a backend that sets them up faster together. All or nothing: throw when any of
  // them fails (the host then deserializes them one by one). Default: deserialize() each.
  struct Serialized {
    const void* data;
    size_t size;
  };
  virtual std::vector<std::unique_ptr<CompiledKernel>> deserialize_batch(
      const std::vector<Kernel>& kernels, const std::vector<Serialized>& bytes) {
    std::vector<std::unique_ptr<CompiledKernel>> out;
    for (size_t i = 0; i < kernels.size() && i < bytes.size(); ++i)
      out.push_back(deserialize(kernels[i], bytes[i].data, bytes[i].size));
    return out;
  }

  // Library kernels / templates this backend offers ("mm", "bmm", "addmm", "matmul", ...).
  virtual std::vector<std::string> extern_kernels() const { return {}; }
  // Inputs first, then outputs (allocated by the host).
  virtual void run_extern(const std::string& name, const std::vector<TensorView>& tensors,
                          size_t num_inputs, const std::vector<double>& scalars, void* stream) {
    (void)tensors;
    (void)num_inputs;
    (void)scalars;
    (void)stream;
    throw PluginError(STAX_ERROR_UNSUPPORTED, "backend '" + name_ + "' has no extern kernel '" +
                                                  name + "'");
  }

  // ABI 1.5 (plugin_api.h, EPILOGUES): run_extern with `epilogue`, a kernel this backend
  // compiled, pointwise over the extern's contiguous output, and its buffers. Returns true when
  // it ran the epilogue (each point once, after the output elements it reads are final), false
  // when the host must run it after the call (the default: the extern alone).
  virtual bool run_extern_with_epilogue(const std::string& name,
                                        const std::vector<TensorView>& tensors, size_t num_inputs,
                                        const std::vector<double>& scalars, void* stream,
                                        CompiledKernel& epilogue, void* const* epilogue_buffers,
                                        size_t num_epilogue_buffers) {
    (void)epilogue;
    (void)epilogue_buffers;
    (void)num_epilogue_buffers;
    run_extern(name, tensors, num_inputs, scalars, stream);
    return false;
  }

  // ABI 1.2 device memory. The defaults serve a backend whose device is the host: aligned host
  // memory, memcpy, nothing to wait for. A device backend overrides all four.
  virtual void* device_alloc(size_t bytes, size_t alignment) {
    size_t align = alignment < 16 ? 16 : alignment;
    size_t size = (bytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, size == 0 ? align : size);
    if (!p)
      throw PluginError(STAX_ERROR_RUNTIME, "device_alloc of " + std::to_string(bytes) +
                                                " bytes failed");
    return p;
  }
  virtual void device_free(void* data) { std::free(data); }
  virtual void device_copy(StaxCopyKind kind, void* dst, const void* src, size_t bytes,
                           void* stream) {
    (void)kind;
    (void)stream;
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }
  virtual void device_synchronize(void* stream) { (void)stream; }

  // ABI 1.3 streams (plugin_api.h, STREAMS). The default: no streams of its own; everything runs
  // at call time, so NULL (the default stream) serves every run.
  virtual void* stream_create() { return nullptr; }
  virtual void stream_destroy(void* stream) { (void)stream; }

  const std::string& name() const { return name_; }
  int32_t device_index() const { return device_index_; }

  // Used by the adapter (plugin.hpp) only.
  void set_identity(std::string name, int32_t device_index) {
    name_ = std::move(name);
    device_index_ = device_index;
  }

 private:
  std::string name_;
  int32_t device_index_ = 0;
};

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_BACKEND_HPP
