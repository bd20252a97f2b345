#include "core/driver/kernel_cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iterator>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "core/backend/parallel_compile.h"
#include "core/backend/plugin_loader.h"
#include "core/codegen/kernel_canonical.h"

namespace stax {

namespace {

constexpr const char* kFormat = "stax kernel cache v1";

// The disk writes of a batch of concurrent compiles, on a thread of their own: a compile thread
// hands its serialized kernel over and starts its next compile instead of waiting on the disk
// (a store is three fsyncs and a scan of the directory for eviction). The destructor writes
// what is still queued and joins, so every store is on disk when the batch returns, as before.
// Without a thread to be had, store() writes on the calling thread.
class DiskWriter {
 public:
  explicit DiskWriter(DiskCache& disk) : disk_(disk) {
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error&) {
    }
  }
  ~DiskWriter() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    ready_.notify_one();
    if (thread_.joinable()) thread_.join();
  }
  DiskWriter(const DiskWriter&) = delete;
  DiskWriter& operator=(const DiskWriter&) = delete;

  void store(std::string key, std::string bytes, std::string source) {
    if (!thread_.joinable()) {
      std::lock_guard<std::mutex> lock(write_);
      disk_.store(key, bytes, source);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back({std::move(key), std::move(bytes), std::move(source)});
    }
    ready_.notify_one();
  }

 private:
  struct Entry {
    std::string key, bytes, source;
  };
  void run() {
    for (;;) {
      Entry e;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return done_ || !queue_.empty(); });
        if (queue_.empty()) return;  // done, nothing left
        e = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        disk_.store(e.key, e.bytes, e.source);
      } catch (...) {  // a failed store leaves the kernel uncached, as a failed write does
      }
    }
  }

  DiskCache& disk_;
  std::mutex mutex_, write_;
  std::condition_variable ready_;
  std::deque<Entry> queue_;
  bool done_ = false;
  std::thread thread_;
};

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
    std::vector<double>* ms_out, size_t compile_threads, const CancellationToken* cancel) {
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
  // A kernel that an earlier one of the batch repeats (two graphs compiled together,
  // Compiler::compile_pair): that one's kernel, as the in-process level would give it.
  std::unordered_map<std::string, size_t> first_of;
  std::vector<size_t> repeats;  // indices whose kernel is first_of theirs
  // 1. The process's own kernels, then the disk entries' bytes.
  for (size_t i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    const std::string canonical = canonical_kernel_bytes(*descs[i]);
    memory_keys[i] = name_of(i) + '\0' + canonical;
    if (!first_of.emplace(memory_keys[i], i).second) {
      (*origins)[i] = KernelOrigin::Memory;
      repeats.push_back(i);
      continue;
    }
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
  // 3. The rest compiled, in parallel where the backend allows, and stored on disk.
  compile_missing(plugin, descs, keys, d != nullptr, compile_threads, cancel, &out, origins,
                  ms_out);
  for (size_t i : repeats) out[i] = out[first_of.at(memory_keys[i])];
  for (size_t i = 0; i < n; ++i) {
    if ((*origins)[i] != KernelOrigin::Memory) e.memory[memory_keys[i]] = out[i];
    touch(out[i]);
  }
  if (e.memory.size() >= e.purge_at) purge_expired(e);
  return out;
}

void KernelCache::compile_missing(const Plugin& plugin,
                                  const std::vector<const StaxKernelDesc*>& descs,
                                  const std::vector<std::string>& keys, bool store,
                                  size_t compile_threads, const CancellationToken* cancel,
                                  std::vector<std::shared_ptr<CompiledKernel>>* out,
                                  std::vector<KernelOrigin>* origins, std::vector<double>* ms) {
  static const bool trace = std::getenv("STAX_CACHE_TRACE") != nullptr;
  std::vector<size_t> missing;
  std::vector<const StaxKernelDesc*> to_compile;
  for (size_t i = 0; i < descs.size(); ++i) {
    if ((*origins)[i] == KernelOrigin::Memory || (*out)[i]) continue;
    missing.push_back(i);
    to_compile.push_back(descs[i]);
  }
  // A backend that compiles concurrently returns finished kernels: each is serialized by the
  // thread that compiled it and written by the DiskWriter's thread, while the compiles go on (a
  // store waits on the disk: ~12 ms of fsyncs per kernel on this project's VMs). Plugin calls on
  // the kernels take turns (the ABI lets compiles overlap, not serialize calls); the disk writes
  // are one thread's. Others (cuda_triton compiles in the background and serialize() waits for it)
  // are stored by store_pending() once every kernel is under way.
  const bool store_now = store && plugin.properties().concurrent_compiles && !missing.empty();
  std::mutex plugin_calls;
  std::optional<DiskWriter> writer;  // the disk writes, off the compile threads
  CompiledHook hook;
  if (store_now) {
    writer.emplace(*disk());
    hook = [&](size_t m, const CompiledKernel& kernel) {
      std::string bytes, source;
      {
        std::lock_guard<std::mutex> lock(plugin_calls);
        bytes = plugin.serialize(kernel);  // a PluginCallError: not stored, as store_pending
        source = kernel.source();
      }
      if (!bytes.empty()) writer->store(keys[missing[m]], std::move(bytes), std::move(source));
    };
  }
  std::vector<CompileResult> compiled =
      compile_kernels(plugin, to_compile, compile_threads, hook, cancel);
  writer.reset();  // every store written (also when compile_kernels throws: the destructor)
  for (size_t m = 0; m < missing.size(); ++m) {
    const size_t i = missing[m];
    (*out)[i] = std::move(compiled[m].kernel);
    (*ms)[i] += compiled[m].ms;
    if (trace)
      std::fprintf(stderr, "stax cache: %s compiled: %.3f ms\n",
                   descs[i]->name ? descs[i]->name : "", (*ms)[i]);
    (*origins)[i] = KernelOrigin::Compiled;
    if (store && !store_now) pending_.push_back({&plugin, keys[i], (*out)[i]});
  }
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
