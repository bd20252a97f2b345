// Integer semantics as torch 2.15 (issue 29; docs/dtypes.md "Semantics"):
//   - integer division and remainder by zero raise torch's ZeroDivisionError, on the interpreter
//     and compiled (cpu_cpp), instead of a made-up value; by a non-zero number they still fuse;
//   - shifts, bitwise_not and the bool forms of and / or / xor are lowered (no fallback), bit for
//     bit with the interpreter, with torch's values at the edges (shift by >= 64, < 0, 63);
//   - integer and / or / xor are lowered to ops.def's bitwise opcodes (ABI 1.8) on every integer
//     width, promoted, broadcast, with numbers and 0-d tensors, compiled == interpreter == torch;
//   - uint64 orders as unsigned above 2^63 in maximum, minimum, clamp by tensors and sort;
//   - Python's operators (__and__, __lshift__ ...) and the number-first overloads
//     (bitwise_*.Scalar_Tensor) as the bitwise ops.
// Expected values were read off torch 2.15 (the calls are written next to them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "core/types/dtype.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

namespace stax {
namespace {

using test::cpu_compiler;
using test::error_of;
using test::has;
using test::ints;
using test::reference;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Compiles on cpu_cpp; every output equals the interpreter's bit for bit, with `fallbacks`
// interpreter fallbacks; returns the interpreter's outputs.
std::vector<Tensor> compiled_equals_interpreter(const Graph& g, const std::vector<Tensor>& in,
                                                size_t fallbacks) {
  std::vector<Tensor> want = reference(g, in);
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  EXPECT_EQ(cg.num_fallbacks(), fallbacks) << cg.summary();
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    EXPECT_TRUE(got[i].equal(want[i])) << "output " << i << ": compiled " << got[i].to_string()
                                       << " interpreter " << want[i].to_string();
  }
  return want;
}

// ---- division by zero

struct DivCase {
  const char* what;
  std::function<Node*(Graph&, Node*, Node*)> build;
};

std::vector<DivCase> division_cases() {
  return {
      {"floor_divide", [](Graph& g, Node* a, Node* b) { return g.call("floor_divide", {a, b}); }},
      {"remainder.Tensor",
       [](Graph& g, Node* a, Node* b) { return g.call("remainder.Tensor", {a, b}); }},
      {"fmod.Tensor", [](Graph& g, Node* a, Node* b) { return g.call("fmod.Tensor", {a, b}); }},
      {"div trunc",
       [](Graph& g, Node* a, Node* b) {
         return g.call("div.Tensor_mode", {a, b}, {{"rounding_mode", "trunc"}});
       }},
      {"div floor",
       [](Graph& g, Node* a, Node* b) {
         return g.call("div.Tensor_mode", {a, b}, {{"rounding_mode", "floor"}});
       }},
      {"floor_divide.Scalar 0",
       [](Graph& g, Node* a, Node*) { return g.call("floor_divide.Scalar", {a, int64_t{0}}); }},
      {"remainder.Scalar 0",
       [](Graph& g, Node* a, Node*) { return g.call("remainder.Scalar", {a, int64_t{0}}); }},
      {"fmod.Scalar 0",
       [](Graph& g, Node* a, Node*) { return g.call("fmod.Scalar", {a, int64_t{0}}); }},
  };
}

// torch: RuntimeError('ZeroDivisionError') for every one of these on int64 / int32 / uint8
// (torch.floor_divide(a, b), torch.remainder, torch.fmod, torch.div(..., rounding_mode=...)).
TEST(IntSemantics, IntegerDivisionByZeroRaisesOnInterpreterAndCompiled) {
  for (DType t : {DType::Int64, DType::Int32, DType::UInt8}) {
    for (const DivCase& c : division_cases()) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + c.what);
      Graph g;
      Node* a = g.placeholder("a", {4}, t);
      Node* b = g.placeholder("b", {4}, t);
      g.output({c.build(g, a, b)});
      verify(g);
      std::vector<Tensor> in{Tensor::from_vector({4}, std::vector<double>{7, 5, 9, 1}, t),
                             Tensor::from_vector({4}, std::vector<double>{2, 3, 0, 1}, t)};
      std::string e = error_of([&] { interpret(g, in); });
      EXPECT_TRUE(has(e, "ZeroDivisionError")) << e;
      CompiledGraph cg = cpu_compiler().compile(g);
      e = error_of([&] { cg.run(in); });
      EXPECT_TRUE(has(e, "ZeroDivisionError")) << e;
      // Without a zero divisor the compiled result equals the interpreter's.
      std::vector<Tensor> ok{in[0], Tensor::from_vector({4}, std::vector<double>{2, 3, 4, 1}, t)};
      bool by_zero_number = has(c.what, " 0");  // by the number 0: no valid run
      if (!by_zero_number) {
        std::vector<Tensor> want = reference(g, ok);
        std::vector<Tensor> got = cg.run(ok);
        EXPECT_TRUE(got[0].equal(want[0])) << got[0].to_string() << " " << want[0].to_string();
      }
    }
  }
  // An empty result divides nothing (torch raises nothing either).
  Graph g;
  Node* a = g.placeholder("a", {0}, DType::Int64);
  g.output({g.call("remainder.Scalar", {a, int64_t{0}})});
  EXPECT_NO_THROW(interpret(g, {Tensor::zeros({0}, DType::Int64)}));
}

