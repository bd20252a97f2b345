#include "python/src/errors.h"

#include <nanobind/stl/string.h>

#include <exception>

#include "core/support/error.h"

namespace stax::python {

namespace {

PyObject* error_type = nullptr;  // stax._errors.Error, kept for the process's lifetime

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const stax::Error& e) {
    nb::object type = nb::borrow(error_type);
    nb::object exc = type(e.what(), e.stage(), e.location(), e.message());
    PyErr_SetObject(error_type, exc.ptr());
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  nb::object type = nb::module_::import_("stax._errors").attr("Error");
  error_type = type.release().ptr();
  nb::register_exception_translator(&translate);
  m.attr("Error") = nb::borrow(error_type);
}

}  // namespace stax::python
