// cpu_cpp's vector printer (plugins/cpu_cpp/vector_printer.h, option `vector_printer`): the
// kernels it prints give the scalar printer's bits on every graph below (pointwise ops, ±0 / NaN /
// Inf inputs, broadcasts, strided and non-affine loads (gathers), masked tails of every length,
// row and full reductions in the segmented order, softmax / layer_norm / the MLP examples), in
// both reduction orders and against the interpreter; the vector code is really printed where it
// should be (and not where it falls back); goldens of the printed vector code for a pointwise
// kernel, a row reduction, a NaN-propagating amax, a gather and a masked tail.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "core/graph/parser.h"
#include "tests/support/compiled_check.h"
#include "tests/support/random_graphs.h"

namespace stax {
namespace {

using test::bitwise_equal;
using test::contains;
using test::Order;

OptionValue vec_options(Order order, bool vector_printer) {
  OptionValue o = OptionValue::map();
  o.set("vector_printer", OptionValue::make_scalar(vector_printer ? "true" : "false"));
  if (order == Order::Strict) o.set("strict_order", OptionValue::make_scalar("true"));
  // The scalar side entirely scalar: strict order's row tiles (vector code) only with the vector
  // printer, so that strict kernels compare row tiles against the scalar row chains.
  if (!vector_printer) o.set("row_tiles", OptionValue::make_scalar("false"));
  return o;
}

Compiler& compiler(Order order, bool vector_printer) {
  static Compiler c[2][2] = {
      {Compiler(test::cpu_config(vec_options(Order::Segmented, false))),
       Compiler(test::cpu_config(vec_options(Order::Segmented, true)))},
      {Compiler(test::cpu_config(vec_options(Order::Strict, false))),
       Compiler(test::cpu_config(vec_options(Order::Strict, true)))}};
  return c[order == Order::Strict][vector_printer];
}

// Random inputs with NaN, ±Inf, ±0, ties and extremes among the first elements.
std::vector<Tensor> special_inputs(const Graph& g, uint64_t seed = 11) {
  std::vector<Tensor> in = test::random_inputs(g, seed);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             0.0,
                             -0.0,
                             0.5,
                             -2.5,
                             1e38,
                             -1e-35,
                             3.0};
  for (Tensor& t : in) {
    if (!is_floating(t.dtype())) continue;
    for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 10); ++i)
      t.set_double(i * 7 % t.numel(), specials[i]);
  }
  return in;
}

// Whether any kernel of `cg` was printed with vector code.
bool vectorised(const CompiledGraph& cg) {
  for (const auto& k : cg.kernels())
    if (contains(k.source, "stax_vec::")) return true;
  return false;
}

// Compiles g with the vector printer on and off, in both orders: the same bits as each other and
// as the interpreter in that order. Returns whether the vector printer printed any kernel of g
// in the segmented order.
bool expect_same_bits(const Graph& g, const std::vector<Tensor>& in, const std::string& what) {
  SCOPED_TRACE(what);
  bool used = false;
  for (Order order : {Order::Segmented, Order::Strict}) {
    SCOPED_TRACE(test::order_name(order));
    CompiledGraph vec = compiler(order, true).compile(g);
    CompiledGraph scalar = compiler(order, false).compile(g);
    EXPECT_FALSE(vectorised(scalar));
    if (order == Order::Segmented) used = vectorised(vec);
    std::vector<Tensor> a = vec.run(in), b = scalar.run(in);
    // The interpreter on the graph as compiled (decomposed: softmax, layer_norm), where no BLAS
    // order enters.
    const bool reference = vec.num_externs() == 0;
    std::vector<Tensor> want = reference ? test::reference(vec.graph(), in, order) : a;
    EXPECT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      EXPECT_TRUE(bitwise_equal(a[i], b[i])) << "output " << i << " (vector vs scalar printer)";
      if (reference) {
        EXPECT_TRUE(bitwise_equal(a[i], want[i])) << "output " << i << " (vs the interpreter)";
      }
    }
  }
  return used;
}

bool expect_same_bits(const Graph& g, const std::string& what) {
  return expect_same_bits(g, special_inputs(g), what);
}

