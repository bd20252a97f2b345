#include "plugins/cuda_triton/triton_printer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "stax/sdk/ops_handler.hpp"
#include "stax/sdk/source_writer.hpp"

namespace stax::triton {

namespace {

using sdk::Buffer;
using sdk::DType;
using sdk::Expr;
using sdk::ExprKind;
using sdk::ReductionType;
using sdk::Scalar;

// Triton's element types.
const char* tl_type(DType d) {
  switch (d) {
    case DType::Float32: return "tl.float32";
    case DType::Float64: return "tl.float64";
    case DType::Float16: return "tl.float16";
    case DType::BFloat16: return "tl.bfloat16";
    case DType::Int64: return "tl.int64";
    case DType::Int32: return "tl.int32";
    case DType::Int8: return "tl.int8";
    case DType::UInt8: return "tl.uint8";
    case DType::Bool: return "tl.int1";
    case DType::Int16: return "tl.int16";
    case DType::UInt16: return "tl.uint16";
    case DType::UInt32: return "tl.uint32";
    case DType::UInt64: return "tl.uint64";
  }
  return "?";
}

const char* signature_type(DType d) {
  switch (d) {
    case DType::Float32: return "*fp32";
    case DType::Float64: return "*fp64";
    case DType::Float16: return "*fp16";
    case DType::BFloat16: return "*bf16";
    case DType::Int64: return "*i64";
    case DType::Int32: return "*i32";
    case DType::Int8: return "*i8";
    case DType::UInt8: return "*u8";
    case DType::Bool: return "*i1";
    case DType::Int16: return "*i16";
    case DType::UInt16: return "*u16";
    case DType::UInt32: return "*u32";
    case DType::UInt64: return "*u64";
  }
  return "?";
}

// The type values of a dtype are held in (scalar_ops.hpp): half types in float32, narrow
// integers in int64; uint64 in uint64 (this printer tracks the held type only, so a uint64 value
// converts to floats as unsigned).
DType compute_dtype(DType d) {
  switch (d) {
    case DType::Float16:
    case DType::BFloat16: return DType::Float32;
    case DType::Int32:
    case DType::Int8:
    case DType::UInt8:
    case DType::Int16:
    case DType::UInt16:
    case DType::UInt32: return DType::Int64;
    default: return d;
  }
}

int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

bool uses_vars(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Const: return false;
    case ExprKind::IterVar:
    case ExprKind::ReduceVar:
    case ExprKind::Indirect: return true;
    default: return uses_vars(e.lhs()) || uses_vars(e.rhs());
  }
}

std::string float_literal(double x) {
  if (std::isnan(x)) return "float('nan')";
  if (std::isinf(x)) return x < 0 ? "float('-inf')" : "float('inf')";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// The shortest decimal text that reads back as the same double (0.7071067811865476).
std::string shortest_float32(double x) {
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string int_literal(int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807 - 1)";
  return std::to_string(v);
}

// The statements of one body.
struct Printed {
  std::vector<std::string> prologue;  // before the reduction loop (looped accumulators)
  std::vector<std::string> lines;     // the body
  std::vector<std::string> epilogue;  // after the loop: final reduces, then stores
};

class TritonOps : public sdk::OpsHandler<std::string> {
 public:
  TritonOps(const sdk::Kernel& k, const TritonLaunch& launch) : k_(k), launch_(launch) {
    int counts[3] = {0, 0, 0};
    for (size_t i = 0; i < k.num_buffers(); ++i) {
      Buffer b = k.buffer(i);
      int slot = b.is_input() ? 0 : (b.role() == sdk::BufferRole::Temp ? 2 : 1);
      const char* prefix = slot == 0 ? "in_ptr" : (slot == 2 ? "tmp_ptr" : "out_ptr");
      names_.push_back(prefix + std::to_string(counts[slot]++));
    }
  }

  const std::vector<std::string>& buffer_names() const { return names_; }

  Printed print(const sdk::LoopBody& body) {
    out_ = Printed();
    cse_.clear();
    loads_of_.clear();
    reduction_body_ = body.is_reduction_loop();
    op_values_.assign(body.num_ops(), std::string());
    sdk::replay(body, *this);
    return std::move(out_);
  }

  // ---- names ----
  static std::string iter_var(int32_t k) { return "x" + std::to_string(k); }
  static std::string reduce_var(int32_t k) { return "r0_" + std::to_string(k); }
  // The block shape of a body's values and its mask.
  std::string shape() const {
    if (!launch_.reduction) return "[XBLOCK]";
    return reduction_body_ ? "[XBLOCK, RBLOCK]" : "[XBLOCK, 1]";
  }
  std::string mask() const { return reduction_body_ ? "xmask & rmask" : "xmask"; }

  std::string format_index(const Expr& e) const {
    sdk::ExprSyntax s;
    s.iter_var = [](int32_t k) { return iter_var(k); };
    s.reduce_var = [](int32_t k) { return reduce_var(k); };
    s.indirect = [this](int32_t op) { return op_values_.at(static_cast<size_t>(op)); };
    s.floordiv = " // ";
    s.mod = " % ";
    s.min = "tl.minimum";
    s.max = "tl.maximum";
    return sdk::format_expr(e, s);
  }

  // ---- ops.def ----
  std::string neg(std::string x) override { x = mat(x);
    if (dt(x) == DType::Bool) return x;
    return emit("-" + x);
  }
  std::string abs(std::string x) override { x = mat(x);
    if (dt(x) == DType::Bool) return x;
    if (fl(x)) return emit("tl.abs(" + x + ")");
    return emit("tl.where(" + x + " < 0, -" + x + ", " + x + ")");
  }
  std::string exp(std::string x) override { x = mat(x); return math("exp", x); }
  std::string exp2(std::string x) override { x = mat(x); return math("exp2", x); }
  std::string expm1(std::string x) override { x = mat(x); return math("expm1", x); }
  std::string log(std::string x) override { x = mat(x); return math("log", x); }
  std::string log2(std::string x) override { x = mat(x); return math("log2", x); }
  std::string log10(std::string x) override { x = mat(x); return math("log10", x); }
  std::string log1p(std::string x) override { x = mat(x); return math("log1p", x); }
  std::string sqrt(std::string x) override { x = mat(x);
    need_float(x, "sqrt");
    return emit(sqrt_rn(x));
  }
  std::string rsqrt(std::string x) override { x = mat(x);
    need_float(x, "rsqrt");
    return emit(div(one(x), sqrt_rn(x)));
  }
  std::string sin(std::string x) override { x = mat(x); return math("sin", x); }
  std::string cos(std::string x) override { x = mat(x); return math("cos", x); }
  std::string tan(std::string x) override { x = mat(x); return math("tan", x); }
  std::string tanh(std::string x) override { x = mat(x); return math("tanh", x); }
  std::string sigmoid(std::string x) override { x = mat(x);
    need_float(x, "sigmoid");
    return emit(div(one(x), "(" + one(x) + " + libdevice.exp(-" + x + "))"));
  }
  std::string erf(std::string x) override { x = mat(x); return math("erf", x); }
  std::string relu(std::string x) override { x = mat(x);
    if (dt(x) == DType::Bool) return x;
    return emit("tl.where(" + x + " < 0, " + zero(x) + ", " + x + ")");
  }
  std::string reciprocal(std::string x) override { x = mat(x);
    need_float(x, "reciprocal");
    return emit(div(one(x), x));
  }
  std::string sign(std::string x) override { x = mat(x);
    if (dt(x) == DType::Bool) return x;
    std::string p = fl(x) ? "1.0" : "1", m = fl(x) ? "-1.0" : "-1";
    // NaN and -0.0 give +0 (scalar_ops.hpp's sign, as torch)
    std::string z = fl(x) ? "0.0" : "0";
    return emit("tl.where(" + x + " > 0, " + typed(p, x) + ", tl.where(" + x + " < 0, " +
                typed(m, x) + ", " + typed(z, x) + "))");
  }
  std::string floor(std::string x) override { x = mat(x); return fl(x) ? math("floor", x) : x; }
  std::string ceil(std::string x) override { x = mat(x); return fl(x) ? math("ceil", x) : x; }
  std::string round(std::string x) override { x = mat(x); return fl(x) ? math("rint", x) : x; }
  std::string trunc(std::string x) override { x = mat(x); return fl(x) ? math("trunc", x) : x; }
  std::string logical_not(std::string x) override { x = mat(x); return emit_bool("(" + x + " == 0)"); }
  std::string isnan(std::string x) override { x = mat(x);
    return emit_bool("(" + x + " != " + x + ")");  // false for integers
  }

  std::string add(std::string a, std::string b) override {
    if (lit(a) && lit(b)) a = mat(a);
    return emit(dt(a) == DType::Bool ? "(" + a + " | " + b + ")" : "(" + a + " + " + b + ")");
  }
  std::string sub(std::string a, std::string b) override {
    if (lit(a) && lit(b)) a = mat(a);
    return emit(dt(a) == DType::Bool ? "(" + a + " ^ " + b + ")" : "(" + a + " - " + b + ")");
  }
  std::string mul(std::string a, std::string b) override {
    if (lit(a) && lit(b)) a = mat(a);
    return emit(dt(a) == DType::Bool ? "(" + a + " & " + b + ")" : "(" + a + " * " + b + ")");
  }
  std::string truediv(std::string a, std::string b) override {
    a = mat(a);
    b = mat(b);
    if (fl(a)) return emit(div(a, b));
    return helper("stax_int_truediv", a, b);
  }
  std::string floordiv(std::string a, std::string b) override {
    a = mat(a);
    b = mat(b);
    return helper(fl(a) ? "stax_float_floordiv" : "stax_int_floordiv", a, b);
  }
  std::string mod(std::string a, std::string b) override {
    a = mat(a);
    b = mat(b);
    return helper(fl(a) ? "stax_float_mod" : "stax_int_mod", a, b);
  }
  std::string pow(std::string a, std::string b) override {
    a = mat(a);
    b = mat(b);
    return helper(fl(a) ? "stax_float_pow" : "stax_int_pow", a, b);
  }
  std::string maximum(std::string a, std::string b) override {
    a = mat(a);
    b = mat(b);
    if (dt(a) == DType::Bool) return emit("(" + a + " | " + b + ")");
    return helper(fl(a) ? "stax_maximum" : "tl.maximum", a, b);
  }
  std::string minimum(std::string a, std::string b) override {
    a = mat(a);
    b = mat(b);
    if (dt(a) == DType::Bool) return emit("(" + a + " & " + b + ")");
    return helper(fl(a) ? "stax_minimum" : "tl.minimum", a, b);
  }
  std::string logical_and(std::string a, std::string b) override {
    if (lit(a) && lit(b)) a = mat(a);
    return emit_bool("((" + a + " != 0) & (" + b + " != 0))");
  }
  std::string logical_or(std::string a, std::string b) override {
    if (lit(a) && lit(b)) a = mat(a);
    return emit_bool("((" + a + " != 0) | (" + b + " != 0))");
  }
  std::string eq(std::string a, std::string b) override { return cmp(a, "==", b); }
  std::string ne(std::string a, std::string b) override { return cmp(a, "!=", b); }
  std::string lt(std::string a, std::string b) override { return cmp(a, "<", b); }
  std::string le(std::string a, std::string b) override { return cmp(a, "<=", b); }
  std::string gt(std::string a, std::string b) override { return cmp(a, ">", b); }
  std::string ge(std::string a, std::string b) override { return cmp(a, ">=", b); }
  // ABI 1.8: integers on their int64 bits, bool blocks (int1) as the logical ops.
  std::string bitwise_and(std::string a, std::string b) override { return bitwise(a, "&", b); }
  std::string bitwise_or(std::string a, std::string b) override { return bitwise(a, "|", b); }
  std::string bitwise_xor(std::string a, std::string b) override { return bitwise(a, "^", b); }

  // ---- special ops ----
  std::string constant(Scalar v, DType dtype) override {
    DType c = compute_dtype(dtype);
    if (dtype == DType::Float32 && std::isfinite(v.as_double())) {
      // A Python float next to a float32 block is a float32 operand (Listing 5.4's spelling);
      // mat() makes it a block where it would stand alone.
      std::string lit = shortest_float32(v.as_double());
      literals_.insert(lit);
      dtypes_[lit] = DType::Float32;
      return lit;
    }
    std::string lit = dtype == DType::Bool ? (v.as_int() ? "1" : "0")
                      : sdk::is_floating(dtype) ? float_literal(v.as_double())
                                                : int_literal(v.as_int());
    return emit("tl.full([1], " + lit + ", " + tl_type(c) + ")");
  }

  std::string load(const Buffer& b, const Expr& index) override {
    return load_impl(b, index, "", Scalar::integer(0));
  }
  std::string masked_load(const Buffer& b, const Expr& index, std::string m,
                          Scalar other) override {
    return load_impl(b, index, m, other);
  }

  std::string index_expr(const Expr& index, DType dtype) override {
    std::string idx = format_index(index);
    if (!uses_vars(index))
      return emit("tl.full([1], " + idx + ", " + tl_type(compute_dtype(dtype)) + ")");
    return emit("(" + idx + ").to(" + tl_type(compute_dtype(dtype)) + ")");
  }

  std::string to_dtype(std::string x, DType to) override {
    x = mat(x);
    DType from = dt(x);
    if (to == DType::Bool) {
      if (from == DType::Bool) return x;
      return emit_bool("(" + x + " != 0)");
    }
    std::string v = x;
    DType held = from;
    if (sdk::is_floating(from) && to == DType::UInt64) {
      v = "stax_float_to_uint64(" + v + ")";  // [2^63, 2^64) exactly, as scalar_ops' convert
      held = DType::Int64;
    } else if (sdk::is_floating(from) && !sdk::is_floating(to)) {
      v = "stax_float_to_int64(" + v + ")";  // NaN, inf, out of range -> INT64_MIN (scalar_ops' convert)
      held = DType::Int64;
    }
    if (to != held) {
      v = cast(v, held, to);  // round / wrap to the target's storage type
      held = to;
    }
    if (compute_dtype(to) != held) v = "(" + v + ").to(" + tl_type(compute_dtype(to)) + ")";
    if (v == x) return x;
    return emit(v);
  }

  std::string where(std::string c, std::string a, std::string b) override {
    if (lit(a) && lit(b)) a = mat(a);
    return emit("tl.where(" + c + ", " + a + ", " + b + ")");
  }

  std::string indirect_indexing(std::string x, int64_t size, bool check,
                                bool wrap_negative) override {
    std::string v = x;
    std::string sz = std::to_string(size);
    if (wrap_negative) v = emit("tl.where(" + x + " < 0, " + x + " + " + sz + ", " + x + ")");
    if (check)
      out_.lines.push_back("tl.device_assert(((0 <= " + v + ") & (" + v + " < " + sz + ")) | ~(" +
                           mask() + "), \"index out of bounds: 0 <= " + v + " < " + sz + "\")");
    // Masked-off lanes may hold any value: clamp so their (masked) addresses stay in range.
    return emit("tl.where(" + mask() + ", " + v + ", 0)");
  }

  std::string reduction(ReductionType type, DType dtype, std::string value) override {
    value = mat(value);
    if (!reduction_body_)
      throw sdk::PluginError(STAX_ERROR_INVALID_ARGUMENT, "cuda_triton: reduction outside a "
                                                          "reduction loop");
    std::string acc = "acc" + std::to_string(acc_counter_++);
    bool arg = type == ReductionType::ArgMax || type == ReductionType::ArgMin;
    DType vt = dt(value);
    if (arg) {
      // Values compared in their compute type (bool as int64), indices int64; masked lanes hold
      // the identity and an index no lane has, so they never win.
      std::string v = value;
      DType at = vt == DType::Bool ? DType::Int64 : vt;
      if (vt == DType::Bool) v = "(" + v + ").to(tl.int64)";
      std::string ident = identity(type, at);
      std::string combine =
          type == ReductionType::ArgMax ? "stax_argmax_combine" : "stax_argmin_combine";
      std::string vals = "tl.where(" + mask() + ", " + v + ", " + ident + ")";
      std::string idxs = "tl.where(" + mask() + ", rindex.to(tl.int64), 9223372036854775807)";
      if (launch_.persistent) {
        out_.lines.push_back(acc + "_value, " + acc + " = tl.reduce((tl.broadcast_to(" + vals +
                             ", [XBLOCK, RBLOCK]), tl.broadcast_to(" + idxs +
                             ", [XBLOCK, RBLOCK])), 1, " + combine + ")");
      } else {
        out_.prologue.push_back(acc + "_value = tl.full([XBLOCK, RBLOCK], " + ident + ", " +
                                tl_type(at) + ")");
        out_.prologue.push_back(acc +
                                "_vindex = tl.full([XBLOCK, RBLOCK], 9223372036854775807, "
                                "tl.int64)");
        out_.lines.push_back(acc + "_value, " + acc + "_vindex = " + combine + "(" + acc +
                             "_value, " + acc + "_vindex, " + vals + ", " + idxs + ")");
        out_.epilogue.push_back(acc + "_value, " + acc + " = tl.reduce((" + acc + "_value, " +
                                acc + "_vindex), 1, " + combine + ")");
      }
      std::string result = acc + "_r";
      (launch_.persistent ? out_.lines : out_.epilogue)
          .push_back(result + " = " + acc + "[:, None]");
      dtypes_[result] = DType::Int64;
      return result;
    }
    DType at = compute_dtype(dtype);
    std::string v = value;
    if (vt != at) v = "(" + v + ").to(" + tl_type(at) + ")";
    std::string ident = identity(type, at);
    std::string combine;
    switch (type) {
      case ReductionType::Sum: combine = "stax_sum_combine"; break;
      case ReductionType::Prod: combine = "stax_prod_combine"; break;
      case ReductionType::Max:
        combine = sdk::is_floating(at) ? "stax_maximum" : (at == DType::Bool ? "stax_or_combine"
                                                                            : "stax_imax_combine");
        break;
      case ReductionType::Min:
        combine = sdk::is_floating(at) ? "stax_minimum" : (at == DType::Bool ? "stax_and_combine"
                                                                            : "stax_imin_combine");
        break;
      case ReductionType::Any: combine = "stax_or_combine"; break;
      case ReductionType::All: combine = "stax_and_combine"; break;
      default:
        throw sdk::PluginError(STAX_ERROR_UNSUPPORTED, std::string("cuda_triton: reduction type ") +
                                                           sdk::reduction_type_name(type));
    }
    if (at == DType::Bool && (type == ReductionType::Sum || type == ReductionType::Prod))
      throw sdk::PluginError(STAX_ERROR_UNSUPPORTED, "cuda_triton: bool sum / prod reduction");
    std::string masked = "tl.where(" + mask() + ", " + v + ", " + ident + ")";
    std::string result = acc + "_r";
    if (launch_.persistent) {
      out_.lines.push_back(result + " = tl.reduce(tl.broadcast_to(" + masked +
                           ", [XBLOCK, RBLOCK]), 1, " + combine + ")[:, None]");
    } else {
      out_.prologue.push_back(acc + " = tl.full([XBLOCK, RBLOCK], " + ident + ", " + tl_type(at) +
                              ")");
      out_.lines.push_back(acc + " = " + combine + "(" + acc + ", " + masked + ")");
      out_.epilogue.push_back(result + " = tl.reduce(" + acc + ", 1, " + combine + ")[:, None]");
    }
    dtypes_[result] = at;
    return result;
  }

  void store(const Buffer& b, const Expr& index, std::string value) override {
    value = mat(value);
    out_.lines.push_back(store_text(b, index, value));
    forget_loads(b);
  }
  void store_reduction(const Buffer& b, const Expr& index, std::string value) override {
    bool was = reduction_body_;
    reduction_body_ = false;  // stores after the loop: one value per row, masked by xmask
    out_.epilogue.push_back(store_text(b, index, value));
    reduction_body_ = was;
    forget_loads(b);
  }

  void begin_op(int32_t, DType result_dtype) override { cur_dtype_ = result_dtype; }
  void on_result(int32_t op_index, const std::string& value) override {
    op_values_[static_cast<size_t>(op_index)] = value;
    if (!dtypes_.count(value)) dtypes_[value] = compute_dtype(cur_dtype_);
  }

 private:
  DType dt(const std::string& v) const {
    auto it = dtypes_.find(v);
    return it == dtypes_.end() ? compute_dtype(cur_dtype_) : it->second;
  }
  bool fl(const std::string& v) const { return sdk::is_floating(dt(v)); }
  // x as a block: a float32 literal becomes tl.full([1], x, tl.float32).
  std::string mat(const std::string& x) {
    if (!literals_.count(x)) return x;
    std::string n = emit("tl.full([1], " + x + ", tl.float32)");
    dtypes_[n] = DType::Float32;
    return n;
  }
  bool lit(const std::string& x) const { return literals_.count(x) != 0; }
  void need_float(const std::string& x, const char* op) const {
    if (!fl(x))
      throw sdk::PluginError(STAX_ERROR_UNSUPPORTED,
                             std::string("cuda_triton: ") + op + " of a non-floating value");
  }
  std::string one(const std::string& x) const { return typed("1.0", x); }
  std::string zero(const std::string& x) const { return typed(fl(x) ? "0.0" : "0", x); }
  // A scalar literal with x's dtype (a Python float would be float32 next to a float64 block
  // only if Triton's promotion says so; explicit is safer).
  std::string typed(const std::string& lit, const std::string& x) const {
    return "tl.full([1], " + lit + ", " + tl_type(dt(x)) + ")";
  }
  // Correctly rounded division / square root: tl.div_rn / tl.sqrt_rn take float32 only; float64's
  // `/` and tl.sqrt are IEEE already.
  std::string div(const std::string& a, const std::string& b) const {
    return dt(a) == DType::Float64 || dt(b) == DType::Float64 ? "(" + a + " / " + b + ")"
                                                               : "tl.div_rn(" + a + ", " + b + ")";
  }
  std::string sqrt_rn(const std::string& x) const {
    return dt(x) == DType::Float64 ? "tl.sqrt(" + x + ")" : "tl.sqrt_rn(" + x + ")";
  }
  // `v` (held as `from`) converted to `to`. 16-bit floats are rounded from float32 (to nearest
  // even), from anything else through float32, as scalar_ops.hpp converts: (H)(float)x. (Triton's
  // interpreter would convert an integer to bf16 as an integer.)
  static std::string cast(const std::string& v, DType from, DType to) {
    if (to == DType::Float16 || to == DType::BFloat16) {
      std::string f = from == DType::Float32 ? v : "(" + v + ").to(tl.float32)";
      return "(" + f + ").to(" + tl_type(to) + ")";
    }
    return "(" + v + ").to(" + tl_type(to) + ")";
  }
  std::string math(const char* f, const std::string& x) {
    need_float(x, f);
    return emit("libdevice." + std::string(f) + "(" + x + ")");
  }
  std::string helper(const std::string& f, const std::string& a, const std::string& b) {
    return emit(f + "(" + a + ", " + b + ")");
  }
  std::string cmp(std::string a, const char* op, const std::string& b) {
    if (lit(a) && lit(b)) a = mat(a);
    return emit_bool("(" + a + " " + op + " " + b + ")");
  }
  std::string bitwise(std::string a, const char* op, std::string b) {
    a = mat(a);
    b = mat(b);
    if (fl(a) || fl(b))
      throw sdk::PluginError(STAX_ERROR_UNSUPPORTED,
                             std::string("cuda_triton: bitwise ") + op + " of a floating value");
    return emit("(" + a + " " + op + " " + b + ")");
  }
  std::string emit_bool(const std::string& rhs) {
    std::string n = emit(rhs);
    dtypes_[n] = DType::Bool;
    return n;
  }

  std::string emit(const std::string& rhs) {
    auto it = cse_.find(rhs);
    if (it != cse_.end()) return it->second;
    std::string name = "tmp" + std::to_string(value_counter_++);
    out_.lines.push_back(name + " = " + rhs);
    dtypes_[name] = compute_dtype(cur_dtype_);
    cse_[rhs] = name;
    return name;
  }

  std::string pointer(const Buffer& b, const Expr& index) const {
    std::string idx = format_index(index);
    if (b.offset() != 0) idx = std::to_string(b.offset()) + " + " + idx;
    return names_[static_cast<size_t>(b.index())] + " + (" + idx + ")";
  }

  std::string load_impl(const Buffer& b, const Expr& index, const std::string& m,
                        const Scalar& other) {
    DType storage = b.dtype(), c = compute_dtype(storage);
    std::string rhs;
    if (!uses_vars(index) && m.empty()) {
      // One element for the whole block (Listing 5.4: the scalar upstream gradient).
      std::string s = emit_raw("tl.load(" + pointer(b, index) + ")", b);
      if (c != storage) s = emit("(" + s + ").to(" + tl_type(c) + ")");
      rhs = "tl.broadcast_to(" + s + ", " + shape() + ")";
    } else {
      std::string msk = m.empty() ? mask() : "(" + m + ") & " + mask();
      std::string ptr = pointer(b, index);
      if (!uses_vars(index)) ptr += " + tl.zeros(" + shape() + ", tl.int32)";
      std::string ld = "tl.load(" + ptr + ", " + msk;
      if (!m.empty()) {
        std::string o = sdk::is_floating(storage) ? float_literal(other.as_double())
                        : storage == DType::Bool  ? (other.as_int() ? "1" : "0")
                                                  : int_literal(other.as_int());
        ld += ", other=" + o;
      }
      ld += ")";
      rhs = c != storage ? ld + ".to(" + tl_type(c) + ")" : ld;
    }
    std::string name = emit(rhs);
    loads_of_[b.index()].insert(rhs);
    return name;
  }
  std::string emit_raw(const std::string& rhs, const Buffer& b) {
    std::string n = emit(rhs);
    dtypes_[n] = b.dtype();
    loads_of_[b.index()].insert(rhs);
    return n;
  }

  std::string store_text(const Buffer& b, const Expr& index, const std::string& value) {
    DType storage = b.dtype();
    std::string v = value;
    if (dt(value) != storage) v = cast(v, dt(value), storage);
    std::string ptr = pointer(b, index);
    // A constant index: a block of equal pointers (masked like the values).
    if (!uses_vars(index)) ptr += " + tl.zeros(" + shape() + ", tl.int32)";
    return "tl.store(" + ptr + ", " + v + ", " + mask() + ")";
  }

  std::string identity(ReductionType type, DType d) const {
    bool f = sdk::is_floating(d);
    switch (type) {
      case ReductionType::Sum: return f ? "0.0" : "0";
      case ReductionType::Prod: return f ? "1.0" : "1";
      case ReductionType::Max:
      case ReductionType::ArgMax:
        if (f) return "float('-inf')";
        return d == DType::Bool ? "False" : "(-9223372036854775807 - 1)";
      case ReductionType::Min:
      case ReductionType::ArgMin:
        if (f) return "float('inf')";
        return d == DType::Bool ? "True" : "9223372036854775807";
      case ReductionType::Any: return "False";
      case ReductionType::All: return "True";
      default: return "0";
    }
  }

  void forget_loads(const Buffer& b) {
    auto it = loads_of_.find(b.index());
    if (it == loads_of_.end()) return;
    for (const std::string& rhs : it->second) cse_.erase(rhs);
    loads_of_.erase(it);
  }

  sdk::Kernel k_;
  TritonLaunch launch_;
  std::vector<std::string> names_;
  Printed out_;
  bool reduction_body_ = false;
  std::map<std::string, std::string> cse_;
  std::map<int32_t, std::set<std::string>> loads_of_;
  std::map<std::string, DType> dtypes_;
  std::set<std::string> literals_;
  std::vector<std::string> op_values_;
  DType cur_dtype_ = DType::Float32;
  int value_counter_ = 0;
  int acc_counter_ = 0;
};

// `var(k) = <term k>` for the row-major decomposition of `linear` over `extents`.
template <class Var>
void decompose(sdk::SourceWriter& w, const std::string& linear, sdk::Span<int64_t> extents,
               Var var) {
  const std::vector<std::string> terms =
      sdk::decompose_index(linear, extents, sdk::python_index());
  for (size_t k = 0; k < terms.size(); ++k) w.line(var(static_cast<int32_t>(k)) + " = " + terms[k]);
}

constexpr const char kPrelude[] = R"PY(import triton
import triton.language as tl
from triton.language.extra import libdevice

# Helpers of the Stax Triton printer (plugins/cuda_triton/triton_printer.h): the semantics of
# sdk/include/stax/sdk/scalar_ops.hpp on blocks.


@triton.jit
def stax_div(a, b):
    # correctly rounded: tl.div_rn takes float32 only; float64's / is IEEE
    if a.dtype == tl.float64:
        return a / b
    else:
        return tl.div_rn(a, b)


@triton.jit
def stax_sqrt(x):
    if x.dtype == tl.float64:
        return tl.sqrt(x)
    else:
        return tl.sqrt_rn(x)


@triton.jit
def stax_maximum(a, b):
    # NaN-propagating (torch.maximum): a NaN operand wins, the first if both are NaN
    return tl.where(a != a, a, tl.where(b != b, b, tl.where(a > b, a, b)))


@triton.jit
def stax_minimum(a, b):
    return tl.where(a != a, a, tl.where(b != b, b, tl.where(a < b, a, b)))


@triton.jit
def stax_sum_combine(a, b):
    return a + b


@triton.jit
def stax_prod_combine(a, b):
    return a * b


@triton.jit
def stax_imax_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def stax_imin_combine(a, b):
    return tl.minimum(a, b)


@triton.jit
def stax_or_combine(a, b):
    return (a != 0) | (b != 0)


@triton.jit
def stax_and_combine(a, b):
    return (a != 0) & (b != 0)


@triton.jit
def stax_arg_prefer(va, ia, vb, ib, is_max: tl.constexpr):
    # whether (vb, ib) replaces (va, ia): NaN is the extreme; ties go to the smaller index
    na = va != va
    nb = vb != vb
    if is_max:
        better = vb > va
    else:
        better = vb < va
    plain = tl.where(vb == va, ib < ia, better)
    return tl.where(na | nb, nb & ((~na) | (ib < ia)), plain)


@triton.jit
def stax_argmax_combine(va, ia, vb, ib):
    p = stax_arg_prefer(va, ia, vb, ib, True)
    return tl.where(p, vb, va), tl.where(p, ib, ia)


@triton.jit
def stax_argmin_combine(va, ia, vb, ib):
    p = stax_arg_prefer(va, ia, vb, ib, False)
    return tl.where(p, vb, va), tl.where(p, ib, ia)


@triton.jit
def stax_int_truediv(a, b):
    # C division truncating toward zero; x / 0 = 0; INT64_MIN / -1 wraps
    safe = tl.where((b == 0) | (b == -1), 1, b)
    q = tl.where(b == -1, -a, a // safe)
    return tl.where(b == 0, 0, q)


@triton.jit
def stax_int_floordiv(a, b):
    safe = tl.where((b == 0) | (b == -1), 1, b)
    q = a // safe
    r = a % safe
    q = tl.where((r != 0) & ((a < 0) != (safe < 0)), q - 1, q)
    q = tl.where(b == -1, -a, q)
    return tl.where(b == 0, 0, q)


@triton.jit
def stax_int_mod(a, b):
    safe = tl.where((b == 0) | (b == -1), 1, b)
    r = a % safe
    r = tl.where((r != 0) & ((safe < 0) != (r < 0)), r + safe, r)
    return tl.where((b == 0) | (b == -1), 0, r)


@triton.jit
def stax_float_mod(a, b):
    r = libdevice.fmod(a, b)
    return tl.where((r != 0) & ((b < 0) != (r < 0)), r + b, r)


@triton.jit
def stax_float_floordiv(a, b):
    # torch's div_floor: fmod-based, exact for representable results
    m = libdevice.fmod(a, b)
    d = stax_div(a - m, b)
    d = tl.where((m != 0) & ((b < 0) != (m < 0)), d - 1, d)
    f = libdevice.floor(d)
    f = tl.where(d - f > 0.5, f + 1, f)
    f = tl.where(d != 0, f, libdevice.copysign(d * 0, stax_div(a, b)))
    return tl.where(b == 0, stax_div(a, b), f)


@triton.jit
def stax_float_pow(a, b):
    # scalar_ops.hpp's m::pow: the forms a compiler takes for constant exponents, else pow
    p = libdevice.pow(a, b)
    p = tl.where(a == 2.0, libdevice.exp2(b), p)
    h = tl.where(a == float('-inf'), float('inf'), tl.abs(stax_sqrt(a)))
    p = tl.where(b == 0.5, h, p)
    p = tl.where(b == -1.0, stax_div(a * 0 + 1, a), p)
    return tl.where(b == 2.0, a * a, p)


@triton.jit
def stax_int_pow(a, b):
    r = a * 0 + 1
    base = a
    e = b
    for _ in tl.static_range(64):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = tl.where(e > 0, e >> 1, e)
    neg = tl.where(a == 1, 1, tl.where(a == -1, tl.where((b & 1) != 0, -1, 1), 0))
    return tl.where(b < 0, neg, r)


@triton.jit
def stax_float_to_int64(x):
    # truncation toward zero; NaN, +-inf and out of range give INT64_MIN (scalar_ops.hpp's
    # convert, as x86's cvttsd2si)
    inside = (x >= -9.2233720368547758e18) & (x < 9.2233720368547758e18)
    safe = tl.where(inside, x, 0.0)
    v = safe.to(tl.int64)
    return tl.where(inside, v, -9223372036854775807 - 1)


@triton.jit
def stax_float_to_uint64(x):
    # uint64's bits in an int64: [2^63, 2^64) converts exactly, the rest as stax_float_to_int64
    high = (x >= 9.2233720368547758e18) & (x < 1.8446744073709552e19)
    h = (tl.where(high, x, 9.2233720368547758e18) - 9.2233720368547758e18).to(tl.int64)
    return tl.where(high, h + (-9223372036854775807 - 1), stax_float_to_int64(x))

)PY";

}  // namespace

const std::string& triton_prelude() {
  static const std::string s = kPrelude;
  return s;
}

TritonLaunch plan_triton_launch(const sdk::Kernel& k) {
  TritonLaunch l;
  for (size_t b = 0; b < k.num_bodies(); ++b) l.reduction = l.reduction || k.body(b).is_reduction_loop();
  l.numel = k.numel();
  l.rnumel = l.reduction ? k.reduction_numel() : 1;
  if (!l.reduction) {
    l.xblock = std::min<int64_t>(1024, next_pow2(std::max<int64_t>(l.numel, 1)));
    l.num_warps = static_cast<int>(std::clamp<int64_t>(l.xblock / 256, 1, 4));
  } else {
    l.persistent = l.rnumel <= kMaxPersistentRBlock;
    l.rblock = l.persistent ? next_pow2(std::max<int64_t>(l.rnumel, 1)) : kLoopedRBlock;
    // Tiles of at most 4096 elements: several short rows per program.
    l.xblock = std::clamp<int64_t>(4096 / l.rblock, 1, next_pow2(std::max<int64_t>(l.numel, 1)));
    l.xblock = std::min<int64_t>(l.xblock, 64);
    l.num_warps = static_cast<int>(std::clamp<int64_t>(l.xblock * l.rblock / 256, 1, 8));
  }
  l.grid = (l.numel + l.xblock - 1) / l.xblock;
  return l;
}

TritonKernelSource print_triton_kernel(const sdk::Kernel& k) {
  TritonKernelSource src;
  src.name = k.name();
  src.launch = plan_triton_launch(k);
  const TritonLaunch& l = src.launch;
  TritonOps ops(k, l);
  std::vector<Printed> bodies;
  for (size_t b = 0; b < k.num_bodies(); ++b) bodies.push_back(ops.print(k.body(b)));

  static const char* kDtypeNames[] = {"float32", "float64", "float16", "bfloat16", "int64",
                                      "int32",   "int8",    "uint8",   "bool",     "int16",
                                      "uint16",  "uint32",  "uint64"};
  std::string params;
  for (size_t i = 0; i < k.num_buffers(); ++i) {
    DType d = k.buffer(i).dtype();
    src.signature.push_back(signature_type(d));
    src.dtypes.push_back(kDtypeNames[static_cast<int>(d)]);
    src.arg_names.push_back(ops.buffer_names()[i]);
    params += ops.buffer_names()[i] + ", ";
  }
  bool wide = k.index_bits() == 64;
  sdk::SourceWriter w("    ", 1);  // four spaces per level, inside the def
  std::string head = "@triton.jit\ndef " + k.name() + "(" + params + "XBLOCK: tl.constexpr" +
                     (l.reduction ? ", RBLOCK: tl.constexpr" : "") + "):\n";
  w.line("xnumel = " + std::to_string(l.numel));
  if (l.reduction) w.line("rnumel = " + std::to_string(l.rnumel));
  w.line(std::string("xoffset = tl.program_id(0)") + (wide ? ".to(tl.int64)" : "") +
         " * XBLOCK");
  w.line(std::string("xindex = xoffset + tl.arange(0, XBLOCK)") + (l.reduction ? "[:, None]" : ""));
  w.line("xmask = xindex < xnumel");
  decompose(w, "xindex", k.ranges(), [](int32_t d) { return TritonOps::iter_var(d); });
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    sdk::LoopBody body = k.body(b);
    if (b > 0) w.line("tl.debug_barrier()");
    if (!body.name().empty()) w.line("# " + body.name());
    const Printed& p = bodies[b];
    if (!body.is_reduction_loop()) {
      for (const std::string& s : p.lines) w.line(s);
      continue;
    }
    std::string rbase = std::string("tl.arange(0, RBLOCK)[None, :]") + (wide ? ".to(tl.int64)" : "");
    if (l.persistent) {
      w.line("rindex = " + rbase);
      w.line("rmask = rindex < rnumel");
      decompose(w, "rindex", k.reduction_ranges(),
                [](int32_t d) { return TritonOps::reduce_var(d); });
      for (const std::string& s : p.lines) w.line(s);
    } else {
      for (const std::string& s : p.prologue) w.line(s);
      w.line("for roffset in range(0, rnumel, RBLOCK):");
      w.indent();
      w.line("rindex = roffset + " + rbase);
      w.line("rmask = rindex < rnumel");
      decompose(w, "rindex", k.reduction_ranges(),
                [](int32_t d) { return TritonOps::reduce_var(d); });
      for (const std::string& s : p.lines) w.line(s);
      w.dedent();
    }
    for (const std::string& s : p.epilogue) w.line(s);
  }
  src.text = head + w.take();
  return src;
}

std::string triton_module_text(const TritonKernelSource& k) {
  return triton_prelude() + "\n" + k.text;
}

}  // namespace stax::triton
