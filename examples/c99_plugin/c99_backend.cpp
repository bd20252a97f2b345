// c99: a Stax backend that prints plain C99, built out of tree against the installed StaxSDK.
// Each kernel is printed with the SDK's target-neutral CStylePrinter on c99_tables() (ops as
// stax_<op>_<dtype> calls of stax/sdk/scalar_ops.h, conversions per dtype pair, float16 and
// bfloat16 buffers as their bits), framed by cstyle_framing.hpp (loops, reductions, checks, an
// entry point), compiled by the system C compiler (`cc -std=c99`) into a shared object and
// dlopen'ed (shared_object.hpp). It passes `stax conformance` (ctest conformance_c99). Options:
//   compiler: the C compiler (default "cc"); opt_level: 0..3 (default 2);
//   work_dir: where sources and shared objects are written while compiling (default /tmp).
#include <memory>
#include <string>

#include "stax/sdk/cstyle_framing.hpp"
#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/plugin.hpp"
#include "stax/sdk/shared_object.hpp"

namespace {

using namespace stax::sdk;

std::string kernel_source(const Kernel& k) {
  CStylePrinter p(k, c99_tables());
  FramingStyle style;
  style.entry_linkage = "";  // C: no extern "C"
  return "#include \"stax/sdk/scalar_ops.h\"\n" + c_check_prelude(p, style) + "\n" +
         frame_kernel(p, style) + "\n" + c_entry_point(p, style);
}

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
    // -ffp-contract=off: no fused multiply-add, the scalar semantics round every operation
    SharedObjectCompiler cc;
    cc.command = compiler_ + " -std=c99 -O" + std::to_string(opt_level_) +
                 " -ffp-contract=off -fPIC -shared -I" C99_SDK_INCLUDE;
    cc.extension = ".c";
    cc.work_dir = work_dir_;
    cc.plugin = kName;
    cc.link_flags = "-lm -lsleef";  // scalar_ops.h: SLEEF's transcendentals
    return compile_shared_object(kernel_source(k), cc, k);
  }

 private:
  std::string compiler_ = "cc";
  int64_t opt_level_ = 2;
  std::string work_dir_;
};

}  // namespace

STAX_DEFINE_PLUGIN(C99Backend)
