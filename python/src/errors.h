// stax::Error -> stax.Error (python/stax/_errors.py), with .stage, .location and .message, and
// the same text as the C++ what() ("FILE:LINE:COL: error: MESSAGE"). A compile cancelled by
// Ctrl-C surfaces as KeyboardInterrupt instead (interruptible.h).
#pragma once

#include <nanobind/nanobind.h>

namespace stax::python {

namespace nb = nanobind;

// Registers the exception translator; `error_type` is stax._errors.Error.
void bind_errors(nb::module_& m);

}  // namespace stax::python
