// BackendSession: the PluginRegistry of one Compiler and the lock that serialises calls on its
// backend instances (the plugin ABI's rule): every compile, and runs. The Compiler creates it; every CompiledGraph the
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
  std::mutex mutex;
};

}  // namespace stax
