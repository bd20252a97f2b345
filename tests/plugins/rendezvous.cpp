// rendezvous: toy_cpu reporting concurrent_runs, whose kernels wait for a run on another thread
// (issue 12 "Also": runs of one CompiledGraph used to be serialised by a per-Compiler mutex, so
// two threads never ran in parallel). The first kernel to enter waits until a second one is
// inside at the same time; if none comes within 60 s, it fails with an error saying the runs did
// not overlap. Once two kernels have met, later ones run without waiting. A host that serialises
// runs of a concurrent_runs backend fails PluginLoader.ConcurrentRunsOverlapInTime.
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "stax/sdk/plugin.hpp"

// toy_cpu.cpp ends with STAX_DEFINE_PLUGIN(ToyCpuBackend); here it only names the backend, and
// this file defines the plugin with the SDK's macro, set aside meanwhile.
#pragma push_macro("STAX_DEFINE_PLUGIN")
#undef STAX_DEFINE_PLUGIN
#define STAX_DEFINE_PLUGIN(BackendClass) using ToyBackend = BackendClass;
#include "toy_cpu.cpp"
#pragma pop_macro("STAX_DEFINE_PLUGIN")

namespace {

std::mutex g_mutex;
std::condition_variable g_arrived;
int g_inside = 0;    // kernels now inside run()
bool g_met = false;  // two kernels have been inside at once

class RendezvousKernel : public CompiledKernel {
 public:
  explicit RendezvousKernel(std::unique_ptr<CompiledKernel> inner) : inner_(std::move(inner)) {}
  const std::string& source() const override { return inner_->source(); }
  void run(void* const* buffers, size_t num_buffers, void* stream) override {
    {
      std::unique_lock<std::mutex> lock(g_mutex);
      ++g_inside;
      if (g_inside >= 2) g_met = true;
      g_arrived.notify_all();
      bool met = g_arrived.wait_for(lock, std::chrono::seconds(60), [] { return g_met; });
      if (!met) {
        --g_inside;
        throw PluginError(STAX_ERROR_RUNTIME,
                          "rendezvous: no run on another thread entered a kernel within 60 s "
                          "(runs of one CompiledGraph do not overlap)");
      }
    }
    inner_->run(buffers, num_buffers, stream);
    std::lock_guard<std::mutex> lock(g_mutex);
    --g_inside;
  }

 private:
  std::unique_ptr<CompiledKernel> inner_;
};

class RendezvousBackend : public ToyBackend {
 public:
  static constexpr const char* kName = "rendezvous";
  DeviceProperties properties() const override {
    DeviceProperties p = ToyBackend::properties();
    p.concurrent_runs = true;
    return p;
  }
  std::unique_ptr<CompiledKernel> compile(const Kernel& k) override {
    return std::unique_ptr<CompiledKernel>(new RendezvousKernel(ToyBackend::compile(k)));
  }
};

}  // namespace

STAX_DEFINE_PLUGIN(RendezvousBackend)