const char* kUnaryOps[] = {
    "neg",        "abs",   "exp",   "exp2", "expm1", "log",   "log2",        "log10", "log1p",
    "sqrt",       "rsqrt", "sin",   "cos",  "tan",   "tanh",  "sigmoid",     "erf",   "relu",
    "reciprocal", "sign",  "floor", "ceil", "round", "trunc", "logical_not", "isnan"};

TEST(VectorPrinter, EveryUnaryOpWithTailsOfEveryLength) {
  for (int64_t n : {16, 17, 31, 37}) {
    Graph g;
    Node* x = g.placeholder("x", {3, n});
    std::vector<Node*> outs;
    for (const char* op : kUnaryOps) {
      Node* y = g.call(op, {x});
      // bool results: back to float so that the kernel stays float32 (a bool store is scalar)
      if (std::string(op) == "logical_not" || std::string(op) == "isnan")
        y = g.call("where.self", {y, x, g.call("neg", {x})});
      outs.push_back(y);
    }
    g.output(outs);
    EXPECT_TRUE(expect_same_bits(g, "unary ops, n = " + std::to_string(n)));
  }
}

TEST(VectorPrinter, EveryUnaryOpOnRandomBitPatterns) {
  // 4096 random 32-bit patterns (every exponent: subnormals, huge values, NaN payloads and
  // signs) through every unary op, vector against scalar printer and interpreter.
  const int64_t n = 4096;
  std::vector<uint32_t> bits(static_cast<size_t>(n));
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (uint32_t& b : bits) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    b = static_cast<uint32_t>(state >> 32);
  }
  Graph g;
  Node* x = g.placeholder("x", {1, n});
  std::vector<Node*> outs;
  for (const char* op : kUnaryOps)
    if (std::string(op) != "logical_not" && std::string(op) != "isnan")
      outs.push_back(g.call(op, {x}));
  g.output(outs);
  std::vector<Tensor> in = {Tensor::from_data({1, n}, DType::Float32, bits.data())};
  EXPECT_TRUE(expect_same_bits(g, in, "unary ops, random bits"));
}

TEST(VectorPrinter, BinaryComparisonsWhereAndConstants) {
  Graph g;
  Node* x = g.placeholder("x", {5, 40});
  Node* y = g.placeholder("y", {5, 40});
  std::vector<Node*> outs = {
      g.call("add.Tensor", {x, y}),
      g.call("sub.Tensor", {x, y}, {{"alpha", Arg(2)}}),
      g.call("mul.Tensor", {x, y}),
      g.call("div.Tensor", {x, y}),
      g.call("maximum", {x, y}),
      g.call("minimum", {x, y}),
      g.call("clamp", {x, -0.5, 0.75}),
      g.call("where.self", {g.call("gt.Tensor", {x, y}), x, y}),
      g.call("where.self", {g.call("logical_and", {g.call("le.Scalar", {x, 0.25}),
                                                   g.call("ne.Tensor", {x, y})}),
                            g.call("mul.Scalar", {y, 3}), x}),
      g.call("where.self", {g.call("logical_or", {x, y}), x, g.call("add.Scalar", {y, 1})}),
      g.call("mul.Tensor", {g.call("_to_copy", {g.call("eq.Tensor", {x, y})},
                                   {{"dtype", Arg(DType::Float32)}}),
                            x}),
  };
  g.output(outs);
  EXPECT_TRUE(expect_same_bits(g, "binary ops"));
}

TEST(VectorPrinter, BroadcastsStridedAndNonAffineLoadsAreGathers) {
  Graph g;
  Node* x = g.placeholder("x", {24, 40});
  Node* t = g.placeholder("t", {40, 24});
  Node* b = g.placeholder("b", {40});
  Node* c = g.placeholder("c", {24, 1});
  std::vector<Node*> outs = {
      g.call("add.Tensor", {x, b}),                         // broadcast along rows
      g.call("mul.Tensor", {x, c}),                         // invariant along the vector loop
      g.call("add.Tensor", {x, g.call("t", {t})}),          // stride 24: a gather
      g.call("relu", {g.call("add.Tensor", {g.call("t", {t}), c})}),
  };
  g.output(outs);
  std::vector<Tensor> in = special_inputs(g);
  EXPECT_TRUE(expect_same_bits(g, in, "broadcast / strided"));
  // A view whose index is not affine along the vector loop (a reshape of a transpose).
  Graph h;
  Node* u = h.placeholder("u", {6, 40});
  Node* v = h.call("reshape", {h.call("t", {u}), std::vector<int64_t>{12, 20}});
  h.output({h.call("exp", {v})});
  EXPECT_TRUE(expect_same_bits(h, "non-affine view"));
}

