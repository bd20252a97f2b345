// cpu_cpp's fused attention externs (docs/attention.md): "flash_attention" and
// "flash_attention_backward", the SDK's flash kernel (stax/sdk/flash_attention.hpp) on the
// backend's thread pool. The tensors and scalars are those of the ops _stax_flash_attention and
// _stax_flash_attention_backward (core/ops/nn/flash_attention.cpp):
//   forward:  q, k, v, [mask] -> packed (out, then lse); scalars: is_causal, scale
//   backward: grad, q, k, v, [mask], packed -> dq, dk, dv (one 1-D buffer); same scalars
// and "flash_attention_dropout" / "flash_attention_dropout_backward": the same with the dropout
// seed (a 0-d int64 tensor) as the last input and the scalars is_causal, scale, threshold,
// keep_above, drop_scale (stax/sdk/flash_attention.hpp, DROPOUT).
// The interpreter runs the same kernel on one thread: the same bits.
#include <string>
#include <vector>

#include "plugins/cpu_cpp/extern_kernels.h"
#include "stax/sdk/flash_attention.hpp"

namespace stax::cpu {

namespace {

using sdk::DType;
using sdk::PluginError;
using sdk::TensorView;
namespace attn = sdk::attention;

[[noreturn]] void bad(const std::string& kernel, const std::string& what) {
  throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "cpu_cpp extern kernel '" + kernel + "': " + what);
}

int64_t numel(const TensorView& t) {
  int64_t n = 1;
  for (int64_t d : t.sizes) n *= d;
  return n;
}

// Offsets that must outlive the problem.
struct Offsets {
  std::vector<int64_t> q, k, v, m;
};

template <class T, class E>
attn::Operand<E> operand(const TensorView& t, std::vector<int64_t>& offsets) {
  offsets = attn::batch_offsets(t.sizes, t.strides, t.offset);
  size_t r = t.sizes.size();
  return {static_cast<const E*>(t.data), offsets.data(), t.strides[r - 2], t.strides[r - 1]};
}

// q, k, v, mask (null: none) into p, checked against each other.
template <class T>
void fill(const std::string& name, attn::Problem<T>& p, const TensorView& q, const TensorView& k,
          const TensorView& v, const TensorView* mask, const std::vector<double>& scalars,
          Offsets& o) {
  const size_t r = q.sizes.size();
  if (r < 2 || k.sizes.size() != r || v.sizes.size() != r)
    bad(name, "query, key and value must have one rank >= 2");
  for (const TensorView* t : {&k, &v, mask})
    if (t && t != mask && t->dtype != q.dtype) bad(name, "query, key and value must share one dtype");
  std::vector<int64_t> batch(q.sizes.begin(), q.sizes.end() - 2);
  for (const TensorView* t : {&k, &v, mask})
    if (t && std::vector<int64_t>(t->sizes.begin(), t->sizes.end() - 2) != batch)
      bad(name, "operands must share the batch dims");
  p.l = q.sizes[r - 2], p.e = q.sizes[r - 1], p.s = k.sizes[r - 2], p.ev = v.sizes[r - 1];
  if (k.sizes[r - 1] != p.e || v.sizes[r - 2] != p.s) bad(name, "query, key and value disagree");
  p.batch = 1;
  for (int64_t d : batch) p.batch *= d;
  p.q = operand<T, T>(q, o.q);
  p.k = operand<T, T>(k, o.k);
  p.v = operand<T, T>(v, o.v);
  if (mask) {
    if (mask->sizes[r - 2] != p.l || mask->sizes[r - 1] != p.s) bad(name, "mask shape");
    if (mask->dtype == DType::Bool)
      p.mask_bool = operand<T, uint8_t>(*mask, o.m);
    else if (mask->dtype == q.dtype)
      p.mask_add = operand<T, T>(*mask, o.m);
    else
      bad(name, "the mask must be bool or have the query's dtype");
  }
  if (scalars.size() != 2 && scalars.size() != 5)
    bad(name, "expects the scalars is_causal and scale (and, with dropout, threshold, keep_above, scale)");
  p.causal = scalars[0] != 0;
  p.scale = static_cast<T>(scalars[1]);
}

// The dropout seed (input `seed`, 0-d int64) and scalars 2..4 into p.
template <class T>
void fill_dropout(const std::string& name, attn::Problem<T>& p, const TensorView& seed,
                  const std::vector<double>& scalars) {
  if (seed.dtype != DType::Int64 || !seed.sizes.empty() || !seed.data)
    bad(name, "the dropout seed must be a 0-d int64 tensor");
  if (scalars.size() != 5) bad(name, "expects the scalars is_causal, scale, threshold, keep_above, drop_scale");
  p.dropout = true;
  p.drop_seed = static_cast<uint64_t>(static_cast<const int64_t*>(seed.data)[seed.offset]);
  p.drop_threshold = static_cast<T>(scalars[2]);
  p.drop_keep_above = scalars[3] != 0;
  p.drop_scale = static_cast<T>(scalars[4]);
}

template <class T>
T* flat_data(const std::string& name, const TensorView& t, int64_t want) {
  if (t.sizes.size() != 1 || t.sizes[0] != want || (want > 1 && t.strides[0] != 1))
    bad(name, "packed operands must be contiguous 1-D tensors of " + std::to_string(want) +
                  " elements");
  return static_cast<T*>(t.data) + t.offset;
}

template <class T>
void forward(const std::string& name, bool dropout, const std::vector<TensorView>& t, size_t num_inputs,
             const std::vector<double>& s, const attn::Context& c) {
  attn::Forward<T> p;
  Offsets o;
  const size_t tensors = num_inputs - (dropout ? 1 : 0);
  fill<T>(name, p, t[0], t[1], t[2], tensors == 4 ? &t[3] : nullptr, s, o);
  if (dropout) fill_dropout<T>(name, p, t[num_inputs - 1], s);
  else if (s.size() != 2) bad(name, "expects the scalars is_causal and scale");
  const int64_t rows = p.batch * p.l;
  p.out = flat_data<T>(name, t[num_inputs], rows * p.ev + rows);
  p.lse = p.out + rows * p.ev;
  attn::forward(p, c);
}

template <class T>
void backward(const std::string& name, bool dropout, const std::vector<TensorView>& t, size_t num_inputs,
              const std::vector<double>& s, const attn::Context& c) {
  attn::Backward<T> p;
  Offsets o;
  const size_t tensors = num_inputs - (dropout ? 1 : 0);
  fill<T>(name, p, t[1], t[2], t[3], tensors == 6 ? &t[4] : nullptr, s, o);
  if (dropout) fill_dropout<T>(name, p, t[num_inputs - 1], s);
  else if (s.size() != 2) bad(name, "expects the scalars is_causal and scale");
  const int64_t rows = p.batch * p.l;
  const int64_t packed = rows * p.ev + rows;
  p.out = flat_data<T>(name, t[tensors - 1], packed);
  p.lse = p.out + rows * p.ev;
  p.dout = flat_data<T>(name, t[0], packed);
  p.dlse = p.dout + rows * p.ev;
  p.dq = flat_data<T>(name, t[num_inputs], rows * p.e + p.batch * p.s * (p.e + p.ev));
  p.dk = p.dq + rows * p.e;
  p.dv = p.dk + p.batch * p.s * p.e;
  attn::backward(p, c);
}

}  // namespace