// Floating division by zero is IEEE (inf / NaN), as torch; an integer division by a non-zero
// number stays fused (no fallback); by a tensor it is the fallback that checks.
TEST(IntSemantics, FloatDivisionByZeroAndFusedIntegerDivision) {
  Graph g;
  Node* x = g.placeholder("x", {3}, DType::Float32);
  Node* z = g.placeholder("z", {3}, DType::Float32);
  Node* i = g.placeholder("i", {5}, DType::Int64);
  std::vector<Node*> outs = {
      g.call("floor_divide", {x, z}),
      g.call("remainder.Tensor", {x, z}),
      g.call("floor_divide.Scalar", {i, int64_t{-3}}),
      g.call("remainder.Scalar", {i, int64_t{-3}}),
      g.call("div.Scalar_mode", {i, int64_t{2}}, {{"rounding_mode", "trunc"}}),
  };
  g.output(outs);
  verify(g);
  std::vector<Tensor> in{Tensor::from_vector({3}, std::vector<double>{1, -1, 0}, DType::Float32),
                         Tensor::zeros({3}, DType::Float32),
                         Tensor::from_vector({5}, std::vector<int64_t>{7, -7, 0, kMin, kMax})};
  std::vector<Tensor> r = compiled_equals_interpreter(g, in, 0);
  EXPECT_EQ(r[0].get_double(0), std::numeric_limits<double>::infinity());
  EXPECT_EQ(r[0].get_double(1), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(r[0].get_double(2)));
  EXPECT_TRUE(std::isnan(r[1].get_double(0)));
  // torch.floor_divide(t, -3), torch.remainder(t, -3), torch.div(t, 2, rounding_mode='trunc')
  EXPECT_EQ(ints(r[2]), (std::vector<int64_t>{-3, 2, 0, 3074457345618258602, -3074457345618258603}));
  EXPECT_EQ(ints(r[3]), (std::vector<int64_t>{-2, -1, 0, -2, -2}));
  EXPECT_EQ(ints(r[4]), (std::vector<int64_t>{3, -3, 0, -4611686018427387904, 4611686018427387903}));
}

// ---- shifts and bitwise ops, lowered

