// BackendSession: the PluginRegistry of one Compiler and the lock that runs take (the plugin ABI
// serialises calls on one backend instance). The Compiler creates it; every CompiledGraph the
// Compiler builds shares it, so the plugins stay loaded while a compiled graph lives.
#pragma once

#include <mutex>
#include <utility>

#include "core/backend/plugin_registry.h"
#include "core/config/config.h"

namespace stax {

struct BackendSession {
  explicit BackendSession(Config config) : registry(std::move(config)) {}
  PluginRegistry registry;
  std::mutex run_mutex;
};

}  // namespace stax
