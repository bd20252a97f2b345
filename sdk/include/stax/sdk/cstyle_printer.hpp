// CStylePrinter: an OpsHandler<std::string> that prints the statements of a kernel body for C-like
// targets (C99, C++, CUDA C, OpenCL, HIP). A target specialises it with small tables (type names
// per dtype, op spellings per op and dtype, conversions per dtype pair, literals, kernel prefix)
// and, where tables are not enough, by overriding hooks. Nothing it prints needs C++: values are
// declared with their compute type (`float tmp0 = ...;`, no `auto`), op calls and conversions can
// be spelled per dtype (C has no overloading), literals come from tables.
//
//   CStylePrinter p(kernel);                    // defaults: C++ with stax_scalar (scalar_ops.hpp)
//   CStylePrinter p(kernel, c99_tables());      // C99 with stax_<op>_<dtype> (scalar_ops.h)
//   PrintedBody b = p.print(kernel.body(0));
//   // b.prologue: before the reduction loop   float acc0 = 0.0f;
//   // b.lines:    the body                      float tmp0 = in_ptr0[128*i0 + r0_0];
//   //                                           float tmp2 = stax_scalar::add(tmp0, tmp1);
//   //                                           acc0 = stax_scalar::add(acc0, tmp2);
//   // b.epilogue: after the reduction loop     out_ptr0[i0] = acc0;
//
// The default spelling of an ops.def op `foo` is `stax_scalar::foo(a, b)` (the prelude that the
// cpu_cpp plugin embeds); c99_tables() spells it `stax_foo_f32(a, b)` (stax/sdk/scalar_ops.h).
// Identical right-hand sides are computed once (in-kernel CSE, seed §6.5: the loop IR keeps the
// redundant loads of x*x; this removes them); a store to a buffer forgets the loads of that
// buffer. The framing (loops over i<k> / r0_<k>, pointer parameters) is the plugin's, or
// cstyle_framing.hpp's: iter_var(), reduce_var(), buffer_name() and signature() give the names, and
// index_type() the type of loop variables (`int` when the kernel's index_bits() is 32).
#ifndef STAX_SDK_CSTYLE_PRINTER_HPP
#define STAX_SDK_CSTYLE_PRINTER_HPP

#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "stax/sdk/expr.hpp"
#include "stax/sdk/loop_body.hpp"
#include "stax/sdk/ops_handler.hpp"
#include "stax/sdk/types.hpp"

namespace stax {
namespace sdk {

struct CStyleTables {
  // Indexed by DType. Storage: the element type of buffers. Compute: the type values are held
  // in (half types compute in float, narrow integers in 64 bits, as scalar_ops.hpp prescribes;
  // uint64 as its bits in the signed 64-bit type: only data-moving ops, equality and conversions
  // take it, and convert() below reads it as unsigned).
  std::array<std::string, kNumDTypes> storage_types = {
      "float", "double", "_Float16", "__bf16", "long long", "int", "signed char", "unsigned char",
      "bool", "short", "unsigned short", "unsigned int", "unsigned long long"};
  std::array<std::string, kNumDTypes> compute_types = {
      "float", "double", "float", "float", "long long", "long long", "long long", "long long",
      "bool", "long long", "long long", "long long", "long long"};
  // Default spelling of op `foo`: op_prefix + "foo(" args ")".
  std::string op_prefix = "stax_scalar::";
  // Per-opcode spelling overrides with placeholders {0} {1} {2}, e.g. {STAX_OP_add, "{0} + {1}"}.
  std::map<int32_t, std::string> op_templates;
  // Conversion of {0} to the type {T}.
  std::string convert_template = "stax_scalar::convert<{T}>({0})";
  // "<declare> tmp3 = ...;". Empty (the default): the value's compute type
  // (`float tmp3 = ...;`), which every C-family language accepts; "auto" is the old C++ spelling.
  std::string declare;
  std::string value_prefix = "tmp";
  std::string acc_prefix = "acc";
  std::string index_type = "long long";  // loop variables and index arithmetic ...
  std::string index_type32 = "int";      // ... when the kernel's index_bits() is 32
  std::string iter_var_prefix = "i";
  std::string reduce_var_prefix = "r0_";
  std::string input_prefix = "in_ptr";
  std::string output_prefix = "out_ptr";  // OUTPUT and INOUT buffers
  std::string temp_prefix = "tmp_ptr";
  std::string kernel_prefix = "extern \"C\" void";
  std::string pointer_qualifier;  // e.g. "__restrict__"
  std::string check_macro = "STAX_CHECK";  // CHECK(cond, "message"); for indirect indexing
  std::string floordiv = " / ";  // index expressions are nonnegative
  std::string mod = " % ";
  // Loop-invariant code motion: a reduction-loop body's statements that do not depend on the
  // reduction variables go to PrintedBody::hoisted (the framing prints them before the loop).
  bool hoist_invariants = false;
  // min / max in index expressions (the default was stax_scalar::minimum / maximum, templates
  // that do not compile for a long long and an int literal)
  std::string min = "stax_scalar::index_min";
  std::string max = "stax_scalar::index_max";

