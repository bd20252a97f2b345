// Tensors into Stax: DLPack producers (torch, numpy, ...) to stax::Tensor (tensor_interop.h has
// the rules: when the memory is borrowed, when it is copied, what is refused).
#include <dlfcn.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/support/error.h"
#include "python/src/dlpack.h"
#include "python/src/frameworks.h"
#include "python/src/tensor_interop.h"

namespace stax::python {

namespace {

constexpr const char* kStage = "input";

// ---- dtypes -------------------------------------------------------------------------------------

std::optional<DType> dtype_from_dlpack(dlpack::DataType t) {
  if (t.lanes != 1) return std::nullopt;
  switch (t.code) {
    case dlpack::kFloat:
      if (t.bits == 32) return DType::Float32;
      if (t.bits == 64) return DType::Float64;
      if (t.bits == 16) return DType::Float16;
      break;
    case dlpack::kBfloat:
      if (t.bits == 16) return DType::BFloat16;
      break;
    case dlpack::kInt:
      if (t.bits == 64) return DType::Int64;
      if (t.bits == 32) return DType::Int32;
      if (t.bits == 8) return DType::Int8;
      if (t.bits == 16) return DType::Int16;
      break;
    case dlpack::kUInt:
      if (t.bits == 8) return DType::UInt8;
      if (t.bits == 16) return DType::UInt16;
      if (t.bits == 32) return DType::UInt32;
      if (t.bits == 64) return DType::UInt64;
      break;
    case dlpack::kBool:
      if (t.bits == 8) return DType::Bool;
      break;
    case dlpack::kComplex:
      if (t.bits == 64) return DType::Complex64;
      if (t.bits == 128) return DType::Complex128;
      break;
    default:
      break;
  }
  return std::nullopt;
}

// "int16", "uint32", "complex64", "float8 (code 7)", "float32x4" for messages.
std::string dlpack_dtype_name(dlpack::DataType t) {
  std::string base;
  switch (t.code) {
    case dlpack::kInt:
      base = "int";
      break;
    case dlpack::kUInt:
      base = "uint";
      break;
    case dlpack::kFloat:
      base = "float";
      break;
    case dlpack::kBfloat:
      base = "bfloat";
      break;
    case dlpack::kComplex:
      base = "complex";
      break;
    case dlpack::kBool:
      base = "bool";
      break;
    case dlpack::kOpaqueHandle:
      base = "opaque";
      break;
    default:
      base = "float8/6/4 (DLPack type code " + std::to_string(t.code) + ") of ";
      break;
  }
  std::string name = base + std::to_string(t.bits);
  if (t.lanes != 1) name += "x" + std::to_string(t.lanes);
  return name;
}

std::string stax_dtype_list() {
  std::string s;
  for (int i = 0; i < kNumDTypes; ++i)
    s += (s.empty() ? "" : ", ") + std::string(dtype_name(static_cast<DType>(i)));
  return s;
}

// ---- devices ------------------------------------------------------------------------------------

bool host_readable(int32_t type) {
  return type == dlpack::kCPU || type == dlpack::kCUDAHost || type == dlpack::kROCMHost ||
         type == dlpack::kCUDAManaged;
}

std::string device_name(int32_t type, int32_t id) {
  std::string kind;
  switch (type) {
    case dlpack::kCPU:
      return "cpu";
    case dlpack::kCUDA:
      kind = "cuda";
      break;
    case dlpack::kCUDAHost:
      kind = "cuda_host";
      break;
    case dlpack::kROCM:
      kind = "rocm";
      break;
    case dlpack::kROCMHost:
      kind = "rocm_host";
      break;
    case dlpack::kCUDAManaged:
      kind = "cuda_managed";
      break;
    case dlpack::kOpenCL:
      kind = "opencl";
      break;
    case dlpack::kVulkan:
      kind = "vulkan";
      break;
    case dlpack::kMetal:
      kind = "metal";
      break;
    case dlpack::kOneAPI:
      kind = "oneapi";
      break;
    default:
      kind = "device type " + std::to_string(type);
      break;
  }
  return kind + ":" + std::to_string(id);
}

// Whether this process can reach a CUDA driver (what the CUDA plugins dlopen).
bool cuda_driver_present() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return false;
  dlclose(h);
  return true;
}

// ---- the producer's memory, owned until the last Stax tensor viewing it dies --------------------

class ImportedBuffer {
 public:
  explicit ImportedBuffer(dlpack::ManagedTensor* m) : legacy_(m) {}
  explicit ImportedBuffer(dlpack::ManagedTensorVersioned* m) : versioned_(m) {}
  ImportedBuffer(const ImportedBuffer&) = delete;
  ImportedBuffer& operator=(const ImportedBuffer&) = delete;

