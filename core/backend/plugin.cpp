#include "core/backend/plugin.h"

#include "core/backend/plugin_loader.h"
#include "core/config/config.h"
#include "stax/sdk/types.hpp"

namespace stax {

namespace detail {

// A backend handle and the library that made it; destroyed after the last compiled kernel.
struct BackendState {
  std::shared_ptr<PluginLibrary> lib;
  StaxBackend* backend = nullptr;

  const StaxPluginApi& api() const { return lib->api(); }

  ~BackendState() {
    if (backend) lib->api().backend_destroy(backend);
  }

  // Turns a StaxError into a PluginCallError (and frees it).
  void check(StaxError* err, const std::string& call) const {
    if (!err) return;
    StaxErrorArgs a = sdk::make_struct<StaxErrorArgs>();
    a.error = err;
    api().error_info(&a);
    std::string message = a.message ? a.message : "(no message)";
    int32_t code = a.code;
    api().error_destroy(err);
    throw PluginCallError(lib->path().string(),
                          "plugin '" + lib->name() + "': " + call + " failed (" +
                              error_code_name(code) + "): " + message,
                          code);
  }
};

}  // namespace detail

namespace {

// The option tree in pre-order (plugin_api.h StaxOptions); pointers into `v` stay valid while
// `v` lives.
void flatten(const OptionValue& v, int32_t parent, const char* key,
             std::vector<StaxOptionNode>& out) {
  StaxOptionNode n;
  n.parent = parent;
  n.key = key;
  n.value = nullptr;
  n.location = v.location.empty() ? nullptr : v.location.c_str();
  switch (v.kind) {
    case OptionValue::Kind::Null: n.kind = STAX_OPTION_NULL; break;
    case OptionValue::Kind::Scalar:
      n.kind = STAX_OPTION_SCALAR;
      n.value = v.scalar.c_str();
      break;
    case OptionValue::Kind::List: n.kind = STAX_OPTION_LIST; break;
    case OptionValue::Kind::Map: n.kind = STAX_OPTION_MAP; break;
  }
  int32_t self = static_cast<int32_t>(out.size());
  out.push_back(n);
  if (v.kind == OptionValue::Kind::List)
    for (const OptionValue& item : v.items) flatten(item, self, nullptr, out);
  if (v.kind == OptionValue::Kind::Map)
    for (const auto& [k, item] : v.entries) flatten(item, self, k.c_str(), out);
}

}  // namespace

const char* error_code_name(int32_t code) {
  switch (code) {
    case STAX_ERROR_OK: return "ok";
    case STAX_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case STAX_ERROR_INVALID_OPTION: return "invalid option";
    case STAX_ERROR_UNSUPPORTED: return "unsupported";
    case STAX_ERROR_COMPILE: return "compile error";
    case STAX_ERROR_RUNTIME: return "runtime error";
    case STAX_ERROR_UNAVAILABLE: return "unavailable";
    case STAX_ERROR_INTERNAL: return "internal error";
    default: return "unknown error code";
  }
}

// ---- CompiledKernel ----------------------------------------------------------------------------

CompiledKernel::~CompiledKernel() {
  if (handle_) backend_->api().compiled_kernel_destroy(handle_);
}

const std::string& CompiledKernel::source() const {
  std::call_once(source_once_, [&] {
    StaxKernelSourceArgs s = sdk::make_struct<StaxKernelSourceArgs>();
    s.compiled = handle_;
    backend_->check(backend_->api().kernel_source(&s), "kernel_source of '" + name_ + "'");
    if (s.source) source_.assign(s.source, s.source_size);
  });
  return source_;
}

void CompiledKernel::run(void* const* buffers, size_t num_buffers, void* stream) const {
  StaxRunArgs a = sdk::make_struct<StaxRunArgs>();
  a.compiled = handle_;
  a.buffers = buffers;
  a.num_buffers = num_buffers;
  a.stream = stream;
  // The call's name is built on failure only: a run is on the per-call path (issue 9).
  if (StaxError* err = backend_->api().run(&a)) backend_->check(err, "run of kernel '" + name_ + "'");
}

// ABI 1.2: whether the plugin's table holds the device-memory functions (it is long enough and
// fills them); else throws PluginCallError (unsupported) naming `call`.
static void require_device_memory(const detail::BackendState& s, const std::string& call) {
  const StaxPluginApi& api = s.api();
  if (STAX_SDK_HAS_FIELD(&api, StaxPluginApi, device_synchronize) && api.device_alloc &&
      api.device_free && api.device_copy && api.device_synchronize)
    return;
  throw PluginCallError(s.lib->path().string(),
                        "plugin '" + s.lib->name() + "': " + call + ": the plugin's ABI " +
                            std::to_string(api.abi_major) + "." + std::to_string(api.abi_minor) +
                            " has no device memory functions (ABI 1.2)",
                        STAX_ERROR_UNSUPPORTED);
}

void CompiledKernel::run_on_device(void* const* buffers, size_t num_buffers, void* stream) const {
  require_device_memory(*backend_, "run of kernel '" + name_ + "' on device buffers");
  StaxRunArgs a = sdk::make_struct<StaxRunArgs>();
  a.compiled = handle_;
  a.buffers = buffers;
  a.num_buffers = num_buffers;
  a.stream = stream;
  a.buffers_on_device = 1;
  backend_->check(backend_->api().run(&a), "run of kernel '" + name_ + "'");
}

// ---- Plugin --------------------------------------------------------------------------------

std::unique_ptr<Plugin> Plugin::create(std::shared_ptr<PluginLibrary> library,
                                       const OptionValue& options, int32_t device_index) {
  std::unique_ptr<Plugin> p(new Plugin());
  p->device_index_ = device_index;
  p->state_ = std::make_shared<detail::BackendState>();
  p->state_->lib = std::move(library);
  const detail::BackendState& s = *p->state_;

  StaxBackendCreateArgs c = sdk::make_struct<StaxBackendCreateArgs>();
  c.device_index = device_index;
  s.check(s.api().backend_create(&c), "backend_create");
  if (!c.backend)
    throw PluginCallError(s.lib->path().string(),
                          "plugin '" + s.lib->name() + "': backend_create returned no backend",
                          STAX_ERROR_INTERNAL);
  p->state_->backend = c.backend;

  // configure exactly once, before anything else
  std::vector<StaxOptionNode> nodes;
  if (options.kind == OptionValue::Kind::Map) flatten(options, -1, nullptr, nodes);
  else flatten(OptionValue::map(), -1, nullptr, nodes);
  StaxOptions opts = sdk::make_struct<StaxOptions>();
  opts.nodes = nodes.data();
  opts.num_nodes = nodes.size();
  StaxBackendConfigureArgs cfg = sdk::make_struct<StaxBackendConfigureArgs>();
  cfg.backend = s.backend;
  cfg.options = &opts;
  s.check(s.api().backend_configure(&cfg), "configure");

  StaxDeviceProperties props = sdk::make_struct<StaxDeviceProperties>();
  StaxPropertiesArgs pa = sdk::make_struct<StaxPropertiesArgs>();
  pa.backend = s.backend;
  pa.properties = &props;
  s.check(s.api().device_properties(&pa), "device_properties");
  sdk::DeviceProperties& d = p->properties_;
  if (props.kind != STAX_DEVICE_CPU && props.kind != STAX_DEVICE_CUDA &&
      props.kind != STAX_DEVICE_OTHER)
    throw PluginCallError(s.lib->path().string(),
                          "plugin '" + s.lib->name() + "': unknown device kind " +
                              std::to_string(props.kind),
                          STAX_ERROR_INTERNAL);
  d.kind = static_cast<sdk::DeviceKind>(props.kind);
  // The kind's name: the plugin's own for STAX_DEVICE_OTHER (ABI 1.2; a 1.0/1.1 plugin leaves
  // kind_name NULL), "cpu" / "cuda" otherwise.
  const std::string builtin = props.kind == STAX_DEVICE_CPU ? "cpu" : "cuda";
  const std::string named = props.kind_name ? props.kind_name : "";
  if (props.kind == STAX_DEVICE_OTHER ? !is_device_kind_name(named)
                                      : !(named.empty() || named == builtin))
    throw PluginCallError(
        s.lib->path().string(),
        "plugin '" + s.lib->name() + "': device kind name '" + named + "' " +
            (props.kind == STAX_DEVICE_OTHER
                 ? "is not a lowercase identifier [a-z][a-z0-9_]* (STAX_DEVICE_OTHER needs one)"
                 : "does not match its kind '" + builtin + "'"),
        STAX_ERROR_INTERNAL);
  d.kind_name = props.kind == STAX_DEVICE_OTHER ? named : builtin;
  d.device_name = props.device_name ? props.device_name : "";
  d.multiprocessor_count = props.multiprocessor_count;
  d.warp_size = props.warp_size;
  d.max_threads_per_multiprocessor = props.max_threads_per_multiprocessor;
  d.max_threads_per_block = props.max_threads_per_block;
  d.cores = props.cores;
  d.vector_bytes = props.vector_bytes;
  d.compute_capability = props.compute_capability;
  d.memory_bytes = props.memory_bytes;
  d.l2_cache_bytes = props.l2_cache_bytes;
  d.shared_memory_per_block = props.shared_memory_per_block;
  d.concurrent_runs = props.concurrent_runs != 0;  // 0 from a plugin older than 1.2
  d.extern_epilogues = props.extern_epilogues != 0;  // 0 from a plugin older than 1.5
  d.concurrent_compiles = props.concurrent_compiles != 0;  // 0 from a plugin older than 1.6
  return p;
}

Plugin::~Plugin() = default;

const std::string& Plugin::name() const { return state_->lib->name(); }
const std::filesystem::path& Plugin::path() const { return state_->lib->path(); }
const PluginLibrary& Plugin::library() const { return *state_->lib; }

std::string Plugin::device_kind_name() const {
  return properties_.kind_name;
}

sdk::RealizationThresholds Plugin::thresholds() const {
  StaxRealizationThresholds t = sdk::make_struct<StaxRealizationThresholds>();
  StaxThresholdsArgs a = sdk::make_struct<StaxThresholdsArgs>();
  a.backend = state_->backend;
  a.thresholds = &t;
  state_->check(state_->api().realization_thresholds(&a), "realization_thresholds");
  sdk::RealizationThresholds r;
  r.op_limit = t.op_limit;
  r.users_limit = t.users_limit;
  r.users_near_op_limit = t.users_near_op_limit;
  r.max_reads = t.max_reads;
  r.max_accumulated_reads = t.max_accumulated_reads;
  if (t.transcendental_ops)
    r.transcendental_ops.assign(t.transcendental_ops,
                                t.transcendental_ops + t.num_transcendental_ops);
  return r;
}

int64_t Plugin::split_reduction(int64_t reduction_numel, int64_t output_numel,
                                sdk::ReductionType type) const {
  StaxSplitReductionArgs a = sdk::make_struct<StaxSplitReductionArgs>();
  a.backend = state_->backend;
  a.reduction_numel = reduction_numel;
  a.output_numel = output_numel;
  a.reduction_type = static_cast<int32_t>(type);
  a.segments = 1;
  state_->check(state_->api().split_reduction(&a), "split_reduction");
  return a.segments < 1 ? 1 : a.segments;
}

std::unique_ptr<CompiledKernel> Plugin::compile(const StaxKernelDesc& kernel) const {
  std::string kname = kernel.name ? kernel.name : "";
  StaxCompileArgs a = sdk::make_struct<StaxCompileArgs>();
  a.backend = state_->backend;
  a.kernel = &kernel;
  state_->check(state_->api().compile(&a), "compile of kernel '" + kname + "'");
  return wrap(a.compiled, kname, "compile");
}

std::unique_ptr<CompiledKernel> Plugin::wrap(StaxCompiledKernel* handle, const std::string& kname,
                                             const std::string& call) const {
  std::unique_ptr<CompiledKernel> k(new CompiledKernel());
  k->backend_ = state_;
  k->handle_ = handle;
  k->name_ = kname;
  if (!handle)
    throw PluginCallError(path().string(),
                          "plugin '" + name() + "': " + call + " of kernel '" + kname +
                              "' returned no kernel",
                          STAX_ERROR_INTERNAL);
  return k;
}

// ---- the kernel cache (ABI 1.3) ----------------------------------------------------------------

static bool has_cache_functions(const StaxPluginApi& api) {
  return STAX_SDK_HAS_FIELD(&api, StaxPluginApi, kernel_deserialize) &&
         api.kernel_cache_identity && api.kernel_serialize && api.kernel_deserialize;
}

std::string Plugin::cache_identity() const {
  if (!has_cache_functions(state_->api())) return std::string();
  StaxCacheIdentityArgs a = sdk::make_struct<StaxCacheIdentityArgs>();
  a.backend = state_->backend;
  state_->check(state_->api().kernel_cache_identity(&a), "kernel_cache_identity");
  return a.identity ? std::string(a.identity, a.identity_size) : std::string();
}

std::string Plugin::serialize(const CompiledKernel& compiled) const {
  if (!has_cache_functions(state_->api()))
    throw PluginCallError(path().string(),
                          "plugin '" + name() + "': its ABI has no kernel serialization (1.3)",
                          STAX_ERROR_UNSUPPORTED);
  StaxKernelSerializeArgs a = sdk::make_struct<StaxKernelSerializeArgs>();
  a.compiled = compiled.handle_;
  state_->check(state_->api().kernel_serialize(&a),
                "kernel_serialize of '" + compiled.name() + "'");
  return a.data ? std::string(static_cast<const char*>(a.data), a.size) : std::string();
}

std::unique_ptr<CompiledKernel> Plugin::deserialize(const StaxKernelDesc& kernel,
                                                    std::string_view bytes) const {
  std::string kname = kernel.name ? kernel.name : "";
  if (!has_cache_functions(state_->api()))
    throw PluginCallError(path().string(),
                          "plugin '" + name() + "': its ABI has no kernel serialization (1.3)",
                          STAX_ERROR_UNSUPPORTED);
  StaxKernelDeserializeArgs a = sdk::make_struct<StaxKernelDeserializeArgs>();
  a.backend = state_->backend;
  a.kernel = &kernel;
  a.data = bytes.data();
  a.size = bytes.size();
  state_->check(state_->api().kernel_deserialize(&a), "kernel_deserialize of '" + kname + "'");
  return wrap(a.compiled, kname, "kernel_deserialize");
}

std::vector<std::unique_ptr<CompiledKernel>> Plugin::deserialize_batch(
    const std::vector<const StaxKernelDesc*>& kernels,
    const std::vector<std::string_view>& bytes) const {
  std::vector<std::unique_ptr<CompiledKernel>> out;
  const StaxPluginApi& api = state_->api();
  if (kernels.size() != bytes.size())
    throw PluginCallError(path().string(),
                          "plugin '" + name() + "': deserialize_batch of " +
                              std::to_string(kernels.size()) + " kernels with " +
                              std::to_string(bytes.size()) + " byte strings",
                          STAX_ERROR_INVALID_ARGUMENT);
  if (!STAX_SDK_HAS_FIELD(&api, StaxPluginApi, kernel_deserialize_batch) ||
      !api.kernel_deserialize_batch || kernels.size() == 1) {
    for (size_t i = 0; i < kernels.size(); ++i) out.push_back(deserialize(*kernels[i], bytes[i]));
    return out;
  }
  if (!has_cache_functions(api))
    throw PluginCallError(path().string(),
                          "plugin '" + name() + "': its ABI has no kernel serialization (1.3)",
                          STAX_ERROR_UNSUPPORTED);
  std::vector<const void*> data;
  std::vector<size_t> sizes;
  std::string names;
  for (size_t i = 0; i < kernels.size(); ++i) {
    data.push_back(bytes[i].data());
    sizes.push_back(bytes[i].size());
    names += std::string(i ? ", '" : "'") + (kernels[i]->name ? kernels[i]->name : "") + "'";
  }
  std::vector<StaxCompiledKernel*> compiled(kernels.size(), nullptr);
  StaxKernelDeserializeBatchArgs a = sdk::make_struct<StaxKernelDeserializeBatchArgs>();
  a.backend = state_->backend;
  a.count = kernels.size();
  a.kernels = kernels.data();
  a.data = data.data();
  a.sizes = sizes.data();
  a.compiled = compiled.data();
  state_->check(api.kernel_deserialize_batch(&a), "kernel_deserialize_batch of " + names);
  // Every handle owned before anything can throw (none leaks when a later one is bad); the
  // sources are asked for when someone reads them (CompiledKernel::source).
  for (size_t i = 0; i < compiled.size(); ++i) {
    std::unique_ptr<CompiledKernel> k(new CompiledKernel());
    k->backend_ = state_;
    k->handle_ = compiled[i];
    k->name_ = kernels[i]->name ? kernels[i]->name : "";
    out.push_back(std::move(k));
  }
  for (auto& k : out)
    if (!k->handle_)
      throw PluginCallError(path().string(),
                            "plugin '" + name() + "': kernel_deserialize_batch of kernel '" +
                                k->name_ + "' returned no kernel",
                            STAX_ERROR_INTERNAL);
  return out;
}

std::vector<std::string> Plugin::extern_kernels() const {
  StaxExternKernelsArgs a = sdk::make_struct<StaxExternKernelsArgs>();
  a.backend = state_->backend;
  state_->check(state_->api().extern_kernels(&a), "extern_kernels");
  std::vector<std::string> out;
  for (size_t i = 0; i < a.num_names; ++i)
    if (a.names[i]) out.emplace_back(a.names[i]);
  return out;
}

bool Plugin::has_extern_kernel(const std::string& n) const {
  for (const std::string& e : extern_kernels())
    if (e == n) return true;
  return false;
}

bool Plugin::run_extern(const std::string& kname, const std::vector<StaxTensorDesc>& tensors,
                        size_t num_inputs, const std::vector<double>& scalars, void* stream,
                        const CompiledKernel* epilogue,
                        const std::vector<void*>& epilogue_buffers) const {
  std::vector<const StaxTensorDesc*> ptrs;
  for (const StaxTensorDesc& t : tensors) ptrs.push_back(&t);
  StaxRunExternArgs a = sdk::make_struct<StaxRunExternArgs>();
  a.backend = state_->backend;
  a.name = kname.c_str();
  a.tensors = ptrs.data();
  a.num_tensors = ptrs.size();
  a.num_inputs = num_inputs;
  a.scalars = scalars.data();
  a.num_scalars = scalars.size();
  a.stream = stream;
  // ABI 1.5: the epilogue, to a plugin that runs them (its properties say so; an older plugin
  // never reads the fields).
  if (epilogue && properties_.extern_epilogues) {
    a.epilogue = epilogue->handle_;
    a.epilogue_buffers = epilogue_buffers.data();
    a.num_epilogue_buffers = epilogue_buffers.size();
  }
  state_->check(state_->api().run_extern(&a), "extern kernel '" + kname + "'");
  return a.epilogue != nullptr && a.epilogue_done == 1;
}

// ---- device memory (ABI 1.2) -----------------------------------------------------------------

bool Plugin::has_device_memory() const {
  const StaxPluginApi& api = state_->api();
  return STAX_SDK_HAS_FIELD(&api, StaxPluginApi, device_synchronize) && api.device_alloc &&
         api.device_free && api.device_copy && api.device_synchronize;
}

void* Plugin::device_alloc(size_t bytes, size_t alignment) const {
  require_device_memory(*state_, "device_alloc");
  StaxDeviceAllocArgs a = sdk::make_struct<StaxDeviceAllocArgs>();
  a.backend = state_->backend;
  a.bytes = bytes;
  a.alignment = alignment;
  state_->check(state_->api().device_alloc(&a), "device_alloc of " + std::to_string(bytes) +
                                                    " bytes");
  return a.data;
}

void Plugin::device_free(void* data) const {
  require_device_memory(*state_, "device_free");
  StaxDeviceFreeArgs a = sdk::make_struct<StaxDeviceFreeArgs>();
  a.backend = state_->backend;
  a.data = data;
  state_->check(state_->api().device_free(&a), "device_free");
}

void Plugin::device_copy(StaxCopyKind kind, void* dst, const void* src, size_t bytes,
                         void* stream) const {
  require_device_memory(*state_, "device_copy");
  StaxDeviceCopyArgs a = sdk::make_struct<StaxDeviceCopyArgs>();
  a.backend = state_->backend;
  a.kind = kind;
  a.dst = dst;
  a.src = src;
  a.bytes = bytes;
  a.stream = stream;
  state_->check(state_->api().device_copy(&a), "device_copy of " + std::to_string(bytes) +
                                                   " bytes");
}

void Plugin::device_synchronize(void* stream) const {
  require_device_memory(*state_, "device_synchronize");
  StaxSynchronizeArgs a = sdk::make_struct<StaxSynchronizeArgs>();
  a.backend = state_->backend;
  a.stream = stream;
  state_->check(state_->api().device_synchronize(&a), "device_synchronize");
}

}  // namespace stax

// ---- streams (ABI 1.3, issue 8) ----------------------------------------------------------------

namespace stax {

bool Plugin::has_streams() const {
  const StaxPluginApi& api = state_->api();
  return STAX_SDK_HAS_FIELD(&api, StaxPluginApi, stream_destroy) && api.stream_create &&
         api.stream_destroy;
}

void* Plugin::stream_create() const {
  if (!has_streams()) return nullptr;
  StaxStreamCreateArgs a = sdk::make_struct<StaxStreamCreateArgs>();
  a.backend = state_->backend;
  state_->check(state_->api().stream_create(&a), "stream_create");
  return a.stream;
}

void Plugin::stream_destroy(void* stream) const {
  if (!stream || !has_streams()) return;
  StaxStreamDestroyArgs a = sdk::make_struct<StaxStreamDestroyArgs>();
  a.backend = state_->backend;
  a.stream = stream;
  state_->check(state_->api().stream_destroy(&a), "stream_destroy");
}

}  // namespace stax