  // ---- dtype-aware spellings (C has no overloading, no templates) ----------------------------
  // Short dtype names, for {F} / {T} in dtype_convert_template and for op_suffixes.
  std::array<std::string, kNumDTypes> dtype_names = {
      "f32", "f64", "f16", "bf16", "i64", "i32", "i8", "u8", "b8", "i16", "u16", "u32", "u64"};
  // Op calls: op_dtype_templates[{opcode, operand dtype}] beats op_templates[opcode] beats
  // op_prefix + name + op_suffixes[operand dtype] + "(args)". The operand dtype is the dtype of
  // the first operand (of the second for where: the first is the condition).
  std::array<std::string, kNumDTypes> op_suffixes;  // e.g. "_f32" -> stax_add_f32(a, b)
  std::map<std::pair<int32_t, DType>, std::string> op_dtype_templates;
  // Conversion of value {0} of dtype {F} (held in F's compute type) to dtype {T} (rounded,
  // wrapped or saturated as scalar_ops defines, held in T's compute type), e.g.
  // "stax_convert_{F}_{T}({0})" with {F} {T} from dtype_names. Empty: spelled through
  // convert_template with C type names (the C++ default: stax_scalar::convert<long long>(x) ...).
  std::string dtype_convert_template;
  // A buffer element of dtype d (storage type) as its compute type and back, e.g. for float16
  // held in unsigned short bits: "stax_f16_load({0})" / "stax_f16_store({0})". Empty entries:
  // "{0}" when the C types agree, else convert_template.
  std::array<std::string, kNumDTypes> load_templates;
  std::array<std::string, kNumDTypes> store_templates;
  // Literals that are not plain numbers (the defaults are GCC/Clang builtins, valid in C++ kernels
  // without any #include; c99_tables() uses <math.h>'s NAN / INFINITY).
  std::string nan_f32 = "__builtin_nanf(\"\")";
  std::string nan_f64 = "__builtin_nan(\"\")";
  std::string inf_f32 = "__builtin_huge_valf()";
  std::string inf_f64 = "__builtin_huge_val()";
  std::string true_literal = "true";
  std::string false_literal = "false";
};

// The statements of one body, by where the framing puts them.
struct PrintedBody {
  std::vector<std::string> prologue;  // before the reduction loop (accumulators)
  std::vector<std::string> hoisted;   // with tables().hoist_invariants: a reduction-loop body's
                                      // statements that do not depend on the reduction
                                      // variables, for before the loop (after the prologue)
  std::vector<std::string> lines;     // the body (inside the reduction loop if it has one)
  std::vector<std::string> epilogue;  // after the reduction loop (store_reduction)
};

class CStylePrinter : public OpsHandler<std::string> {
 public:
  explicit CStylePrinter(const Kernel& kernel, CStyleTables tables = CStyleTables())
      : kernel_(kernel), t_(std::move(tables)) {
    int counts[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < kernel_.num_buffers(); ++i) {
      Buffer b = kernel_.buffer(i);
      int slot = b.role() == BufferRole::Input ? 0 : (b.role() == BufferRole::Temp ? 2 : 1);
      const std::string& prefix =
          slot == 0 ? t_.input_prefix : (slot == 2 ? t_.temp_prefix : t_.output_prefix);
      buffer_names_.push_back(prefix + std::to_string(counts[slot]++));
    }
  }
  ~CStylePrinter() override = default;

