#include "core/graph/printer.h"

#include <cctype>

#include "core/graph/op_registry.h"

namespace stax {

PrintOptions PrintOptions::listing52() {
  PrintOptions o;
  o.listing52_style = true;
  o.show_num_users = false;
  o.show_kwargs = false;
  o.target_prefix = "tp.";
  o.show_placeholder_shapes = false;
  o.show_placeholder_num_users = true;
  return o;
}

namespace {

std::string meta_annotations(const TensorMeta& m) {
  // A size known only at run time (nonzero's rows) has no static spelling: the parser infers it.
  std::string s = m.runtime_sized() ? "" : " shape=" + shape_str(m.sizes);
  if (m.dtype != DType::Float32) s += " dtype=" + std::string(dtype_name(m.dtype));
  if (m.device != "cpu") {
    // A plain name prints bare (device=cuda); anything else quoted (device='cuda:0').
    bool plain = !m.device.empty() && !std::isdigit(static_cast<unsigned char>(m.device[0]));
    for (char c : m.device)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') plain = false;
    s += " device=" + (plain ? m.device : arg_str(Arg(m.device)));
  }
  return s;
}

std::string num_users(const Node& n) {
  return " : [num_users=" + std::to_string(n.num_users()) + "]";
}

std::string tuple_str(const std::vector<Arg>& items) {
  std::string s = "(";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ", ";
    s += arg_str(items[i]);
  }
  if (items.size() == 1) s += ",";
  return s + ")";
}

std::string return_str(const Node& out) {
  std::string s = "return (";
  const auto& values = out.args();
  const auto& updates = out.output_updates();
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) s += ", ";
    s += values[i].is_node() ? values[i].node()->name() : arg_str(values[i]);
    if (i < updates.size() && !updates[i].empty()) s += " -> " + updates[i];
  }
  if (values.size() == 1) s += ",";
  return s + ")";
}

const char* phase_prefix(Phase p) {
  switch (p) {
    case Phase::Forward: return "[FW] ";
    case Phase::Backward: return "[BW] ";
    case Phase::None: return "";
  }
  return "";
}

}  // namespace

std::string print_node(const Node& n, const PrintOptions& o) {
  if (n.is_output()) return return_str(n);
  std::string s = "%" + n.name();
  if (n.is_placeholder()) {
    if (o.show_placeholder_shapes) s += meta_annotations(n.meta());
    if (o.show_placeholder_num_users) s += num_users(n);
    return s + " = placeholder[target=" + n.name() + "]";
  }
  if (!n.is_tuple()) s += meta_annotations(n.meta());  // a tuple's getitem nodes carry them
  if (o.show_num_users) s += num_users(n);
  std::vector<Arg> args = n.args();
  if (!o.show_kwargs) {
    // The seed's listings pass these kwarg-only parameters positionally (gelu's approximate).
    for (const auto& [k, v] : n.kwargs()) {
      int idx = n.op()->schema.index_of(k);
      if (idx >= 0 && n.op()->schema.params[idx].positional_compat) args.push_back(v);
    }
  }
  s += " = call_function[target=" + o.target_prefix + n.op()->name() +
       "](args = " + tuple_str(args);
  if (o.show_kwargs) {
    s += ", kwargs = {";
    for (size_t i = 0; i < n.kwargs().size(); ++i) {
      if (i) s += ", ";
      s += n.kwargs()[i].first + ": " + arg_str(n.kwargs()[i].second);
    }
    s += "}";
  }
  return s + ")";
}

std::string print_graph(const Graph& g, const PrintOptions& o) {
  std::string s;
  const char* indent = o.listing52_style ? "" : "    ";
  if (!o.listing52_style) s += "graph(\n";
  for (const Node* n : g.nodes())
    s += indent + std::string(phase_prefix(n->phase())) + print_node(*n, o) + "\n";
  if (!o.listing52_style) s += ")\n";
  return s;
}

}  // namespace stax
