// stax.grad: a CompiledFunction (core/driver/compiled_function.h) from Python: forward and
// backward compiled (the backward on its first call), the partition inspectable (saved values,
// recomputed ones, the min-cut report), forward() returning a ForwardResult whose backward()
// gives the gradients -- the seed's `cf(x, W).backward()` (Example 5.1).
#pragma once

#include <nanobind/nanobind.h>

namespace stax::python {

namespace nb = nanobind;

void bind_grad(nb::module_& m);

}  // namespace stax::python
