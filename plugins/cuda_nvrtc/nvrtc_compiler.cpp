#include "plugins/cuda_nvrtc/nvrtc_compiler.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <chrono>
#include <cstdio>

#include "stax/sdk/types.hpp"

namespace stax::cuda {

namespace {

// NVRTC carries its own static copy of libstdc++, whose exception emergency pool (72704 bytes) is
// allocated when libnvrtc loads and lost when it is unloaded together with this plugin: a leak
// per load/unload cycle, reported by LeakSanitizer (scripts/sanitize.sh address) after every
// `stax plugins` or test that loads the plugin. NVRTC is pinned for the life of the process
// (RTLD_NODELETE) when the plugin loads, so its pool stays reachable.
[[maybe_unused]] const bool kNvrtcPinned = [] {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) == 0 || !info.dli_fname) return false;
  return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != nullptr;
}();

// Destroys the program on every path.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) nvrtcDestroyProgram(&p);
  }
};

[[noreturn]] void fail(const std::string& what, nvrtcResult r) {
  throw sdk::PluginError(STAX_ERROR_COMPILE,
                         "cuda_nvrtc: " + what + " failed: " + nvrtcGetErrorString(r));
}

}  // namespace

std::string numbered_source(const std::string& source) {
  std::string out;
  int line = 1;
  size_t start = 0;
  while (start < source.size()) {
    size_t end = source.find('\n', start);
    if (end == std::string::npos) end = source.size();
    char num[16];
    std::snprintf(num, sizeof num, "%4d| ", line++);
    out += num + source.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name,
                          const std::string& arch) {
  auto start = std::chrono::steady_clock::now();
  Program prog;
  nvrtcResult r = nvrtcCreateProgram(&prog.p, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) fail("nvrtcCreateProgram", r);
  const std::string arch_flag = "--gpu-architecture=" + arch;
  const std::string include_flag = std::string("-I") + STAX_CUDA_INCLUDE_DIR;
  const char* options[] = {arch_flag.c_str(), "-default-device", "-std=c++17", "--fmad=false",
                           include_flag.c_str()};
  r = nvrtcCompileProgram(prog.p, 5, options);
  NvrtcOutput out;
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog.p, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    nvrtcGetProgramLog(prog.p, out.log.data());
    out.log.resize(log_size - 1);  // the terminating NUL
  }
  if (r != NVRTC_SUCCESS)
    throw sdk::PluginError(STAX_ERROR_COMPILE,
                           "cuda_nvrtc: NVRTC failed to compile '" + name + "' for " + arch +
                               " (" + nvrtcGetErrorString(r) + "):\n" + out.log +
                               "\nsource:\n" + numbered_source(source));
  size_t cubin_size = 0;
  r = nvrtcGetCUBINSize(prog.p, &cubin_size);
  if (r != NVRTC_SUCCESS) fail("nvrtcGetCUBINSize", r);
  if (cubin_size == 0)
    throw sdk::PluginError(STAX_ERROR_COMPILE, "cuda_nvrtc: NVRTC produced no cubin for '" +
                                                   name + "' (arch " + arch +
                                                   " is virtual? use sm_XX, not compute_XX)");
  out.cubin.resize(cubin_size);
  r = nvrtcGetCUBIN(prog.p, out.cubin.data());
  if (r != NVRTC_SUCCESS) fail("nvrtcGetCUBIN", r);
  out.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace stax::cuda
