#include "core/graph/arg.h"

#include <charconv>
#include <cmath>

#include "core/graph/graph.h"

namespace stax {

Arg::Arg(const std::vector<int64_t>& ints) {
  List l;
  l.reserve(ints.size());
  for (auto i : ints) l.emplace_back(i);
  v = std::move(l);
}

Arg::Arg(const std::vector<Node*>& nodes) {
  List l;
  l.reserve(nodes.size());
  for (auto* n : nodes) {
    if (n)
      l.emplace_back(n);
    else
      l.emplace_back();
  }
  v = std::move(l);
}

bool Arg::to_bool() const {
  if (is_bool()) return std::get<bool>(v);
  return to_int() != 0;
}

int64_t Arg::to_int() const {
  if (is_bool()) return std::get<bool>(v) ? 1 : 0;
  return std::get<int64_t>(v);
}

double Arg::to_double() const {
  if (is_double()) return std::get<double>(v);
  return static_cast<double>(to_int());
}

std::vector<int64_t> Arg::to_int_list() const {
  if (is_int()) return {to_int()};
  std::vector<int64_t> out;
  for (const auto& a : list()) out.push_back(a.to_int());
  return out;
}

std::vector<Node*> Arg::to_node_list() const {
  std::vector<Node*> out;
  for (const auto& a : list()) out.push_back(a.is_node() ? a.node() : nullptr);
  return out;
}

std::string double_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Python's repr: the shortest digits that round-trip, positional when -4 <= exp < 16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-1.2345e+02"
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  auto epos = sci.find('e');
  int exp10 = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (char c : sci.substr(0, epos))
    if (c != '.') digits += c;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 < 0) {
      out = "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
    } else if (static_cast<size_t>(exp10) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exp10) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exp10 + 1) + "." + digits.substr(exp10 + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    int ae = exp10 < 0 ? -exp10 : exp10;
    out += std::string("e") + (exp10 < 0 ? "-" : "+") + (ae < 10 ? "0" : "") + std::to_string(ae);
  }
  return neg ? "-" + out : out;
}

static std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

std::optional<EnumLiteral> parse_enum_literal(std::string_view text) {
  if (text.rfind("torch.", 0) == 0) text.remove_prefix(6);
  for (std::string_view name : {"contiguous_format", "preserve_format", "channels_last",
                                "channels_last_3d", "strided"})
    if (text == name) return EnumLiteral{std::string(name)};
  return std::nullopt;
}

std::string arg_str(const Arg& a) {
  struct V {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(Node* n) const { return "%" + n->name(); }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return double_repr(d); }
    std::string operator()(const std::string& s) const { return quote(s); }
    std::string operator()(DType t) const { return "tensorplay." + std::string(dtype_name(t)); }
    std::string operator()(Undefined) const { return "tensorplay.undefined"; }
    std::string operator()(const EnumLiteral& e) const { return "torch." + e.name; }
    std::string operator()(const Arg::List& l) const {
      std::string s = "[";
      for (size_t i = 0; i < l.size(); ++i) {
        if (i) s += ", ";
        s += arg_str(l[i]);
      }
      return s + "]";
    }
  };
  return std::visit(V{}, a.v);
}

Arg map_nodes(const Arg& a, const std::function<Node*(Node*)>& f) {
  if (a.is_node()) return Arg(f(a.node()));
  if (a.is_list()) {
    Arg::List l;
    for (const Arg& e : a.list()) l.push_back(map_nodes(e, f));
    return Arg(std::move(l));
  }
  return a;
}

}  // namespace stax
