// int16, uint16, uint32, uint64 (docs/dtypes.md): names, parsing, sizes, categories, the plugin
// ABI's codes, torch's promotion rules (the whole table is checked against torch.promote_types by
// tests/python/test_dtypes.py), .npy round trips with NumPy's descriptors, printing, rejection of
// uint16 / uint32 / uint64 by the ops torch does not implement for them, and the interpreter
// against cpu_cpp bit for bit on the pointwise (wrap-around, shifts, comparisons), reduction and
// indexing families, with known values asserted on the interpreter.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "core/tensor/npy.h"
#include "core/types/dtype.h"
#include "stax/plugin_api.h"
#include "tests/support/compiled_check.h"
#include "tests/support/interp_helpers.h"

namespace stax {
namespace {

using test::cpu_compiler;
using test::error_of;
using test::has;
using test::ints;
using test::reference;

constexpr DType kNew[] = {DType::Int16, DType::UInt16, DType::UInt32, DType::UInt64};

TEST(IntDTypes, NamesSizesCategoriesAndAbiCodes) {
  EXPECT_EQ(parse_dtype("int16"), DType::Int16);
  EXPECT_EQ(parse_dtype("short"), DType::Int16);
  EXPECT_EQ(parse_dtype("torch.uint16"), DType::UInt16);
  EXPECT_EQ(parse_dtype("uint32"), DType::UInt32);
  EXPECT_EQ(parse_dtype("tp.uint64"), DType::UInt64);
  EXPECT_EQ(parse_dtype("ushort"), std::nullopt);
  const char* names[] = {"int16", "uint16", "uint32", "uint64"};
  size_t sizes[] = {2, 2, 4, 8};
  int codes[] = {STAX_DTYPE_INT16, STAX_DTYPE_UINT16, STAX_DTYPE_UINT32, STAX_DTYPE_UINT64};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(dtype_name(kNew[i]), names[i]);
    EXPECT_EQ(dtype_size(kNew[i]), sizes[i]);
    EXPECT_TRUE(is_integral(kNew[i]));
    EXPECT_EQ(plugin_dtype_code(kNew[i]), codes[i]);
    EXPECT_EQ(is_barebones_unsigned(kNew[i]), i > 0);
  }
  // The older dtypes keep their codes; complex has none.
  EXPECT_EQ(plugin_dtype_code(DType::Bool), STAX_DTYPE_BOOL);
  EXPECT_EQ(plugin_dtype_code(DType::Float32), STAX_DTYPE_FLOAT32);
  EXPECT_EQ(plugin_dtype_code(DType::Complex64), -1);
  EXPECT_EQ(STAX_NUM_DTYPES, kNumPluginDTypes);
}

TEST(IntDTypes, PromotionAsTorch) {
  EXPECT_EQ(promote_types(DType::UInt8, DType::Int8), DType::Int16);
  EXPECT_EQ(promote_types(DType::Int16, DType::UInt8), DType::Int16);
  EXPECT_EQ(promote_types(DType::Int16, DType::Int8), DType::Int16);
  EXPECT_EQ(promote_types(DType::Int16, DType::Int32), DType::Int32);
  EXPECT_EQ(promote_types(DType::Int16, DType::Bool), DType::Int16);
  EXPECT_EQ(promote_types(DType::Int16, DType::Float16), DType::Float16);
  EXPECT_EQ(promote_types(DType::UInt16, DType::BFloat16), DType::BFloat16);
  EXPECT_EQ(promote_types(DType::Float64, DType::UInt64), DType::Float64);
  EXPECT_EQ(promote_types(DType::UInt32, DType::UInt32), DType::UInt32);
  try {
    promote_types(DType::UInt32, DType::Int64);
    ADD_FAILURE() << "uint32 with int64 promoted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "Promotion for uint16, uint32, uint64 types is not supported, attempted to "
              "promote uint32 and int64");
  }
  EXPECT_THROW(promote_types(DType::Bool, DType::UInt64), std::invalid_argument);
  EXPECT_THROW(promote_types(DType::UInt16, DType::UInt32), std::invalid_argument);
}

