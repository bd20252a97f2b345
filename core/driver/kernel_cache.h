// KernelCache: the two levels of the kernel cache around a plugin's compile (issue 11).
//   1. In process: per backend instance, a kernel of the same name and canonical description
//      (core/codegen/kernel_canonical.h) is the same CompiledKernel: compiling a graph again
//      costs no plugin call. Bounded (docs/hardening.md, the soak): the level holds a kernel
//      while a CompiledGraph uses it, plus the kRecentKernels most recently used ones; a
//      long-lived process that compiles ever new shapes keeps no more than that.
//   2. On disk (core/cache/disk_cache.h) when the settings enable it and the plugin opts in
//      (ABI 1.3: a nonempty cache identity): a hit deserializes the stored bytes (cpu_cpp links
//      the object code again, no Clang); a miss compiles, and store_pending() (after all of a
//      graph's kernels) serializes and stores.
// The disk key material: a format line, the plugin's name, version, library file (path, size,
// mtime: a rebuilt plugin never reuses its predecessor's kernels), the ABI version, the device's
// properties, the backend's options (the config subtree) and the plugin's cache identity
// (compiler version, target CPU and features / GPU arch), then the canonical description.
// Bytes the plugin rejects (stale, damaged) are removed and the kernel is compiled.
// STAX_CACHE_TRACE=1 prints one line per kernel on stderr: where it came from, read and link
// (or compile) times, and why an entry on disk was not used (skipped: a link, a FIFO, another
// user's file; damaged: its format or MAC; refused by the plugin: e.g. an ELF object for
// another machine).
#pragma once

#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/backend/plugin.h"
#include "core/cache/disk_cache.h"
#include "core/config/config.h"
#include "core/support/cancellation.h"

namespace stax {

enum class KernelOrigin { Compiled, Memory, Disk };

class KernelCache {
 public:
  // Kernels kept alive in process after the last CompiledGraph using them is gone.
  static constexpr size_t kRecentKernels = 256;

  explicit KernelCache(CacheSettings settings);

  // The kernel for `desc` on `plugin` (configured with `options`). Not thread-safe: the
  // Compiler calls it under its session lock.
  std::shared_ptr<CompiledKernel> get(const Plugin& plugin, const OptionValue& options,
                                      const StaxKernelDesc& desc, KernelOrigin* origin);
  // get() of a graph's kernels, in order, with each one's origin and milliseconds: the kernels
  // found on disk are deserialized in ONE plugin call (Plugin::deserialize_batch: cpu_cpp links
  // them in one JIT dylib with one lookup); when the plugin rejects the batch, one by one, so a
  // stale or damaged entry is found, removed and compiled while the others still come from disk.
  // A disk hit's time is its read plus its share of the batch. The kernels neither level holds
  // are compiled on up to `compile_threads` threads when the backend allows concurrent compiles
  // (core/backend/parallel_compile.h); a compiled kernel's time is its own compile's. `cancel`
  // (optional) is polled before each plugin compile (core/support/cancellation.h): the kernels
  // already stored on disk stay there.
  std::vector<std::shared_ptr<CompiledKernel>> get_all(
      const Plugin& plugin, const OptionValue& options,
      const std::vector<const StaxKernelDesc*>& descs, std::vector<KernelOrigin>* origins,
      std::vector<double>* ms, size_t compile_threads = 1,
      const CancellationToken* cancel = nullptr);

  // What the first get_all() for `plugin` sets up, done now: the disk key's prefix, which asks
  // the plugin's cache identity (cpu_cpp computes it without its JIT: DECISIONS item 54).
  // Compiler::prepare.
  void prepare(const Plugin& plugin, const OptionValue& options) { entry(plugin, options); }

  // Serializes and stores on disk the kernels get() compiled since the last call. Apart from
  // get() so that a plugin that compiles asynchronously (cuda_triton: a graph's kernels in
  // parallel in its workers) is waited for once all of a graph's kernels are under way. A
  // backend that compiles concurrently (ABI 1.6) has its kernels stored as they compile
  // (serialized by the compiling thread, written by a thread of the batch's own), so its disk
  // writes overlap the other compiles; nothing is pending then.
  void store_pending();

  const CacheSettings& settings() const { return settings_; }
  // The disk level, or null (disabled, no directory, unusable).
  DiskCache* disk();

  // The key material's prefix for a plugin (exposed for tests: it must change with the
  // plugin's version, options and identity).
  static std::string key_prefix(const std::string& plugin_name, const std::string& version,
                                const std::string& library, const std::string& abi,
                                const std::string& device, const std::string& options,
                                const std::string& identity);
  // The options subtree as text (locations left out).
  static std::string options_text(const OptionValue& options);

 private:
  struct PluginEntry {
    std::string prefix;  // empty: not cached on disk
    // Alive while some CompiledGraph (or recent_) holds the kernel; expired ones are purged.
    std::unordered_map<std::string, std::weak_ptr<CompiledKernel>> memory;
    size_t purge_at = 64;  // purge expired entries when the map grows to this
  };
  PluginEntry& entry(const Plugin& plugin, const OptionValue& options);
  // Marks `k` most recently used; drops the least recently used beyond kRecentKernels.
  void touch(const std::shared_ptr<CompiledKernel>& k);
  static void purge_expired(PluginEntry& e);
  // get_all's last step: the kernels neither level holds, compiled (compile_kernels) into *out,
  // their origins and times set, stored on disk when `store` (keys[i] their disk keys): as they
  // compile when the backend compiles concurrently, else queued for store_pending().
  void compile_missing(const Plugin& plugin, const std::vector<const StaxKernelDesc*>& descs,
                       const std::vector<std::string>& keys, bool store, size_t compile_threads,
                       const CancellationToken* cancel,
                       std::vector<std::shared_ptr<CompiledKernel>>* out,
                       std::vector<KernelOrigin>* origins, std::vector<double>* ms);

  struct Pending {
    const Plugin* plugin;
    std::string key;
    std::shared_ptr<CompiledKernel> kernel;
  };
  CacheSettings settings_;
  std::vector<Pending> pending_;
  bool disk_tried_ = false;
  std::unique_ptr<DiskCache> disk_;
  std::map<const Plugin*, PluginEntry> plugins_;
  std::list<std::shared_ptr<CompiledKernel>> recent_;  // most recent first
  std::unordered_map<const CompiledKernel*, std::list<std::shared_ptr<CompiledKernel>>::iterator>
      recent_pos_;
};

}  // namespace stax
