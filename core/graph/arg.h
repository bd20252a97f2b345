// Arg: one argument of a call_function node, as written in the graph text.
//   %x -> Node*        2 -> int64_t       2.0 -> double      True -> bool
//   'none' -> string   [1, 2] -> List     None -> none       tensorplay.float32 -> DType
//   tensorplay.undefined -> Undefined (the printed default of an absent optional dtype)
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/types/dtype.h"

namespace stax {

class Node;
struct Undefined {
  bool operator==(const Undefined&) const = default;
};

// A torch enum value written as a literal: memory formats (torch.contiguous_format,
// torch.preserve_format, torch.channels_last, torch.channels_last_3d) and layouts (torch.strided),
// as FX printouts and aten defaults write them. `name` is without "torch.".
struct EnumLiteral {
  std::string name;
  bool operator==(const EnumLiteral&) const = default;
};
// The EnumLiteral spelled `text` ("torch.contiguous_format" or "contiguous_format"), if known.
std::optional<EnumLiteral> parse_enum_literal(std::string_view text);

struct Arg {
  using List = std::vector<Arg>;
  std::variant<std::monostate, Node*, bool, int64_t, double, std::string, DType, Undefined, List,
               EnumLiteral>
      v;

  Arg() = default;
  Arg(Node* n) : v(n) {}
  Arg(bool b) : v(b) {}
  Arg(int i) : v(int64_t{i}) {}
  Arg(int64_t i) : v(i) {}
  Arg(double d) : v(d) {}
  Arg(const char* s) : v(std::string(s)) {}
  Arg(std::string s) : v(std::move(s)) {}
  Arg(DType t) : v(t) {}
  Arg(Undefined u) : v(u) {}
  Arg(List l) : v(std::move(l)) {}
  Arg(EnumLiteral e) : v(std::move(e)) {}
  Arg(const std::vector<int64_t>& ints);
  Arg(const std::vector<Node*>& nodes);

  bool is_none() const { return std::holds_alternative<std::monostate>(v); }
  bool is_undefined() const { return std::holds_alternative<Undefined>(v); }
  bool is_absent() const { return is_none() || is_undefined(); }  // None or undefined
  bool is_node() const { return std::holds_alternative<Node*>(v); }
  bool is_bool() const { return std::holds_alternative<bool>(v); }
  bool is_int() const { return std::holds_alternative<int64_t>(v); }
  bool is_double() const { return std::holds_alternative<double>(v); }
  bool is_number() const { return is_int() || is_double() || is_bool(); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_dtype() const { return std::holds_alternative<DType>(v); }
  bool is_list() const { return std::holds_alternative<List>(v); }
  bool is_enum() const { return std::holds_alternative<EnumLiteral>(v); }

  Node* node() const { return std::get<Node*>(v); }
  bool to_bool() const;          // bool, or int 0/1
  int64_t to_int() const;        // int or bool
  double to_double() const;      // int, double or bool
  const std::string& str() const { return std::get<std::string>(v); }
  DType dtype() const { return std::get<DType>(v); }
  const List& list() const { return std::get<List>(v); }
  std::vector<int64_t> to_int_list() const;  // a list of ints, or a single int as [i]
  std::vector<Node*> to_node_list() const;   // a list of nodes (None entries become nullptr)

  bool operator==(const Arg& o) const { return v == o.v; }
};

// The graph-text spelling: "%name", "2", "2.0", "True", "'none'", "[1, 2]", "None",
// "tensorplay.float32", "tensorplay.undefined". Doubles use Python's repr (shortest round trip).
std::string arg_str(const Arg& a);
std::string double_repr(double d);

// `a` with every node in it (lists included, recursively) replaced by `f(node)`: for re-emitting a
// node's arguments into another graph.
Arg map_nodes(const Arg& a, const std::function<Node*(Node*)>& f);

}  // namespace stax
