// numpy .npy files <-> stax::Tensor (format spec: numpy/lib/format.py, "NEP 1").
//
// Reading accepts format versions 1.0, 2.0 and 3.0 and these descrs (byte order '<', '>', '|' or
// '='; big-endian data is byte-swapped):
//   f2 f4 f8 -> float16 / float32 / float64     i1 i2 i4 i8 -> int8 / int16 / int32 / int64
//   u1 u2 u4 u8 -> uint8 / uint16 / uint32 / uint64     b1 -> bool (any nonzero byte reads as true)
//   c8 c16 -> complex64 / complex128     V2 -> bfloat16 (numpy has no bfloat16; ml_dtypes'
//   bfloat16 saves as '<V2')
// fortran_order: True yields a column-major strided tensor over the file's data (no copy).
// Shape () gives a 0-d tensor. Bytes after the data are ignored.
//
// Writing goes through a temporary file and a rename (core/support/atomic_file.h): a symbolic
// link at the path is replaced, never written through, and a reader never sees half a file.
// Writing always produces C order, format 1.0 (2.0 when the header exceeds 65535 bytes), with the
// header padded so the data starts at a multiple of 64 bytes. Descrs: '<f4' '<f8' '<f2' '<i8' '<i4'
// '|i1' '|u1' '|b1' '<c8' '<c16' '<i2' '<u2' '<u4' '<u8'. A bfloat16 tensor is written as '<f4' (upcast, exact), so numpy
// reads it without ml_dtypes; loading it back yields float32, and .to(DType::BFloat16) restores
// the original values bit for bit (every bfloat16 is a float32).
//
// Malformed input throws stax::Error with stage "npy", the file name as location and the cause:
// bad magic, unsupported version, truncated header or data, bad header dict, unsupported descr.
#pragma once

#include <string>
#include <string_view>

#include "core/tensor/tensor.h"

namespace stax {

Tensor load_npy(const std::string& path);
void save_npy(const std::string& path, const Tensor& t);

// In-memory forms of the same; `name` is the location used in errors.
Tensor npy_from_bytes(std::string_view bytes, const std::string& name = "<npy bytes>");
std::string npy_to_bytes(const Tensor& t);

// The descr save_npy writes for a dtype ("<f4", "|b1", ...; bfloat16 -> "<f4").
std::string npy_descr(DType dtype);

}  // namespace stax
