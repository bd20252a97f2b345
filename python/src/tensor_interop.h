// Tensors between Python and Stax, through DLPack (docs/python.md, "Tensors").
//
// In: any object with __dlpack__ (torch.Tensor, numpy.ndarray, JAX, CuPy ...), a DLPack capsule,
// or a stax.Tensor. The producer's memory is borrowed, without a copy, when Stax can read it as
// it is: on the host (kDLCPU, or pinned / managed memory), a Stax dtype, non-negative strides
// and element-aligned data. The Stax tensor then keeps the producer's DLPack object alive (its
// deleter runs, under the GIL, when the last Stax tensor viewing the memory dies). Otherwise one
// documented copy is made:
//   * negative strides (numpy's a[::-1]) or data not aligned to its element size: copied into a
//     fresh row-major tensor;
//   * a device tensor (kDLCUDA, kDLROCM ...): the producer is asked for a host copy
//     (__dlpack__(dl_device=(kDLCPU, 0), copy=True), DLPack 1.x); a producer that cannot, or a
//     machine without a CUDA driver, is a stax.Error naming the input.
// A dtype Stax lacks (int16, uint32, complex64, float8 ...) or a vector dtype (lanes > 1) is a
// stax.Error naming it and the Stax dtypes.
//
// Out: a stax.Tensor exports itself through __dlpack__ (versioned capsules when the consumer
// passes max_version >= (1, 0), legacy ones otherwise) without a copy; the capsule holds a
// reference to the storage, so memory lives as long as any consumer's view of it.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "core/tensor/tensor.h"

namespace stax::python {

namespace nb = nanobind;

// What import_tensor did.
struct ImportInfo {
  bool copied = false;      // false: the Stax tensor views the producer's memory
  std::string copy_reason;  // why it was copied ("negative strides", "device cuda:0 ...")
  bool read_only = false;   // the producer marked the memory read-only (Stax only reads inputs)
};

// A Stax tensor for `obj` (rules above). `what` names it in errors ("input 'x'"). Needs the GIL.
Tensor import_tensor(nb::handle obj, const std::string& what, ImportInfo* info = nullptr);

// The Python frameworks an output can be handed to.
enum class OutputKind { Stax, Torch, Numpy };
// The framework of `obj`: Torch for a torch.Tensor, Numpy for a numpy.ndarray, else Stax.
OutputKind output_kind_of(nb::handle obj);
// `t` as a Python object of that framework (torch.from_dlpack / numpy.from_dlpack of a
// stax.Tensor: no copy).
nb::object export_tensor(Tensor t, OutputKind kind);

// import_tensor of each item of `values` (a sequence); `names` name them in errors (input i is
// "input 'NAME'" when names has an entry for it). `kind` (optional) receives the framework of
// the first torch tensor or numpy array among them (Stax when none).
std::vector<Tensor> import_tensors(nb::handle values, const std::vector<std::string>& names,
                                   OutputKind* kind = nullptr);
// export_tensor of each; a single tensor itself when `unwrap_single` and there is exactly one,
// else a tuple.
nb::object export_tensors(std::vector<Tensor> tensors, OutputKind kind, bool unwrap_single);

// Registers stax.Tensor and the module functions of this file.
void bind_tensor(nb::module_& m);

}  // namespace stax::python
