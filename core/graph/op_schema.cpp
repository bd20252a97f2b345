#include "core/graph/op_schema.h"

#include <cctype>

#include "core/support/error.h"

namespace stax {

namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// torch prints a ScalarType default by its c10::ScalarType number (randperm's dtype=4).
std::optional<DType> dtype_of_scalar_type_code(const std::string& text) {
  static const std::pair<const char*, DType> kCodes[] = {
      {"0", DType::UInt8},   {"1", DType::Int8},    {"3", DType::Int32}, {"4", DType::Int64},
      {"5", DType::Float16}, {"6", DType::Float32}, {"7", DType::Float64}, {"11", DType::Bool},
      {"15", DType::BFloat16}, {"2", DType::Int16}, {"27", DType::UInt16},
      {"28", DType::UInt32}, {"29", DType::UInt64}};
  for (const auto& [code, t] : kCodes)
    if (text == code) return t;
  return std::nullopt;
}

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw Error("schema", "", "malformed op schema '" + text + "': " + why);
}

// Splits on commas at bracket depth 0.
std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

Arg parse_default(const std::string& text, const ParamSpec& p, const std::string& schema) {
  if (text == "None") return p.type == ParamType::ScalarType ? Arg(Undefined{}) : Arg();
  if (text == "True") return Arg(true);
  if (text == "False") return Arg(false);
  // aten's loss reductions (at::Reduction) as torch prints their defaults.
  if (text == "Mean") return Arg(int64_t{1});
  if (text == "Sum") return Arg(int64_t{2});
  if (auto e = parse_enum_literal(text)) return Arg(*e);  // memory_format=contiguous_format
  if (p.type == ParamType::ScalarType) {                  // dtype=long, or torch's code: dtype=4
    if (auto t = parse_dtype(text)) return Arg(*t);
    if (auto t = dtype_of_scalar_type_code(text)) return Arg(*t);
    bad(schema, "unknown dtype default '" + text + "'");
  }
  if (text.size() >= 2 && (text[0] == '\'' || text[0] == '"')) return Arg(text.substr(1, text.size() - 2));
  if (text.front() == '[') {
    Arg::List l;
    for (const auto& e : split_top(text.substr(1, text.size() - 2))) l.push_back(parse_default(e, p, schema));
    return Arg(std::move(l));
  }
  bool is_float = text.find_first_of(".eE") != std::string::npos || text == "inf" || text == "-inf";
  try {
    if (p.type == ParamType::Float || is_float) return Arg(std::stod(text));
    return Arg(static_cast<int64_t>(std::stoll(text)));
  } catch (const std::exception&) {
    bad(schema, "bad default value '" + text + "'");
  }
}

ParamType parse_type(std::string t, bool& optional, const std::string& schema) {
  optional = false;
  if (!t.empty() && t.back() == '?') {
    optional = true;
    t.pop_back();
  }
  if (t == "Tensor") return ParamType::Tensor;
  if (t == "Tensor[]" || t == "Tensor?[]") return ParamType::TensorList;
  if (t == "Scalar") return ParamType::Scalar;
  if (t == "int" || t == "SymInt") return ParamType::Int;
  if (t.rfind("int[", 0) == 0 || t.rfind("SymInt[", 0) == 0) return ParamType::IntList;
  if (t == "float") return ParamType::Float;
  if (t.rfind("float[", 0) == 0) return ParamType::FloatList;
  if (t.rfind("bool[", 0) == 0) return ParamType::BoolList;
  if (t == "bool") return ParamType::Bool;
  if (t == "str") return ParamType::Str;
  if (t == "ScalarType") return ParamType::ScalarType;
  if (t == "Layout" || t == "Device" || t == "MemoryFormat") return ParamType::Layout;
  if (t == "Generator") return ParamType::Generator;
  bad(schema, "unknown parameter type '" + t + "'");
}

const char* type_str(ParamType t) {
  switch (t) {
    case ParamType::Tensor: return "Tensor";
    case ParamType::TensorList: return "Tensor[]";
    case ParamType::Scalar: return "Scalar";
    case ParamType::Int: return "int";
    case ParamType::IntList: return "int[]";
    case ParamType::FloatList: return "float[]";
    case ParamType::BoolList: return "bool[]";
    case ParamType::Float: return "float";
    case ParamType::Bool: return "bool";
    case ParamType::Str: return "str";
    case ParamType::ScalarType: return "ScalarType";
    case ParamType::Layout: return "Layout";
    case ParamType::Generator: return "Generator";
  }
  return "?";
}

}  // namespace

int OpSchema::index_of(const std::string& param) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == param) return static_cast<int>(i);
  return -1;
}

std::string OpSchema::str() const {
  std::string s = name + "(";
  bool star = false;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    if (i) s += ", ";
    if (p.kwarg_only && !star) {
      s += "*, ";
      star = true;
    }
    s += std::string(type_str(p.type)) + (p.optional ? "?" : "") + " " + p.name;
    if (p.default_value) s += "=" + arg_str(*p.default_value);
  }
  return s + ") -> " + (returns.empty() ? std::string("Tensor") : returns);
}

namespace {

// Drops aten's alias annotations: "Tensor(a -> *)" / "Tensor(a!)" read as "Tensor".
std::string strip_alias(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    // A type "Tensor" (after '(', ' ', ',' or '['), not a name such as add.Tensor(...).
    bool type_start = (i > 5 && (s[i - 6] == '(' || s[i - 6] == ' ' || s[i - 6] == ',' ||
                                           s[i - 6] == '['));
    if (s[i] == 'r' && i >= 5 && s.compare(i - 5, 6, "Tensor") == 0 && type_start &&
        i + 1 < s.size() && s[i + 1] == '(') {
      size_t close = s.find(')', i + 1);
      if (close != std::string::npos) i = close;
    }
  }
  return out;
}

}  // namespace

OpSchema parse_schema(const std::string& text_in) {
  OpSchema sc;
  sc.text = trim(text_in);
  const std::string text = strip_alias(text_in);
  auto lp = text.find('(');
  size_t rp = std::string::npos;
  int depth = 0;
  for (size_t i = lp; lp != std::string::npos && i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && --depth == 0) {
      rp = i;
      break;
    }
  }
  if (lp == std::string::npos || rp == std::string::npos || rp < lp) bad(text, "expected NAME(PARAMS)");
  if (auto arrow = text.find("->", rp); arrow != std::string::npos)
    sc.returns = trim(text.substr(arrow + 2));
  std::string name = trim(text.substr(0, lp));
  auto dot = name.find('.');
  sc.base = dot == std::string::npos ? name : name.substr(0, dot);
  sc.overload = dot == std::string::npos ? "default" : name.substr(dot + 1);
  sc.name = sc.base + "." + sc.overload;
  bool kwarg_only = false;
  for (const auto& item : split_top(text.substr(lp + 1, rp - lp - 1))) {
    if (item == "*") {
      kwarg_only = true;
      continue;
    }
    ParamSpec p;
    p.kwarg_only = kwarg_only;
    std::string decl = item, def;
    if (auto eq = item.find('='); eq != std::string::npos) {
      decl = trim(item.substr(0, eq));
      def = trim(item.substr(eq + 1));
    }
    auto sp = decl.rfind(' ');
    if (sp == std::string::npos) bad(text, "parameter '" + decl + "' needs a type and a name");
    p.name = trim(decl.substr(sp + 1));
    p.type = parse_type(trim(decl.substr(0, sp)), p.optional, text);
    if (!def.empty()) p.default_value = parse_default(def, p, text);
    sc.params.push_back(std::move(p));
  }
  return sc;
}

}  // namespace stax
