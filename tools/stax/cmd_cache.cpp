// stax cache stats|clear|path [--config C]: the persistent kernel cache (core/cache/disk_cache.h).
// The directory is the config's cache_dir, overridden by STAX_CACHE_DIR; `cache: off` (or
// STAX_CACHE_DIR=off) disables it, and every action then says so and exits 0.
//   path    prints the directory (or "disabled: ...")
//   stats   entries, bytes, the size limit (STAX_CACHE_MAX_BYTES) and the directory
//   clear   removes every entry, its source and orphaned temporary files
// stats and clear refuse (exit 1, naming the reason) a directory that fails the cache's trust
// checks (core/cache/cache_dir.h: a link at <dir>/kernels, another user's directory, one others
// can write); they never follow a link and count only regular files.
#include <iostream>

#include "core/cache/disk_cache.h"
#include "tools/stax/command.h"
#include "tools/stax/compile_support.h"

namespace stax::cli {

namespace {

struct CacheOptions {
  std::string action;
  std::string config;
};

int run_cache(const CacheOptions& o) {
  const Config config = load_cli_config(o.config);
  const CacheSettings s = CacheSettings::resolve(config.cache, config.cache_dir);
  if (!s.disk()) {
    std::cout << "kernel cache: disabled ("
              << (!s.enabled ? "cache: off or STAX_CACHE_DIR=off" : "no cache_dir in " + config.source)
              << ")\n";
    return 0;
  }
  const std::filesystem::path& dir = *s.dir;
  if (o.action == "path") {
    std::cout << dir.string() << "\n";
  } else if (o.action == "stats") {
    CacheStats st = DiskCache::scan(dir);
    std::cout << "kernel cache: " << dir.string() << "\n"
              << "  entries: " << st.entries << "\n"
              << "  bytes:   " << st.bytes << " (limit " << s.max_bytes << ")\n";
  } else {
    uint64_t n = DiskCache::clear(dir);
    std::cout << "kernel cache: removed " << n << " files from " << dir.string() << "\n";
  }
  return 0;
}

}  // namespace

Subcommand make_cache_command(CLI::App& parent) {
  auto opts = std::make_shared<CacheOptions>();
  CLI::App* sub = parent.add_subcommand(
      "cache", "The persistent kernel cache: stats, clear or path (config cache_dir; "
               "STAX_CACHE_DIR overrides, STAX_CACHE_DIR=off or `cache: off` disables)");
  sub->add_option("action", opts->action, "stats | clear | path")
      ->required()
      ->check(CLI::IsMember({"stats", "clear", "path"}));
  add_config_option(*sub, opts->config);
  return {sub, [opts] { return run_cache(*opts); }};
}

}  // namespace stax::cli
