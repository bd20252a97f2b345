// example_cc: a complete Stax backend in one file, built out of tree against the StaxSDK
// package. It prints each kernel as C++ with the SDK's CStylePrinter (scalar_ops.hpp as the
// prelude, and scalar_ops_f16.hpp for 16-bit float buffers), compiles it with the system C++
// compiler into a shared object and runs it. It passes `stax conformance` (the ctest
// conformance_example_cc builds it against an installed SDK).
// A real CPU backend would JIT in process and vectorise (see plugins/cpu_cpp); this one shows
// how little a plugin needs: properties, options, the SDK's printer and framing (cstyle_framing.hpp),
// compile and run.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "stax/sdk/cstyle_framing.hpp"
#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/plugin.hpp"

namespace {

using namespace stax::sdk;

// The kernel source: prelude, check support, the kernel function with its loops, and an entry
// point taking the buffers as an array (so the host calls every kernel the same way).
std::string kernel_source(const Kernel& k) {
  CStylePrinter p(k, f16_struct_tables());
  return "#include \"stax/sdk/scalar_ops.hpp\"\n#include \"stax/sdk/scalar_ops_f16.hpp\"\n" +
         c_check_prelude(p) + "\n" + frame_kernel(p) + "\n" + c_entry_point(p);
}

class SharedObjectKernel : public CompiledKernel {
 public:
  SharedObjectKernel(std::string source, void* handle, size_t num_buffers, std::string name)
      : source_(std::move(source)), handle_(handle), num_buffers_(num_buffers),
        name_(std::move(name)) {
    entry_ = reinterpret_cast<Entry>(dlsym(handle_, (name_ + "_entry").c_str()));
    if (!entry_) throw PluginError(STAX_ERROR_COMPILE, "example_cc: no entry point in " + name_);
  }
  ~SharedObjectKernel() override { dlclose(handle_); }
  const std::string& source() const override { return source_; }
  void run(void* const* buffers, size_t n, void*) override {
    if (n != num_buffers_)
      throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "example_cc: kernel '" + name_ + "' takes " +
                                                         std::to_string(num_buffers_) +
                                                         " buffers, got " + std::to_string(n));
    if (const char* err = entry_(buffers))
      throw PluginError(STAX_ERROR_RUNTIME, "example_cc: kernel '" + name_ + "': " + err);
  }

 private:
  using Entry = const char* (*)(void* const*);
  std::string source_;
  void* handle_;
  size_t num_buffers_;
  std::string name_;
  Entry entry_ = nullptr;
};

class ExampleBackend : public Backend {
 public:
  static constexpr const char* kName = "example_cc";
  static constexpr const char* kVersion = "1.0";

  void configure(const Options& o) override {
    o.check_known({"opt_level", "work_dir"});
    opt_level_ = o.get_int("opt_level", 2);
    if (opt_level_ < 0 || opt_level_ > 3) o.at("opt_level").fail("must be 0..3");
    work_dir_ = o.get_string("work_dir", "/tmp");
  }

  DeviceProperties properties() const override {
    DeviceProperties p;
    p.kind = DeviceKind::CPU;
    p.device_name = "host CPU (example_cc)";
    p.cores = 1;
    return p;
  }

  std::unique_ptr<CompiledKernel> compile(const Kernel& k) override {
    std::string src = kernel_source(k);
    static std::atomic<int> counter{0};
    std::string base = work_dir_ + "/stax_example_" + std::to_string(getpid()) + "_" +
                       std::to_string(counter++) + "_" + k.name();
    std::ofstream(base + ".cpp") << src;
    std::string cmd = std::string(EXAMPLE_CXX) + " -std=c++17 -O" + std::to_string(opt_level_) +
                      " -ffp-contract=off -shared -fPIC -I" EXAMPLE_SDK_INCLUDE " " + base +
                      ".cpp -o " + base + ".so > " + base + ".log 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream log_in(base + ".log");
    std::string log((std::istreambuf_iterator<char>(log_in)), std::istreambuf_iterator<char>());
    std::remove((base + ".cpp").c_str());
    std::remove((base + ".log").c_str());
    if (rc != 0)
      throw PluginError(STAX_ERROR_COMPILE, "example_cc: the C++ compiler failed:\n" + log +
                                                "\nsource:\n" + src);
    void* h = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    std::remove((base + ".so").c_str());  // stays mapped
    if (!h) throw PluginError(STAX_ERROR_COMPILE, std::string("example_cc: dlopen: ") + dlerror());
    return std::unique_ptr<CompiledKernel>(
        new SharedObjectKernel(src, h, k.num_buffers(), k.name()));
  }

 private:
  int64_t opt_level_ = 2;
  std::string work_dir_;
};

}  // namespace

STAX_DEFINE_PLUGIN(ExampleBackend)
