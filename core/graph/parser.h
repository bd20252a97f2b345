// Graph text (.stax) -> Graph. Reads both layouts the printer writes (printer.h documents the
// canonical form) and the seed's own listings:
//
//   file      := [ "graph(" NL ] { stmt NL } [ ")" ]           (wrapper optional: Listing 5.2)
//              | "graph():" NL { stmt NL }                       (torch.fx's print(gm.graph))
//   stmt      := [ "[FW]" | "[BW]" ] ( node | return )
//   node      := %NAME { shape=(d, ...) | dtype=NAME | device=NAME }
//                [ ":" "[" ( "num_users" | "#users" ) "=" INT "]" ]     (#users: torch 1.x FX)
//                "=" ( ( "placeholder" | "get_attr" ) "[target=" NAME "]"
//                    | "call_function[target=" TARGET "](args = (" values ")"
//                      [ ", kwargs = {" [ KEY ":" value { "," KEY ":" value } ] "}" ] ")" )
//   return    := "return" ( "(" [ item { "," item } [","] ] ")" | ref )     ref := NAME | %NAME
//   item      := ref [ "->" NAME ] | "(" ... ")" | "[" ... "]"
//                (FX nests tuples and lists in returns: read flattened, in order. "v -> x" marks
//                v as the new value of placeholder x (core/graph/functionalize.h); such items
//                follow the returned values)
//   value     := %NAME | INT | FLOAT (1.5, 1e-05, inf, -inf, nan) | True | False | None
//              | 'str' | "str" | [ values ] | ( values ) | tensorplay.DTYPE | tensorplay.undefined
//              | torch.DTYPE | torch.contiguous_format (and the other memory formats, torch.strided)
//              | device(type='cpu') | device(type='cuda', index=0) | cpu | cuda   (FX's spellings)
//   TARGET    := add.Tensor | tp.add.Tensor | tensorplay.ops.tp.add.Tensor | relu (= relu.default)
//              | torch.ops.aten.add.Tensor | aten.add.Tensor            (FX / make_fx targets)
//   '#' starts a comment that runs to the end of the line; blank lines are ignored.
//
// Semantics and checks:
//   - Nodes may be referenced before their definition; the graph is built in a stable topological
//     order (text order wherever it is valid). A cycle is an error naming its nodes.
//   - Placeholders take their metadata from shape= / dtype= (float32 when absent) / device= ("cpu"
//     when absent), or from ParseOptions::placeholder_meta when the text has no shape=.
//   - Calls are bound to the op schema and their metadata inferred (Graph::call). A shape=, dtype=
//     or device= written on a call must equal the inferred value; an absent one is not checked.
//   - A written num_users must equal the node's distinct users (the return counted once).
//   - Errors: stax::Error, stage "parse", location "FILE:LINE:COL" (the offending token) and a
//     message saying what was expected and what was found, or naming the node and the values that
//     disagree (unknown op with suggestions, shape/dtype/num_users mismatch, redefinition,
//     undefined name, cycle, wrong arity or argument type, failed shape inference).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "core/graph/graph.h"

namespace stax {

struct ParseOptions {
  // Metadata of placeholders by name, for texts that omit shape= (Listing 5.2). An entry for a
  // placeholder that has shape= must agree with it; an entry naming no placeholder is an error.
  std::map<std::string, TensorMeta, std::less<>> placeholder_meta;
  // Metadata used only for placeholders that have neither shape= nor a placeholder_meta entry
  // (e.g. read from the .npy inputs of an FX printout); entries naming no such placeholder are
  // ignored.
  std::map<std::string, TensorMeta, std::less<>> placeholder_meta_if_missing;
  // The op table to resolve targets in (default_registry() when null).
  const OpRegistry* registry = nullptr;
};

// Parses `text`; `file_name` is the FILE of error locations.
Graph parse_graph(std::string_view text, const std::string& file_name = "<string>",
                  const ParseOptions& options = {});
// Reads and parses a file (an unreadable file is a stax::Error naming it).
Graph parse_graph_file(const std::string& path, const ParseOptions& options = {});

}  // namespace stax
