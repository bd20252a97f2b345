// Shared pieces of the reference interpreter's kernels (core/ops/<family>/*kernels.cpp):
// computation types and value conversions with the loop-level semantics, type-erased element
// readers/writers, broadcasting, strided iteration, elementwise maps and reduction layouts.
//
// Value semantics (the same as compiled kernels, sdk/include/stax/sdk/scalar_ops.hpp):
//   * every storage dtype S has a computation type compute_t<S>: float for float32/float16/
//     bfloat16, double for float64, i64 (= stax_scalar::i64, i.e. long long) for the integer types,
//     bool for bool. widen() (storage -> computation type) is exact; narrow() rounds half types to
//     nearest even and wraps integers modulo 2^bits;
//   * conversions between computation types are stax_scalar::convert (float -> int truncates and
//     saturates, NaN -> 0; anything -> bool is != 0);
//   * load_as<C>(s) = convert<C>(widen(s)); store_as<S>(c) = narrow<S>(convert<compute_t<S>>(c)).
// Note Tensor::to() / convert_value (tensor.h) differ for NaN / out-of-range float -> int; kernels
// use these helpers so the interpreter and compiled code agree.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/graph/arg.h"
#include "core/ops/pointwise/formulas.h"
#include "core/tensor/tensor.h"
#include "stax/sdk/scalar_ops.hpp"

namespace stax {
class KernelContext;
}

namespace stax::kernels {

using i64 = stax_scalar::i64;  // long long: the integer type stax_scalar's overloads take

// ---- computation types --------------------------------------------------------------------------

template <class S>
struct ComputeType {
  using type = i64;  // the integer types
};
template <> struct ComputeType<float> { using type = float; };
template <> struct ComputeType<Half> { using type = float; };
template <> struct ComputeType<BFloat16> { using type = float; };
template <> struct ComputeType<double> { using type = double; };
template <> struct ComputeType<bool> { using type = bool; };
template <class S>
using compute_t = typename ComputeType<S>::type;

// The DType of a computation type (float, double, i64, bool).
template <class C>
constexpr DType compute_dtype_of() {
  if constexpr (std::is_same_v<C, float>) return DType::Float32;
  else if constexpr (std::is_same_v<C, double>) return DType::Float64;
  else if constexpr (std::is_same_v<C, i64>) return DType::Int64;
  else if constexpr (std::is_same_v<C, bool>) return DType::Bool;
  else static_assert(sizeof(C) == 0, "not a computation type");
}

// Calls f(TypeTag<C>{}) with C the computation type of dtype `compute` (which must be one of
// float32, float64, int64, bool: a computation_dtype() result).
template <class F>
decltype(auto) dispatch_compute(DType compute, F&& f) {
  switch (compute) {
    case DType::Float32: return std::forward<F>(f)(TypeTag<float>{});
    case DType::Float64: return std::forward<F>(f)(TypeTag<double>{});
    case DType::Int64: return std::forward<F>(f)(TypeTag<i64>{});
    case DType::Bool: return std::forward<F>(f)(TypeTag<bool>{});
    default: break;
  }
  throw Error("interpreter", "dispatch_compute",
              std::string(dtype_name(compute)) + " is not a computation dtype");
}

// ---- value conversions --------------------------------------------------------------------------

template <class S>
constexpr compute_t<S> widen(S v) {
  if constexpr (is_half_like_v<S>) return static_cast<float>(v);
  else return static_cast<compute_t<S>>(v);
}

template <class S>
constexpr S narrow(compute_t<S> v) {
  if constexpr (is_half_like_v<S>) return S(v);
  else return static_cast<S>(v);
}

template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, From>) return v;
  else return stax_scalar::convert<To, From>(v);
}

template <class C, class S>
C load_as(S v) {
  if constexpr (std::is_same_v<S, uint64_t> && std::is_floating_point_v<C>)
    return static_cast<C>(v);  // the unsigned value, as compiled code's uint64 -> float
  else
    return convert<C>(widen(v));
}