  ~ImportedBuffer() {
    // A producer's deleter may touch Python objects (numpy's does): run it under the GIL, and
    // not at all once the interpreter is gone (the process is exiting; the memory goes with it).
    if (!nb::is_alive()) return;
    PyGILState_STATE state = PyGILState_Ensure();
    if (legacy_ && legacy_->deleter) legacy_->deleter(legacy_);
    if (versioned_ && versioned_->deleter) versioned_->deleter(versioned_);
    PyGILState_Release(state);
  }

  const dlpack::Tensor& tensor() const {
    return legacy_ ? legacy_->dl_tensor : versioned_->dl_tensor;
  }
  uint64_t flags() const { return versioned_ ? versioned_->flags : 0; }
  const dlpack::Version* version() const { return versioned_ ? &versioned_->version : nullptr; }

 private:
  dlpack::ManagedTensor* legacy_ = nullptr;
  dlpack::ManagedTensorVersioned* versioned_ = nullptr;
};

// Takes ownership of a capsule's DLPack tensor (renaming the capsule "used_...").
std::shared_ptr<ImportedBuffer> consume_capsule(nb::handle capsule, const std::string& what) {
  PyObject* c = capsule.ptr();
  if (PyCapsule_IsValid(c, dlpack::kCapsuleVersioned)) {
    auto* m = static_cast<dlpack::ManagedTensorVersioned*>(
        PyCapsule_GetPointer(c, dlpack::kCapsuleVersioned));
    PyCapsule_SetName(c, dlpack::kUsedCapsuleVersioned);
    auto owner = std::make_shared<ImportedBuffer>(m);
    if (m->version.major != dlpack::kMajorVersion)
      throw Error(kStage, what,
                  "the producer's DLPack version is " + std::to_string(m->version.major) + "." +
                      std::to_string(m->version.minor) + "; Stax reads DLPack " +
                      std::to_string(dlpack::kMajorVersion) + ".x");
    return owner;
  }
  if (PyCapsule_IsValid(c, dlpack::kCapsule)) {
    auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(c, dlpack::kCapsule));
    PyCapsule_SetName(c, dlpack::kUsedCapsule);
    return std::make_shared<ImportedBuffer>(m);
  }
  const char* name = PyCapsule_GetName(c);
  PyErr_Clear();
  std::string n = name ? name : "(unnamed)";
  if (n == dlpack::kUsedCapsule || n == dlpack::kUsedCapsuleVersioned)
    throw Error(kStage, what,
                "this DLPack capsule was already consumed: its tensor belongs to another consumer "
                "and may have been freed (call __dlpack__() again for a new capsule)");
  throw Error(kStage, what, "a capsule named '" + n + "' is not a DLPack tensor");
}

// "BufferError: the message" (without the traceback).
std::string python_exception_text(nb::python_error& e) {
  std::string text = std::string(nb::type_name(e.type()).c_str()) + ": " +
                     nb::cast<std::string>(nb::str(e.value()));
  e.restore();
  PyErr_Clear();
  return text;
}

// A torch tensor that requires grad refuses __dlpack__; Stax only reads it (it records no torch
// autograd), so it reads obj.detach(): the same memory.
bool requires_grad(nb::handle obj) {
  return nb::hasattr(obj, "requires_grad") && nb::hasattr(obj, "detach") &&
         PyObject_IsTrue(obj.attr("requires_grad").ptr()) == 1;
}

// The capsule `obj` exports for host memory (a device tensor is asked for a host copy).
// numpy.float32(2.0) and the other numpy scalars: not arrays, but they have a dtype.
bool is_numpy_scalar(nb::handle obj) {
  nb::object np = imported_module("numpy");
  return np.is_valid() && PyObject_IsInstance(obj.ptr(), np.attr("generic").ptr()) == 1;
}

