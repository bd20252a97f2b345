// A slow, simple interpreter of kernel descriptions for the toy_cpu test plugin: every value is
// a double (float32 results are rounded to float after each op), one replay per point. It
// exists to prove the whole path (description -> C ABI -> plugin -> run); it is not a reference.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "stax/sdk/loop_body.hpp"
#include "stax/sdk/ops_handler.hpp"
#include "stax/sdk/scalar_ops.hpp"

namespace toy {

using stax::sdk::Buffer;
using stax::sdk::DType;
using stax::sdk::Expr;
using stax::sdk::PluginError;
using stax::sdk::ReductionType;
using stax::sdk::Scalar;

// The ops of ops.def on doubles: stax_scalar's, and the integer-only bitwise ops (ABI 1.8) on
// the values read as int64.
namespace ops {
using namespace stax_scalar;
inline double bitwise_and(double a, double b) {
  return static_cast<double>(stax_scalar::bitwise_and((long long)a, (long long)b));
}
inline double bitwise_or(double a, double b) {
  return static_cast<double>(stax_scalar::bitwise_or((long long)a, (long long)b));
}
inline double bitwise_xor(double a, double b) {
  return static_cast<double>(stax_scalar::bitwise_xor((long long)a, (long long)b));
}
}  // namespace ops

inline double read(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::Float32: return static_cast<const float*>(base)[i];
    case DType::Float64: return static_cast<const double*>(base)[i];
    case DType::Int64: return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case DType::Int32: return static_cast<const int32_t*>(base)[i];
    case DType::Bool: return static_cast<const bool*>(base)[i] ? 1.0 : 0.0;
    default: throw PluginError(STAX_ERROR_UNSUPPORTED, "toy_cpu: unsupported dtype");
  }
}

inline void write(void* base, DType t, int64_t i, double v) {
  switch (t) {
    case DType::Float32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case DType::Float64: static_cast<double*>(base)[i] = v; break;
    case DType::Int64: static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v); break;
    case DType::Int32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v); break;
    case DType::Bool: static_cast<bool*>(base)[i] = v != 0.0; break;
    default: throw PluginError(STAX_ERROR_UNSUPPORTED, "toy_cpu: unsupported dtype");
  }
}

class Evaluator : public stax::sdk::OpsHandler<double> {
 public:
  Evaluator(const stax::sdk::Kernel& k, void* const* buffers) : k_(k), buffers_(buffers) {}

  void run() {
    auto ranges = k_.ranges();
    auto rranges = k_.reduction_ranges();
    iv_.assign(ranges.size(), 0);
    rv_.assign(rranges.size(), 0);
    int64_t n = k_.numel(), nr = k_.reduction_numel();
    for (int64_t p = 0; p < n; ++p) {
      unflatten(p, ranges, iv_);
      for (size_t b = 0; b < k_.num_bodies(); ++b) {
        stax::sdk::LoopBody body = k_.body(b);
        indirect_.assign(body.num_ops(), 0);
        acc_.assign(body.num_ops(), 0.0);
        acc_index_.assign(body.num_ops(), 0);
        started_.assign(body.num_ops(), false);
        types_.assign(body.num_ops(), ReductionType::Sum);
        if (!body.is_reduction_loop()) {
          pending_.clear();
          replay(body, *this);
          continue;
        }
        for (int64_t r = 0; r < nr; ++r) {
          unflatten(r, rranges, rv_);
          linear_r_ = r;
          pending_.clear();
          replay(body, *this);
        }
        for (const Pending& s : pending_) store_at(s.buffer, s.index, acc_value(s.op));
      }
    }
  }

#define STAX_UNARY_OP(name) \
  double name(double x) override { return fit(stax_scalar::name(x)); }
#define STAX_BINARY_OP(name) \
  double name(double a, double b) override { return fit(ops::name(a, b)); }
#define STAX_COMPARE_OP(name) \
  double name(double a, double b) override { return stax_scalar::name(a, b) ? 1.0 : 0.0; }
#include "stax/sdk/ops.def"