template <class S, class C>
S store_as(C v) {
  if constexpr (std::is_same_v<S, uint64_t> && std::is_floating_point_v<C>)
    return static_cast<S>(stax_scalar::convert<stax_scalar::u64, C>(v));  // [2^63, 2^64)
                                                                            // exactly, as compiled
  else
    return narrow<S>(convert<compute_t<S>>(v));
}

// A scalar argument (int, double or bool Arg) as computation type C.
template <class C>
C scalar_as(const Arg& a) {
  if (a.is_int()) return convert<C>(static_cast<i64>(a.to_int()));
  if (a.is_bool()) return convert<C>(a.to_bool());
  return convert<C>(a.to_double());
}

// A 0-d tensor of dtype `compute` (a computation dtype) holding scalar argument `a` converted as
// scalar_as does; lets kernels treat Python-number operands as tensors.
Tensor scalar_tensor(const Arg& a, DType compute);

// ---- element readers and writers ----------------------------------------------------------------

// Reads elements of a tensor of any dtype as computation type C; offsets are in elements from the
// tensor's first element (data_ptr()).
template <class C>
class Reader {
 public:
  explicit Reader(const Tensor& t) : base_(t.data_ptr()), fn_(pick(t.dtype())) {}
  C operator()(int64_t offset) const { return fn_(base_, offset); }

 private:
  using Fn = C (*)(const std::byte*, int64_t);
  static Fn pick(DType t) {
    return dispatch(t, [](auto tag) -> Fn {
      using S = typename decltype(tag)::type;
      return [](const std::byte* p, int64_t off) {
        return load_as<C>(reinterpret_cast<const S*>(p)[off]);
      };
    });
  }
  const std::byte* base_;
  Fn fn_;
};

// Writes values of type C into a tensor of any dtype (store_as semantics).
template <class C>
class Writer {
 public:
  explicit Writer(const Tensor& t) : base_(t.data_ptr()), fn_(pick(t.dtype())) {}
  void operator()(int64_t offset, C v) const { fn_(base_, offset, v); }

 private:
  using Fn = void (*)(std::byte*, int64_t, C);
  static Fn pick(DType t) {
    return dispatch(t, [](auto tag) -> Fn {
      using S = typename decltype(tag)::type;
      return [](std::byte* p, int64_t off, C v) {
        reinterpret_cast<S*>(p)[off] = store_as<S>(v);
      };
    });
  }
  std::byte* base_;
  Fn fn_;
};

// ---- shapes, broadcasting, iteration ------------------------------------------------------------

// The strides (in elements) that read `t` broadcast to `sizes` (NumPy rules: new leading dims and
// size-1 dims get stride 0). Throws Error("interpreter", ...) naming both shapes if incompatible.
Shape broadcast_strides(const Tensor& t, const Shape& sizes);

// A view of `t` broadcast to `sizes` (no copy).
Tensor broadcast_to(const Tensor& t, const Shape& sizes);

// An uninitialised (zero-filled) tensor with m's sizes, strides and dtype.
Tensor empty_output(const TensorMeta& m);