TEST(VectorPrinter, IndirectLoadsAreGathersWithTheirBoundsChecks) {
  Graph g;
  Node* x = g.placeholder("x", {5, 40});
  Node* idx = g.placeholder("idx", {20}, DType::Int64);
  Node* gidx = g.placeholder("gidx", {5, 33}, DType::Int64);
  Node* nidx = g.placeholder("nidx", {4}, DType::Int64);
  std::vector<Node*> outs = {
      g.call("index_select", {x, 0, g.call("remainder.Scalar", {idx, 5})}),
      g.call("index_select", {x, 1, idx}),
      g.call("gather", {x, 1, gidx}),
      g.call("exp", {g.call("index.Tensor", {x, Arg(Arg::List{Arg(nidx)})})}),
  };
  g.output(outs);
  std::vector<Tensor> in = special_inputs(g);
  in[1] = Tensor::randint({20}, 0, 40, DType::Int64, 3);
  in[2] = Tensor::randint({5, 33}, 0, 40, DType::Int64, 4);
  in[3] = Tensor::from_vector<int64_t>({4}, {0, -1, 3, -5});  // x[idx]: negative indices wrap
  EXPECT_TRUE(expect_same_bits(g, in, "indexing"));
  // An index out of bounds in lane 5 of the second vector: the same error as the scalar kernel.
  Graph h;
  Node* y = h.placeholder("y", {50});
  Node* i = h.placeholder("i", {40}, DType::Int64);
  h.output({h.call("gather", {y, 0, i})});
  std::vector<int64_t> bad(40, 3);
  bad[21] = 77;
  bad[30] = 99;
  std::vector<Tensor> bad_in = {Tensor::randn({50}), Tensor::from_vector<int64_t>({40}, bad)};
  std::string errors[2];
  for (bool vp : {false, true}) {
    CompiledGraph cg = compiler(Order::Segmented, vp).compile(h);
    EXPECT_EQ(vectorised(cg), vp);
    try {
      cg.run(bad_in);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      errors[vp] = e.what();
    }
  }
  EXPECT_TRUE(contains(errors[1], "index 77 for a dimension of size 50")) << errors[1];
  EXPECT_EQ(errors[0], errors[1]);
}

TEST(VectorPrinter, RowAndFullReductionsInTheSegmentedOrder) {
  for (int64_t n : {1, 7, 16, 33, 100, 4099}) {
    Graph g;
    Node* x = g.placeholder("x", {4, n});
    std::vector<Node*> outs = {
        g.call("sum.dim_IntList", {x, std::vector<int64_t>{-1}}),
        g.call("prod.dim_int", {g.call("mul.Scalar", {x, 0.5}), 1}),
        g.call("amax", {x, std::vector<int64_t>{1}}),
        g.call("amin", {x, std::vector<int64_t>{1}, true}),
        g.call("mean.dim", {g.call("exp", {x}), std::vector<int64_t>{-1}}),
        g.call("sum.default", {g.call("mul.Tensor", {x, x})}),
    };
    g.output(outs);
    EXPECT_TRUE(expect_same_bits(g, "row reductions, n = " + std::to_string(n)));
  }
  // Two reduction loops (a strided view keeps them apart): the inner extent a multiple of 16
  // (vector: the segment is the inner variable's), and not (the scalar printer's counter).
  for (int64_t inner : {32, 20}) {
    Graph g;
    Node* x = g.placeholder("x", {5, 3, inner});
    Node* xt = g.call("transpose.int", {x, 0, 1});  // (3, 5, inner), rows 5 apart
    g.output({g.call("sum.dim_IntList", {xt, std::vector<int64_t>{1, 2}}),
              g.call("amax", {xt, std::vector<int64_t>{1, 2}})});
    bool used = expect_same_bits(g, "two reduction loops, inner " + std::to_string(inner));
    EXPECT_EQ(used, inner % 16 == 0);
  }
}