  // Prints one body. Temporaries are numbered across the whole kernel (one printer per kernel).
  // same_scope: the body's lines go in the same scope, after those of the body printed before
  // (bodies of one loop printed in order, nothing hoisted), so its values may reuse that body's:
  // a value both compute (a load of the same element, gelu and gelu_backward's erf of the same
  // input) is computed once. A store forgets the loads of its buffer, as within a body.
  PrintedBody print(const LoopBody& body, bool same_scope = false) {
    out_ = PrintedBody();
    if (!same_scope) {
      cse_.clear();
      hoisted_names_.clear();
      loads_of_.clear();
    }
    op_values_.assign(body.num_ops(), std::string());
    mark_invariant(body);
    replay(body, *this);
    return std::move(out_);
  }

  const CStyleTables& tables() const { return t_; }
  const Kernel& kernel() const { return kernel_; }

  // ---- names the framing uses ----
  virtual std::string iter_var(int32_t k) const { return t_.iter_var_prefix + std::to_string(k); }
  virtual std::string reduce_var(int32_t k) const {
    return t_.reduce_var_prefix + std::to_string(k);
  }
  virtual std::string buffer_name(const Buffer& b) const { return buffer_names_[b.index()]; }
  // The type of loop variables and index arithmetic: index_type32 for a kernel whose indices fit
  // int32 (Kernel::index_bits() == 32), index_type otherwise.
  std::string index_type() const {
    return kernel_.index_bits() == 32 ? t_.index_type32 : t_.index_type;
  }
  std::string storage_type(DType d) const { return t_.storage_types[static_cast<int>(d)]; }
  std::string compute_type(DType d) const { return t_.compute_types[static_cast<int>(d)]; }
  // "extern "C" void kernel0(const float* in_ptr0, float* out_ptr0)"
  virtual std::string signature() const {
    std::string s = t_.kernel_prefix + " " + kernel_.name() + "(";
    bool first = true;
    for (size_t i = 0; i < kernel_.num_buffers(); ++i) {
      Buffer b = kernel_.buffer(i);
      if (!first) s += ", ";
      first = false;
      s += (b.is_input() ? "const " : "") + storage_type(b.dtype()) + "* ";
      if (!t_.pointer_qualifier.empty()) s += t_.pointer_qualifier + " ";
      s += buffer_name(b);
    }
    for (const std::string& p : extra_params()) {
      if (!first) s += ", ";
      first = false;
      s += p;
    }
    return s + ")";
  }
  virtual std::vector<std::string> extra_params() const { return {}; }

