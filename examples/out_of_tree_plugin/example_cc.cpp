// example_cc: a complete Stax backend in one file, built out of tree against the StaxSDK
// package. It prints each kernel as C++ with the SDK's CStylePrinter (scalar_ops.hpp as the
// prelude, and scalar_ops_f16.hpp for 16-bit float buffers), compiles it with the system C++
// compiler into a shared object and runs it. It passes `stax conformance` (the ctest
// conformance_example_cc builds it against an installed SDK).
// A real CPU backend would JIT in process and vectorise (see plugins/cpu_cpp); this one shows
// how little a plugin needs: properties, options, the SDK's printer and framing (cstyle_framing.hpp),
// compile (shared_object.hpp) and run.
#include <memory>
#include <string>

#include "stax/sdk/cstyle_framing.hpp"
#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/plugin.hpp"
#include "stax/sdk/shared_object.hpp"

namespace {

using namespace stax::sdk;

// The kernel source: prelude, check support, the kernel function with its loops, and an entry
// point taking the buffers as an array (so the host calls every kernel the same way).
std::string kernel_source(const Kernel& k) {
  CStylePrinter p(k, f16_struct_tables());
  return "#include \"stax/sdk/scalar_ops.hpp\"\n#include \"stax/sdk/scalar_ops_f16.hpp\"\n" +
         c_check_prelude(p) + "\n" + frame_kernel(p) + "\n" + c_entry_point(p);
}

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
    SharedObjectCompiler cxx;
    cxx.command = std::string(EXAMPLE_CXX) + " -std=c++17 -O" + std::to_string(opt_level_) +
                  " -ffp-contract=off -shared -fPIC -I" EXAMPLE_SDK_INCLUDE;
    cxx.extension = ".cpp";
    cxx.work_dir = work_dir_;
    cxx.plugin = kName;
    cxx.link_flags = "-lsleef";  // scalar_ops.hpp's transcendentals are SLEEF's
    return compile_shared_object(kernel_source(k), cxx, k);
  }

 private:
  int64_t opt_level_ = 2;
  std::string work_dir_;
};

}  // namespace

STAX_DEFINE_PLUGIN(ExampleBackend)
