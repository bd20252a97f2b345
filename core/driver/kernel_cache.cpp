#include "core/driver/kernel_cache.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "core/backend/plugin_loader.h"
#include "core/codegen/kernel_canonical.h"

namespace stax {

namespace {

constexpr const char* kFormat = "stax kernel cache v1";

void append_options(const OptionValue& v, std::string& out) {
  switch (v.kind) {
    case OptionValue::Kind::Null: out += "~"; break;
    case OptionValue::Kind::Scalar:
      out += "'" + std::to_string(v.scalar.size()) + ":" + v.scalar;
      break;
    case OptionValue::Kind::List:
      out += "[";
      for (const OptionValue& item : v.items) {
        append_options(item, out);
        out += ",";
      }
      out += "]";
      break;
    case OptionValue::Kind::Map:
      out += "{";
      for (const auto& [k, item] : v.entries) {
        out += std::to_string(k.size()) + ":" + k + "=";
        append_options(item, out);
        out += ",";
      }
      out += "}";
      break;
  }
}

std::string library_text(const Plugin& plugin) {
  std::string out = plugin.path().string();
  struct stat st;
  if (::stat(plugin.path().c_str(), &st) == 0)
    out += " size " + std::to_string(st.st_size) + " mtime " + std::to_string(st.st_mtim.tv_sec) +
           "." + std::to_string(st.st_mtim.tv_nsec);
  return out;
}

std::string device_text(const sdk::DeviceProperties& p) {
  return "kind " + std::to_string(static_cast<int>(p.kind)) + " " + p.kind_name + "; name " +
         p.device_name + "; sm " + std::to_string(p.multiprocessor_count) + "; warp " +
         std::to_string(p.warp_size) + "; threads/sm " +
         std::to_string(p.max_threads_per_multiprocessor) + "; threads/block " +
         std::to_string(p.max_threads_per_block) + "; vector " + std::to_string(p.vector_bytes) +
         "; cc " + std::to_string(p.compute_capability) + "; smem " +
         std::to_string(p.shared_memory_per_block);
}

}  // namespace

KernelCache::KernelCache(CacheSettings settings) : settings_(std::move(settings)) {}

std::string KernelCache::options_text(const OptionValue& options) {
  std::string out;
  append_options(options, out);
  return out;
}

std::string KernelCache::key_prefix(const std::string& plugin_name, const std::string& version,
                                    const std::string& library, const std::string& abi,
                                    const std::string& device, const std::string& options,
                                    const std::string& identity) {
  std::string out = std::string(kFormat) + "\n";
  auto line = [&](const char* what, const std::string& v) {
    out += std::string(what) + " " + std::to_string(v.size()) + ":" + v + "\n";
  };
  line("plugin", plugin_name);
  line("version", version);
  line("library", library);
  line("abi", abi);
  line("device", device);
  line("options", options);
  line("identity", identity);
  return out + "kernel\n";
}

DiskCache* KernelCache::disk() {
  if (!disk_tried_) {
    disk_tried_ = true;
    if (settings_.disk()) disk_ = std::make_unique<DiskCache>(*settings_.dir, settings_.max_bytes);
  }
  return disk_ && disk_->usable() ? disk_.get() : nullptr;
}

KernelCache::PluginEntry& KernelCache::entry(const Plugin& plugin, const OptionValue& options) {
  auto it = plugins_.find(&plugin);
  if (it != plugins_.end()) return it->second;
  PluginEntry e;
  if (disk()) {
    std::string identity = plugin.cache_identity();
    if (!identity.empty()) {
      const PluginLibrary& lib = plugin.library();
      e.prefix = key_prefix(plugin.name(), lib.plugin_version(), library_text(plugin),
                            std::to_string(lib.abi_major()) + "." +
                                std::to_string(lib.abi_minor()),
                            device_text(plugin.properties()), options_text(options), identity);
    }
  }
  return plugins_.emplace(&plugin, std::move(e)).first->second;
}

std::shared_ptr<CompiledKernel> KernelCache::get(const Plugin& plugin, const OptionValue& options,
                                                 const StaxKernelDesc& desc,
                                                 KernelOrigin* origin) {
  PluginEntry& e = entry(plugin, options);
  const std::string canonical = canonical_kernel_bytes(desc);
  const std::string name = desc.name ? desc.name : "";
  const std::string memory_key = name + '\0' + canonical;
  if (auto it = e.memory.find(memory_key); it != e.memory.end()) {
    *origin = KernelOrigin::Memory;
    return it->second;
  }
  DiskCache* d = e.prefix.empty() ? nullptr : disk();
  const std::string key = d ? e.prefix + canonical : std::string();
  std::shared_ptr<CompiledKernel> kernel;
  // STAX_CACHE_TRACE=1: one line per kernel on stderr (origin, read and link times).
  static const bool trace = std::getenv("STAX_CACHE_TRACE") != nullptr;
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  if (d) {
    auto t0 = Clock::now();
    if (std::optional<std::string> bytes = d->load(key)) {
      auto t1 = Clock::now();
      try {
        kernel = plugin.deserialize(desc, *bytes);
        *origin = KernelOrigin::Disk;
        if (trace)
          std::fprintf(stderr, "stax cache: %s from disk (%zu bytes): read %.3f ms, load %.3f ms\n",
                       name.c_str(), bytes->size(), ms(t0, t1), ms(t1, Clock::now()));
      } catch (const PluginCallError& e) {
        d->remove(key);  // stale or damaged: compile it again below
        if (trace)
          std::fprintf(stderr, "stax cache: %s refused by the plugin: %s\n", name.c_str(),
                       e.what());
      }
    }
  }
  if (!kernel) {
    auto t0 = Clock::now();
    kernel = plugin.compile(desc);
    if (trace)
      std::fprintf(stderr, "stax cache: %s compiled: %.3f ms\n", name.c_str(),
                   ms(t0, Clock::now()));
    *origin = KernelOrigin::Compiled;
    if (d) pending_.push_back({&plugin, key, kernel});  // stored by store_pending()
  }
  e.memory.emplace(memory_key, kernel);
  return kernel;
}

void KernelCache::store_pending() {
  std::vector<Pending> pending = std::move(pending_);
  pending_.clear();
  DiskCache* d = disk();
  if (!d) return;
  for (const Pending& p : pending) {
    std::string bytes;
    try {
      bytes = p.plugin->serialize(*p.kernel);
    } catch (const PluginCallError&) {
      bytes.clear();  // this kernel cannot be serialized (or failed to compile): not stored
    }
    if (!bytes.empty()) d->store(p.key, bytes, p.kernel->source());
  }
}

}  // namespace stax
