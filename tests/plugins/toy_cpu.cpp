// toy_cpu: a small but real test backend built with the SDK. It reports CPU properties and the
// seed's CPU thresholds (op_limit overridable by an option), validates its options (unknown
// ones are errors, naming the YAML location), prints kernels with CStylePrinter (the source it
// returns) and runs them with a slow interpreter (toy_evaluator.hpp). Extern kernel: "mm"
// (float32, 2-D, any strides).
// Built twice (CMakeLists.txt): toy_cpu, and toy_npu (TOY_NPU defined), the same backend driving
// a device kind of its own, "npu" (ABI 1.2 DeviceKind::Other), whose memory is host memory.
#include <memory>
#include <string>
#include <vector>

#include "stax/sdk/cstyle_framing.hpp"
#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/kernel_builder.hpp"
#include "stax/sdk/plugin.hpp"
#include "toy_evaluator.hpp"

namespace {

using namespace stax::sdk;

// The kernel source as a C++ function, printed with the SDK's default C++ tables.
std::string print_source(const Kernel& k) {
  CStylePrinter p(k);
  return p.signature() + " {\n" + frame_loops(p) + "}\n";
}

class ToyKernel : public CompiledKernel {
 public:
  explicit ToyKernel(const Kernel& k) : desc_(k.raw()), source_(print_source(k)) {}
  const std::string& source() const override { return source_; }
  void run(void* const* buffers, size_t num_buffers, void*) override {
    Kernel k(desc_.desc());
    if (num_buffers != k.num_buffers())
      throw PluginError(STAX_ERROR_INVALID_ARGUMENT,
                        "toy_cpu: kernel '" + k.name() + "' takes " +
                            std::to_string(k.num_buffers()) + " buffers, got " +
                            std::to_string(num_buffers));
    for (size_t i = 0; i < num_buffers; ++i)
      if (!buffers[i])
        throw PluginError(STAX_ERROR_INVALID_ARGUMENT,
                          "toy_cpu: null buffer " + k.buffer(i).name());
    toy::Evaluator(k, buffers).run();
  }

 private:
  OwnedKernelDesc desc_;
  std::string source_;
};

class ToyCpuBackend : public Backend {
 public:
#ifdef TOY_NPU
  static constexpr const char* kName = "toy_npu";
#else
  static constexpr const char* kName = "toy_cpu";
#endif
  static constexpr const char* kVersion = "0.1-test";

  void configure(const Options& o) override {
    o.check_known({"threads", "op_limit", "vector_bytes", "tags"});
    threads_ = o.get_int("threads", 1);
    if (threads_ < 1) o.at("threads").fail("must be at least 1");
    op_limit_ = o.get_int("op_limit", 50);
    vector_bytes_ = o.get_int("vector_bytes", 64);
    tags_ = o.get_string_list("tags", {});
  }

  DeviceProperties properties() const override {
    DeviceProperties p;
#ifdef TOY_NPU
    p.kind = DeviceKind::Other;
    p.kind_name = "npu";
    p.device_name = "toy npu (host memory)";
#else
    p.kind = DeviceKind::CPU;
    p.device_name = "toy cpu";
#endif
    p.cores = static_cast<int32_t>(threads_);
    p.vector_bytes = static_cast<int32_t>(vector_bytes_);
    p.l2_cache_bytes = 1 << 20;
    return p;
  }

  RealizationThresholds thresholds() const override {
    RealizationThresholds t = RealizationThresholds::cpu();
    t.op_limit = static_cast<int32_t>(op_limit_);
    return t;
  }

  std::unique_ptr<CompiledKernel> compile(const Kernel& k) override {
    return std::unique_ptr<CompiledKernel>(new ToyKernel(k));
  }

  std::vector<std::string> extern_kernels() const override { return {"mm"}; }

  void run_extern(const std::string& name, const std::vector<TensorView>& t, size_t num_inputs,
                  const std::vector<double>&, void*) override {
    if (name != "mm") Backend::run_extern(name, t, num_inputs, {}, nullptr);
    if (t.size() != 3 || num_inputs != 2)
      throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "toy_cpu: mm takes 2 inputs and 1 output");
    for (const TensorView& v : t)
      if (v.dtype != DType::Float32 || v.sizes.size() != 2)
        throw PluginError(STAX_ERROR_UNSUPPORTED, "toy_cpu: mm supports 2-D float32 only");
    const TensorView &a = t[0], &b = t[1], &c = t[2];
    int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
    if (b.sizes[0] != k || c.sizes[0] != m || c.sizes[1] != n)
      throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "toy_cpu: mm shape mismatch");
    auto at = [](const TensorView& v, int64_t i, int64_t j) -> float& {
      return static_cast<float*>(v.data)[v.offset + i * v.strides[0] + j * v.strides[1]];
    };
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float s = 0.0f;
        for (int64_t q = 0; q < k; ++q) s += at(a, i, q) * at(b, q, j);
        at(c, i, j) = s;
      }
  }

 private:
  int64_t threads_ = 1;
  int64_t op_limit_ = 50;
  int64_t vector_bytes_ = 64;
  std::vector<std::string> tags_;
};

}  // namespace

STAX_DEFINE_PLUGIN(ToyCpuBackend)
