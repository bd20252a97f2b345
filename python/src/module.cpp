// stax._stax: the nanobind extension of the Python package (python/stax/__init__.py re-exports
// what users call). Thin over the C++ API: each binding file mirrors one part of it.
#include <nanobind/nanobind.h>

#include "core/ops/install.h"
#include "python/src/compiler_bindings.h"
#include "python/src/errors.h"
#include "python/src/grad_bindings.h"
#include "python/src/graph_bindings.h"
#include "python/src/plugin_bindings.h"
#include "python/src/tensor_interop.h"

#ifndef STAX_PYTHON_SOURCE_DIR
#define STAX_PYTHON_SOURCE_DIR ""
#endif
#ifndef STAX_PYTHON_BUILD_PLUGIN_DIR
#define STAX_PYTHON_BUILD_PLUGIN_DIR ""
#endif

NB_MODULE(_stax, m) {
  namespace py = stax::python;
  m.doc() = "Stax's C++ core, bound with nanobind (use the `stax` package).";
  stax::install_ops();  // the engines' op tables (core/ops/install.h), before any parse
  py::bind_errors(m);
  py::bind_tensor(m);
  py::bind_graph(m);
  py::bind_compiler(m);
  py::bind_grad(m);
  py::bind_plugins(m);
  // Where this extension was built from: the package looks for configs/ and plugins/ next to
  // itself first (a wheel), then here (the build tree).
  m.attr("_source_dir") = STAX_PYTHON_SOURCE_DIR;
  m.attr("_build_plugin_dir") = STAX_PYTHON_BUILD_PLUGIN_DIR;
}
