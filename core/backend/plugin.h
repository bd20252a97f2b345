// Plugin: one configured backend instance of a loaded plugin library, with C++ signatures over
// the C table (plugin_api.h). Every StaxError the plugin returns becomes a PluginCallError
// (a stax::Error, stage "plugin", location = the library path) naming the plugin and the call.
// Lifetimes are safe in any order: compiled kernels keep their backend alive, backends keep
// their library loaded.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/options.h"
#include "core/support/error.h"
#include "stax/plugin_api.h"
#include "stax/sdk/backend.hpp"

namespace stax {

class PluginLibrary;

namespace detail {
struct BackendState;
}

// A failed plugin call; code() is the plugin's StaxErrorCode.
class PluginCallError : public Error {
 public:
  PluginCallError(std::string location, std::string message, int32_t code)
      : Error("plugin", std::move(location), std::move(message)), code_(code) {}
  int32_t code() const { return code_; }

 private:
  int32_t code_;
};

// "invalid_option", "compile", ... for a StaxErrorCode.
const char* error_code_name(int32_t code);

class CompiledKernel {
 public:
  ~CompiledKernel();
  CompiledKernel(const CompiledKernel&) = delete;
  CompiledKernel& operator=(const CompiledKernel&) = delete;

  const std::string& name() const { return name_; }
  // The generated source text (for dumps), asked of the plugin on first use: a cache hit of a
  // graph nobody dumps copies no source (cpu_cpp's carry a ~21 KB prelude each).
  const std::string& source() const;
  // One data pointer per buffer of the kernel description, in its order.
  void run(void* const* buffers, size_t num_buffers, void* stream = nullptr) const;
  void run(const std::vector<void*>& buffers, void* stream = nullptr) const {
    run(buffers.data(), buffers.size(), stream);
  }
  // ABI 1.2: the same with buffers from the backend's Plugin::device_alloc (StaxRunArgs.
  // buffers_on_device). A plugin older than 1.2 gets a PluginCallError (unsupported).
  void run_on_device(void* const* buffers, size_t num_buffers, void* stream = nullptr) const;

 private:
  friend class Plugin;
  CompiledKernel() = default;

  std::shared_ptr<detail::BackendState> backend_;
  StaxCompiledKernel* handle_ = nullptr;
  std::string name_;
  mutable std::once_flag source_once_;
  mutable std::string source_;
};

class Plugin {
 public:
  // Creates a backend instance for device `device_index` and configures it with `options`
  // (a Map; the plugin rejects unknown keys). Throws PluginCallError.
  static std::unique_ptr<Plugin> create(std::shared_ptr<PluginLibrary> library,
                                        const OptionValue& options = OptionValue::map(),
                                        int32_t device_index = 0);
  ~Plugin();
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  const std::string& name() const;
  const std::filesystem::path& path() const;
  const PluginLibrary& library() const;
  int32_t device_index() const { return device_index_; }

  // Queried once, at creation.
  const sdk::DeviceProperties& properties() const { return properties_; }
  sdk::DeviceKind kind() const { return properties_.kind; }
  // The kind's name: "cpu", "cuda", or the name a STAX_DEVICE_OTHER plugin gives ("npu").
  std::string device_kind_name() const;

  // The backend's own §6.6 thresholds (config overrides: PluginRegistry::thresholds).
  sdk::RealizationThresholds thresholds() const;
  // §6.5: segments k >= 1 for an inner reduction.
  int64_t split_reduction(int64_t reduction_numel, int64_t output_numel,
                          sdk::ReductionType type) const;
  std::unique_ptr<CompiledKernel> compile(const StaxKernelDesc& kernel) const;

  // ABI 1.3, the persistent kernel cache (plugin_api.h). cache_identity(): the plugin's text
  // (compiler version, target); empty when the plugin is older than 1.3 or does not opt in, and
  // then its kernels are never cached on disk. serialize(): the kernel's bytes (a PluginCallError
  // when unsupported). deserialize(): a kernel for `kernel` from bytes serialize() made for an
  // equal description (a PluginCallError when the plugin rejects them: stale or damaged).
  std::string cache_identity() const;
  std::string serialize(const CompiledKernel& compiled) const;
  std::unique_ptr<CompiledKernel> deserialize(const StaxKernelDesc& kernel,
                                              std::string_view bytes) const;
  // ABI 1.4: deserialize() of several kernels in one plugin call (a graph's kernels found in the
  // kernel cache: cpu_cpp links them together). All or nothing: a PluginCallError when the plugin
  // rejects any of them (the caller then deserializes them one by one, which finds the bad one).
  // A plugin older than 1.4 gets deserialize() one by one.
  std::vector<std::unique_ptr<CompiledKernel>> deserialize_batch(
      const std::vector<const StaxKernelDesc*>& kernels,
      const std::vector<std::string_view>& bytes) const;

  std::vector<std::string> extern_kernels() const;
  bool has_extern_kernel(const std::string& name) const;
  // Inputs first, then outputs. ABI 1.5: with `epilogue` (a kernel of this plugin, pointwise over
  // the extern's contiguous output; plugin_api.h, EPILOGUES) and its buffers, returns true when
  // the plugin ran the epilogue, false when the caller must run it (a plugin without
  // extern_epilogues, or one that declined).
  bool run_extern(const std::string& name, const std::vector<StaxTensorDesc>& tensors,
                  size_t num_inputs, const std::vector<double>& scalars = {},
                  void* stream = nullptr, const CompiledKernel* epilogue = nullptr,
                  const std::vector<void*>& epilogue_buffers = {}) const;

  // ABI 1.2 device memory (plugin_api.h): opaque pointers of the backend's device, never
  // dereferenced here. has_device_memory() is false for a plugin built against an older ABI;
  // the others then throw PluginCallError (unsupported) naming the plugin's ABI version.
  bool has_device_memory() const;
  void* device_alloc(size_t bytes, size_t alignment = 0) const;
  void device_free(void* data) const;
  void device_copy(StaxCopyKind kind, void* dst, const void* src, size_t bytes,
                   void* stream = nullptr) const;
  void device_synchronize(void* stream = nullptr) const;

  // ABI 1.3 streams (plugin_api.h, STREAMS): has_streams() is false for an older plugin, whose
  // stream_create() then returns nullptr (the default stream) and stream_destroy does nothing.
  bool has_streams() const;
  void* stream_create() const;
  void stream_destroy(void* stream) const;

 private:
  Plugin() = default;
  // A CompiledKernel around the plugin's handle (its source from kernel_source).
  std::unique_ptr<CompiledKernel> wrap(StaxCompiledKernel* handle, const std::string& kname,
                                       const std::string& call) const;

  std::shared_ptr<detail::BackendState> state_;
  int32_t device_index_ = 0;
  sdk::DeviceProperties properties_;
};

}  // namespace stax
