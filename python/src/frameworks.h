// The Python frameworks Stax hands tensors to and takes them from (torch, numpy), looked up in
// sys.modules once their user has imported them: Stax never imports torch itself.
#pragma once

#include <nanobind/nanobind.h>

namespace stax::python {

namespace nb = nanobind;

// The module `name` when it is already imported (sys.modules), else an invalid object.
nb::object imported_module(const char* name);

// torch.Tensor / numpy.ndarray and their DLPack entry points.
// torch's __dlpack__ and torch.from_dlpack are Python functions (argument checks, stream
// handling) costing microseconds per call; for a plain CPU torch.Tensor (or Parameter) the C
// functions they end in are called directly: torch._C._to_dlpack_versioned(t) and
// torch._C._from_dlpack(capsule). Where torch lacks them the public functions are used.
struct Frameworks {
  bool torch_looked_up = false, numpy_looked_up = false;
  nb::object torch_tensor, torch_parameter, torch_from_dlpack;
  nb::object torch_to_capsule, torch_from_capsule;  // torch._C's, or invalid
  nb::object numpy_ndarray, numpy_from_dlpack;

  void look_up();  // the frameworks imported so far
};

// The process's Frameworks, refreshed with the frameworks imported since the last call. Needs
// the GIL.
Frameworks& frameworks();

}  // namespace stax::python
