// cuda_triton's fused-attention externs "flash_attention" and "flash_attention_backward"
// (docs/attention.md, "The GPU plugins"): the Triton kernels of flash_attention.py and, for the
// tensors and scalars of the ops _stax_flash_attention / _stax_flash_attention_backward
// (core/ops/nn/flash_attention.cpp), the launches: which kernel, its grid, its arguments and
// constexprs; and "flash_attention_dropout" / "flash_attention_dropout_backward" (docs/attention.md
// "Dropout"): the same kernels with DROP set, the dropout seed (a 0-d int64 tensor) the last input,
// the scalars is_causal, scale, threshold, keep_above, drop_scale, as cpu_cpp's externs. The
// backend runs them under Triton's interpreter in its workers, or compiles each (kernel, dtype,
// constexprs) once to a cubin (compile_attention_kernel) and launches it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/cuda_triton/triton_worker.h"
#include "stax/sdk/backend.hpp"

namespace stax::triton {

// The extern names, as extern_kernels() offers them.
const std::vector<std::string>& attention_externs();

// flash_attention.py, verbatim (a module of @triton.jit kernels).
const std::string& attention_module_text();

// One tensor the launches read or write: its first accessed byte and the bytes up to one past
// its last accessed element (strides >= 0), and its dtype for the interpreter ("float32").
struct AttentionTensor {
  char* base = nullptr;
  size_t bytes = 0;
  std::string dtype;
  bool written = false;  // the extern's output
};

// An argument: a tensor (index into AttentionPlan::tensors) or a 64-bit integer.
struct AttentionArg {
  bool is_tensor = false;
  size_t tensor = 0;
  int64_t value = 0;
};

struct AttentionLaunch {
  std::string kernel;      // "stax_attn_fwd", "stax_attn_bwd_kv", "stax_attn_bwd_q"
  int64_t grid = 0;        // programs
  std::vector<AttentionArg> args;  // the kernel's non-constexpr parameters, in order
  std::vector<std::string> signature;  // Triton's type of each ("*fp32", "*u8", "i64")
  std::vector<std::pair<std::string, int64_t>> constexprs;
  int num_warps = 4;
  std::string constexpr_text() const;  // "CAUSAL:1,MASK:0,..." (the worker's format)
  std::string cache_key() const;       // kernel, signature and constexprs: one cubin each
};

struct AttentionPlan {
  std::vector<AttentionTensor> tensors;
  std::vector<AttentionLaunch> launches;
};

// The launches of extern `name` on `tensors` (inputs, then the output), after checking them
// (a PluginError naming the extern and the cause).
AttentionPlan plan_attention(const std::string& name, const std::vector<sdk::TensorView>& tensors,
                             size_t num_inputs, const std::vector<double>& scalars);

// A cubin of one launch's kernel for sm_<cc> (the worker's COMPILE; the module must be loaded
// under `key` in `w`, whose lock the caller holds).
struct AttentionCubin {
  std::vector<char> cubin;
  std::string function;
  unsigned num_warps = 4;
  unsigned shared = 0;
  size_t num_params = 0;
};
AttentionCubin compile_attention_kernel(Worker& w, const std::string& key,
                                        const AttentionLaunch& launch, int cc);

// Loads flash_attention.py into `w` under `key`, exposing `kernel` (the caller holds the lock).
void load_attention_kernel(Worker& w, const std::string& key, const std::string& kernel);

}  // namespace stax::triton