// torch 2.15: a = tensor([1, -8, -1, 5, -2**63, 2**63 - 1, 12, -7]),
// s = tensor([63, 1, 63, 63, 1, 1, -1, -1]); (a << s).tolist(), (a >> s).tolist(),
// (a << 64), (a >> 64), (a << 100).
TEST(IntSemantics, Int64ShiftsAreLoweredWithTorchsEdges) {
  Graph g;
  Node* a = g.placeholder("a", {8}, DType::Int64);
  Node* s = g.placeholder("s", {8}, DType::Int64);
  std::vector<Node*> outs = {
      g.call("bitwise_left_shift.Tensor", {a, s}),
      g.call("bitwise_right_shift.Tensor", {a, s}),
      g.call("bitwise_left_shift.Tensor_Scalar", {a, int64_t{64}}),
      g.call("bitwise_right_shift.Tensor_Scalar", {a, int64_t{64}}),
      g.call("bitwise_left_shift.Tensor_Scalar", {a, int64_t{100}}),
      g.call("bitwise_not", {a}),
      g.call("__lshift__.Scalar", {a, int64_t{3}}),
      g.call("__rshift__.Tensor", {a, s}),
  };
  g.output(outs);
  verify(g);
  std::vector<Tensor> in{
      Tensor::from_vector({8}, std::vector<int64_t>{1, -8, -1, 5, kMin, kMax, 12, -7}),
      Tensor::from_vector({8}, std::vector<int64_t>{63, 1, 63, 63, 1, 1, -1, -1})};
  std::vector<Tensor> r = compiled_equals_interpreter(g, in, 0);
  EXPECT_EQ(ints(r[0]), (std::vector<int64_t>{kMin, -16, kMin, kMin, 0, -2, 0, 0}));
  EXPECT_EQ(ints(r[1]),
            (std::vector<int64_t>{0, -4, -1, 0, -4611686018427387904, 4611686018427387903, 0, -1}));
  EXPECT_EQ(ints(r[2]), (std::vector<int64_t>(8, 0)));
  EXPECT_EQ(ints(r[3]), (std::vector<int64_t>{0, -1, -1, 0, -1, 0, 0, -1}));
  EXPECT_EQ(ints(r[4]), (std::vector<int64_t>(8, 0)));
  EXPECT_EQ(ints(r[5]), (std::vector<int64_t>{-2, 7, 0, -6, kMax, kMin, -13, 6}));
  EXPECT_EQ(ints(r[6]), (std::vector<int64_t>{8, -64, -8, 40, 0, -8, 96, -56}));
  EXPECT_TRUE(r[7].equal(r[1]));
}

// Narrow dtypes compute in int64 and wrap to their width (torch 2.15:
// int8 [100, -100, 7, -128] << [1, 1, 7, 8] = [-56, 56, -128, 0], >> = [50, -50, 0, -1];
// int32 [1, -1, 3] << [31, 31, 32] = [-2**31, -2**31, 0], [1, -1, 3] >> [31, 40, 32] = [0, -1, 0];
// uint8 [200, 3] >> [1, 9] = [100, 0], << = [144, 0]).
TEST(IntSemantics, NarrowShiftsWrapAsTorch) {
  Graph g;
  Node* a8 = g.placeholder("a8", {4}, DType::Int8);
  Node* s8 = g.placeholder("s8", {4}, DType::Int8);
  Node* a32 = g.placeholder("a32", {3}, DType::Int32);
  Node* l32 = g.placeholder("l32", {3}, DType::Int32);
  Node* r32 = g.placeholder("r32", {3}, DType::Int32);
  Node* u = g.placeholder("u", {2}, DType::UInt8);
  Node* su = g.placeholder("su", {2}, DType::UInt8);
  std::vector<Node*> outs = {
      g.call("bitwise_left_shift.Tensor", {a8, s8}),
      g.call("bitwise_right_shift.Tensor", {a8, s8}),
      g.call("bitwise_left_shift.Tensor", {a32, l32}),
      g.call("bitwise_right_shift.Tensor", {a32, r32}),
      g.call("bitwise_right_shift.Tensor", {u, su}),
      g.call("bitwise_left_shift.Tensor", {u, su}),
      g.call("bitwise_not", {u}),
  };
  g.output(outs);
  verify(g);
  auto v = [](const Shape& s, std::vector<double> x, DType t) {
    return Tensor::from_vector(s, x, t);
  };
  std::vector<Tensor> in{v({4}, {100, -100, 7, -128}, DType::Int8),
                         v({4}, {1, 1, 7, 8}, DType::Int8),
                         v({3}, {1, -1, 3}, DType::Int32),
                         v({3}, {31, 31, 32}, DType::Int32),
                         v({3}, {31, 40, 32}, DType::Int32),
                         v({2}, {200, 3}, DType::UInt8),
                         v({2}, {1, 9}, DType::UInt8)};
  std::vector<Tensor> r = compiled_equals_interpreter(g, in, 0);
  EXPECT_EQ(ints(r[0]), (std::vector<int64_t>{-56, 56, -128, 0}));
  EXPECT_EQ(ints(r[1]), (std::vector<int64_t>{50, -50, 0, -1}));
  EXPECT_EQ(ints(r[2]), (std::vector<int64_t>{-2147483648, -2147483648, 0}));
  EXPECT_EQ(ints(r[3]), (std::vector<int64_t>{0, -1, 0}));
  EXPECT_EQ(ints(r[4]), (std::vector<int64_t>{100, 0}));
  EXPECT_EQ(ints(r[5]), (std::vector<int64_t>{144, 0}));
  EXPECT_EQ(ints(r[6]), (std::vector<int64_t>{55, 252}));  // ~200, ~3 in uint8
}

