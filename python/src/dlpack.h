// The DLPack ABI (https://dmlc.github.io/dlpack/latest/c_api.html), the parts Stax uses, written
// from the specification: the structs are a frozen C ABI that torch, numpy, JAX and CuPy share.
// Version 1.x: DLManagedTensorVersioned (capsule "dltensor_versioned") carries a version and
// flags; the legacy DLManagedTensor (capsule "dltensor") does not. A consumer renames the
// capsule to "used_dltensor[_versioned]" when it takes ownership, and then calls the deleter
// once it is done with the memory.
#pragma once

#include <cstdint>

namespace stax::python::dlpack {

inline constexpr uint32_t kMajorVersion = 1;
inline constexpr uint32_t kMinorVersion = 1;  // the newest minor this consumer knows

enum DeviceType : int32_t {
  kCPU = 1,
  kCUDA = 2,
  kCUDAHost = 3,  // pinned host memory: readable by the CPU
  kOpenCL = 4,
  kVulkan = 7,
  kMetal = 8,
  kVPI = 9,
  kROCM = 10,
  kROCMHost = 11,  // pinned host memory: readable by the CPU
  kExtDev = 12,
  kCUDAManaged = 13,  // unified memory: readable by the CPU
  kOneAPI = 14,
};

enum TypeCode : uint8_t {
  kInt = 0,
  kUInt = 1,
  kFloat = 2,
  kOpaqueHandle = 3,
  kBfloat = 4,
  kComplex = 5,
  kBool = 6,
  kFloat8_e3m4 = 7,  // and further float8/6/4 codes up to 16
};

struct Device {
  int32_t device_type;  // DeviceType
  int32_t device_id;
};

struct DataType {
  uint8_t code;  // TypeCode
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;    // ndim entries
  int64_t* strides;  // ndim entries in elements; null: compact row-major
  uint64_t byte_offset;
};

struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

struct Version {
  uint32_t major;
  uint32_t minor;
};

inline constexpr uint64_t kFlagReadOnly = 1ull << 0;
inline constexpr uint64_t kFlagIsCopied = 1ull << 1;

struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  uint64_t flags;
  Tensor dl_tensor;
};

inline constexpr const char* kCapsule = "dltensor";
inline constexpr const char* kUsedCapsule = "used_dltensor";
inline constexpr const char* kCapsuleVersioned = "dltensor_versioned";
inline constexpr const char* kUsedCapsuleVersioned = "used_dltensor_versioned";

}  // namespace stax::python::dlpack
