// NVRTC: CUDA C source -> cubin for one architecture, without a device (libnvrtc is linked; it
// needs no driver). A failing compile is a PluginError(STAX_ERROR_COMPILE) whose message holds
// NVRTC's log and the source with line numbers.
#pragma once

#include <string>
#include <vector>

namespace stax::cuda {

struct NvrtcOutput {
  std::vector<char> cubin;
  std::string log;  // NVRTC's warnings (empty when clean)
  double milliseconds = 0;
};

// Compiles `source` (its kernels `extern "C"`) for `arch` ("sm_90") with
//   --gpu-architecture=<arch> -default-device -std=c++17 --fmad=false -I<CUDA include dir>
// (-default-device: unannotated functions, i.e. scalar_ops.hpp, are device functions;
// --fmad=false: no FMA contraction, like the host's -ffp-contract=off, so that + - * / round as
// the reference interpreter does).
// `name` names the program in the log ("kernel0.cu").
NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name,
                          const std::string& arch);

// "   1| first line\n   2| ..." (for error messages).
std::string numbered_source(const std::string& source);

// NVRTC's version, "13.0".
std::string nvrtc_version();

}  // namespace stax::cuda
