// Tensors out of Stax: stax.Tensor (the Python class), its __dlpack__ (versioned and legacy
// capsules, no copy), and the hand-over of outputs to torch and numpy (tensor_interop.h).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <utility>
#include <vector>

#include "python/src/dlpack.h"
#include "python/src/frameworks.h"
#include "python/src/tensor_interop.h"

namespace stax::python {

namespace {

dlpack::DataType dtype_to_dlpack(DType t) {
  const uint8_t bits = static_cast<uint8_t>(dtype_size(t) * 8);
  switch (t) {
    case DType::Float32:
    case DType::Float64:
    case DType::Float16:
      return {dlpack::kFloat, bits, 1};
    case DType::BFloat16:
      return {dlpack::kBfloat, bits, 1};
    case DType::Int64:
    case DType::Int32:
    case DType::Int8:
    case DType::Int16:
      return {dlpack::kInt, bits, 1};
    case DType::UInt8:
    case DType::UInt16:
    case DType::UInt32:
    case DType::UInt64:
      return {dlpack::kUInt, bits, 1};
    case DType::Bool:
      return {dlpack::kBool, 8, 1};
    case DType::Complex64:
    case DType::Complex128:
      return {dlpack::kComplex, bits, 1};
  }
  return {dlpack::kOpaqueHandle, 0, 1};
}

struct ExportContext {
  Tensor tensor;  // holds the storage
  std::vector<int64_t> shape, strides;
};

template <class Managed>
void export_deleter(Managed* self) {
  delete static_cast<ExportContext*>(self->manager_ctx);
  delete self;
}

void capsule_destructor(PyObject* capsule) {
  // A consumed capsule was renamed "used_...": its consumer calls the deleter.
  if (PyCapsule_IsValid(capsule, dlpack::kCapsuleVersioned)) {
    auto* m = static_cast<dlpack::ManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule, dlpack::kCapsuleVersioned));
    m->deleter(m);
  } else if (PyCapsule_IsValid(capsule, dlpack::kCapsule)) {
    auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule, dlpack::kCapsule));
    m->deleter(m);
  }
}

void fill_dl_tensor(dlpack::Tensor& dl, ExportContext& ctx) {
  const Tensor& t = ctx.tensor;
  ctx.shape = t.sizes();
  ctx.strides = t.strides();
  dl.data = t.numel() > 0 ? static_cast<void*>(t.data_ptr()) : t.storage()->data();
  dl.device = {dlpack::kCPU, 0};
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = dtype_to_dlpack(t.dtype());
  dl.shape = ctx.shape.data();
  dl.strides = ctx.strides.data();
  dl.byte_offset = 0;
}

nb::object make_capsule(const Tensor& t, bool versioned) {
  auto ctx = std::make_unique<ExportContext>();
  ctx->tensor = t;
  PyObject* capsule = nullptr;
  if (versioned) {
    auto m = std::make_unique<dlpack::ManagedTensorVersioned>();
    m->version = {dlpack::kMajorVersion, dlpack::kMinorVersion};
    m->flags = 0;
    fill_dl_tensor(m->dl_tensor, *ctx);
    m->manager_ctx = ctx.get();
    m->deleter = export_deleter<dlpack::ManagedTensorVersioned>;
    capsule = PyCapsule_New(m.get(), dlpack::kCapsuleVersioned, capsule_destructor);
    if (!capsule) throw nb::python_error();
    m.release();
  } else {
    auto m = std::make_unique<dlpack::ManagedTensor>();
    fill_dl_tensor(m->dl_tensor, *ctx);
    m->manager_ctx = ctx.get();
    m->deleter = export_deleter<dlpack::ManagedTensor>;
    capsule = PyCapsule_New(m.get(), dlpack::kCapsule, capsule_destructor);
    if (!capsule) throw nb::python_error();
    m.release();
  }
  ctx.release();
  return nb::steal(capsule);
}

// stax.Tensor.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)
nb::object tensor_dlpack(const Tensor& t, nb::handle stream, nb::handle max_version,
                         nb::handle dl_device, nb::handle copy) {
  if (!stream.is_none() && !(nb::isinstance<nb::int_>(stream) && nb::cast<int64_t>(stream) == -1))
    throw nb::buffer_error("stax.Tensor lives in host memory: __dlpack__ takes no stream");
  if (!dl_device.is_none()) {
    nb::tuple dev = nb::tuple(nb::borrow(dl_device));
    if (nb::len(dev) != 2 || nb::cast<int32_t>(dev[0]) != dlpack::kCPU)
      throw nb::buffer_error(
          "stax.Tensor lives in host memory (kDLCPU): it cannot be exported "
          "to another device");
  }
  bool versioned = false;
  if (!max_version.is_none()) {
    nb::tuple v = nb::tuple(nb::borrow(max_version));
    versioned = nb::len(v) >= 1 && nb::cast<int64_t>(v[0]) >= 1;
  }
  bool want_copy = !copy.is_none() && nb::cast<bool>(copy);
  return make_capsule(want_copy ? t.clone() : t, versioned);
}

}  // namespace