nb::object dlpack_capsule(nb::handle obj, const std::string& what, std::string* copy_reason) {
  if (PyCapsule_CheckExact(obj.ptr())) return nb::borrow(obj);
  if (!nb::hasattr(obj, "__dlpack__")) {
    if (is_numpy_scalar(obj)) {  // a 0-d array holding its value (a copy)
      *copy_reason = "a numpy scalar, copied into a 0-d array";
      return nb::module_::import_("numpy").attr("asarray")(obj).attr("__dlpack__")();
    }
    std::string type = nb::type_name(obj.type()).c_str();
    std::string hint;
    if (PyFloat_Check(obj.ptr()) || PyLong_Check(obj.ptr()) || PyBool_Check(obj.ptr()))
      hint = " (a Python number has no dtype: pass a 0-d tensor, e.g. numpy.float32(" +
             nb::cast<std::string>(nb::repr(obj)) + ") or torch.tensor(" +
             nb::cast<std::string>(nb::repr(obj)) + "))";
    throw Error(kStage, what,
                "expected a tensor (an object with __dlpack__: torch.Tensor, numpy.ndarray, "
                "stax.Tensor, ...), got " +
                    type + hint);
  }
  int32_t device_type = dlpack::kCPU, device_id = 0;
  if (nb::hasattr(obj, "__dlpack_device__")) {
    try {
      nb::tuple dev = nb::tuple(obj.attr("__dlpack_device__")());
      device_type = nb::cast<int32_t>(dev[0]);
      device_id = nb::cast<int32_t>(dev[1]);
    } catch (nb::python_error& e) {
      throw Error(kStage, what, "__dlpack_device__() failed: " + python_exception_text(e));
    } catch (const nb::cast_error&) {
      throw Error(kStage, what, "__dlpack_device__() did not return (device_type, device_id)");
    }
  }
  nb::tuple max_version = nb::make_tuple(dlpack::kMajorVersion, dlpack::kMinorVersion);
  if (!host_readable(device_type)) {
    const std::string device = device_name(device_type, device_id);
    std::string hint;
    if ((device_type == dlpack::kCUDA || device_type == dlpack::kCUDAManaged) &&
        !cuda_driver_present())
      hint = "; this machine has no CUDA driver (libcuda.so.1 not found)";
    try {
      nb::object cap = obj.attr("__dlpack__")(nb::arg("max_version") = max_version,
                                              nb::arg("dl_device") = nb::make_tuple(1, 0),
                                              nb::arg("copy") = true);
      *copy_reason = "a tensor on " + device + ", copied to the host by its producer";
      return cap;
    } catch (nb::python_error& e) {
      throw Error(kStage, what,
                  "a tensor on " + device +
                      ": Stax runs on host memory and asked the producer for a host copy "
                      "(__dlpack__(dl_device=(kDLCPU, 0), copy=True)), which failed: " +
                      python_exception_text(e) + hint);
    }
  }
  try {
    return obj.attr("__dlpack__")(nb::arg("max_version") = max_version);
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) {
      std::string text = python_exception_text(e);
      if (requires_grad(obj)) return dlpack_capsule(obj.attr("detach")(), what, copy_reason);
      throw Error(kStage, what, "__dlpack__() failed: " + text);
    }
    python_exception_text(e);  // a producer older than DLPack 1.0: no keyword arguments
  }
  try {
    return obj.attr("__dlpack__")();
  } catch (nb::python_error& e) {
    throw Error(kStage, what, "__dlpack__() failed: " + python_exception_text(e));
  }
}

// Copies the DLPack view (any strides, signed) into a fresh row-major Stax tensor.
Tensor copy_strided(const char* base, const Shape& sizes, const std::vector<int64_t>& strides,
                    DType dtype) {
  Tensor out = Tensor::empty(sizes, dtype);
  const int64_t n = out.numel();
  if (n == 0) return out;
  const size_t item = dtype_size(dtype);
  std::byte* dst = out.data_ptr();
  const size_t nd = sizes.size();
  std::vector<int64_t> idx(nd, 0);
  int64_t offset = 0;  // in elements, signed
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + static_cast<size_t>(i) * item, base + offset * static_cast<int64_t>(item),
                item);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= (sizes[d] - 1) * strides[d];
      idx[d] = 0;
    }
  }
  return out;
}

// The fast path's capsule for a plain torch.Tensor / Parameter, else an invalid object.
nb::object torch_capsule(nb::handle obj) {
  Frameworks& f = frameworks();
  if (!f.torch_to_capsule.is_valid()) return nb::object();
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()));
  if (type != f.torch_tensor.ptr() && type != f.torch_parameter.ptr()) return nb::object();
  try {
    return f.torch_to_capsule(obj);
  } catch (nb::python_error& e) {
    python_exception_text(e);  // the generic path reports it
    return nb::object();
  }
}