TEST(IntDTypes, NpyRoundTripsWithNumpysDescriptors) {
  struct Case {
    DType t;
    const char* descr;
    std::vector<double> values;
  };
  const Case cases[] = {
      {DType::Int16, "<i2", {-32768, -1, 0, 32767}},
      {DType::UInt16, "<u2", {0, 1, 40000, 65535}},
      {DType::UInt32, "<u4", {0, 7, 3000000000.0, 4294967295.0}},
      {DType::UInt64, "<u8", {0, 9, 9223372036854775808.0, 18446744073709549568.0}},
  };
  for (const Case& c : cases) {
    Tensor t = Tensor::from_vector({4}, c.values, c.t);
    std::string bytes = npy_to_bytes(t);
    EXPECT_TRUE(has(bytes, std::string("'descr': '") + c.descr + "'")) << c.descr;
    Tensor back = npy_from_bytes(bytes);
    EXPECT_EQ(back.dtype(), c.t);
    EXPECT_TRUE(back.equal(t)) << c.descr;
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(back.get_double(static_cast<int64_t>(i)), c.values[i]);
  }
  // uint64 above 2^63 prints as the unsigned value.
  uint64_t top = std::numeric_limits<uint64_t>::max();
  Tensor u = Tensor::from_data({1}, DType::UInt64, &top);
  EXPECT_TRUE(has(u.to_string(), "18446744073709551615")) << u.to_string();
}

// An op torch does not implement for uint16 / uint32 / uint64 is refused when the graph is built,
// in torch's words; the data-moving ones build.
TEST(IntDTypes, UnsignedOnlyInTheOpsTorchImplements) {
  for (DType t : {DType::UInt16, DType::UInt32, DType::UInt64}) {
    Graph g;
    Node* x = g.placeholder("x", {4}, t);
    std::string e = error_of([&] { g.call("add.Tensor", {x, x}); });
    EXPECT_TRUE(has(e, "\"add\" not implemented for 'UInt")) << e;
    EXPECT_TRUE(has(e, "argument %x is " + std::string(dtype_name(t)))) << e;
    e = error_of([&] { g.call("lt.Tensor", {x, x}); });
    EXPECT_TRUE(has(e, "\"lt\" not implemented for")) << e;
    // Ordering ops: torch takes all three. maximum / minimum / sort / clamp by tensors compare
    // uint64 as unsigned (int_semantics_test); clamp by a number refuses uint64 (the bound is
    // read as int64 or double).
    EXPECT_NO_THROW(g.call("maximum", {x, x}));
    EXPECT_NO_THROW(g.call("sort", {x}));
    e = error_of([&] { g.call("clamp", {x, int64_t{1}}); });
    EXPECT_EQ(has(e, "clamp.default of uint64 is not supported by Stax"), t == DType::UInt64)
        << e;
    // The data-moving ops build.
    Node* c = g.call("cat", {std::vector<Node*>{x, x}});
    Node* eq = g.call("eq.Tensor", {x, x});
    Node* f = g.call("flip", {c, std::vector<int64_t>{0}});
    Node* s = g.call("sum", {x});  // torch: int64
    EXPECT_EQ(s->meta().dtype, DType::Int64);
    g.output({c, eq, f, s});
    EXPECT_NO_THROW(verify(g));
  }
  // Mixed with an integer dtype: torch's promotion error, naming the node.
  Graph g;
  Node* a = g.placeholder("a", {4}, DType::UInt16);
  Node* b = g.placeholder("b", {4}, DType::Int64);
  std::string e = error_of([&] { g.call("eq.Tensor", {a, b}); });
  EXPECT_TRUE(has(e, "Promotion for uint16, uint32, uint64 types is not supported")) << e;
}

// Compiles `g` on cpu_cpp and checks every output equals the interpreter's bit for bit, with
// interpreter fallbacks only for the ops named in `fallback_ops` (ops without a lowering rule for
// any dtype: integer division by a tensor, scatter); returns the interpreter's outputs.
std::vector<Tensor> compiled_equals_interpreter(const Graph& g, const std::vector<Tensor>& in,
                                                const std::vector<std::string>& fallback_ops = {}) {
  std::vector<Tensor> want = reference(g, in);
  CompiledGraph cg = cpu_compiler().compile(g);
  std::vector<Tensor> got = cg.run(in);
  EXPECT_EQ(cg.num_fallbacks(), fallback_ops.size()) << cg.summary();
  for (const std::string& op : fallback_ops) EXPECT_TRUE(has(cg.summary(), op)) << cg.summary();
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    EXPECT_TRUE(got[i].equal(want[i]))
        << "output " << i << ": compiled " << got[i].to_string() << " interpreter "
        << want[i].to_string();
  }
  return want;
}

