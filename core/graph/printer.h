// Graph -> text, in the style of the seed's Listing 5.1 (canonical) or Listing 5.2 (joint graphs).
//
// The text format (.stax), as printed in canonical form:
//
//   graph(
//       %primals_1 shape=(64, 128) : [num_users=1] = placeholder[target=primals_1]
//       %add shape=(64, 128) : [num_users=1] = call_function[target=tensorplay.ops.tp.add.Tensor]
//           (args = (%primals_1, %primals_2), kwargs = {alpha: 1})       <- one line in the text
//       return (add,)
//   )
//
// Rules (the parser, parser.h, reads exactly this back; printing a parsed canonical text gives the
// same bytes):
//   - One node per line, in the graph's (topological) order; 4-space indent inside "graph(" / ")";
//     the text ends with a newline after ")".
//   - A node of a joint graph starts with "[FW] " or "[BW] " (its Phase); nodes of Phase::None have
//     no prefix. In canonical form the prefix follows the indent.
//   - Annotations after the name, in this order, each preceded by one space:
//       shape=(d0, d1)   always (Python tuple spelling: "()", "(64,)", "(64, 128)");
//       dtype=NAME       only when the dtype is not float32 (dtype_name(): float64, int64 ...);
//       device=NAME      only when the device is not "cpu" (quoted unless an identifier:
//                        device=cuda, device='cuda:0').
//     The same rule holds for placeholders (where the annotations are the metadata) and calls
//     (where they restate the inferred metadata and are checked on parsing).
//   - " : [num_users=N]": N = distinct user nodes, the return counted as one user.
//   - placeholder[target=NAME] where NAME is the node's own name.
//   - call_function[target=PREFIX + "base.overload"](args = (a, b), kwargs = {k: v}): the
//     normalized arguments (positional schema parameters, defaults filled in; kwarg-only ones in
//     kwargs, in schema order). A 1-tuple prints as "(a,)", the empty tuple as "()", no kwargs
//     as "{}".
//     Values print with arg_str(): %name, 2, 2.0, 1e-05, inf, True, None, 'str', [1, 2],
//     tensorplay.float32, tensorplay.undefined.
//   - "return (a, b)" names the outputs without '%'; one output prints "return (a,)". An output
//     that is a placeholder's new value (core/graph/functionalize.h) prints "a -> x".
#pragma once

#include <string>

#include "core/graph/graph.h"

namespace stax {

struct PrintOptions {
  // Listing 5.2's layout: no "graph(" / ")" wrapper and no indent (the [FW]/[BW] prefixes are
  // printed in both layouts, whenever a node has a phase).
  bool listing52_style = false;
  // " : [num_users=N]" on call_function nodes.
  bool show_num_users = true;
  // ", kwargs = {...}" on call_function nodes.
  bool show_kwargs = true;
  // Printed before "base.overload" in call targets.
  std::string target_prefix = "tensorplay.ops.tp.";
  // shape= (and dtype= / device=) on placeholders. Without it the text needs the placeholders'
  // metadata from elsewhere to parse (ParseOptions::placeholder_meta).
  bool show_placeholder_shapes = true;
  // " : [num_users=N]" on placeholders.
  bool show_placeholder_num_users = true;

  // The defaults above: the canonical, round-trippable form (Listing 5.1 plus placeholder shapes).
  static PrintOptions canonical() { return {}; }
  // Listing 5.2 exactly ("some metadata omitted"): listing52_style, target prefix "tp.", no kwargs,
  // num_users on placeholders only, no placeholder shapes.
  static PrintOptions listing52();
};

// The whole graph, ending with a newline.
std::string print_graph(const Graph& g, const PrintOptions& options = {});
// One node's line without indent, phase prefix or newline ("%add shape=... = call_function[...]").
std::string print_node(const Node& n, const PrintOptions& options = {});

}  // namespace stax
