// toy_epilogue: toy_cpu reporting extern_epilogues (ABI 1.5) and keeping the SDK's default
// run_extern_with_epilogue, which declines (runs the product alone, returns false): the host must
// then run the fused epilogue kernel itself after the product (GemmEpilogue.HostRunsAnEpilogue-
// TheBackendDeclines in tests/gemm/gemm_epilogue_test).
#include "stax/sdk/plugin.hpp"

#pragma push_macro("STAX_DEFINE_PLUGIN")
#undef STAX_DEFINE_PLUGIN
#define STAX_DEFINE_PLUGIN(BackendClass) using ToyBackend = BackendClass;
#include "toy_cpu.cpp"
#pragma pop_macro("STAX_DEFINE_PLUGIN")

namespace {

class ToyEpilogueBackend : public ToyBackend {
 public:
  static constexpr const char* kName = "toy_epilogue";
  DeviceProperties properties() const override {
    DeviceProperties p = ToyBackend::properties();
    p.extern_epilogues = true;
    return p;
  }
};

}  // namespace

STAX_DEFINE_PLUGIN(ToyEpilogueBackend)