// int16 arithmetic wraps at 16 bits after every op (a fused chain included), shifts and
// comparisons follow torch (integer division by zero raises as torch: int_semantics_test).
TEST(IntDTypes, Int16PointwiseWrapsAndMatchesCompiled) {
  Graph g;
  Node* a = g.placeholder("a", {6}, DType::Int16);
  Node* b0 = g.placeholder("b", {6}, DType::Int16);
  Node* s = g.placeholder("s", {6}, DType::Int16);
  // b with its 0 replaced by 1: a divisor (int16 where keeps int16)
  Node* b = g.call("where.ScalarSelf", {g.call("eq.Scalar", {b0, int64_t{0}}), int64_t{1}, b0});
  Node* sum = g.call("add.Tensor", {a, b0});
  std::vector<Node*> outs = {
      sum,
      g.call("floor_divide", {sum, g.call("full_like", {b, int64_t{3}})}),  // wraps first
      g.call("mul.Tensor", {a, b0}),
      g.call("sub.Tensor", {a, b0}),
      g.call("neg", {a}),
      g.call("abs", {a}),
      g.call("floor_divide", {a, b}),
      g.call("remainder.Tensor", {a, b}),
      g.call("bitwise_xor.Tensor", {a, b}),
      g.call("bitwise_not", {a}),
      g.call("bitwise_left_shift.Tensor", {a, s}),
      g.call("bitwise_right_shift.Tensor", {a, s}),
      g.call("lt.Tensor", {a, b}),
      g.call("eq.Scalar", {a, int64_t{-1}}),
      g.call("maximum", {a, b}),
      g.call("where.self", {g.call("ge.Tensor", {a, b}), a, b}),
      g.call("add.Tensor", {a, g.call("full_like", {a, int64_t{5}}, {{"dtype", Arg(DType::UInt8)}})}),
      g.call("_to_copy", {a}, {{"dtype", Arg(DType::Float32)}}),
  };
  g.output(outs);
  verify(g);
  auto i16 = [](std::vector<double> v) { return Tensor::from_vector({6}, v, DType::Int16); };
  std::vector<Tensor> in{i16({30000, -32768, 7, -7, 100, 0}), i16({30000, -1, 0, 2, -3, 5}),
                         i16({1, 15, 3, 20, -1, 0})};
  // Integer division by a tensor runs as the fallback (its kernel raises on a zero divisor);
  // bitwise_xor is ops.def's bitwise_xor (ABI 1.8), not and the shifts are lowered too.
  std::vector<Tensor> r = compiled_equals_interpreter(
      g, in, {"floor_divide.default", "floor_divide.default", "remainder.Tensor"});
  EXPECT_EQ(ints(r[0]), (std::vector<int64_t>{-5536, 32767, 7, -5, 97, 5}));
  EXPECT_EQ(ints(r[1]), (std::vector<int64_t>{-1846, 10922, 2, -2, 32, 1}));
  EXPECT_EQ(ints(r[2]), (std::vector<int64_t>{-5888, -32768, 0, -14, -300, 0}));
  EXPECT_EQ(ints(r[4]), (std::vector<int64_t>{-30000, -32768, -7, 7, -100, 0}));
  EXPECT_EQ(ints(r[6]), (std::vector<int64_t>{1, -32768, 7, -4, -34, 0}));  // 32768 wraps
  EXPECT_EQ(ints(r[7]), (std::vector<int64_t>{0, 0, 0, 1, -2, 0}));
  EXPECT_EQ(ints(r[10]), (std::vector<int64_t>{-5536, 0, 56, 0, 0, 0}));  // >= 16 bits: 0
  EXPECT_EQ(ints(r[11]), (std::vector<int64_t>{15000, -1, 0, -1, 0, 0}));  // sign fill
  EXPECT_EQ(r[12].dtype(), DType::Bool);
  EXPECT_EQ(r[16].dtype(), DType::Int16);  // int16 + uint8 -> int16
  EXPECT_EQ(ints(r[16]), (std::vector<int64_t>{30005, -32763, 12, -2, 105, 5}));
}