TEST(VectorPrinter, ExampleGraphs) {
  for (const char* name : {"softmax.stax", "layer_norm.stax", "mlp_layer.stax",
                           "example_1_1.stax", "example_5_1_joint.stax"}) {
    Graph g = parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/" + name);
    EXPECT_TRUE(expect_same_bits(g, name));
  }
}

TEST(VectorPrinter, FuzzGraphsGiveTheScalarPrintersBits) {
  // compiled_fuzz_test's random graphs (every dtype, views, broadcasts, reductions, matmuls):
  // vector printer on vs off, both orders, every output bit for bit (the same BLAS calls too).
  // STAX_VECTOR_FUZZ_SEEDS=N runs N seeds (default 40: ~40 s on a loaded machine).
  uint64_t seeds = 40;
  if (const char* e = std::getenv("STAX_VECTOR_FUZZ_SEEDS")) seeds = std::stoull(e);
  int with_vector = 0;
  for (uint64_t seed = 0; seed < seeds; ++seed) {
    test::FuzzCase fc = test::generate(seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    for (Order order : {Order::Segmented, Order::Strict}) {
      CompiledGraph vec = compiler(order, true).compile(fc.g);
      CompiledGraph scalar = compiler(order, false).compile(fc.g);
      if (order == Order::Segmented) with_vector += vectorised(vec);
      std::vector<Tensor> a = vec.run(fc.inputs), b = scalar.run(fc.inputs);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i)
        EXPECT_TRUE(bitwise_equal(a[i], b[i]))
            << test::order_name(order) << ", output " << i << "\n" << test::describe(fc);
    }
  }
  std::printf("%d of %llu random graphs have a vectorised kernel\n", with_vector,
              static_cast<unsigned long long>(seeds));
  EXPECT_GT(with_vector, 0);
}

TEST(VectorPrinter, FallsBackWhereItHasNoVectorForm) {
  // argmax (sequential), int64 arithmetic, pow: the scalar printer, the same bits.
  Graph g;
  Node* x = g.placeholder("x", {4, 50});
  g.output({g.call("argmax", {x, 1})});
  EXPECT_FALSE(expect_same_bits(g, "argmax"));
  Graph h;
  Node* i = h.placeholder("i", {4, 50}, DType::Int64);
  h.output({h.call("add.Scalar", {i, 3})});
  EXPECT_FALSE(expect_same_bits(h, "int64"));
  Graph p;
  Node* y = p.placeholder("y", {4, 50});
  p.output({p.call("pow.Tensor_Tensor", {y, p.call("abs", {y})})});
  EXPECT_FALSE(expect_same_bits(p, "pow"));
}

// The bodies of a pointwise kernel share one scope: a value two of them compute is printed once.
// gelu(x) and gelu_backward(g, x) in one kernel: one erf per vector (main loop and masked tail),
// where each body computed its own before (Clang did not merge them: the second body reloaded x
// after the first one's store), and the bits of the scalar printer and the interpreter.
TEST(VectorPrinter, BodiesOfOneLoopShareTheirValues) {
  Graph g;
  Node* x = g.placeholder("x", {5, 37});
  Node* grad = g.placeholder("g", {5, 37});
  g.output({g.call("gelu", {x}), g.call("gelu_backward", {grad, x})});
  EXPECT_TRUE(expect_same_bits(g, "gelu and gelu_backward"));
  CompiledGraph cg = compiler(Order::Segmented, true).compile(g);
  ASSERT_EQ(cg.kernels().size(), 1u);
  const std::string& src = cg.kernels().at(0).source;
  size_t body = src.find("void kernel0_body(");
  ASSERT_NE(body, std::string::npos) << src;
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = src.find(what, body); at != std::string::npos; at = src.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("stax_vec::erf("), 2u) << src.substr(body);  // the main loop and the tail
  // x and g, once each, in the main loop and in the tail (x was loaded twice)
  EXPECT_EQ(count("stax_vec::load("), 4u) << src.substr(body);
  EXPECT_EQ(count("stax_vec::store("), 4u) << src.substr(body);  // both outputs, main and tail
}