void run_flash_attention(const std::string& name, const std::vector<TensorView>& tensors,
                         size_t num_inputs, const std::vector<double>& scalars, ThreadPool* pool) {
  const bool fwd = name == "flash_attention" || name == "flash_attention_dropout";
  const bool dropout = name == "flash_attention_dropout" || name == "flash_attention_dropout_backward";
  const size_t lo = (fwd ? 3 : 5) + (dropout ? 1 : 0);
  if (num_inputs < lo || num_inputs > lo + 1 || tensors.size() != num_inputs + 1)
    bad(name, "takes " + std::to_string(lo) + " or " + std::to_string(lo + 1) +
                  " inputs and 1 output, got " + std::to_string(num_inputs) + " inputs and " +
                  std::to_string(tensors.size() - std::min(tensors.size(), num_inputs)) +
                  " outputs");
  for (const TensorView& v : tensors) {
    if (!v.data && numel(v) > 0) bad(name, "null data pointer");
    if (v.strides.size() != v.sizes.size()) bad(name, "sizes and strides differ in rank");
  }
  attn::Context c;
  if (pool && pool->threads() > 1)
    c.parallel_for = [pool](int64_t tasks, const std::function<void(int64_t)>& task) {
      pool->parallel_for(tasks, task);
    };
  const DType dt = tensors[fwd ? 0 : 1].dtype;
  if (dt == DType::Float32)
    fwd ? forward<float>(name, dropout, tensors, num_inputs, scalars, c)
        : backward<float>(name, dropout, tensors, num_inputs, scalars, c);
  else if (dt == DType::Float64)
    fwd ? forward<double>(name, dropout, tensors, num_inputs, scalars, c)
        : backward<double>(name, dropout, tensors, num_inputs, scalars, c);
  else
    bad(name, "takes float32 or float64 tensors");
}

}  // namespace stax::cpu
