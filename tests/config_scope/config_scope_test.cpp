// Loads configs with `devices:` through an AddressSanitizer build of core/config/config.cpp
// (tests/config_scope/CMakeLists.txt says why): configs/cpu.yaml, and one with two devices whose
// options nest. Exit 0 when every value read back is right; a use-after-scope of a YAML node
// (issue 12 row 9) aborts with ASan's report, a wrong value exits 1.
#include <cstdio>
#include <fstream>
#include <string>

#include "core/config/config.h"
#include "core/support/error.h"

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "config_scope_test: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: config_scope_test CPU_YAML SCRATCH_DIR\n");
    return 2;
  }
  try {
    stax::Config cpu = stax::Config::load(argv[1]);
    expect(cpu.device("cpu") && cpu.device("cpu")->backend == "cpu_cpp",
           "configs/cpu.yaml: devices.cpu.backend is cpu_cpp");

    std::string path = std::string(argv[2]) + "/config_scope_devices.yaml";
    std::ofstream(path) << "devices:\n"
                           "  cpu: {backend: cpu_cpp, options: {threads: 4, tags: [a, b]}}\n"
                           "  cuda: {backend: cuda_nvrtc, options: {arch: sm_90}}\n"
                           "default_device: cuda\n";
    stax::Config two = stax::Config::load(path);
    expect(two.device("cpu") && two.device("cpu")->backend == "cpu_cpp", "devices.cpu.backend");
    expect(two.device("cuda") && two.device("cuda")->backend == "cuda_nvrtc",
           "devices.cuda.backend");
    expect(two.device("cpu") && two.device("cpu")->options.entries.size() == 2,
           "devices.cpu.options has 2 entries");
    expect(two.default_device == "cuda", "default_device");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "config_scope_test: FAILED: %s\n", e.what());
    return 1;
  }
  if (failures == 0) std::printf("config_scope_test: all devices read intact\n");
  return failures == 0 ? 0 : 1;
}