// Calls f(offsets) for every multi-index of `sizes` in row-major order, where offsets[k] is the
// element offset of that index under strides[k] (each strides[k] has one entry per dim of sizes).
// Nothing is called when some size is 0; a rank-0 shape has one element (all offsets 0).
template <size_t N, class F>
void for_each_offset(const Shape& sizes, const std::array<Shape, N>& strides, F&& f) {
  const size_t rank = sizes.size();
  for (int64_t s : sizes)
    if (s == 0) return;
  std::array<int64_t, N> off{};
  if (rank == 0) {
    f(off);
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  const int64_t inner = sizes[rank - 1];
  std::array<int64_t, N> step{};
  for (size_t k = 0; k < N; ++k) step[k] = strides[k][rank - 1];
  while (true) {
    std::array<int64_t, N> o = off;
    for (int64_t i = 0; i < inner; ++i) {
      f(std::as_const(o));
      for (size_t k = 0; k < N; ++k) o[k] += step[k];
    }
    size_t d = rank - 1;
    while (d-- > 0) {
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (++idx[d] < sizes[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * sizes[d];
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// Every element offset of a (sizes, strides) view in row-major order.
std::vector<int64_t> element_offsets(const Shape& sizes, const Shape& strides);

// ---- elementwise maps ---------------------------------------------------------------------------

namespace detail {
template <class... Cs, class F, size_t... I>
void map_into_impl(const Tensor& out, const std::array<Tensor, sizeof...(Cs)>& ins, F& body,
                   std::index_sequence<I...>) {
  constexpr size_t N = sizeof...(Cs);
  std::tuple<Reader<Cs>...> readers{Reader<Cs>(ins[I])...};
  using R = std::decay_t<decltype(body(std::declval<Cs>()...))>;
  Writer<R> write(out);
  std::array<Shape, N + 1> strides{out.strides(), broadcast_strides(ins[I], out.sizes())...};
  for_each_offset<N + 1>(out.sizes(), strides, [&](const std::array<int64_t, N + 1>& off) {
    write(off[0], body(std::get<I>(readers)(off[I + 1])...));
  });
}
template <class C, size_t>
using Repeat = C;
template <class C, class F, size_t... I>
void map_into_same(const Tensor& out, const std::array<Tensor, sizeof...(I)>& ins, F& body,
                   std::index_sequence<I...> seq) {
  map_into_impl<Repeat<C, I>...>(out, ins, body, seq);
}
}  // namespace detail

// out[i] = body(in_0[i], ..., in_{N-1}[i]) for every element of `out` (any strides), the inputs
// broadcast to out's sizes and input k read as Cs_k; body's result is stored with store_as.
template <class... Cs, class F>
void map_into(const Tensor& out, const std::array<Tensor, sizeof...(Cs)>& ins, F&& body) {
  detail::map_into_impl<Cs...>(out, ins, body, std::index_sequence_for<Cs...>{});
}

// The same with every input read as computation type C.
template <class C, size_t N, class F>
void map_into_as(const Tensor& out, const std::array<Tensor, N>& ins, F&& body) {
  detail::map_into_same<C>(out, ins, body, std::make_index_sequence<N>{});
}

// ---- reductions ---------------------------------------------------------------------------------

// Which dims of a rank-`rank` tensor a reduction over `dims` reduces (negative dims wrap; an empty
// list means every dim). Throws Error("interpreter", where, ...) on out-of-range or repeated dims.
std::vector<bool> reduction_mask(int64_t rank, const std::vector<int64_t>& dims,
                                 const std::string& where);

// Element offsets of a reduction of `in` over the dims marked in `mask`:
//   outer[i]: offset of output element i's first input (kept dims, row-major = output order);
//   inner[j]: offset of the j-th reduced element relative to outer[i], in lexicographic order of
//             the reduced indices (the documented summation order, seed §6.9).
struct ReductionLayout {
  std::vector<int64_t> outer;
  std::vector<int64_t> inner;
};
ReductionLayout reduction_layout(const Tensor& in, const std::vector<bool>& mask);

// ---- composite ops ------------------------------------------------------------------------------

// The kernel of a Composite op that runs its decomposition on the interpreter (a one-node graph,
// decomposed and interpreted; composite_kernels.cpp). Deterministic ops only.
Tensor run_decomposition(const KernelContext& ctx);
// The same for a base op that decompose() keeps (an Extern op such as addmm running its
// decomposition for dtypes its extern does not take): the call is expanded explicitly first.
Tensor run_base_op_decomposition(const KernelContext& ctx);

}  // namespace stax::kernels
