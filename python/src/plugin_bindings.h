// stax.plugins() (what `stax plugins` lists) and stax.cache (what `stax cache` does).
#pragma once

#include <nanobind/nanobind.h>

namespace stax::python {

namespace nb = nanobind;

void bind_plugins(nb::module_& m);

}  // namespace stax::python
