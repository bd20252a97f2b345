#include "core/driver/kernel_cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>

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
  std::vector<KernelOrigin> origins;
  std::vector<double> ms;
  auto kernels = get_all(plugin, options, {&desc}, &origins, &ms);
  *origin = origins[0];
  return kernels[0];
}

std::vector<std::shared_ptr<CompiledKernel>> KernelCache::get_all(
    const Plugin& plugin, const OptionValue& options,
    const std::vector<const StaxKernelDesc*>& descs, std::vector<KernelOrigin>* origins,
    std::vector<double>* ms_out, const CancellationToken* cancel) {
  const size_t n = descs.size();
  std::vector<std::shared_ptr<CompiledKernel>> out(n);
  origins->assign(n, KernelOrigin::Compiled);
  ms_out->assign(n, 0.0);
  PluginEntry& e = entry(plugin, options);
  DiskCache* d = e.prefix.empty() ? nullptr : disk();
  // STAX_CACHE_TRACE=1: one line per kernel on stderr (origin, read and link times).
  static const bool trace = std::getenv("STAX_CACHE_TRACE") != nullptr;
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  auto name_of = [&](size_t i) { return std::string(descs[i]->name ? descs[i]->name : ""); };
  std::vector<std::string> memory_keys(n), keys(n);
  struct Hit {
    size_t index;
    std::string bytes;
  };
  std::vector<Hit> hits;
  // 1. The process's own kernels, then the disk entries' bytes.
  for (size_t i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    const std::string canonical = canonical_kernel_bytes(*descs[i]);
    memory_keys[i] = name_of(i) + '\0' + canonical;
    if (auto it = e.memory.find(memory_keys[i]); it != e.memory.end()) {
      if (std::shared_ptr<CompiledKernel> k = it->second.lock()) {
        out[i] = std::move(k);
        (*origins)[i] = KernelOrigin::Memory;
        (*ms_out)[i] = ms(t0, Clock::now());
        continue;
      }
    }
    if (!d) continue;
    keys[i] = e.prefix + canonical;
    std::string why;
    if (std::optional<std::string> bytes = d->load(keys[i], &why)) {
      (*ms_out)[i] = ms(t0, Clock::now());
      hits.push_back({i, std::move(*bytes)});
    } else if (trace && !why.empty()) {
      std::fprintf(stderr, "stax cache: %s: %s\n", name_of(i).c_str(), why.c_str());
    }
  }
  // 2. The hits in one plugin call; one by one when it rejects the batch.
  if (!hits.empty()) {
    auto t0 = Clock::now();
    std::vector<const StaxKernelDesc*> hit_descs;
    std::vector<std::string_view> hit_bytes;
    for (const Hit& h : hits) {
      hit_descs.push_back(descs[h.index]);
      hit_bytes.push_back(h.bytes);
    }
    std::vector<std::unique_ptr<CompiledKernel>> got;
    try {
      got = plugin.deserialize_batch(hit_descs, hit_bytes);
    } catch (const PluginCallError& err) {
      got.clear();
      if (trace && hits.size() > 1)
        std::fprintf(stderr, "stax cache: the batch of %zu kernels was refused, one by one: %s\n",
                     hits.size(), err.what());
    }
    const double share = ms(t0, Clock::now()) / static_cast<double>(hits.size());
    for (size_t h = 0; h < hits.size(); ++h) {
      const size_t i = hits[h].index;
      auto t1 = Clock::now();
      if (got.size() == hits.size()) {
        out[i] = std::move(got[h]);
        (*ms_out)[i] += share;
      } else {
        try {
          out[i] = plugin.deserialize(*descs[i], hits[h].bytes);
        } catch (const PluginCallError& err) {
          d->remove(keys[i]);  // stale or damaged: compiled below
          if (trace)
            std::fprintf(stderr, "stax cache: %s refused by the plugin: %s\n", name_of(i).c_str(),
                         err.what());
          continue;
        }
        (*ms_out)[i] += share + ms(t1, Clock::now());
      }
      (*origins)[i] = KernelOrigin::Disk;
      if (trace)
        std::fprintf(stderr, "stax cache: %s from disk (%zu bytes): %.3f ms (read + load%s)\n",
                     name_of(i).c_str(), hits[h].bytes.size(), (*ms_out)[i],
                     got.size() == hits.size() && hits.size() > 1 ? ", linked in a batch" : "");
    }
  }
  // 3. The rest compiled (and stored by store_pending()).
  for (size_t i = 0; i < n; ++i) {
    if ((*origins)[i] == KernelOrigin::Memory) {
      touch(out[i]);
      continue;
    }
    if (!out[i]) {
      check_cancelled(cancel, name_of(i), "compiling kernel " + name_of(i));
      auto t0 = Clock::now();
      out[i] = plugin.compile(*descs[i]);
      (*ms_out)[i] += ms(t0, Clock::now());
      if (trace)
        std::fprintf(stderr, "stax cache: %s compiled: %.3f ms\n", name_of(i).c_str(),
                     (*ms_out)[i]);
      (*origins)[i] = KernelOrigin::Compiled;
      if (d) pending_.push_back({&plugin, keys[i], out[i]});
    }
    e.memory[memory_keys[i]] = out[i];
    touch(out[i]);
  }
  if (e.memory.size() >= e.purge_at) purge_expired(e);
  return out;
}

void KernelCache::touch(const std::shared_ptr<CompiledKernel>& k) {
  if (!k) return;
  auto it = recent_pos_.find(k.get());
  if (it != recent_pos_.end()) {
    recent_.splice(recent_.begin(), recent_, it->second);
    return;
  }
  recent_.push_front(k);
  recent_pos_[k.get()] = recent_.begin();
  while (recent_.size() > kRecentKernels) {
    recent_pos_.erase(recent_.back().get());
    recent_.pop_back();
  }
}

void KernelCache::purge_expired(PluginEntry& e) {
  for (auto it = e.memory.begin(); it != e.memory.end();)
    it = it->second.expired() ? e.memory.erase(it) : std::next(it);
  // The next purge when the map has doubled: amortised O(1) per insertion.
  e.purge_at = std::max<size_t>(64, 2 * e.memory.size());
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