nb::object export_tensor(Tensor t, OutputKind kind) {
  Frameworks& f = frameworks();
  switch (kind) {
    case OutputKind::Stax:
      break;
    case OutputKind::Torch:
      if (f.torch_from_capsule.is_valid()) return f.torch_from_capsule(make_capsule(t, true));
      if (!f.torch_from_dlpack.is_valid())
        f.torch_from_dlpack = nb::module_::import_("torch").attr("from_dlpack");
      return f.torch_from_dlpack(nb::cast(std::move(t)));
    case OutputKind::Numpy:
      if (!f.numpy_from_dlpack.is_valid())
        f.numpy_from_dlpack = nb::module_::import_("numpy").attr("from_dlpack");
      return f.numpy_from_dlpack(nb::cast(std::move(t)));
  }
  return nb::cast(std::move(t));
}

nb::object export_tensors(std::vector<Tensor> tensors, OutputKind kind, bool unwrap_single) {
  if (unwrap_single && tensors.size() == 1) return export_tensor(std::move(tensors[0]), kind);
  nb::list out;
  for (Tensor& t : tensors)
    out.append(t.defined() ? export_tensor(std::move(t), kind) : nb::none());
  return nb::tuple(out);
}

void bind_tensor(nb::module_& m) {
  nb::class_<Tensor>(m, "Tensor",
                     "A Stax tensor: a strided view of host memory (Stax's own, or a DLPack "
                     "producer's it borrows). Exports itself through __dlpack__ without a copy.")
      .def_prop_ro("shape", [](const Tensor& t) { return nb::tuple(nb::cast(t.sizes())); })
      .def_prop_ro(
          "strides", [](const Tensor& t) { return nb::tuple(nb::cast(t.strides())); },
          "Strides in elements (torch's convention, not numpy's bytes).")
      .def_prop_ro("dtype", [](const Tensor& t) { return std::string(dtype_name(t.dtype())); })
      .def_prop_ro("device", [](const Tensor&) { return std::string("cpu"); })
      .def_prop_ro("ndim", &Tensor::dim)
      .def_prop_ro("numel", &Tensor::numel)
      .def_prop_ro("nbytes", &Tensor::nbytes)
      .def_prop_ro(
          "data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); },
          "The address of element 0.")
      .def_prop_ro("is_contiguous", &Tensor::is_contiguous)
      .def_prop_ro(
          "borrowed", [](const Tensor& t) { return t.storage()->borrowed(); },
          "True when the memory belongs to a DLPack producer (imported without a copy).")
      .def("__dlpack__", &tensor_dlpack, nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
           nb::arg("copy") = nb::none())
      .def("__dlpack_device__",
           [](const Tensor&) { return nb::make_tuple(static_cast<int>(dlpack::kCPU), 0); })
      .def("item", &Tensor::item, "The value of a one-element tensor, as a Python float.")
      .def(
          "numpy", [](const Tensor& t) { return export_tensor(t, OutputKind::Numpy); },
          "numpy.from_dlpack(self): a numpy array viewing the same memory.")
      .def(
          "torch", [](const Tensor& t) { return export_tensor(t, OutputKind::Torch); },
          "torch.from_dlpack(self): a torch tensor viewing the same memory.")
      .def("__repr__", [](const Tensor& t) { return "stax.Tensor(" + t.summary() + ")"; });

  m.def(
      "tensor",
      [](nb::handle obj) {
        ImportInfo info;
        return import_tensor(obj, "stax.tensor", &info);
      },
      nb::arg("obj"),
      "A stax.Tensor for a DLPack producer (torch.Tensor, numpy.ndarray, ...), without a copy "
      "where Stax can read the memory as it is; see docs/python.md for when it copies.");
  m.def(
      "_import_info",
      [](nb::handle obj) {
        ImportInfo info;
        Tensor t = import_tensor(obj, "stax._import_info", &info);
        return nb::make_tuple(std::move(t), info.copied, info.copy_reason, info.read_only);
      },
      nb::arg("obj"), "(tensor, copied, reason, read_only): import_tensor's decisions, for tests.");
}

}  // namespace stax::python
