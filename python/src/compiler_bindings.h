// stax.Config, the Compiler (python/stax/_compiler.py wraps it with config resolution),
// stax.CompiledGraph (the callable compile() returns, with its dumps as attributes) and
// stax.interpret.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <string>
#include <vector>

#include "core/driver/compiler.h"

namespace stax::python {

namespace nb = nanobind;

// A Python _stax.Compiler: shares the C++ Compiler with the CompiledFunctions built on it.
struct PyCompiler {
  std::shared_ptr<Compiler> compiler;
};

// A Python stax.CompiledGraph.
struct PyCompiledGraph {
  CompiledGraph graph;
  std::vector<std::string> input_names;  // the placeholders', for errors
};

PyCompiledGraph wrap_compiled(const CompiledGraph& g);

void bind_compiler(nb::module_& m);

}  // namespace stax::python
