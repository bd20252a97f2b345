// STAX_DEFINE_PLUGIN(MyBackend): adapts a stax::sdk::Backend subclass to the C table of
// plugin_api.h and exports it as the plain C function `stax_plugin_api` (no Boost or other
// dependency on the plugin side). Every C++ exception is caught at the boundary and becomes a StaxError:
// PluginError keeps its code, anything else is STAX_ERROR_INTERNAL.
//
//   #include "stax/sdk/plugin.hpp"
//   class ToyBackend : public stax::sdk::Backend {
//    public:
//     static constexpr const char* kName = "toy";        // libstax_toy.so
//     stax::sdk::DeviceProperties properties() const override { ... }
//     std::unique_ptr<stax::sdk::CompiledKernel> compile(const stax::sdk::Kernel& k) override;
//   };
//   STAX_DEFINE_PLUGIN(ToyBackend)
//
// Use the macro once per plugin, at global scope, in one source file.
#ifndef STAX_SDK_PLUGIN_HPP
#define STAX_SDK_PLUGIN_HPP

#include <exception>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "stax/plugin_api.h"
#include "stax/sdk/backend.hpp"
#include "stax/sdk/loop_body.hpp"
#include "stax/sdk/options.hpp"
#include "stax/sdk/types.hpp"

// The opaque error type of plugin_api.h, defined by each plugin (the host only holds pointers).
struct StaxError {
  int32_t code;
  std::string message;
};

namespace stax {
namespace sdk {
namespace detail {

struct BackendHolder {
  std::unique_ptr<Backend> backend;
  std::set<std::string> strings;  // stable storage for returned names
  std::vector<int32_t> transcendental;
  std::vector<std::string> extern_names;
  std::vector<const char*> extern_ptrs;
  std::string cache_identity;  // kernel_cache_identity's text (ABI 1.3)

  const char* keep(const std::string& s) { return strings.insert(s).first->c_str(); }
};

struct KernelHolder {
  std::unique_ptr<CompiledKernel> kernel;
  std::string serialized;  // kernel_serialize's bytes (ABI 1.3)
};

inline BackendHolder* holder(StaxBackend* b) {
  if (!b) throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "null backend");
  return reinterpret_cast<BackendHolder*>(b);
}
inline KernelHolder* holder(StaxCompiledKernel* k) {
  if (!k) throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "null compiled kernel");
  return reinterpret_cast<KernelHolder*>(k);
}

inline StaxError* make_error(int32_t code, const std::string& message) noexcept {
  try {
    return new StaxError{code, message};
  } catch (...) {
    return nullptr;  // out of memory while reporting an error: nothing better to do
  }
}

// Runs f, turning every exception into a StaxError.
template <class F>
StaxError* guarded(const char* what, F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const PluginError& e) {
    return make_error(e.code(), e.what());
  } catch (const std::bad_alloc& e) {  // an allocation the plugin did not name itself
    return make_error(STAX_ERROR_RUNTIME, std::string(what) + ": out of memory (" + e.what() + ")");
  } catch (const std::exception& e) {
    return make_error(STAX_ERROR_INTERNAL, std::string(what) + ": " + e.what());
  } catch (...) {
    return make_error(STAX_ERROR_INTERNAL, std::string(what) + ": unknown exception");
  }
}

