// cuda_nvrtc's fused-attention externs "flash_attention" and "flash_attention_backward"
// (docs/attention.md, "The GPU plugins"): the CUDA C kernels of flash_attention.cu, their source
// for each Target, and the launches (parameter block, grid) for the tensors and scalars the ops
// _stax_flash_attention / _stax_flash_attention_backward pass (core/ops/nn/flash_attention.cpp):
//   forward:  q, k, v, [mask] -> packed (out, then lse); scalars: is_causal, scale
//   backward: grad, q, k, v, [mask], packed -> dq, dk, dv (one 1-D buffer); same scalars
// and "flash_attention_dropout" / "flash_attention_dropout_backward" (docs/attention.md
// "Dropout"): the same kernels with the dropout seed (a 0-d int64 tensor) as the last input and
// the scalars is_causal, scale, threshold, keep_above, drop_scale, as cpu_cpp's externs.
// The backend compiles the source once (NVRTC to a cubin, or the emulation's JIT) on the first
// call and launches the kernels of attention_launches() in order on the caller's stream.
#pragma once

#include <string>
#include <vector>

#include "plugins/cuda_nvrtc/cuda_printer.h"
#include "stax/sdk/backend.hpp"

namespace stax::cuda {

// The extern names, as extern_kernels() offers them.
const std::vector<std::string>& attention_externs();

// The kernels' entry points ("stax_flash_fwd_f32", ...), every dtype.
const std::vector<std::string>& attention_kernel_names();

// The compilable source: kernel_prelude(target), kKernelMarker, attention_params.h,
// flash_attention.cu; for HostEmulation also one EmuEntry per kernel, named
// emulation_entry_name(kernel), taking the parameter block as its only argument.
std::string attention_source(Target target);
std::string emulation_entry_name(const std::string& kernel);

// One kernel launch: its entry point, grid (blocks of kAttnRows = kAttnKeys threads) and the
// parameter block's bytes (passed by value).
struct AttentionLaunch {
  std::string kernel;
  unsigned grid = 0;
  unsigned block = 0;
};

// The launches of extern `name` on `tensors` (inputs, then the output), after checking them
// (PluginError naming the extern and the cause); fills `params` (its layout: attention_params.h,
// an opaque buffer here so that the header stays plain C++).
std::vector<AttentionLaunch> attention_launches(const std::string& name,
                                                const std::vector<sdk::TensorView>& tensors,
                                                size_t num_inputs,
                                                const std::vector<double>& scalars,
                                                std::vector<unsigned char>& params);

}  // namespace stax::cuda
