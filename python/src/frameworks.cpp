#include "python/src/frameworks.h"

namespace stax::python {

nb::object imported_module(const char* name) {
  nb::dict modules = nb::borrow<nb::dict>(PyImport_GetModuleDict());
  if (modules.contains(name)) return modules[name];
  return nb::object();
}

void Frameworks::look_up() {
  if (!torch_looked_up) {
    if (nb::object torch = imported_module("torch"); torch.is_valid()) {
      torch_looked_up = true;
      torch_tensor = torch.attr("Tensor");
      torch_parameter = torch.attr("nn").attr("Parameter");
      torch_from_dlpack = torch.attr("from_dlpack");
      nb::object c = torch.attr("_C");
      if (nb::hasattr(c, "_to_dlpack_versioned") && nb::hasattr(c, "_from_dlpack")) {
        torch_to_capsule = c.attr("_to_dlpack_versioned");
        torch_from_capsule = c.attr("_from_dlpack");
      }
    }
  }
  if (!numpy_looked_up) {
    if (nb::object np = imported_module("numpy"); np.is_valid()) {
      numpy_looked_up = true;
      numpy_ndarray = np.attr("ndarray");
      numpy_from_dlpack = np.attr("from_dlpack");
    }
  }
}

Frameworks& frameworks() {
  static Frameworks* f = new Frameworks();  // leaked: lives until the interpreter exits
  f->look_up();
  return *f;
}

}  // namespace stax::python
