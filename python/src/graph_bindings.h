// stax.Graph and stax.Node: the operator-level graph (core/graph/graph.h) from Python: parse the
// text format or an FX printout, build with g.placeholder / g.call / g.output, print.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <string>

#include "core/graph/graph.h"

namespace stax::python {

namespace nb = nanobind;

// A Python stax.Graph: shares the C++ graph with its nodes' handles (and, for the graphs a
// compiled object exposes, with that object: read-only then).
struct PyGraph {
  std::shared_ptr<Graph> graph;
  bool read_only = false;
};

// A Python stax.Node: a node of a graph it keeps alive.
struct PyNode {
  std::shared_ptr<Graph> graph;
  Node* node = nullptr;
};

// A read-only stax.Graph viewing `graph`, which `keep` keeps alive.
PyGraph view_graph(std::shared_ptr<const void> keep, const Graph& graph);

// DType from "float32", stax.float32, torch.float32 or numpy.float32 / numpy.dtype; throws
// stax::Error naming `where` otherwise.
DType dtype_from_py(nb::handle h, const std::string& where);

void bind_graph(nb::module_& m);

}  // namespace stax::python
