// c99: a Stax backend that prints plain C99, built out of tree against the installed StaxSDK.
// Each kernel is printed with the SDK's target-neutral CStylePrinter on c99_tables() (ops as
// stax_<op>_<dtype> calls of stax/sdk/scalar_ops.h, conversions per dtype pair, float16 and
// bfloat16 buffers as their bits), framed by cstyle_framing.hpp (loops, reductions, checks, an
// entry point), compiled by the system C compiler (`cc -std=c99`) into a shared object and
// dlopen'ed. It passes `stax conformance` (ctest conformance_c99). Options:
//   compiler: the C compiler (default "cc"); opt_level: 0..3 (default 2);
//   work_dir: where sources and shared objects are written while compiling (default /tmp).
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "stax/sdk/cstyle_framing.hpp"
#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/plugin.hpp"

namespace {

using namespace stax::sdk;

std::string kernel_source(const Kernel& k) {
  CStylePrinter p(k, c99_tables());
  FramingStyle style;
  style.entry_linkage = "";  // C: no extern "C"
  return "#include \"stax/sdk/scalar_ops.h\"\n" + c_check_prelude(p, style) + "\n" +
         frame_kernel(p, style) + "\n" + c_entry_point(p, style);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class C99Kernel : public CompiledKernel {
 public:
  C99Kernel(std::string source, void* handle, const Kernel& k)
      : source_(std::move(source)), handle_(handle), num_buffers_(k.num_buffers()),
        name_(k.name()) {
    entry_ = reinterpret_cast<Entry>(dlsym(handle_, (name_ + "_entry").c_str()));
    if (!entry_) {
      dlclose(handle_);
      throw PluginError(STAX_ERROR_COMPILE, "c99: no entry point in kernel '" + name_ + "'");
    }
  }
  ~C99Kernel() override { dlclose(handle_); }
  const std::string& source() const override { return source_; }
  void run(void* const* buffers, size_t n, void*) override {
    if (n != num_buffers_)
      throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "c99: kernel '" + name_ + "' takes " +
                                                         std::to_string(num_buffers_) +
                                                         " buffers, got " + std::to_string(n));
    if (const char* err = entry_(buffers))
      throw PluginError(STAX_ERROR_RUNTIME, "c99: kernel '" + name_ + "': " + err);
  }

 private:
  using Entry = const char* (*)(void* const*);
  std::string source_;
  void* handle_;
  size_t num_buffers_;
  std::string name_;
  Entry entry_ = nullptr;
};

class C99Backend : public Backend {
 public:
  static constexpr const char* kName = "c99";
  static constexpr const char* kVersion = "1.0";

  void configure(const Options& o) override {
    o.check_known({"compiler", "opt_level", "work_dir"});
    compiler_ = o.get_string("compiler", "cc");
    opt_level_ = o.get_int("opt_level", 2);
    if (opt_level_ < 0 || opt_level_ > 3) o.at("opt_level").fail("must be 0..3");
    work_dir_ = o.get_string("work_dir", "/tmp");
  }

  DeviceProperties properties() const override {
    DeviceProperties p;
    p.kind = DeviceKind::CPU;
    p.device_name = "host CPU (c99 via " + compiler_ + ")";
    p.cores = 1;
    return p;
  }

  std::unique_ptr<CompiledKernel> compile(const Kernel& k) override {
    std::string src = kernel_source(k);
    static std::atomic<int> counter{0};
    std::string base = work_dir_ + "/stax_c99_" + std::to_string(getpid()) + "_" +
                       std::to_string(counter++) + "_" + k.name();
    std::ofstream(base + ".c") << src;
    // -ffp-contract=off: no fused multiply-add, the scalar semantics round every operation
    std::string cmd = compiler_ + " -std=c99 -O" + std::to_string(opt_level_) +
                      " -ffp-contract=off -fPIC -shared -I" C99_SDK_INCLUDE " " + base + ".c -o " +
                      base + ".so -lm > " + base + ".log 2>&1";
    int rc = std::system(cmd.c_str());
    std::string log = read_file(base + ".log");
    std::remove((base + ".c").c_str());
    std::remove((base + ".log").c_str());
    if (rc != 0)
      throw PluginError(STAX_ERROR_COMPILE, "c99: `" + compiler_ + "` failed on kernel '" +
                                                k.name() + "':\n" + log + "\nsource:\n" + src);
    void* h = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    std::remove((base + ".so").c_str());  // stays mapped
    if (!h) throw PluginError(STAX_ERROR_COMPILE, std::string("c99: dlopen: ") + dlerror());
    return std::unique_ptr<CompiledKernel>(new C99Kernel(src, h, k));
  }

 private:
  std::string compiler_ = "cc";
  int64_t opt_level_ = 2;
  std::string work_dir_;
};

}  // namespace

STAX_DEFINE_PLUGIN(C99Backend)