// Reductions of int16 (sum / prod accumulate in int64, as torch; amax / argmax keep int16) and
// the indexing family (gather, index, scatter, cat).
TEST(IntDTypes, Int16ReductionsAndIndexingMatchCompiled) {
  Graph g;
  Node* x = g.placeholder("x", {3, 4}, DType::Int16);
  Node* idx = g.placeholder("idx", {2}, DType::Int64);
  std::vector<Node*> outs = {
      g.call("sum.dim_IntList", {x, std::vector<int64_t>{1}}),
      g.call("amax", {x, std::vector<int64_t>{0}}),
      g.call("argmax", {x, int64_t{1}}),
      g.call("prod.dim_int", {x, int64_t{0}}),
      g.call("index_select", {x, int64_t{0}, idx}),
      g.call("gather", {x, int64_t{1}, g.call("expand", {g.call("view", {idx, std::vector<int64_t>{1, 2}}),
                                                         std::vector<int64_t>{3, 2}})}),
      g.call("cat", {std::vector<Node*>{x, x}, int64_t{1}}),
      g.call("scatter.value", {x, int64_t{1}, g.call("expand", {g.call("view", {idx, std::vector<int64_t>{1, 2}}),
                                                               std::vector<int64_t>{3, 2}}),
                               int64_t{-7}}),
  };
  g.output(outs);
  verify(g);
  Tensor xv = Tensor::from_vector({3, 4}, std::vector<double>{30000, 20000, -5, 1, -32768, 2, 3, 4,
                                                              300, 200, 100, -1},
                                  DType::Int16);
  Tensor iv = Tensor::from_vector({2}, std::vector<int64_t>{2, 0});
  std::vector<Tensor> r = compiled_equals_interpreter(g, {xv, iv}, {"scatter.value"});
  EXPECT_EQ(r[0].dtype(), DType::Int64);
  EXPECT_EQ(ints(r[0]), (std::vector<int64_t>{49996, -32759, 599}));  // no wrap at 16 bits
  EXPECT_EQ(r[1].dtype(), DType::Int16);
  EXPECT_EQ(ints(r[1]), (std::vector<int64_t>{30000, 20000, 100, 4}));
  EXPECT_EQ(ints(r[4]), (std::vector<int64_t>{300, 200, 100, -1, 30000, 20000, -5, 1}));
}

// uint16 / uint32 / uint64 through the ops torch implements for them: copies and conversions
// (the unsigned value, above 2^63 too), equality, where, cat, flip and indexing.
TEST(IntDTypes, UnsignedDataMovementMatchesCompiled) {
  for (DType t : {DType::UInt16, DType::UInt32, DType::UInt64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    Graph g;
    Node* x = g.placeholder("x", {4}, t);
    Node* y = g.placeholder("y", {4}, t);
    Node* idx = g.placeholder("idx", {3}, DType::Int64);
    std::vector<Node*> outs = {
        g.call("_to_copy", {x}, {{"dtype", Arg(DType::Float64)}}),
        g.call("_to_copy", {x}, {{"dtype", Arg(DType::Int64)}}),
        g.call("_to_copy", {g.call("_to_copy", {x}, {{"dtype", Arg(DType::Float64)}})},
               {{"dtype", Arg(t)}}),
        g.call("eq.Tensor", {x, y}),
        g.call("ne.Scalar", {x, int64_t{3}}),
        g.call("where.self", {g.call("eq.Tensor", {x, y}), x, y}),
        g.call("flip", {g.call("cat", {std::vector<Node*>{x, y}}), std::vector<int64_t>{0}}),
        g.call("index.Tensor", {x, std::vector<Node*>{idx}}),
        g.call("clone", {g.call("slice.Tensor", {x, int64_t{0}, int64_t{1}, int64_t{3}})}),
    };
    g.output(outs);
    verify(g);
    double top = t == DType::UInt16 ? 65535.0 : t == DType::UInt32 ? 4294967295.0
                                                                   : 18446744073709549568.0;
    Tensor xv = Tensor::from_vector({4}, std::vector<double>{0, 3, top, 1000}, t);
    Tensor yv = Tensor::from_vector({4}, std::vector<double>{1, 3, top, 999}, t);
    Tensor iv = Tensor::from_vector({3}, std::vector<int64_t>{2, -1, 0});
    std::vector<Tensor> r = compiled_equals_interpreter(g, {xv, yv, iv});
    EXPECT_EQ(r[0].get_double(2), top);  // the unsigned value, not a negative int64
    EXPECT_TRUE(r[2].equal(xv));
    EXPECT_EQ(ints(r[3]), (std::vector<int64_t>{0, 1, 1, 0}));
    EXPECT_EQ(r[7].get_double(0), top);
  }
}

}  // namespace
}  // namespace stax
