// A plugin whose methods throw: configure throws what the option `mode` asks for
// (std: std::runtime_error, int: a non-std exception, plugin: PluginError(INVALID_OPTION),
// none: nothing); compile always throws std::logic_error. The SDK adapter must turn all of
// them into StaxErrors (no exception may cross the C boundary).
#include <stdexcept>

#include "stax/sdk/plugin.hpp"

namespace {

using namespace stax::sdk;

class ThrowingBackend : public Backend {
 public:
  static constexpr const char* kName = "throwing";

  void configure(const Options& o) override {
    std::string mode = o.get_string("mode", "std");
    if (mode == "std") throw std::runtime_error("configure exploded");
    if (mode == "int") throw 42;
    if (mode == "plugin") throw PluginError(STAX_ERROR_INVALID_OPTION, "mode 'plugin' rejected");
  }
  DeviceProperties properties() const override {
    DeviceProperties p;
    p.kind = DeviceKind::CUDA;  // pretends to be a GPU: Algorithm 6.1 is the default split
    p.device_name = "throwing gpu";
    p.multiprocessor_count = 132;
    p.warp_size = 32;
    p.max_threads_per_multiprocessor = 2048;
    return p;
  }
  std::unique_ptr<CompiledKernel> compile(const Kernel&) override {
    throw std::logic_error("compile exploded");
  }
};

}  // namespace

STAX_DEFINE_PLUGIN(ThrowingBackend)