// A Stax tensor for the producer's DLPack tensor `owner` holds (see the header for the rules).
Tensor tensor_of(std::shared_ptr<ImportedBuffer> owner, const std::string& what,
                 const std::string& copy_reason, ImportInfo& out) {
  const dlpack::Tensor& dl = owner->tensor();
  out.read_only = (owner->flags() & dlpack::kFlagReadOnly) != 0;
  if (!host_readable(dl.device.device_type))
    throw Error(kStage, what,
                "the producer exported a tensor on " +
                    device_name(dl.device.device_type, dl.device.device_id) +
                    ", which the host cannot read");
  std::optional<DType> dtype = dtype_from_dlpack(dl.dtype);
  if (!dtype)
    throw Error(kStage, what,
                "dtype " + dlpack_dtype_name(dl.dtype) +
                    " is not a Stax dtype (Stax has: " + stax_dtype_list() + ")");
  if (dl.ndim < 0 || (dl.ndim > 0 && !dl.shape))
    throw Error(kStage, what, "malformed DLPack tensor (ndim " + std::to_string(dl.ndim) + ")");
  Shape sizes(dl.shape, dl.shape + dl.ndim);
  for (int64_t s : sizes)
    if (s < 0) throw Error(kStage, what, "negative size in shape " + shape_str(sizes));
  check_extent(sizes, *dtype, what);
  Shape strides = dl.strides ? Shape(dl.strides, dl.strides + dl.ndim) : contiguous_strides(sizes);
  const char* data = static_cast<const char*>(dl.data);
  const int64_t numel = shape_numel(sizes);
  if (numel > 0 && !data)
    throw Error(kStage, what,
                "the tensor " + shape_str(sizes) +
                    " has no memory (a null data pointer: freed, or its storage resized to 0)");
  if (numel == 0) return Tensor::empty(sizes, *dtype);
  data += dl.byte_offset;
  bool negative = false;
  for (size_t d = 0; d < sizes.size(); ++d) negative = negative || (sizes[d] > 1 && strides[d] < 0);
  const bool misaligned = reinterpret_cast<uintptr_t>(data) % dtype_size(*dtype) != 0;
  if (!copy_reason.empty()) {
    out.copied = true;
    out.copy_reason = copy_reason;
  }
  if (negative || misaligned) {
    out.copied = true;
    out.copy_reason = negative ? "negative strides " + shape_str(strides)
                               : "data not aligned to its " + std::to_string(dtype_size(*dtype)) +
                                     "-byte elements";
    return copy_strided(data, sizes, strides, *dtype);
  }
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] <= 1) strides[d] = std::max<int64_t>(strides[d], 0);  // any stride reads alike
  return Tensor::from_external(const_cast<char*>(data), sizes, strides, *dtype, std::move(owner));
}

}  // namespace

Tensor import_tensor(nb::handle obj, const std::string& what, ImportInfo* info) {
  ImportInfo local;
  ImportInfo& out = info ? *info : local;
  out = ImportInfo{};
  if (nb::isinstance<Tensor>(obj)) return nb::cast<const Tensor&>(obj);
  if (nb::object capsule = torch_capsule(obj); capsule.is_valid()) {
    std::shared_ptr<ImportedBuffer> owner = consume_capsule(capsule, what);
    if (host_readable(owner->tensor().device.device_type))
      return tensor_of(std::move(owner), what, "", out);
    // a CUDA tensor: the generic path asks torch for a host copy
  }
  std::string copy_reason;
  nb::object capsule = dlpack_capsule(obj, what, &copy_reason);
  return tensor_of(consume_capsule(capsule, what), what, copy_reason, out);
}

OutputKind output_kind_of(nb::handle obj) {
  Frameworks& f = frameworks();
  if (f.torch_tensor.is_valid() && PyObject_IsInstance(obj.ptr(), f.torch_tensor.ptr()) == 1)
    return OutputKind::Torch;
  if (f.numpy_ndarray.is_valid() && PyObject_IsInstance(obj.ptr(), f.numpy_ndarray.ptr()) == 1)
    return OutputKind::Numpy;
  PyErr_Clear();
  return OutputKind::Stax;
}

std::vector<Tensor> import_tensors(nb::handle values, const std::vector<std::string>& names,
                                   OutputKind* kind) {
  std::vector<Tensor> out;
  out.reserve(nb::len(values));
  OutputKind k = OutputKind::Stax;
  size_t i = 0;
  for (nb::handle v : values) {
    if (k != OutputKind::Torch) {  // torch wins over numpy, numpy over stax
      OutputKind kv = output_kind_of(v);
      if (kv == OutputKind::Torch || (kv == OutputKind::Numpy && k == OutputKind::Stax)) k = kv;
    }
    std::string what = i < names.size() ? "input '" + names[i] + "'" : "input " + std::to_string(i);
    out.push_back(import_tensor(v, what));
    ++i;
  }
  if (kind) *kind = k;
  return out;
}

}  // namespace stax::python