// Bool and / or / xor / not are the logical ops (lowered); integer and / or / xor are lowered too
// (ops.def's bitwise opcodes, ABI 1.8; they were counted fallbacks before). Python's operators and the number-first overloads give
// the bitwise ops' values (torch 2.15: bitwise_and(6, uint8 [3, 5]) = [2, 4];
// bitwise_left_shift(3, int16 [1, 2]) = [6, 12]; __xor__(bool [T, F], True) = [F, T];
// bitwise_left_shift.Scalar_Tensor(3, bool [T, F]) = int64 [6, 3]).
TEST(IntSemantics, BoolBitwiseLoweredOperatorsAndNumberFirstForms) {
  Graph g;
  Node* p = g.placeholder("p", {4}, DType::Bool);
  Node* q = g.placeholder("q", {4}, DType::Bool);
  g.placeholder("u", {2}, DType::UInt8);  // unused input: graph inputs keep their order
  Node* h = g.placeholder("h", {2}, DType::Int16);
  Node* b2 = g.placeholder("b2", {2}, DType::Bool);
  std::vector<Node*> lowered = {
      g.call("bitwise_and.Tensor", {p, q}),   g.call("bitwise_or.Tensor", {p, q}),
      g.call("bitwise_xor.Tensor", {p, q}),   g.call("bitwise_not", {p}),
      g.call("__xor__.Scalar", {p, true}),    g.call("__or__.Tensor", {p, q}),
      g.call("bitwise_left_shift.Scalar_Tensor", {int64_t{3}, h}),
      g.call("bitwise_left_shift.Scalar_Tensor", {int64_t{3}, b2}),
  };
  Graph g2;  // integer and / or / xor: lowered as well
  Node* x = g2.placeholder("x", {2}, DType::UInt8);
  Node* y = g2.placeholder("y", {2}, DType::Int64);
  std::vector<Node*> fallback = {
      g2.call("bitwise_and.Scalar_Tensor", {int64_t{6}, x}),
      g2.call("__and__.Tensor", {y, y}),
      g2.call("__xor__.Scalar", {y, int64_t{5}}),
  };
  g.output(lowered);
  g2.output(fallback);
  verify(g);
  verify(g2);
  Tensor pv = Tensor::from_vector({4}, std::vector<double>{1, 1, 0, 0}, DType::Bool);
  Tensor qv = Tensor::from_vector({4}, std::vector<double>{1, 0, 1, 0}, DType::Bool);
  Tensor uv = Tensor::from_vector({2}, std::vector<double>{3, 5}, DType::UInt8);
  Tensor hv = Tensor::from_vector({2}, std::vector<double>{1, 2}, DType::Int16);
  Tensor bv = Tensor::from_vector({2}, std::vector<double>{1, 0}, DType::Bool);
  std::vector<Tensor> r = compiled_equals_interpreter(g, {pv, qv, uv, hv, bv}, 0);
  EXPECT_EQ(ints(r[0]), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(ints(r[1]), (std::vector<int64_t>{1, 1, 1, 0}));
  EXPECT_EQ(ints(r[2]), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(ints(r[3]), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(r[4].dtype(), DType::Bool);
  EXPECT_EQ(ints(r[4]), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(ints(r[5]), (std::vector<int64_t>{1, 1, 1, 0}));
  EXPECT_EQ(r[6].dtype(), DType::Int16);
  EXPECT_EQ(ints(r[6]), (std::vector<int64_t>{6, 12}));
  EXPECT_EQ(r[7].dtype(), DType::Int64);
  EXPECT_EQ(ints(r[7]), (std::vector<int64_t>{6, 3}));

  Tensor yv = Tensor::from_vector({2}, std::vector<int64_t>{12, -7});
  std::vector<Tensor> r2 = compiled_equals_interpreter(g2, {uv, yv}, 0);
  EXPECT_EQ(r2[0].dtype(), DType::UInt8);
  EXPECT_EQ(ints(r2[0]), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(ints(r2[1]), (std::vector<int64_t>{12, -7}));
  EXPECT_EQ(ints(r2[2]), (std::vector<int64_t>{9, -4}));
  // Shifts of bool and bitwise ops of floats are refused when the graph is built, as torch.
  Graph g3;
  Node* pb = g3.placeholder("p", {2}, DType::Bool);
  Node* f = g3.placeholder("f", {2}, DType::Float32);
  std::string e = error_of([&] { g3.call("__lshift__.Scalar", {pb, true}); });
  EXPECT_TRUE(has(e, "shifts are not implemented for 'bool'")) << e;
  e = error_of([&] { g3.call("__and__.Tensor", {f, f}); });
  EXPECT_TRUE(has(e, "bitwise ops are only defined for integer and bool")) << e;
}

// ---- integer and / or / xor: ops.def's bitwise opcodes (ABI 1.8)

// Every integer width, type promotion (int8 | uint8 -> int16, uint8 & bool -> uint8), broadcasting,
// numbers (.Scalar, number-first, Python's operators), a 0-d tensor operand and a fused chain: all
// lowered (no fallback), compiled == interpreter bit for bit, and torch 2.15's values (the calls
// are torch.ops.aten.<op>.<overload> on the same tensors; the chain is
// (i64 & i32) ^ (i64 | 0x0ff0)).
TEST(IntSemantics, IntegerBitwiseOpsAreLoweredOnEveryWidth) {
  Graph g;
  Node* a8 = g.placeholder("a8", {4}, DType::Int8);
  Node* b8 = g.placeholder("b8", {4}, DType::Int8);
  Node* u8 = g.placeholder("u8", {4}, DType::UInt8);
  Node* i16 = g.placeholder("i16", {2, 1}, DType::Int16);
  Node* i32 = g.placeholder("i32", {4}, DType::Int32);
  Node* i64 = g.placeholder("i64", {4}, DType::Int64);
  Node* p = g.placeholder("p", {4}, DType::Bool);
  Node* q = g.placeholder("q", {4}, DType::Bool);
  Node* z = g.placeholder("z", {}, DType::Int64);
  std::vector<Node*> outs = {
      g.call("bitwise_and.Tensor", {a8, b8}),
      g.call("bitwise_or.Tensor", {a8, u8}),
      g.call("bitwise_xor.Tensor", {i16, a8}),
      g.call("bitwise_and.Scalar", {i32, int64_t{0xff00ff}}),
      g.call("bitwise_xor.Scalar", {i64, int64_t{-1}}),
      g.call("bitwise_or.Tensor", {i64, i32}),
      g.call("bitwise_xor.Tensor", {p, q}),
      g.call("bitwise_and.Tensor", {u8, p}),
      g.call("__or__.Scalar", {u8, int64_t{3}}),
      g.call("bitwise_and.Scalar_Tensor", {int64_t{6}, u8}),
      g.call("bitwise_xor.Tensor", {i32, z}),
      g.call("bitwise_xor.Tensor", {g.call("bitwise_and.Tensor", {i64, i32}),
                                    g.call("bitwise_or.Scalar", {i64, int64_t{0x0ff0}})}),
  };
  g.output(outs);
  verify(g);
  auto t = [](Shape s, std::vector<int64_t> v, DType d) { return Tensor::from_vector(s, v, d); };
  std::vector<Tensor> in = {
      t({4}, {-128, -1, 127, 85}, DType::Int8),
      t({4}, {127, -128, -86, 15}, DType::Int8),
      t({4}, {255, 0, 170, 15}, DType::UInt8),
      t({2, 1}, {-32768, 12345}, DType::Int16),
      t({4}, {INT32_MIN, -1, INT32_MAX, 0x0f0f0f0f}, DType::Int32),
      t({4}, {kMin, -1, kMax, 0x123456789abcdef}, DType::Int64),
      t({4}, {1, 1, 0, 0}, DType::Bool),
      t({4}, {1, 0, 1, 0}, DType::Bool),
      t({}, {-6}, DType::Int64),
  };
  std::vector<Tensor> r = compiled_equals_interpreter(g, in, 0);
  const std::vector<std::pair<DType, std::vector<int64_t>>> want = {
      {DType::Int8, {0, -128, 42, 5}},
      {DType::Int16, {-1, -1, 255, 95}},
      {DType::Int16, {32640, 32767, -32641, -32683, -12359, -12346, 12358, 12396}},
      {DType::Int32, {0, 16711935, 16711935, 983055}},
      {DType::Int64, {kMax, 0, kMin, -81985529216486896}},
      {DType::Int64, {INT32_MIN, -1, kMax, 81985529317412847}},
      {DType::Bool, {0, 1, 1, 0}},
      {DType::UInt8, {1, 0, 0, 0}},
      {DType::UInt8, {255, 3, 171, 15}},
      {DType::UInt8, {6, 0, 2, 6}},
      {DType::Int32, {2147483642, 5, -2147483643, -252645131}},
      {DType::Int64, {4080, 0, 9223372034707292160, 81985529064768240}},
  };
  ASSERT_EQ(r.size(), want.size());
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].dtype(), want[i].first) << "output " << i;
    EXPECT_EQ(ints(r[i]), want[i].second) << "output " << i;
  }
  EXPECT_EQ(r[2].sizes(), (Shape{2, 4}));
}

// uint16 / uint64 (torch 2.15 takes and / or / xor on them, without promotion between them):
// computed on the int64 bits, so uint64 above 2^63 is exact.
TEST(IntSemantics, UnsignedBitwiseOpsOnTheirBits) {
  const double k63 = 9223372036854775808.0, k63p = 9223372036854777856.0;  // 2^63, 2^63 + 2048
  const double kTop = 18446744073709549568.0;                               // 2^64 - 2048
  Graph g;
  Node* x = g.placeholder("x", {2}, DType::UInt64);
  Node* y = g.placeholder("y", {2}, DType::UInt64);
  Node* a = g.placeholder("a", {2}, DType::UInt16);
  Node* b = g.placeholder("b", {2}, DType::UInt16);
  g.output({g.call("bitwise_and.Tensor", {x, y}), g.call("bitwise_or.Tensor", {x, y}),
            g.call("bitwise_xor.Tensor", {x, y}), g.call("bitwise_xor.Tensor", {a, b}),
            g.call("bitwise_and.Scalar", {a, int64_t{0x0ff0}})});
  verify(g);
  std::vector<Tensor> r = compiled_equals_interpreter(
      g,
      {Tensor::from_vector({2}, std::vector<double>{k63p, kTop}, DType::UInt64),
       Tensor::from_vector({2}, std::vector<double>{kTop, k63}, DType::UInt64),
       Tensor::from_vector({2}, std::vector<int64_t>{65535, 4660}, DType::UInt16),
       Tensor::from_vector({2}, std::vector<int64_t>{255, 65535}, DType::UInt16)},
      0);
  auto vals = [](const Tensor& t) {
    std::vector<double> v;
    for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_double(i));
    return v;
  };
  EXPECT_EQ(r[0].dtype(), DType::UInt64);
  EXPECT_EQ(vals(r[0]), (std::vector<double>{k63p, k63}));
  EXPECT_EQ(vals(r[1]), (std::vector<double>{kTop, kTop}));
  EXPECT_EQ(vals(r[2]), (std::vector<double>{9223372036854771712.0, 9223372036854773760.0}));
  EXPECT_EQ(r[3].dtype(), DType::UInt16);
  EXPECT_EQ(ints(r[3]), (std::vector<int64_t>{65280, 60875}));
  EXPECT_EQ(ints(r[4]), (std::vector<int64_t>{4080, 560}));
}

// ---- uint64 ordering

// uint64 above 2^63 orders as unsigned (held as int64 bits, the top bit flipped to compare);
// torch 2.15 takes maximum / minimum / clamp by tensors / sort for uint64.
TEST(IntSemantics, Uint64OrdersAsUnsignedAbove2To63) {
  const double k63 = 9223372036854775808.0;        // 2^63
  const double k63p = 9223372036854777856.0;       // 2^63 + 2048
  const double kTop = 18446744073709549568.0;      // 2^64 - 2048
  Graph g;
  Node* x = g.placeholder("x", {5}, DType::UInt64);
  Node* y = g.placeholder("y", {5}, DType::UInt64);
  std::vector<Node*> outs = {
      g.call("maximum", {x, y}),
      g.call("minimum", {x, y}),
      g.call("clamp.Tensor", {x, y}),  // min = y
      g.call("clamp_max.Tensor", {x, y}),
  };
  g.output(outs);
  verify(g);
  Tensor xv = Tensor::from_vector({5}, std::vector<double>{1, k63p, 3, kTop, 0}, DType::UInt64);
  Tensor yv = Tensor::from_vector({5}, std::vector<double>{k63, 1, 3, k63, kTop}, DType::UInt64);
  std::vector<Tensor> r = compiled_equals_interpreter(g, {xv, yv}, 0);
  auto vals = [](const Tensor& t) {
    std::vector<double> v;
    for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_double(i));
    return v;
  };
  EXPECT_EQ(r[0].dtype(), DType::UInt64);
  EXPECT_EQ(vals(r[0]), (std::vector<double>{k63, k63p, 3, kTop, kTop}));
  EXPECT_EQ(vals(r[1]), (std::vector<double>{1, 1, 3, k63, 0}));
  EXPECT_EQ(vals(r[2]), (std::vector<double>{k63, k63p, 3, kTop, kTop}));
  EXPECT_EQ(vals(r[3]), (std::vector<double>{1, 1, 3, k63, 0}));

  // sort (argsort: a fallback), ascending and descending, stable ties.
  Graph gs;
  Node* s = gs.placeholder("s", {6}, DType::UInt64);
  Node* up = gs.call("sort", {s});
  Node* down = gs.call("sort", {s, int64_t{0}, true});
  Node* uq = gs.call("_unique2", {s}, {{"return_counts", true}});
  gs.output({gs.call("getitem", {up, int64_t{0}}), gs.call("getitem", {up, int64_t{1}}),
             gs.call("getitem", {down, int64_t{0}}), gs.call("getitem", {uq, int64_t{0}}),
             gs.call("getitem", {uq, int64_t{2}})});
  verify(gs);
  Tensor sv =
      Tensor::from_vector({6}, std::vector<double>{kTop, 5, k63, 0, k63p, 5}, DType::UInt64);
  // two argsorts, unique's values and counts (run-time sized)
  std::vector<Tensor> rs = compiled_equals_interpreter(gs, {sv}, 4);
  EXPECT_EQ(vals(rs[0]), (std::vector<double>{0, 5, 5, k63, k63p, kTop}));
  EXPECT_EQ(ints(rs[1]), (std::vector<int64_t>{3, 1, 5, 2, 4, 0}));
  EXPECT_EQ(vals(rs[2]), (std::vector<double>{kTop, k63p, k63, 5, 5, 0}));
  EXPECT_EQ(vals(rs[3]), (std::vector<double>{0, 5, k63, k63p, kTop}));  // torch.unique
  EXPECT_EQ(ints(rs[4]), (std::vector<int64_t>{1, 2, 1, 1, 1}));
}

}  // namespace
}  // namespace stax
