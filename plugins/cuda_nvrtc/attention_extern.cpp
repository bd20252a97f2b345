#include "plugins/cuda_nvrtc/attention_extern.h"

#include <algorithm>
#include <cstring>

#include "plugins/cuda_common/gpu_backend_support.h"
#include "plugins/cuda_nvrtc/attention_params.h"
#include "plugins/cuda_nvrtc/embedded_text.h"

namespace stax::cuda {

namespace {

using sdk::DType;
using sdk::PluginError;
using sdk::TensorView;

[[noreturn]] void bad(const std::string& kernel, const std::string& what) {
  throw PluginError(STAX_ERROR_INVALID_ARGUMENT,
                    "cuda_nvrtc extern kernel '" + kernel + "': " + what);
}

int64_t numel(const TensorView& t) {
  int64_t n = 1;
  for (int64_t d : t.sizes) n *= d;
  return n;
}

// The operand block of t: data with its offset folded in, row / column strides, batch strides.
stax_attn_operand operand(const TensorView& t) {
  stax_attn_operand o{};
  const size_t r = t.sizes.size();
  o.data = static_cast<const char*>(t.data) + t.offset * static_cast<int64_t>(dtype_bytes(t.dtype));
  o.rs = t.strides[r - 2];
  o.cs = t.strides[r - 1];
  for (size_t d = 0; d + 2 < r; ++d) o.bstride[d] = t.strides[d];
  return o;
}

// q, k, v, mask (null: none) and the scalars into p, checked against each other.
void fill(const std::string& name, stax_attn_params& p, const TensorView& q, const TensorView& k,
          const TensorView& v, const TensorView* mask, const std::vector<double>& scalars) {
  const size_t r = q.sizes.size();
  if (r < 2 || k.sizes.size() != r || v.sizes.size() != r || (mask && mask->sizes.size() != r))
    bad(name, "query, key, value (and mask) must have one rank >= 2");
  if (r - 2 > kAttnMaxDims)
    bad(name, "at most " + std::to_string(kAttnMaxDims) + " batch dims, got " + std::to_string(r - 2));
  if (q.dtype != DType::Float32 && q.dtype != DType::Float64) bad(name, "takes float32 or float64 tensors");
  if (k.dtype != q.dtype || v.dtype != q.dtype) bad(name, "query, key and value must share one dtype");
  const std::vector<int64_t> batch(q.sizes.begin(), q.sizes.end() - 2);
  for (const TensorView* t : {&k, &v, mask})
    if (t && std::vector<int64_t>(t->sizes.begin(), t->sizes.end() - 2) != batch)
      bad(name, "operands must share the batch dims");
  p.l = q.sizes[r - 2], p.e = q.sizes[r - 1], p.s = k.sizes[r - 2], p.ev = v.sizes[r - 1];
  if (k.sizes[r - 1] != p.e || v.sizes[r - 2] != p.s) bad(name, "query, key and value disagree");
  p.nbd = static_cast<int>(r - 2);
  p.batch = 1;
  for (size_t d = 0; d < batch.size(); ++d) p.batch *= p.bsize[d] = batch[d];
  p.q = operand(q), p.k = operand(k), p.v = operand(v);
  if (mask) {
    if (mask->sizes[r - 2] != p.l || mask->sizes[r - 1] != p.s) bad(name, "mask shape");
    if (mask->dtype == DType::Bool)
      p.mask_kind = 1;
    else if (mask->dtype == q.dtype)
      p.mask_kind = 2;
    else
      bad(name, "the mask must be bool or have the query's dtype");
    p.mask = operand(*mask);
  }
  p.causal = scalars[0] != 0;
  p.scale = scalars[1];
}

// The scalars (is_causal, scale; with dropout also threshold, keep_above, drop_scale) and, with
// dropout, the seed tensor (0-d int64, the last input) into p.
void fill_dropout(const std::string& name, stax_attn_params& p, const TensorView* seed,
                  const std::vector<double>& scalars) {
  if (!seed) {
    if (scalars.size() != 2) bad(name, "expects the scalars is_causal and scale");
    return;
  }
  if (seed->dtype != DType::Int64 || !seed->sizes.empty() || !seed->data)
    bad(name, "the dropout seed must be a 0-d int64 tensor");
  if (scalars.size() != 5)
    bad(name, "expects the scalars is_causal, scale, threshold, keep_above, drop_scale");
  p.dropout = 1;
  p.drop_seed = static_cast<const char*>(seed->data) + seed->offset * 8;
  p.drop_threshold = scalars[2];
  p.drop_keep_above = scalars[3] != 0;
  p.drop_scale = scalars[4];
}

const void* flat(const std::string& name, const TensorView& t, int64_t want) {
  if (t.sizes.size() != 1 || t.sizes[0] != want || (want > 1 && t.strides[0] != 1))
    bad(name, "packed operands must be contiguous 1-D tensors of " + std::to_string(want) +
                  " elements");
  return static_cast<const char*>(t.data) + t.offset * static_cast<int64_t>(dtype_bytes(t.dtype));
}

unsigned grid_for(int64_t tasks) {
  return static_cast<unsigned>(std::clamp<int64_t>(tasks, 1, 65535));  // grid-stride beyond
}

}  // namespace

const std::vector<std::string>& attention_externs() {
  static const std::vector<std::string> names{"flash_attention", "flash_attention_backward",
                                              "flash_attention_dropout",
                                              "flash_attention_dropout_backward"};
  return names;
}

const std::vector<std::string>& attention_kernel_names() {
  static const std::vector<std::string> names{"stax_flash_fwd_f32",    "stax_flash_fwd_f64",
                                              "stax_flash_bwd_kv_f32", "stax_flash_bwd_kv_f64",
                                              "stax_flash_bwd_q_f32",  "stax_flash_bwd_q_f64"};
  return names;
}

std::string emulation_entry_name(const std::string& kernel) { return "stax_emu_" + kernel; }

std::string attention_source(Target target) {
  std::string s = kernel_prelude(target) + kKernelMarker + "\n" + embedded::kAttentionParams +
                  embedded::kFlashAttention;
  if (target == Target::HostEmulation)
    for (const std::string& k : attention_kernel_names())
      s += "extern \"C\" void " + emulation_entry_name(k) +
           "(stax_emu_state* state, void* const* args) {\n  stax_emu = state;\n  " + k +
           "(*static_cast<const stax_attn_params*>(args[0]));\n}\n";
  return s;
}

std::vector<AttentionLaunch> attention_launches(const std::string& name,
                                                const std::vector<TensorView>& t,
                                                size_t num_inputs,
                                                const std::vector<double>& scalars,
                                                std::vector<unsigned char>& params) {
  const bool fwd = name == "flash_attention" || name == "flash_attention_dropout";
  const bool dropout = name == "flash_attention_dropout" || name == "flash_attention_dropout_backward";
  if (!fwd && !dropout && name != "flash_attention_backward") bad(name, "unknown extern");
  const size_t lo = (fwd ? 3 : 5) + (dropout ? 1 : 0);
  if (num_inputs < lo || num_inputs > lo + 1 || t.size() != num_inputs + 1)
    bad(name, "takes " + std::to_string(lo) + " or " + std::to_string(lo + 1) +
                  " inputs and 1 output, got " + std::to_string(num_inputs) + " inputs and " +
                  std::to_string(t.size() - std::min(t.size(), num_inputs)) + " outputs");
  for (const TensorView& v : t) {
    if (!v.data && numel(v) > 0) bad(name, "null data pointer");
    if (v.strides.size() != v.sizes.size()) bad(name, "sizes and strides differ in rank");
  }
  stax_attn_params p{};
  const size_t first = fwd ? 0 : 1;
  if (scalars.size() < 2) bad(name, "expects the scalars is_causal and scale");
  fill(name, p, t[first], t[first + 1], t[first + 2], num_inputs == lo + 1 ? &t[first + 3] : nullptr,
       scalars);
  fill_dropout(name, p, dropout ? &t[num_inputs - 1] : nullptr, scalars);
  // The saved packed output is the last input before the seed (the backward).
  const size_t saved = num_inputs - 1 - (dropout ? 1 : 0);
  const int64_t rows = p.batch * p.l;
  const int64_t packed = rows * p.ev + rows;
  const std::string suffix = t[first].dtype == DType::Float32 ? "_f32" : "_f64";
  const unsigned qgrid = grid_for(p.batch * ((p.l + kAttnRows - 1) / kAttnRows));
  std::vector<AttentionLaunch> launches;
  if (fwd) {
    p.out = const_cast<void*>(flat(name, t[num_inputs], packed));
    launches.push_back({"stax_flash_fwd" + suffix, qgrid, kAttnRows});
  } else {
    p.dout = flat(name, t[0], packed);
    p.saved = flat(name, t[saved], packed);
    p.grads = const_cast<void*>(flat(name, t[num_inputs], rows * p.e + p.batch * p.s * (p.e + p.ev)));
    launches.push_back({"stax_flash_bwd_kv" + suffix,
                        grid_for(p.batch * ((p.s + kAttnKeys - 1) / kAttnKeys)), kAttnKeys});
    launches.push_back({"stax_flash_bwd_q" + suffix, qgrid, kAttnRows});
  }
  // Empty shapes need no special case: the kernels' task loops run zero times (the dK / dV
  // kernel still zeroes the rows of keys that no query sees).
  params.resize(sizeof p);
  std::memcpy(params.data(), &p, sizeof p);
  return launches;
}

}  // namespace stax::cuda