// ---- goldens: the printed vector code (after the prelude) --------------------------------------

// The kernel function of g's only kernel, without the vector prelude.
std::string kernel_function(const Graph& g) {
  CompiledGraph cg = compiler(Order::Segmented, true).compile(g);
  EXPECT_EQ(cg.kernels().size(), 1u);
  std::string src = cg.kernels().at(0).source;
  size_t at = src.find("}  // namespace stax_vec\n");
  EXPECT_NE(at, std::string::npos) << src;
  return at == std::string::npos ? src : src.substr(src.find("static inline", at));
}

Graph golden_pointwise() {  // relu(x + y) * 2 over (8, 64): no tail
  Graph g;
  Node* x = g.placeholder("x", {8, 64});
  Node* y = g.placeholder("y", {64});
  g.output({g.call("mul.Scalar", {g.call("relu", {g.call("add.Tensor", {x, y})}), 2})});
  return g;
}
Graph golden_row_sum() {  // (x * x).sum(-1) over (8, 100): 6 vectors and a masked tail of 4
  Graph g;
  Node* x = g.placeholder("x", {8, 100});
  g.output({g.call("sum.dim_IntList", {g.call("mul.Tensor", {x, x}), std::vector<int64_t>{-1}})});
  return g;
}
Graph golden_amax() {  // NaN-propagating amax over rows of 64
  Graph g;
  Node* x = g.placeholder("x", {8, 64});
  g.output({g.call("amax", {x, std::vector<int64_t>{1}})});
  return g;
}
Graph golden_gather() {  // x + y.t(): y read with stride 24 along the vector loop
  Graph g;
  Node* x = g.placeholder("x", {24, 32});
  Node* y = g.placeholder("y", {32, 24});
  g.output({g.call("add.Tensor", {x, g.call("t", {y})})});
  return g;
}
Graph golden_tail() {  // exp(x) over (3, 21), one loop of 63: the chunk's last vector masked
  Graph g;
  Node* x = g.placeholder("x", {3, 21});
  g.output({g.call("exp", {x})});
  return g;
}

Graph golden_indirect() {  // y.gather(0, i) over 40: int64 index loads, checks, gathers
  Graph g;
  Node* y = g.placeholder("y", {50});
  Node* i = g.placeholder("i", {40}, DType::Int64);
  g.output({g.call("gather", {y, 0, i})});
  return g;
}

TEST(VectorPrinterGolden, Pointwise) {
  EXPECT_EQ(kernel_function(golden_pointwise()), R"GOLDEN(static inline __attribute__((always_inline)) void kernel0_body(
    const float* __restrict in_ptr0,
    const float* __restrict in_ptr1,
    float* __restrict out_ptr0,
    long long stax_begin, long long stax_end, stax_fault* stax_error) {
  (void)stax_error;
  for (int i0 = (int)stax_begin; i0 < (int)stax_end; ++i0) {
    {
      int i1 = 0;
      for (; i1 <= 64 - 16; i1 += 16) {
        // buf2
        stax_vf vtmp0 = stax_vec::load(in_ptr0 + (64*i0 + i1));
        stax_vf vtmp1 = stax_vec::load(in_ptr1 + (i1));
        stax_vf vtmp2 = stax_vec::add(vtmp0, vtmp1);
        stax_vf vtmp3 = stax_vec::relu(vtmp2);
        stax_vf vtmp4 = (stax_vf)(2.0f);
        stax_vf vtmp5 = stax_vec::mul(vtmp3, vtmp4);
        stax_vec::store(out_ptr0 + (64*i0 + i1), vtmp5);
      }
    }
  }
}
extern "C" void kernel0(void* const* stax_buffers, long long stax_begin, long long stax_end, stax_fault* stax_error) {
  kernel0_body((const float*)stax_buffers[0], (const float*)stax_buffers[1], (float*)stax_buffers[2], stax_begin, stax_end, stax_error);
}
)GOLDEN");
}