  double constant(Scalar v, DType) override { return v.as_double(); }
  double load(const Buffer& b, const Expr& e) override {
    return read(buffers_[b.index()], b.dtype(), b.offset() + index(e));
  }
  double masked_load(const Buffer& b, const Expr& e, double mask, Scalar other) override {
    return mask != 0.0 ? load(b, e) : other.as_double();
  }
  double index_expr(const Expr& e, DType) override { return static_cast<double>(index(e)); }
  double to_dtype(double x, DType t) override {
    if (t == DType::Float32) return static_cast<float>(x);
    if (t == DType::Bool) return x != 0.0 ? 1.0 : 0.0;
    if (t != DType::Float64 && t != DType::Float16 && t != DType::BFloat16)
      return static_cast<double>(stax_scalar::convert<long long>(x));
    return x;
  }
  double where(double c, double a, double b) override { return c != 0.0 ? a : b; }
  double indirect_indexing(double x, int64_t size, bool check, bool wrap) override {
    int64_t v = static_cast<int64_t>(x);
    if (wrap && v < 0) v += size;
    if (check && (v < 0 || v >= size))
      throw PluginError(STAX_ERROR_RUNTIME, "toy_cpu: index out of bounds: 0 <= " +
                                                std::to_string(v) + " < " + std::to_string(size));
    indirect_[op_] = v;
    return static_cast<double>(v);
  }
  // The value of a REDUCTION op in this domain is its own op index (it only feeds
  // store_reduction, which runs after the loop with the accumulator).
  double reduction(ReductionType t, DType, double v) override {
    double& a = acc_[op_];
    types_[op_] = t;
    if (!started_[op_]) {
      started_[op_] = true;
      a = v;
      acc_index_[op_] = linear_r_;
      return op_;
    }
    switch (t) {
      case ReductionType::Sum: a = fit(a + v); break;
      case ReductionType::Prod: a = fit(a * v); break;
      case ReductionType::Max: a = stax_scalar::maximum(a, v); break;
      case ReductionType::Min: a = stax_scalar::minimum(a, v); break;
      case ReductionType::Any: a = (a != 0.0 || v != 0.0) ? 1.0 : 0.0; break;
      case ReductionType::All: a = (a != 0.0 && v != 0.0) ? 1.0 : 0.0; break;
      case ReductionType::ArgMax:
        if (!(a != a) && (v > a || v != v)) a = v, acc_index_[op_] = linear_r_;
        break;
      case ReductionType::ArgMin:
        if (!(a != a) && (v < a || v != v)) a = v, acc_index_[op_] = linear_r_;
        break;
      default: throw PluginError(STAX_ERROR_UNSUPPORTED, "toy_cpu: reduction type");
    }
    return op_;
  }
  void store(const Buffer& b, const Expr& e, double v) override { store_at(b, index(e), v); }
  void store_reduction(const Buffer& b, const Expr& e, double reduction_op) override {
    pending_.push_back(Pending{b, index(e), static_cast<int32_t>(reduction_op)});
  }
  void begin_op(int32_t op, DType t) override {
    op_ = op;
    dtype_ = t;
  }

 private:
  struct Pending {
    Buffer buffer;
    int64_t index;
    int32_t op;  // the REDUCTION op
  };

  double fit(double x) const { return dtype_ == DType::Float32 ? static_cast<float>(x) : x; }
  int64_t index(const Expr& e) const {
    return stax::sdk::evaluate(e, iv_.data(), rv_.data(), indirect_.data());
  }
  double acc_value(int32_t op) const {
    ReductionType t = types_[op];
    if (t == ReductionType::ArgMax || t == ReductionType::ArgMin)
      return static_cast<double>(acc_index_[op]);
    return acc_[op];
  }
  void store_at(const Buffer& b, int64_t i, double v) {
    write(buffers_[b.index()], b.dtype(), b.offset() + i, v);
  }
  static void unflatten(int64_t p, stax::sdk::Span<int64_t> ranges, std::vector<int64_t>& out) {
    for (size_t k = ranges.size(); k-- > 0;) {
      out[k] = ranges[k] ? p % ranges[k] : 0;
      p = ranges[k] ? p / ranges[k] : 0;
    }
  }

  const stax::sdk::Kernel& k_;
  void* const* buffers_;
  std::vector<int64_t> iv_, rv_, indirect_;
  std::vector<double> acc_;
  std::vector<int64_t> acc_index_;
  std::vector<bool> started_;
  std::vector<Pending> pending_;
  std::vector<ReductionType> types_;
  int64_t linear_r_ = 0;
  int32_t op_ = 0;
  DType dtype_ = DType::Float32;
};

}  // namespace toy
