// compile_rendezvous: toy_cpu whose compiles tell whether the host overlaps them (ABI 1.6,
// StaxDeviceProperties.concurrent_compiles; core/backend/parallel_compile.h).
// Options:
//   concurrent: true   report concurrent_compiles, and every compile waits (up to wait_ms) until
//                      another compile is inside at the same time; none within wait_ms is an error
//                      ("no other compile ran beside it"). Once two compiles have met, later ones
//                      do not wait. A host that compiles one kernel at a time fails here.
//   concurrent: false  report no concurrent compiles; a compile that finds another one inside
//                      (they overlap on a backend that did not opt in) is an error.
//   Each compile then takes hold_ms (so that overlaps would be seen; a cancel arrives while the
//   compiles are busy).
//   wait_ms: 60000, hold_ms: 20
//   fail: [names]      the compiles of these kernels fail (STAX_ERROR_COMPILE, "<name> refused")
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "stax/sdk/plugin.hpp"

// toy_cpu.cpp ends with STAX_DEFINE_PLUGIN(ToyCpuBackend); here it only names the backend, and
// this file defines the plugin with the SDK's macro, set aside meanwhile.
#pragma push_macro("STAX_DEFINE_PLUGIN")
#undef STAX_DEFINE_PLUGIN
#define STAX_DEFINE_PLUGIN(BackendClass) using ToyBackend = BackendClass;
#include "toy_cpu.cpp"
#pragma pop_macro("STAX_DEFINE_PLUGIN")

namespace {

class CompileRendezvousBackend : public ToyBackend {
 public:
  static constexpr const char* kName = "compile_rendezvous";

  void configure(const Options& o) override {
    o.check_known({"concurrent", "wait_ms", "hold_ms", "fail"});
    concurrent_ = o.get_bool("concurrent", true);
    wait_ms_ = o.get_int("wait_ms", 60000);
    hold_ms_ = o.get_int("hold_ms", 20);
    fail_ = o.get_string_list("fail", {});
  }

  DeviceProperties properties() const override {
    DeviceProperties p = ToyBackend::properties();
    p.concurrent_compiles = concurrent_;
    return p;
  }

  std::unique_ptr<CompiledKernel> compile(const Kernel& k) override {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++inside_;
      if (inside_ >= 2) met_ = true;
      if (!concurrent_ && inside_ >= 2) {
        --inside_;
        throw PluginError(STAX_ERROR_INTERNAL,
                          "compile_rendezvous: compiles overlapped on a backend that did not opt "
                          "into concurrent compiles");
      }
      arrived_.notify_all();
      if (concurrent_ &&
          !arrived_.wait_for(lock, std::chrono::milliseconds(wait_ms_), [&] { return met_; })) {
        --inside_;
        throw PluginError(STAX_ERROR_RUNTIME,
                          "compile_rendezvous: no other compile ran beside the compile of '" +
                              k.name() + "' within " + std::to_string(wait_ms_) + " ms");
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms_));
    std::unique_ptr<CompiledKernel> out;
    bool refused = false;
    for (const std::string& f : fail_) refused = refused || f == k.name();
    if (!refused) out = ToyBackend::compile(k);
    std::lock_guard<std::mutex> lock(mutex_);
    --inside_;
    if (refused) throw PluginError(STAX_ERROR_COMPILE, k.name() + " refused");
    return out;
  }

 private:
  bool concurrent_ = true;
  int64_t wait_ms_ = 60000;
  int64_t hold_ms_ = 20;
  std::vector<std::string> fail_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  int inside_ = 0;     // compiles now inside compile()
  bool met_ = false;   // two compiles have been inside at once
};

}  // namespace

STAX_DEFINE_PLUGIN(CompileRendezvousBackend)
