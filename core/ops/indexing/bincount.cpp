// bincount(self, weights=None, minlength=0): the count (or the weight sum) of each value of a 1-d
// non-negative integer tensor. Its size, max(self) + 1 (at least minlength), is known only from
// the values: like masked_select (runtime_sized.cpp, docs/core_aten.md "Data-dependent sizes")
// the result's meta holds an upper bound with dim 0 marked runtime_sized, the interpreter kernel
// (a counted fallback in compiled graphs) makes a result of the size it finds, and the graph can
// only return it. The bound is the values' range for int8 / uint8 / int16 / uint16 inputs (128,
// 256, 32768, 65536) or minlength if larger; wider integers have no bound before the values run,
// so minlength must give one (a clear error otherwise), and a value at or above it fails the run
// with the runtime's size check, never a wrong static shape. The result dtype is torch's: int64
// counts, float32 sums of float32 weights (accumulated in float, as torch's CPU kernel), float64
// sums of any other weights. Not differentiable (torch has no derivative for it).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

constexpr const char* kOnlyIntegers = "bincount only supports 1-d non-negative integral inputs.";

// torch's spelling of a dtype in "not implemented for" messages.
std::string torch_name(DType t) {
  switch (t) {
    case DType::Bool: return "Bool";
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
    default: return std::string(dtype_name(t));
  }
}

// The number of values an integer dtype can hold from 0 up, when small enough to be a bound.
int64_t value_bound(DType t) {
  switch (t) {
    case DType::Int8: return 128;
    case DType::UInt8: return 256;
    case DType::Int16: return 32768;
    case DType::UInt16: return 65536;
    default: return 0;
  }
}

bool has_weights(const CallArgs& c) {
  return c.has("weights") && !c.get("weights").is_none();
}

TensorMeta bincount_rule(const CallArgs& c) {
  const TensorMeta& x = c.tensor("self");
  if (x.dtype == DType::Bool || is_floating(x.dtype) || is_complex(x.dtype) ||
      x.dtype == DType::UInt32 || x.dtype == DType::UInt64)
    c.fail("\"bincount_cpu\" not implemented for '" + torch_name(x.dtype) + "'");
  if (x.dim() != 1) c.fail(kOnlyIntegers);
  const int64_t minlength = c.get("minlength").to_int();
  if (minlength < 0) c.fail("minlength should be >= 0");
  DType out = DType::Int64;
  if (has_weights(c)) {
    const TensorMeta& w = c.tensor("weights");
    if (w.dim() != 1 || w.sizes[0] != x.sizes[0])
      c.fail("weights should be 1-d and have the same length as input");
    out = w.dtype == DType::Float32 ? DType::Float32 : DType::Float64;
  }
  const int64_t range = value_bound(x.dtype);
  if (range == 0 && minlength == 0)
    c.fail("bincount of " + std::string(dtype_name(x.dtype)) +
           " values: the result's size, max(input) + 1, has no bound before the values are "
           "known, and Stax's run-time-sized results need one: pass minlength >= max(input) + 1 "
           "(a larger value fails the run), or count int8 / uint8 / int16 / uint16 values");
  TensorMeta m = TensorMeta::contiguous({std::max(range, minlength)}, out, x.device);
  m.runtime_sized_dims = 1u;
  return m;
}

Tensor bincount_kernel(const KernelContext& c) {
  const Tensor& x = c.tensor("self");
  const int64_t n = x.numel();
  int64_t size = c.arg("minlength").to_int();
  std::vector<int64_t> bins(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = x.get_int(i);
    if (v < 0) throw Error("interpreter", "", kOnlyIntegers);
    bins[static_cast<size_t>(i)] = v;
    size = std::max(size, v + 1);
  }
  const DType out = c.out_meta().dtype;
  const Arg& weights = c.arg("weights");
  if (weights.is_absent() || weights.is_none()) {
    std::vector<int64_t> counts(static_cast<size_t>(size), 0);
    for (int64_t b : bins) ++counts[static_cast<size_t>(b)];
    return Tensor::from_vector({size}, counts, out);
  }
  const Tensor& w = c.tensor("weights");
  if (out == DType::Float32) {  // torch accumulates float32 weights in float
    std::vector<float> sums(static_cast<size_t>(size), 0.0f);
    for (int64_t i = 0; i < n; ++i)
      sums[static_cast<size_t>(bins[static_cast<size_t>(i)])] += static_cast<float>(w.get_double(i));
    return Tensor::from_vector({size}, sums, out);
  }
  std::vector<double> sums(static_cast<size_t>(size), 0.0);
  for (int64_t i = 0; i < n; ++i) sums[static_cast<size_t>(bins[static_cast<size_t>(i)])] += w.get_double(i);
  return Tensor::from_vector({size}, sums, out);
}

}  // namespace

void register_bincount_ops(OpRegistry& r) {
  r.add("bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor",
        OpCategory::Indexing, Promotion::None, bincount_rule)
      .differentiable = false;
}

void register_bincount_kernels(InterpreterTable& t) { t.add("bincount.default", bincount_kernel); }

}  // namespace stax