  // ---- spelling hooks ----
  // An index expression in C syntax (buffer offsets are added by load/store).
  virtual std::string format_index(const Expr& e) const {
    ExprSyntax s;
    s.iter_var = [this](int32_t k) { return iter_var(k); };
    s.reduce_var = [this](int32_t k) { return reduce_var(k); };
    s.indirect = [this](int32_t op) { return op_values_.at(op); };
    s.floordiv = t_.floordiv;
    s.mod = t_.mod;
    s.min = t_.min;
    s.max = t_.max;
    return format_expr(e, s);
  }
  // `op(args)` for any opcode with a name (ops.def ops and where), its operand dtype taken from
  // the printed operands (the first; the second for where).
  virtual std::string op_call(int32_t opcode, const std::vector<std::string>& args) const {
    size_t k = opcode == STAX_OP_WHERE ? 1 : 0;
    return op_call(opcode, args, k < args.size() ? dtype_of(args[k]) : cur_dtype_);
  }
  // `op(args)` for operands of dtype `dtype` (see CStyleTables::op_dtype_templates).
  virtual std::string op_call(int32_t opcode, const std::vector<std::string>& args,
                              DType dtype) const {
    auto dt = t_.op_dtype_templates.find({opcode, dtype});
    if (dt != t_.op_dtype_templates.end()) return fill(dt->second, args);
    auto it = t_.op_templates.find(opcode);
    if (it != t_.op_templates.end()) return fill(it->second, args);
    std::string s = t_.op_prefix + opcode_name(opcode) + t_.op_suffixes[static_cast<int>(dtype)] +
                    "(";
    for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
    return s + ")";
  }
  // Conversion of `x` to the C type `type` (convert_template). Used by the dtype conversions
  // below when CStyleTables::dtype_convert_template is empty (C++ targets).
  virtual std::string convert(const std::string& x, const std::string& type) const {
    std::string s = fill(t_.convert_template, {x});
    size_t p;
    while ((p = s.find("{T}")) != std::string::npos) s.replace(p, 3, type);
    return s;
  }
  // `x`, a value of dtype `from` in its compute type, converted to dtype `to` (the scalar
  // semantics of to_dtype: floating -> integer truncates and saturates through int64, integers
  // wrap to the target width, 16-bit floats round to nearest even), in `to`'s compute type.
  virtual std::string convert(const std::string& x, DType from, DType to) const {
    if (from == to) return x;
    if (!t_.dtype_convert_template.empty()) {
      std::string s = fill(t_.dtype_convert_template, {x});
      replace_all(s, "{F}", t_.dtype_names[static_cast<int>(from)]);
      replace_all(s, "{T}", t_.dtype_names[static_cast<int>(to)]);
      return s;
    }
    std::string v = x;
    std::string held = compute_type(from);
    if (from == DType::UInt64 && is_floating(to) && held != storage_type(from)) {
      v = convert(convert(v, storage_type(from)), compute_type(to));  // the bits read unsigned
      held = compute_type(to);
    }
    if (to == DType::UInt64 && is_floating(from)) {  // [2^63, 2^64) converts exactly, as torch
      v = convert(v, storage_type(to));
      held = storage_type(to);
    } else if (is_floating(from) && to != DType::Bool && !is_floating(to) &&
               held != compute_type(DType::Int64)) {
      // floating -> narrow integer: saturating via int64 first (scalar_ops' defined conversion)
      v = convert(v, compute_type(DType::Int64));
      held = compute_type(DType::Int64);
    }
    if (storage_type(to) != held) {
      v = convert(v, storage_type(to));  // round / wrap to the target's storage type
      held = storage_type(to);
    }
    if (compute_type(to) != held) v = convert(v, compute_type(to));
    return v;
  }
  // A buffer element (storage type of `d`) as d's compute type, and back.
  virtual std::string load_value(const std::string& x, DType d) const {
    const std::string& tpl = t_.load_templates[static_cast<int>(d)];
    if (!tpl.empty()) return fill(tpl, {x});
    return storage_type(d) == compute_type(d) ? x : convert(x, compute_type(d));
  }
  virtual std::string store_value(const std::string& x, DType d) const {
    const std::string& tpl = t_.store_templates[static_cast<int>(d)];
    if (!tpl.empty()) return fill(tpl, {x});
    return storage_type(d) == compute_type(d) ? x : convert(x, storage_type(d));
  }
  // A literal of dtype's compute type.
  virtual std::string literal(const Scalar& v, DType dtype) const {
    if (dtype == DType::Bool) return v.as_int() ? t_.true_literal : t_.false_literal;
    if (is_integral(dtype)) {
      int64_t i = v.as_int();
      if (i == INT64_MIN) return "(-9223372036854775807LL - 1)";
      return std::to_string(i) + "LL";
    }
    bool dbl = dtype == DType::Float64;
    double x = v.as_double();
    if (std::isnan(x)) return dbl ? t_.nan_f64 : t_.nan_f32;
    if (std::isinf(x)) {
      const std::string& inf = dbl ? t_.inf_f64 : t_.inf_f32;
      return x < 0 ? "-" + inf : inf;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", x);
    std::string s = buf;
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return dbl ? s : s + "f";
  }
  // The statement that fails the kernel when `cond` is false.
  virtual std::string check(const std::string& cond, const std::string& message) const {
    return t_.check_macro + "(" + cond + ", \"" + message + "\");";
  }
  // The bounds check of an indirect index: `index` (the index as loaded, before any negative
  // wrap) must satisfy `cond` (0 <= wrapped index < size). A printer whose kernels can report the
  // offending value to the host overrides this; the default is check() with a fixed message.
  virtual std::string check_index(const std::string& cond, const std::string& index,
                                  const std::string& checked, int64_t size) const {
    (void)index;
    std::string sz = std::to_string(size);
    return check(cond, "index out of bounds: 0 <= " + checked + " < " + sz);
  }

  // ---- OpsHandler ----
#define STAX_UNARY_OP(name) \
  std::string name(std::string x) override { return emit(op_call(STAX_OP_##name, {x})); }
#define STAX_BINARY_OP(name)                            \
  std::string name(std::string a, std::string b) override { \
    return emit(op_call(STAX_OP_##name, {a, b}));       \
  }
#define STAX_COMPARE_OP(name) STAX_BINARY_OP(name)
#include "stax/sdk/ops.def"

  std::string constant(Scalar value, DType dtype) override { return emit(literal(value, dtype)); }

  std::string load(const Buffer& buffer, const Expr& index) override {
    std::string rhs = converted(element(buffer, index), buffer.dtype(), cur_dtype_);
    std::string name = emit(rhs);
    loads_of_[buffer.index()].insert(declaration_type() + " = " + rhs);
    return name;
  }

  std::string masked_load(const Buffer& buffer, const Expr& index, std::string mask,
                          Scalar other) override {
    std::string rhs = mask + " ? " + converted(element(buffer, index), buffer.dtype(), cur_dtype_) +
                      " : " + literal(other, cur_dtype_);
    std::string name = emit(rhs);
    loads_of_[buffer.index()].insert(declaration_type() + " = " + rhs);
    return name;
  }

  std::string index_expr(const Expr& index, DType dtype) override {
    if (!t_.dtype_convert_template.empty())  // the index value is an int64
      return emit(convert(format_index(index), DType::Int64, dtype));
    return emit(convert(format_index(index), compute_type(dtype)));
  }

  std::string to_dtype(std::string x, DType dtype) override {
    std::string v = convert(x, dtype_of(x), dtype);
    if (v == x) return x;
    return emit(v);
  }

  std::string where(std::string cond, std::string a, std::string b) override {
    return emit(op_call(STAX_OP_WHERE, {cond, a, b}));
  }

  std::string indirect_indexing(std::string x, int64_t size, bool check_bounds,
                                bool wrap_negative) override {
    std::string v = x;
    std::string sz = std::to_string(size);
    std::string xtype = compute_type(dtype_of(x));
    if (wrap_negative) v = emit(x + " < 0 ? " + x + " + " + sz + " : " + x, true, xtype);
    if (check_bounds)
      dest().push_back(check_index("0 <= " + v + " && " + v + " < " + sz, x, v, size));
    // 32-bit indexing: the (checked or proven) index in [0, size) joins the index arithmetic as
    // index_type32.
    if (kernel_.index_bits() == 32)
      v = emit(t_.dtype_convert_template.empty() ? convert(v, index_type())
                                                 : "(" + index_type() + ")" + v,
               true, index_type());
    return v;
  }

  std::string reduction(ReductionType type, DType dtype, std::string value) override {
    std::string acc = t_.acc_prefix + std::to_string(acc_counter_++);
    DType vt = dtype_of(value);
    bool arg = type == ReductionType::ArgMax || type == ReductionType::ArgMin;
    DType acc_type = arg ? vt : dtype;
    std::string acc_ctype = compute_type(acc_type);
    out_.prologue.push_back(acc_ctype + " " + acc + " = " + reduction_identity(type, acc_type) +
                            ";");
    if (arg) {
      std::string idx = acc + "_index";
      out_.prologue.push_back(compute_type(dtype) + " " + idx + " = 0;");
      const char* cmp = type == ReductionType::ArgMax ? " > " : " < ";
      // first occurrence wins on ties; NaN counts as the extreme and the first NaN sticks
      out_.lines.push_back("if (!(" + acc + " != " + acc + ") && (" + value + cmp + acc + " || " +
                           value + " != " + value + ")) { " + acc + " = " + value + "; " + idx +
                           " = " + linear_reduction_index() + "; }");
      value_dtype_[idx] = dtype;
      return idx;
    }
    int32_t op = STAX_OP_add;
    switch (type) {
      case ReductionType::Sum: op = STAX_OP_add; break;
      case ReductionType::Prod: op = STAX_OP_mul; break;
      case ReductionType::Max: op = STAX_OP_maximum; break;
      case ReductionType::Min: op = STAX_OP_minimum; break;
      case ReductionType::Any: op = STAX_OP_logical_or; break;
      case ReductionType::All: op = STAX_OP_logical_and; break;
      default:
        throw PluginError(STAX_ERROR_UNSUPPORTED,
                          std::string("reduction type ") + reduction_type_name(type));
    }
    std::string v = vt == dtype ? value
                    : t_.dtype_convert_template.empty() ? convert(value, acc_ctype)
                                                        : convert(value, vt, dtype);
    value_dtype_[acc] = dtype;
    out_.lines.push_back(acc + " = " + op_call(op, {acc, v}) + ";");  // operand dtype: acc's
    return acc;
  }

  void store(const Buffer& buffer, const Expr& index, std::string value) override {
    out_.lines.push_back(element(buffer, index) + " = " +
                         converted(value, dtype_of(value), buffer.dtype(), true) + ";");
    forget_loads(buffer);
  }

  void store_reduction(const Buffer& buffer, const Expr& index, std::string value) override {
    out_.epilogue.push_back(element(buffer, index) + " = " +
                            converted(value, dtype_of(value), buffer.dtype(), true) + ";");
    forget_loads(buffer);
  }

  void begin_op(int32_t op_index, DType result_dtype) override {
    cur_op_ = op_index;
    cur_dtype_ = result_dtype;
  }
  void on_result(int32_t op_index, const std::string& value) override {
    op_values_[op_index] = value;
    if (!value_dtype_.count(value)) value_dtype_[value] = cur_dtype_;
  }

 protected:
  // Emits `<type> tmpN = rhs;` unless an identical rhs of the same type was emitted before;
  // returns the name. The type: CStyleTables::declare when set, else `type`, else the compute
  // type of the current op's dtype. A value hoisted before a reduction loop may reuse only a
  // hoisted one: a name declared inside the loop is out of scope there (found by the OpInfo
  // harness: pow's exponent gradient hoisted `ge(x, 0.0f)` while the loop's own `0.0f` had been
  // emitted first).
  std::string emit(const std::string& rhs, bool cse = true, const std::string& type = "") {
    std::vector<std::string>& to = dest();
    bool hoisting = &to == &out_.hoisted;
    std::string decl = declaration_type(type);
    std::string key = decl + " = " + rhs;
    if (cse) {
      auto it = cse_.find(key);
      if (it != cse_.end() && (!hoisting || hoisted_names_.count(it->second))) return it->second;
    }
    std::string name = t_.value_prefix + std::to_string(value_counter_++);
    to.push_back(decl + " " + name + " = " + rhs + ";");
    value_dtype_[name] = cur_dtype_;
    if (hoisting) hoisted_names_.insert(name);
    if (cse) cse_[key] = name;
    return name;
  }
  std::string declaration_type(const std::string& type = "") const {
    return !t_.declare.empty() ? t_.declare : !type.empty() ? type : compute_type(cur_dtype_);
  }
  PrintedBody& out() { return out_; }

  // `ptr[offset + index]`
  std::string element(const Buffer& b, const Expr& index) const {
    std::string idx = format_index(index);
    if (b.offset() != 0) idx = std::to_string(b.offset()) + " + " + idx;
    return buffer_name(b) + "[" + idx + "]";
  }
  // x (of dtype `from`) as the compute (or, for stores, storage) type of `to`.
  std::string converted(const std::string& x, DType from, DType to, bool to_storage = false) const {
    if (!t_.dtype_convert_template.empty() || has_value_templates()) {
      if (to_storage) return store_value(convert(x, from, to), to);
      return convert(load_value(x, from), from, to);
    }
    std::string have = to_storage ? compute_type(from) : storage_type(from);
    std::string want = to_storage ? storage_type(to) : compute_type(to);
    return have == want ? x : convert(x, want);
  }
  DType dtype_of(const std::string& value) const {
    auto it = value_dtype_.find(value);
    return it == value_dtype_.end() ? cur_dtype_ : it->second;
  }
  virtual std::string reduction_identity(ReductionType type, DType dtype) const {
    bool fl = is_floating(dtype);
    switch (type) {
      case ReductionType::Sum: return literal(Scalar::integer(0), fl ? dtype : dtype);
      case ReductionType::Prod: return literal(Scalar::integer(1), dtype);
      case ReductionType::Max:
      case ReductionType::ArgMax:
        if (fl) return literal(Scalar::floating(-HUGE_VAL), dtype);
        if (dtype == DType::Bool) return t_.false_literal;
        return literal(Scalar::integer(INT64_MIN), dtype);
      case ReductionType::Min:
      case ReductionType::ArgMin:
        if (fl) return literal(Scalar::floating(HUGE_VAL), dtype);
        if (dtype == DType::Bool) return t_.true_literal;
        return literal(Scalar::integer(INT64_MAX), dtype);
      case ReductionType::Any: return t_.false_literal;
      case ReductionType::All: return t_.true_literal;
      default: return "0";
    }
  }
  // The row-major linear index over the reduction ranges: `r0_0*128 + r0_1`.
  std::string linear_reduction_index() const {
    Span<int64_t> rr = kernel_.reduction_ranges();
    std::string s;
    for (size_t k = 0; k < rr.size(); ++k) {
      int64_t stride = 1;
      for (size_t j = k + 1; j < rr.size(); ++j) stride *= rr[j];
      std::string term = reduce_var(static_cast<int32_t>(k));
      if (stride != 1) term = std::to_string(stride) + "*" + term;
      s += (k ? " + " : "") + term;
    }
    return s.empty() ? "0" : s;
  }
  bool has_value_templates() const {
    for (int d = 0; d < kNumDTypes; ++d)
      if (!t_.load_templates[d].empty() || !t_.store_templates[d].empty()) return true;
    return false;
  }
  static void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size())
      s.replace(p, from.size(), to);
  }
  static std::string fill(const std::string& pattern, const std::vector<std::string>& args) {
    std::string s;
    for (size_t i = 0; i < pattern.size(); ++i) {
      if (pattern[i] == '{' && i + 2 < pattern.size() && pattern[i + 2] == '}' &&
          pattern[i + 1] >= '0' && pattern[i + 1] <= '9') {
        size_t a = static_cast<size_t>(pattern[i + 1] - '0');
        s += a < args.size() ? args[a] : std::string();
        i += 2;
      } else {
        s += pattern[i];
      }
    }
    return s;
  }

 private:
  // Where the current op's statements go: `hoisted` for a loop-invariant op, else `lines`.
  std::vector<std::string>& dest() {
    bool hoist = cur_op_ >= 0 && static_cast<size_t>(cur_op_) < invariant_.size() &&
                 invariant_[static_cast<size_t>(cur_op_)];
    return hoist ? out_.hoisted : out_.lines;
  }

  // invariant_[op]: the op of a reduction-loop body computes the same value at every reduction
  // point (no reduction variable in its index, no varying operand, not a load of a buffer the
  // body writes), so it is printed once before the loop. Empty for other bodies.
  void mark_invariant(const LoopBody& body) {
    invariant_.assign(t_.hoist_invariants && body.is_reduction_loop() ? body.num_ops() : 0,
                      false);
    if (invariant_.empty()) return;
    Span<int64_t> rr = kernel_.reduction_ranges();
    for (size_t k = 0; k < rr.size(); ++k)
      if (rr[k] == 0) return invariant_.assign(body.num_ops(), false);  // a loop that never runs
    std::set<int32_t> written;
    for (size_t i = 0; i < body.num_ops(); ++i) {
      OpNode op = body.op(i);
      if (!op.produces_value()) written.insert(op.buffer());
    }
    std::vector<bool>& inv = invariant_;
    std::function<bool(const Expr&)> varies = [&](const Expr& e) -> bool {
      switch (e.kind()) {
        case ExprKind::ReduceVar: return true;
        case ExprKind::Indirect: return !inv.at(static_cast<size_t>(e.value()));
        case ExprKind::Const:
        case ExprKind::IterVar: return false;
        default: return varies(e.lhs()) || varies(e.rhs());
      }
    };
    for (size_t i = 0; i < body.num_ops(); ++i) {
      OpNode op = body.op(i);
      bool v = false;
      switch (op.opcode()) {
        case STAX_OP_REDUCTION:
        case STAX_OP_STORE:
        case STAX_OP_STORE_REDUCTION: v = true; break;
        case STAX_OP_LOAD:
        case STAX_OP_MASKED_LOAD:
          v = written.count(op.buffer()) || varies(body.index_of(op));
          break;
        case STAX_OP_INDEX_EXPR: v = varies(body.index_of(op)); break;
        default: break;
      }
      for (int k = 0; k < op.num_operands(); ++k)
        v = v || !inv.at(static_cast<size_t>(op.operand(k)));
      inv[i] = !v;
    }
    // A constant moves only when a moved op uses it (nothing to gain otherwise).
    std::vector<bool> needed(inv.size(), false);
    for (size_t i = 0; i < body.num_ops(); ++i) {
      OpNode op = body.op(i);
      if (!inv[i] || op.opcode() == STAX_OP_CONSTANT) continue;
      for (int k = 0; k < op.num_operands(); ++k) needed[static_cast<size_t>(op.operand(k))] = true;
    }
    for (size_t i = 0; i < body.num_ops(); ++i)
      if (body.op(i).opcode() == STAX_OP_CONSTANT) inv[i] = inv[i] && needed[i];
  }

 protected:
  // A load's rhs (as emit() was given it), forgotten by CSE when its buffer is stored.
  void remember_load(const Buffer& b, const std::string& rhs) {
    loads_of_[b.index()].insert(declaration_type() + " = " + rhs);
  }
  void forget_loads(const Buffer& b) {
    auto it = loads_of_.find(b.index());
    if (it == loads_of_.end()) return;
    for (const std::string& rhs : it->second) cse_.erase(rhs);
    loads_of_.erase(it);
  }

 private:
  Kernel kernel_;
  CStyleTables t_;
  std::vector<std::string> buffer_names_;
  PrintedBody out_;
  std::map<std::string, std::string> cse_;
  std::map<int32_t, std::set<std::string>> loads_of_;
  std::map<std::string, DType> value_dtype_;
  std::vector<std::string> op_values_;
  DType cur_dtype_ = DType::Float32;
  int32_t cur_op_ = -1;
  std::set<std::string> hoisted_names_;  // values emitted into out_.hoisted
  std::vector<bool> invariant_;
  int value_counter_ = 0;
  int acc_counter_ = 0;
};

// The default tables with float16 / bfloat16 buffers as the portable structs of
// scalar_ops_f16.hpp (stax_half, stax_bf16) instead of the compiler types _Float16 / __bf16:
// for C++ kernels built by a compiler without them (GCC 12 has no __bf16). The kernel prelude then
// includes scalar_ops_f16.hpp after scalar_ops.hpp.
inline CStyleTables f16_struct_tables() {
  CStyleTables t;
  t.storage_types[static_cast<int>(DType::Float16)] = "stax_half";
  t.storage_types[static_cast<int>(DType::BFloat16)] = "stax_bf16";
  return t;
}

// Tables for plain C99 kernels over stax/sdk/scalar_ops.h (no C++): ops spelled per compute type
// (`stax_add_f32(a, b)`, `stax_floordiv_i64(a, b)`, `stax_logical_not_b8(x)`), conversions per
// dtype pair (`stax_convert_f32_i8(x)`), float16 / bfloat16 buffers as their bits
// (`unsigned short`, read with stax_f16_load / written with stax_f16_store), <math.h>'s NAN and
// INFINITY, `restrict` pointers and `void` kernels. The kernel source starts with
// `#include "stax/sdk/scalar_ops.h"` (which includes <math.h>, <stdbool.h>).
inline CStyleTables c99_tables() {
  CStyleTables t;
  t.storage_types = {"float", "double", "unsigned short", "unsigned short", "long long", "int",
                     "signed char", "unsigned char", "bool", "short", "unsigned short",
                     "unsigned int", "unsigned long long"};
  t.op_prefix = "stax_";
  t.op_suffixes = {"_f32", "_f64", "_f32", "_f32", "_i64", "_i64", "_i64", "_i64", "_b8",
                   "_i64", "_i64", "_i64", "_i64"};
  t.op_templates[STAX_OP_WHERE] = "({0} ? {1} : {2})";
  t.dtype_convert_template = "stax_convert_{F}_{T}({0})";
  t.convert_template = "(({T})({0}))";
  t.load_templates[static_cast<int>(DType::Float16)] = "stax_f16_load({0})";
  t.load_templates[static_cast<int>(DType::BFloat16)] = "stax_bf16_load({0})";
  t.store_templates[static_cast<int>(DType::Float16)] = "stax_f16_store({0})";
  t.store_templates[static_cast<int>(DType::BFloat16)] = "stax_bf16_store({0})";
  t.nan_f32 = "NAN";
  t.nan_f64 = "((double)NAN)";
  t.inf_f32 = "INFINITY";
  t.inf_f64 = "((double)INFINITY)";
  t.kernel_prefix = "void";
  t.pointer_qualifier = "restrict";
  t.min = "stax_index_min";
  t.max = "stax_index_max";
  return t;
}

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_CSTYLE_PRINTER_HPP
