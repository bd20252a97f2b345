#include "python/src/tensor_interop.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/support/error.h"
#include "python/src/dlpack.h"

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
      break;
    case dlpack::kUInt:
      if (t.bits == 8) return DType::UInt8;
      break;
    case dlpack::kBool:
      if (t.bits == 8) return DType::Bool;
      break;
    default: break;
  }
  return std::nullopt;
}

dlpack::DataType dtype_to_dlpack(DType t) {
  const uint8_t bits = static_cast<uint8_t>(dtype_size(t) * 8);
  switch (t) {
    case DType::Float32:
    case DType::Float64:
    case DType::Float16: return {dlpack::kFloat, bits, 1};
    case DType::BFloat16: return {dlpack::kBfloat, bits, 1};
    case DType::Int64:
    case DType::Int32:
    case DType::Int8: return {dlpack::kInt, bits, 1};
    case DType::UInt8: return {dlpack::kUInt, bits, 1};
    case DType::Bool: return {dlpack::kBool, 8, 1};
  }
  return {dlpack::kOpaqueHandle, 0, 1};
}

// "int16", "uint32", "complex64", "float8 (code 7)", "float32x4" for messages.
std::string dlpack_dtype_name(dlpack::DataType t) {
  std::string base;
  switch (t.code) {
    case dlpack::kInt: base = "int"; break;
    case dlpack::kUInt: base = "uint"; break;
    case dlpack::kFloat: base = "float"; break;
    case dlpack::kBfloat: base = "bfloat"; break;
    case dlpack::kComplex: base = "complex"; break;
    case dlpack::kBool: base = "bool"; break;
    case dlpack::kOpaqueHandle: base = "opaque"; break;
    default: base = "float8/6/4 (DLPack type code " + std::to_string(t.code) + ") of "; break;
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
    case dlpack::kCPU: return "cpu";
    case dlpack::kCUDA: kind = "cuda"; break;
    case dlpack::kCUDAHost: kind = "cuda_host"; break;
    case dlpack::kROCM: kind = "rocm"; break;
    case dlpack::kROCMHost: kind = "rocm_host"; break;
    case dlpack::kCUDAManaged: kind = "cuda_managed"; break;
    case dlpack::kOpenCL: kind = "opencl"; break;
    case dlpack::kVulkan: kind = "vulkan"; break;
    case dlpack::kMetal: kind = "metal"; break;
    case dlpack::kOneAPI: kind = "oneapi"; break;
    default: kind = "device type " + std::to_string(type); break;
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

// The framework module when it is already imported (sys.modules), else null.
nb::object imported_module(const char* name) {
  nb::dict modules = nb::borrow<nb::dict>(PyImport_GetModuleDict());
  if (modules.contains(name)) return modules[name];
  return nb::object();
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
                "stax.Tensor, ...), got " + type + hint);
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

// ---- export -------------------------------------------------------------------------------------

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
      throw nb::buffer_error("stax.Tensor lives in host memory (kDLCPU): it cannot be exported "
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

// ---- Python frameworks ---------------------------------------------------------------------------

// torch.Tensor / numpy.ndarray and their DLPack entry points, looked up once they are imported.
// torch's __dlpack__ and torch.from_dlpack are Python functions (argument checks, stream
// handling) costing microseconds per call; for a plain CPU torch.Tensor (or Parameter) the C
// functions they end in are called directly: torch._C._to_dlpack_versioned(t) and
// torch._C._from_dlpack(capsule). Where torch lacks them the public functions are used.
struct Frameworks {
  bool torch_looked_up = false, numpy_looked_up = false;
  nb::object torch_tensor, torch_parameter, torch_from_dlpack;
  nb::object torch_to_capsule, torch_from_capsule;  // torch._C's, or invalid
  nb::object numpy_ndarray, numpy_from_dlpack;

  void look_up() {
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
};

Frameworks& frameworks() {
  static Frameworks* f = new Frameworks();  // leaked: lives until the interpreter exits
  f->look_up();
  return *f;
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
                "dtype " + dlpack_dtype_name(dl.dtype) + " is not a Stax dtype (Stax has: " +
                    stax_dtype_list() + ")");
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
                               : "data not aligned to its " +
                                     std::to_string(dtype_size(*dtype)) + "-byte elements";
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

nb::object export_tensor(Tensor t, OutputKind kind) {
  Frameworks& f = frameworks();
  switch (kind) {
    case OutputKind::Stax: break;
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
    std::string what = i < names.size() ? "input '" + names[i] + "'"
                                         : "input " + std::to_string(i);
    out.push_back(import_tensor(v, what));
    ++i;
  }
  if (kind) *kind = k;
  return out;
}

nb::object export_tensors(std::vector<Tensor> tensors, OutputKind kind, bool unwrap_single) {
  if (unwrap_single && tensors.size() == 1) return export_tensor(std::move(tensors[0]), kind);
  nb::list out;
  for (Tensor& t : tensors) out.append(t.defined() ? export_tensor(std::move(t), kind) : nb::none());
  return nb::tuple(out);
}

void bind_tensor(nb::module_& m) {
  nb::class_<Tensor>(m, "Tensor",
                     "A Stax tensor: a strided view of host memory (Stax's own, or a DLPack "
                     "producer's it borrows). Exports itself through __dlpack__ without a copy.")
      .def_prop_ro("shape", [](const Tensor& t) { return nb::tuple(nb::cast(t.sizes())); })
      .def_prop_ro("strides", [](const Tensor& t) { return nb::tuple(nb::cast(t.strides())); },
                   "Strides in elements (torch's convention, not numpy's bytes).")
      .def_prop_ro("dtype", [](const Tensor& t) { return std::string(dtype_name(t.dtype())); })
      .def_prop_ro("device", [](const Tensor&) { return std::string("cpu"); })
      .def_prop_ro("ndim", &Tensor::dim)
      .def_prop_ro("numel", &Tensor::numel)
      .def_prop_ro("nbytes", &Tensor::nbytes)
      .def_prop_ro("data_ptr",
                   [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); },
                   "The address of element 0.")
      .def_prop_ro("is_contiguous", &Tensor::is_contiguous)
      .def_prop_ro("borrowed", [](const Tensor& t) { return t.storage()->borrowed(); },
                   "True when the memory belongs to a DLPack producer (imported without a copy).")
      .def("__dlpack__", &tensor_dlpack, nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
           nb::arg("copy") = nb::none())
      .def("__dlpack_device__", [](const Tensor&) { return nb::make_tuple(static_cast<int>(dlpack::kCPU), 0); })
      .def("item", &Tensor::item, "The value of a one-element tensor, as a Python float.")
      .def("numpy", [](const Tensor& t) { return export_tensor(t, OutputKind::Numpy); },
           "numpy.from_dlpack(self): a numpy array viewing the same memory.")
      .def("torch", [](const Tensor& t) { return export_tensor(t, OutputKind::Torch); },
           "torch.from_dlpack(self): a torch tensor viewing the same memory.")
      .def("__repr__",
           [](const Tensor& t) { return "stax.Tensor(" + t.summary() + ")"; });

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
