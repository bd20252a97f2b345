// Structural checks of a Graph, run after parsing and after every pass in debug pipelines.
#pragma once

#include "core/graph/graph.h"

namespace stax {

// Throws stax::Error (stage "verify", location "%node") on the first violation of:
//   - node list: exactly one output node, and it is the last node; names are unique and each
//     resolves (Graph::find) to its own node;
//   - references: every node an argument (or the return) refers to is a node of this graph
//     (no dangling references), and is defined before its use (topological order); a cycle is
//     reported with the nodes on it;
//   - placeholders: no op and no arguments; well-formed metadata (one stride per dimension,
//     non-negative sizes, a device);
//   - calls: an op that is registered in the graph's registry (under its own name); arguments that
//     bind to its schema (arity, parameter types) and are already in normalized form; metadata
//     equal to what the op's inference rule gives for those arguments;
//   - the output node: no op, returns only tensor values.
void verify(const Graph& g);

}  // namespace stax