#define STAX_SDK_REQUIRE_ARGS(args, Type, last_field)                                    \
  do {                                                                                   \
    if (!(args) || !STAX_SDK_HAS_FIELD(args, Type, last_field))                          \
      throw PluginError(STAX_ERROR_INVALID_ARGUMENT, #Type " is null or too small");     \
  } while (0)

template <class B, class = void>
struct VersionOf {
  static const char* get() { return "unversioned"; }
};
template <class B>
struct VersionOf<B, std::void_t<decltype(B::kVersion)>> {
  static const char* get() { return B::kVersion; }
};

template <class B>
struct Adapter {
  static void error_destroy(StaxError* e) { delete e; }

  static void error_info(StaxErrorArgs* a) {
    if (!a || !STAX_SDK_HAS_FIELD(a, StaxErrorArgs, message) || !a->error) return;
    a->code = a->error->code;
    a->message = a->error->message.c_str();
  }

  static StaxError* backend_create(StaxBackendCreateArgs* a) {
    return guarded("backend_create", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxBackendCreateArgs, backend);
      std::unique_ptr<BackendHolder> h(new BackendHolder());
      h->backend.reset(new B());
      h->backend->set_identity(B::kName, a->device_index);
      a->backend = reinterpret_cast<StaxBackend*>(h.release());
    });
  }

  static void backend_destroy(StaxBackend* b) {
    try {
      delete reinterpret_cast<BackendHolder*>(b);
    } catch (...) {
      // a destructor that throws: nothing sensible to report, never cross the boundary
    }
  }

  static StaxError* backend_configure(StaxBackendConfigureArgs* a) {
    return guarded("configure", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxBackendConfigureArgs, options);
      holder(a->backend)->backend->configure(Options(a->options, B::kName));
    });
  }

  static StaxError* device_properties(StaxPropertiesArgs* a) {
    return guarded("device_properties", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxPropertiesArgs, properties);
      BackendHolder* h = holder(a->backend);
      DeviceProperties p = h->backend->properties();
      StaxDeviceProperties c = make_struct<StaxDeviceProperties>();
      c.backend_name = h->keep(B::kName);
      c.kind = static_cast<int32_t>(p.kind);
      c.device_name = h->keep(p.device_name);
      c.kind_name = p.kind_name.empty() ? nullptr : h->keep(p.kind_name);
      c.multiprocessor_count = p.multiprocessor_count;
      c.warp_size = p.warp_size;
      c.max_threads_per_multiprocessor = p.max_threads_per_multiprocessor;
      c.max_threads_per_block = p.max_threads_per_block;
      c.cores = p.cores;
      c.vector_bytes = p.vector_bytes;
      c.compute_capability = p.compute_capability;
      c.memory_bytes = p.memory_bytes;
      c.l2_cache_bytes = p.l2_cache_bytes;
      c.shared_memory_per_block = p.shared_memory_per_block;
      c.concurrent_runs = p.concurrent_runs ? 1 : 0;
      c.extern_epilogues = p.extern_epilogues ? 1 : 0;
      c.concurrent_compiles = p.concurrent_compiles ? 1 : 0;
      copy_out(a->properties, c);
    });
  }

  static StaxError* realization_thresholds(StaxThresholdsArgs* a) {
    return guarded("realization_thresholds", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxThresholdsArgs, thresholds);
      BackendHolder* h = holder(a->backend);
      RealizationThresholds t = h->backend->thresholds();
      h->transcendental = t.transcendental_ops;
      StaxRealizationThresholds c = make_struct<StaxRealizationThresholds>();
      c.op_limit = t.op_limit;
      c.users_limit = t.users_limit;
      c.users_near_op_limit = t.users_near_op_limit;
      c.max_reads = t.max_reads;
      c.max_accumulated_reads = t.max_accumulated_reads;
      c.transcendental_ops = h->transcendental.data();
      c.num_transcendental_ops = h->transcendental.size();
      copy_out(a->thresholds, c);
    });
  }

  static StaxError* split_reduction(StaxSplitReductionArgs* a) {
    return guarded("split_reduction", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxSplitReductionArgs, segments);
      int64_t k = holder(a->backend)->backend->split_reduction(
          a->reduction_numel, a->output_numel, static_cast<ReductionType>(a->reduction_type));
      if (k < 1)
        throw PluginError(STAX_ERROR_INTERNAL, "split_reduction returned " + std::to_string(k));
      a->segments = k;
    });
  }

  static StaxError* compile(StaxCompileArgs* a) {
    return guarded("compile", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxCompileArgs, compiled);
      validate(a->kernel);
      std::unique_ptr<KernelHolder> k(new KernelHolder());
      k->kernel = holder(a->backend)->backend->compile(Kernel(a->kernel));
      if (!k->kernel) throw PluginError(STAX_ERROR_INTERNAL, "compile returned no kernel");
      a->compiled = reinterpret_cast<StaxCompiledKernel*>(k.release());
    });
  }

  static StaxError* kernel_source(StaxKernelSourceArgs* a) {
    return guarded("kernel_source", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxKernelSourceArgs, source_size);
      const std::string& s = holder(a->compiled)->kernel->source();
      a->source = s.c_str();
      a->source_size = s.size();
    });
  }

  static StaxError* run(StaxRunArgs* a) {
    return guarded("run", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxRunArgs, stream);
      CompiledKernel& k = *holder(a->compiled)->kernel;
      if (STAX_SDK_HAS_FIELD(a, StaxRunArgs, buffers_on_device) && a->buffers_on_device)
        k.run_on_device(a->buffers, a->num_buffers, a->stream);
      else
        k.run(a->buffers, a->num_buffers, a->stream);
    });
  }

  static StaxError* device_alloc(StaxDeviceAllocArgs* a) {
    return guarded("device_alloc", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxDeviceAllocArgs, data);
      if (a->alignment & (a->alignment - 1))
        throw PluginError(STAX_ERROR_INVALID_ARGUMENT,
                          "alignment " + std::to_string(a->alignment) + " is not a power of two");
      a->data = holder(a->backend)->backend->device_alloc(a->bytes, a->alignment);
    });
  }

  static StaxError* device_free(StaxDeviceFreeArgs* a) {
    return guarded("device_free", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxDeviceFreeArgs, data);
      if (a->data) holder(a->backend)->backend->device_free(a->data);
    });
  }

  static StaxError* device_copy(StaxDeviceCopyArgs* a) {
    return guarded("device_copy", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxDeviceCopyArgs, stream);
      if (a->kind < STAX_COPY_HOST_TO_DEVICE || a->kind > STAX_COPY_DEVICE_TO_DEVICE)
        throw PluginError(STAX_ERROR_INVALID_ARGUMENT,
                          "unknown copy kind " + std::to_string(a->kind));
      if (a->bytes > 0 && (!a->dst || !a->src))
        throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "device_copy with a null pointer");
      holder(a->backend)->backend->device_copy(static_cast<StaxCopyKind>(a->kind), a->dst,
                                               a->src, a->bytes, a->stream);
    });
  }

  static StaxError* device_synchronize(StaxSynchronizeArgs* a) {
    return guarded("device_synchronize", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxSynchronizeArgs, stream);
      holder(a->backend)->backend->device_synchronize(a->stream);
    });
  }

  // ABI 1.3: the persistent kernel cache.
  static StaxError* kernel_cache_identity(StaxCacheIdentityArgs* a) {
    return guarded("kernel_cache_identity", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxCacheIdentityArgs, identity_size);
      BackendHolder* h = holder(a->backend);
      h->cache_identity = h->backend->cache_identity();
      a->identity = h->cache_identity.c_str();
      a->identity_size = h->cache_identity.size();
    });
  }

  static StaxError* kernel_serialize(StaxKernelSerializeArgs* a) {
    return guarded("kernel_serialize", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxKernelSerializeArgs, size);
      KernelHolder* k = holder(a->compiled);
      k->serialized = k->kernel->serialize();
      a->data = k->serialized.data();
      a->size = k->serialized.size();
    });
  }

  static StaxError* kernel_deserialize(StaxKernelDeserializeArgs* a) {
    return guarded("kernel_deserialize", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxKernelDeserializeArgs, compiled);
      if (!a->data && a->size)
        throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "kernel_deserialize of null data");
      validate(a->kernel);
      std::unique_ptr<KernelHolder> k(new KernelHolder());
      k->kernel = holder(a->backend)->backend->deserialize(Kernel(a->kernel), a->data, a->size);
      if (!k->kernel) throw PluginError(STAX_ERROR_INTERNAL, "deserialize returned no kernel");
      a->compiled = reinterpret_cast<StaxCompiledKernel*>(k.release());
    });
  }

  // ABI 1.4: a graph's cached kernels at once.
  static StaxError* kernel_deserialize_batch(StaxKernelDeserializeBatchArgs* a) {
    return guarded("kernel_deserialize_batch", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxKernelDeserializeBatchArgs, compiled);
      if (a->count && (!a->kernels || !a->data || !a->sizes || !a->compiled))
        throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "kernel_deserialize_batch of null arrays");
      std::vector<Kernel> kernels;
      std::vector<Backend::Serialized> bytes;
      for (size_t i = 0; i < a->count; ++i) {
        if (!a->data[i] && a->sizes[i])
          throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "kernel_deserialize_batch of null data");
        validate(a->kernels[i]);
        kernels.emplace_back(a->kernels[i]);
        bytes.push_back({a->data[i], a->sizes[i]});
      }
      std::vector<std::unique_ptr<CompiledKernel>> got =
          holder(a->backend)->backend->deserialize_batch(kernels, bytes);
      if (got.size() != a->count)
        throw PluginError(STAX_ERROR_INTERNAL, "deserialize_batch returned " +
                                                   std::to_string(got.size()) + " kernels for " +
                                                   std::to_string(a->count));
      std::vector<std::unique_ptr<KernelHolder>> holders;
      for (auto& kernel : got) {
        if (!kernel) throw PluginError(STAX_ERROR_INTERNAL, "deserialize_batch returned no kernel");
        holders.emplace_back(new KernelHolder());
        holders.back()->kernel = std::move(kernel);
      }
      for (size_t i = 0; i < a->count; ++i)  // nothing throws from here on: all or nothing
        a->compiled[i] = reinterpret_cast<StaxCompiledKernel*>(holders[i].release());
    });
  }

  // ABI 1.3: streams.
  static StaxError* stream_create(StaxStreamCreateArgs* a) {
    return guarded("stream_create", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxStreamCreateArgs, stream);
      a->stream = holder(a->backend)->backend->stream_create();
    });
  }

  static StaxError* stream_destroy(StaxStreamDestroyArgs* a) {
    return guarded("stream_destroy", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxStreamDestroyArgs, stream);
      if (a->stream) holder(a->backend)->backend->stream_destroy(a->stream);
    });
  }

  static void compiled_kernel_destroy(StaxCompiledKernel* k) {
    try {
      delete reinterpret_cast<KernelHolder*>(k);
    } catch (...) {
    }
  }

  static StaxError* extern_kernels(StaxExternKernelsArgs* a) {
    return guarded("extern_kernels", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxExternKernelsArgs, num_names);
      BackendHolder* h = holder(a->backend);
      h->extern_names = h->backend->extern_kernels();
      h->extern_ptrs.clear();
      for (const std::string& n : h->extern_names) h->extern_ptrs.push_back(n.c_str());
      a->names = h->extern_ptrs.data();
      a->num_names = h->extern_ptrs.size();
    });
  }

  static StaxError* run_extern(StaxRunExternArgs* a) {
    return guarded("run_extern", [&] {
      STAX_SDK_REQUIRE_ARGS(a, StaxRunExternArgs, stream);
      std::vector<TensorView> tensors;
      for (size_t i = 0; i < a->num_tensors; ++i) {
        const StaxTensorDesc* t = a->tensors[i];
        if (!t || !STAX_SDK_HAS_FIELD(t, StaxTensorDesc, offset) || !valid_dtype(t->dtype))
          throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "bad tensor " + std::to_string(i));
        TensorView v;
        v.data = t->data;
        v.dtype = static_cast<DType>(t->dtype);
        v.sizes.assign(t->sizes, t->sizes + t->ndim);
        v.strides.assign(t->strides, t->strides + t->ndim);
        v.offset = t->offset;
        tensors.push_back(std::move(v));
      }
      std::vector<double> scalars(a->scalars, a->scalars + a->num_scalars);
      Backend& backend = *holder(a->backend)->backend;
      const std::string name = a->name ? a->name : "";
      // ABI 1.5: an epilogue fused into the call (from a host that knows the field).
      if (STAX_SDK_HAS_FIELD(a, StaxRunExternArgs, epilogue_done) && a->epilogue) {
        a->epilogue_done = 0;
        if (!a->epilogue_buffers && a->num_epilogue_buffers)
          throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "run_extern: null epilogue buffers");
        CompiledKernel* epilogue = reinterpret_cast<KernelHolder*>(a->epilogue)->kernel.get();
        if (!epilogue) throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "run_extern: null epilogue");
        a->epilogue_done = backend.run_extern_with_epilogue(name, tensors, a->num_inputs, scalars,
                                                            a->stream, *epilogue,
                                                            a->epilogue_buffers,
                                                            a->num_epilogue_buffers)
                               ? 1
                               : 0;
        return;
      }
      backend.run_extern(name, tensors, a->num_inputs, scalars, a->stream);
    });
  }

  static const StaxPluginApi* table() {
    static const StaxPluginApi api = [] {
      StaxPluginApi t = make_struct<StaxPluginApi>();
      t.abi_major = STAX_PLUGIN_API_MAJOR;
      t.abi_minor = STAX_PLUGIN_API_MINOR;
      t.plugin_name = B::kName;
      t.plugin_version = VersionOf<B>::get();
      t.error_destroy = &error_destroy;
      t.error_info = &error_info;
      t.backend_create = &backend_create;
      t.backend_destroy = &backend_destroy;
      t.backend_configure = &backend_configure;
      t.device_properties = &device_properties;
      t.realization_thresholds = &realization_thresholds;
      t.split_reduction = &split_reduction;
      t.compile = &compile;
      t.kernel_source = &kernel_source;
      t.run = &run;
      t.compiled_kernel_destroy = &compiled_kernel_destroy;
      t.extern_kernels = &extern_kernels;
      t.run_extern = &run_extern;
      t.device_alloc = &device_alloc;
      t.device_free = &device_free;
      t.device_copy = &device_copy;
      t.device_synchronize = &device_synchronize;
      t.kernel_cache_identity = &kernel_cache_identity;
      t.kernel_serialize = &kernel_serialize;
      t.kernel_deserialize = &kernel_deserialize;
      t.stream_create = &stream_create;    // ABI 1.3 (issue 8): streams
      t.stream_destroy = &stream_destroy;
      t.kernel_deserialize_batch = &kernel_deserialize_batch;  // ABI 1.4
      return t;
    }();
    return &api;
  }
};

}  // namespace detail
}  // namespace sdk
}  // namespace stax

#define STAX_DEFINE_PLUGIN(BackendClass)                                               \
  extern "C" STAX_PLUGIN_EXPORT const StaxPluginApi* stax_plugin_api(void) {           \
    static_assert(std::is_base_of<::stax::sdk::Backend, BackendClass>::value,           \
                  #BackendClass " must derive from stax::sdk::Backend");                \
    return ::stax::sdk::detail::Adapter<BackendClass>::table();                         \
  }

#endif  // STAX_SDK_PLUGIN_HPP