TEST(VectorPrinterGolden, RowSumWithMaskedTail) {
  EXPECT_EQ(kernel_function(golden_row_sum()), R"GOLDEN(static inline __attribute__((always_inline)) void kernel0_body(
    const float* __restrict in_ptr0,
    float* __restrict out_ptr0,
    long long stax_begin, long long stax_end, stax_fault* stax_error) {
  (void)stax_error;
  for (int i0 = (int)stax_begin; i0 < (int)stax_end; ++i0) {
    // buf1
    // the innermost reduction loop over vectors: segment l in lane l
    stax_vf vacc0 = (stax_vf)(0.0f);
    {
      int r0_0 = 0;
      for (; r0_0 <= 100 - 16; r0_0 += 16) {
        stax_vf vtmp0 = stax_vec::load(in_ptr0 + (100*i0 + r0_0));
        stax_vf vtmp1 = stax_vec::mul(vtmp0, vtmp0);
        vacc0 = stax_vec::add(vacc0, vtmp1);
      }
      if (r0_0 < 100) {  // the last, partial vector: masked
        const stax_mask16 stax_m = stax_vec::tail_mask(100 - r0_0);
        const stax_vm stax_tail = stax_vec::tail_lanes(100 - r0_0);
        (void)stax_tail;
        stax_vf vtmp2 = stax_vec::load(in_ptr0 + (100*i0 + r0_0), stax_m);
        stax_vf vtmp3 = stax_vec::mul(vtmp2, vtmp2);
        vacc0 = stax_vec::select(stax_tail, stax_vec::add(vacc0, vtmp3), vacc0);
      }
    }
    out_ptr0[i0] = stax_vec::tree_add(vacc0);
  }
}
extern "C" void kernel0(void* const* stax_buffers, long long stax_begin, long long stax_end, stax_fault* stax_error) {
  kernel0_body((const float*)stax_buffers[0], (float*)stax_buffers[1], stax_begin, stax_end, stax_error);
}
)GOLDEN");
}

TEST(VectorPrinterGolden, NaNPropagatingAmax) {
  EXPECT_EQ(kernel_function(golden_amax()), R"GOLDEN(static inline __attribute__((always_inline)) void kernel0_body(
    const float* __restrict in_ptr0,
    float* __restrict out_ptr0,
    long long stax_begin, long long stax_end, stax_fault* stax_error) {
  (void)stax_error;
  for (int i0 = (int)stax_begin; i0 < (int)stax_end; ++i0) {
    // buf1
    // the innermost reduction loop over vectors: segment l in lane l
    stax_vf vacc0 = (stax_vf)(-__builtin_huge_valf());
    {
      int r0_0 = 0;
      for (; r0_0 <= 64 - 16; r0_0 += 16) {
        stax_vf vtmp0 = stax_vec::load(in_ptr0 + (64*i0 + r0_0));
        vacc0 = stax_vec::maximum(vacc0, vtmp0);
      }
    }
    out_ptr0[i0] = stax_vec::tree_maximum(vacc0);
  }
}
extern "C" void kernel0(void* const* stax_buffers, long long stax_begin, long long stax_end, stax_fault* stax_error) {
  kernel0_body((const float*)stax_buffers[0], (float*)stax_buffers[1], stax_begin, stax_end, stax_error);
}
)GOLDEN");
}

TEST(VectorPrinterGolden, StridedLoadIsAGather) {
  EXPECT_EQ(kernel_function(golden_gather()), R"GOLDEN(static inline __attribute__((always_inline)) void kernel0_body(
    const float* __restrict in_ptr0,
    const float* __restrict in_ptr1,
    float* __restrict out_ptr0,
    long long stax_begin, long long stax_end, stax_fault* stax_error) {
  (void)stax_error;
  for (int i0 = (int)stax_begin; i0 < (int)stax_end; ++i0) {
    {
      int i1 = 0;
      const stax_vi stax_iota = stax_vec::iota();
      for (; i1 <= 32 - 16; i1 += 16) {
        // buf2
        stax_vf vtmp0 = stax_vec::load(in_ptr0 + (32*i0 + i1));
        stax_vf vtmp1 = stax_vec::gather(in_ptr1, i0 + 24*i1 + 24 * stax_iota, 0xffff);
        stax_vf vtmp2 = stax_vec::add(vtmp0, vtmp1);
        stax_vec::store(out_ptr0 + (32*i0 + i1), vtmp2);
      }
    }
  }
}
extern "C" void kernel0(void* const* stax_buffers, long long stax_begin, long long stax_end, stax_fault* stax_error) {
  kernel0_body((const float*)stax_buffers[0], (const float*)stax_buffers[1], (float*)stax_buffers[2], stax_begin, stax_end, stax_error);
}
)GOLDEN");
}

