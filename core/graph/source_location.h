// Where a node came from in graph text, for run-time errors (issue 12): the parser records
// "FILE:LINE:COL" of each node's definition in Node::attrs["source_location"] (a string Arg), so
// clone(), the decompositions (their nodes take the replaced node's attrs) and the partitioner
// carry it along. A node built through the API has none.
#pragma once

#include <string>

#include "core/graph/graph.h"

namespace stax {

inline constexpr const char* kSourceLocationAttr = "source_location";

// "FILE:LINE:COL", or "" when the node did not come from graph text.
inline std::string source_location(const Node& n) {
  auto it = n.attrs.find(kSourceLocationAttr);
  return it != n.attrs.end() && it->second.is_string() ? it->second.str() : std::string();
}

inline void set_source_location(Node& n, std::string location) {
  n.attrs[kSourceLocationAttr] = Arg(std::move(location));
}

// The location of a run-time error raised by the node: "%name (FILE:LINE:COL)", or "%name".
inline std::string node_where(const Node& n) {
  std::string loc = source_location(n);
  return loc.empty() ? "%" + n.name() : "%" + n.name() + " (" + loc + ")";
}

}  // namespace stax