TEST(VectorPrinterGolden, ChunkTailIsMasked) {
  EXPECT_EQ(kernel_function(golden_tail()), R"GOLDEN(static inline __attribute__((always_inline)) void kernel0_body(
    const float* __restrict in_ptr0,
    float* __restrict out_ptr0,
    long long stax_begin, long long stax_end, stax_fault* stax_error) {
  (void)stax_error;
  {
    int i0 = (int)stax_begin;
    for (; i0 <= (int)stax_end - 16; i0 += 16) {
      // buf1
      stax_vf vtmp0 = stax_vec::load(in_ptr0 + (i0));
      stax_vf vtmp1 = stax_vec::exp(vtmp0);
      stax_vec::store(out_ptr0 + (i0), vtmp1);
    }
    if (i0 < (int)stax_end) {  // the last, partial vector: masked
      const stax_mask16 stax_m = stax_vec::tail_mask((int)stax_end - i0);
      const stax_vm stax_tail = stax_vec::tail_lanes((int)stax_end - i0);
      (void)stax_tail;
      // buf1
      stax_vf vtmp2 = stax_vec::load(in_ptr0 + (i0), stax_m);
      stax_vf vtmp3 = stax_vec::exp(vtmp2);
      stax_vec::store(out_ptr0 + (i0), vtmp3, stax_m);
    }
  }
}
extern "C" void kernel0(void* const* stax_buffers, long long stax_begin, long long stax_end, stax_fault* stax_error) {
  kernel0_body((const float*)stax_buffers[0], (float*)stax_buffers[1], stax_begin, stax_end, stax_error);
}
)GOLDEN");
}


TEST(VectorPrinterGolden, IndirectGatherWithBoundsCheck) {
  EXPECT_EQ(kernel_function(golden_indirect()), R"GOLDEN(static inline __attribute__((always_inline)) void kernel0_body(
    const long long* __restrict in_ptr0,
    const float* __restrict in_ptr1,
    float* __restrict out_ptr0,
    long long stax_begin, long long stax_end, stax_fault* stax_error) {
  {
    int i0 = (int)stax_begin;
    const stax_vi stax_iota = stax_vec::iota();
    for (; i0 <= (int)stax_end - 16; i0 += 16) {
      // buf2
      stax_vl vtmp0 = stax_vec::load(in_ptr0 + (i0));
      STAX_VEC_CHECK_INDEX(vtmp0, vtmp0, 50LL, (stax_mask16)0xffff);
      stax_vi vtmp1 = __builtin_convertvector(vtmp0, stax_vi);
      stax_vf vtmp2 = stax_vec::gather(in_ptr1, vtmp1, 0xffff);
      stax_vec::store(out_ptr0 + (i0), vtmp2);
    }
    if (i0 < (int)stax_end) {  // the last, partial vector: masked
      const stax_mask16 stax_m = stax_vec::tail_mask((int)stax_end - i0);
      const stax_vm stax_tail = stax_vec::tail_lanes((int)stax_end - i0);
      (void)stax_tail;
      // buf2
      stax_vl vtmp3 = stax_vec::load(in_ptr0 + (i0), stax_m);
      STAX_VEC_CHECK_INDEX(vtmp3, vtmp3, 50LL, stax_m);
      stax_vi vtmp4 = __builtin_convertvector(vtmp3, stax_vi);
      stax_vf vtmp5 = stax_vec::gather(in_ptr1, vtmp4, stax_m);
      stax_vec::store(out_ptr0 + (i0), vtmp5, stax_m);
    }
  }
}
extern "C" void kernel0(void* const* stax_buffers, long long stax_begin, long long stax_end, stax_fault* stax_error) {
  kernel0_body((const long long*)stax_buffers[0], (const float*)stax_buffers[1], (float*)stax_buffers[2], stax_begin, stax_end, stax_error);
}
)GOLDEN");
}

}  // namespace
}  // namespace stax
