// The header-only plugin SDK: Algorithm 6.1 (seed §6.5, Example 6.2), expression views and
// printing, replay of a LoopBody through a recording handler (Listing 6.2), CStylePrinter
// golden text with in-kernel CSE, validation, options, description copies.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "stax/sdk/backend.hpp"
#include "stax/sdk/cstyle_framing.hpp"
#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/expr.hpp"
#include "stax/sdk/kernel_builder.hpp"
#include "stax/sdk/loop_body.hpp"
#include "stax/sdk/ops_handler.hpp"
#include "stax/sdk/options.hpp"
#include "stax/sdk/shared_object.hpp"
#include "stax/sdk/half_bits.hpp"
#include "tests/support/example11_kernel.h"

namespace {

using namespace stax::sdk;

DeviceProperties h200() {
  DeviceProperties p;
  p.kind = DeviceKind::CUDA;
  p.multiprocessor_count = 132;  // S
  p.warp_size = 32;              // w
  p.max_threads_per_multiprocessor = 2048;  // T
  return p;
}

int64_t split(int64_t n_r, int64_t n, ReductionType t = ReductionType::Sum) {
  return split_reduction_gpu(n_r, n, t, h200());
}

// ---- Algorithm 6.1 ------------------------------------------------------------------------

TEST(SplitReduction, Example62) {
  // x: 64 x 16384, S = 132, w = 32, T = 2048: m = 256, D_min = 8,650,752, n*n_r = 1,048,576
  // <= D_min so s = 32 and k = ceil(16384 / (32*256)) = 2.
  EXPECT_EQ(split(16384, 64), 2);
}

TEST(SplitReduction, Line3EnoughOutputs) {
  EXPECT_EQ(split(1 << 20, 264), 1);  // n >= 2S
  EXPECT_EQ(split(16384, 263), 2);    // just below 2S: line 5, s = 32
}

TEST(SplitReduction, Line4ShortReductions) {
  EXPECT_EQ(split(8192, 1), 1);
  EXPECT_EQ(split(100, 4), 1);
  EXPECT_EQ(split(8193, 1), 2);  // line 5: ceil(8193 / 8192)
}

TEST(SplitReduction, Line6MidSizeWithDivisor) {
  // n = 1, n_r = 2^24: b = 528 blocks, target t = ceil(2^24 / (256*528)) = 125; the divisor 128
  // is within 30 -> s = 128, k = 2^24 / (128*256) = 512.
  EXPECT_EQ(split(1 << 24, 1), 512);
}

TEST(SplitReduction, Line6MidSizeWithoutDivisor) {
  // n_r prime: t = ceil(10000019 / 135168) = 74, no divisor near -> s = 74,
  // k = ceil(10000019 / (74*256)) = 528.
  EXPECT_EQ(split(10000019, 1), 528);
  // n = 100, n_r = 2^18: ceil(528/100) = 6 blocks per output, t = ceil(2^18 / 1536) = 171; the
  // nearest divisors 128 and 256 are more than 30 away -> s = 171, k = ceil(2^18 / 43776) = 6.
  EXPECT_EQ(split(1 << 18, 100), 6);
}

TEST(SplitReduction, Line7Large) {
  // n*n_r >= D_max = 512*132*2048: s = the divisor of n_r nearest 512 (512 itself for 2^28).
  EXPECT_EQ(split(1 << 28, 1), (1 << 28) / (512 * 256));
  // A prime n_r has no divisor within 50 of 512: s = e_max = 512.
  EXPECT_EQ(split(200000033, 1), 1526);
}

TEST(SplitReduction, IndexReductionsAndCpus) {
  EXPECT_EQ(split(16384, 64, ReductionType::ArgMax), 1);
  EXPECT_EQ(split(16384, 64, ReductionType::ArgMin), 1);

  struct Cpu : Backend {
    DeviceProperties properties() const override { return DeviceProperties(); }
    std::unique_ptr<CompiledKernel> compile(const Kernel&) override { return nullptr; }
  } cpu;
  EXPECT_EQ(cpu.split_reduction(16384, 64, ReductionType::Sum), 1);
  struct Gpu : Backend {
    DeviceProperties properties() const override { return h200(); }
    std::unique_ptr<CompiledKernel> compile(const Kernel&) override { return nullptr; }
  } gpu;
  EXPECT_EQ(gpu.split_reduction(16384, 64, ReductionType::Sum), 2);
  EXPECT_EQ(gpu.thresholds().op_limit, 30);
  EXPECT_EQ(gpu.thresholds().max_accumulated_reads, 8);
  EXPECT_EQ(cpu.thresholds().op_limit, 50);
  EXPECT_EQ(cpu.thresholds().max_accumulated_reads, 12);
  EXPECT_EQ(cpu.thresholds().transcendental_ops.size(), 7u);
}

// ---- opcodes and expressions ----------------------------------------------------------------

TEST(Opcodes, GeneratedFromOpsDef) {
  EXPECT_EQ(STAX_OP_neg, STAX_OP_FIRST_OPS_DEF);
  EXPECT_EQ(opcode_name(STAX_OP_add), "add");
  EXPECT_EQ(opcode_name(STAX_OP_LOAD), "load");
  EXPECT_EQ(opcode_from_name("sigmoid"), STAX_OP_sigmoid);
  EXPECT_EQ(opcode_from_name("nope"), STAX_OP_INVALID);
  EXPECT_TRUE(is_unary_op(STAX_OP_relu));
  EXPECT_TRUE(is_binary_op(STAX_OP_mul));
  EXPECT_TRUE(is_compare_op(STAX_OP_lt));
  EXPECT_FALSE(is_unary_op(STAX_OP_WHERE));
  for (int op = 1; op < STAX_NUM_OPCODES; ++op) EXPECT_NE(stax_opcode_name(op), nullptr) << op;
}

// The opcode numbers are ABI: a new op is appended at the end of ops.def (ABI 1.8 appended the
// bitwise ops after the comparisons), so every older opcode keeps its number.
TEST(Opcodes, NumbersAreStableAcrossMinors) {
  EXPECT_EQ(STAX_OP_neg, 11);
  EXPECT_EQ(STAX_OP_isnan, 36);
  EXPECT_EQ(STAX_OP_add, 37);
  EXPECT_EQ(STAX_OP_logical_or, 47);
  EXPECT_EQ(STAX_OP_eq, 48);
  EXPECT_EQ(STAX_OP_ge, 53);
  EXPECT_EQ(STAX_OP_bitwise_and, 54);  // ABI 1.8
  EXPECT_EQ(STAX_OP_bitwise_or, 55);
  EXPECT_EQ(STAX_OP_bitwise_xor, 56);
  EXPECT_EQ(STAX_NUM_OPCODES, 57);
  EXPECT_TRUE(is_binary_op(STAX_OP_bitwise_xor));
  EXPECT_EQ(opcode_from_name("bitwise_or"), STAX_OP_bitwise_or);
  EXPECT_GE(STAX_PLUGIN_API_MINOR, 8);
}

TEST(Expr, CanonicalPrinting) {
  KernelBuilder kb("k");
  BodyBuilder& b = kb.add_body("b", true);
  int32_t e1 = b.linear({{16384, b.i(0)}, {8192, b.i(1)}, {1, b.r(0)}});
  int32_t e2 = b.add(b.mul(b.c(128), b.floordiv(b.i(0), b.c(4))), b.mod(b.i(0), b.c(4)));
  int32_t e3 = b.linear({{1, b.i(0)}}, -1);
  int32_t e4 = b.mul(b.c(-1), b.i(1));
  int32_t e5 = b.add(b.i(0), b.mul(b.i(1), b.c(-3)));
  int32_t e6 = b.mod(b.linear({{3, b.i(0)}, {3, b.i(1)}}), b.c(128));
  int32_t e7 = b.min(b.i(0), b.c(7));
  int32_t e8 = b.mul(b.c(2), b.add(b.i(0), b.c(1)));
  const StaxKernelDesc* d = kb.desc();
  LoopBody body(d, d->bodies[0]);
  EXPECT_EQ(format_expr(body.expr(e1)), "16384*i0 + 8192*i1 + r0_0");
  EXPECT_EQ(format_expr(body.expr(e2)), "128*(i0//4) + i0 % 4");
  EXPECT_EQ(format_expr(body.expr(e3)), "i0 - 1");
  EXPECT_EQ(format_expr(body.expr(e4)), "-i1");
  EXPECT_EQ(format_expr(body.expr(e5)), "i0 - 3*i1");
  EXPECT_EQ(format_expr(body.expr(e6)), "(3*i0 + 3*i1) % 128");
  EXPECT_EQ(format_expr(body.expr(e7)), "min(i0, 7)");
  EXPECT_EQ(format_expr(body.expr(e8)), "2*(i0 + 1)");
  ExprSyntax c;
  c.floordiv = " / ";
  EXPECT_EQ(format_expr(body.expr(e2), c), "128*(i0 / 4) + i0 % 4");
}

TEST(Expr, EvaluateAndVisit) {
  KernelBuilder kb("k");
  BodyBuilder& b = kb.add_body("b", true);
  int32_t e = b.add(b.floordiv(b.linear({{1, b.i(0)}}, -7), b.c(4)), b.mod(b.i(1), b.c(3)));
  int32_t shared = b.add(b.i(0), b.r(0));
  int32_t twice = b.mul(shared, shared);
  const StaxKernelDesc* d = kb.desc();
  LoopBody body(d, d->bodies[0]);
  int64_t iv[2] = {1, 5}, rv[1] = {2};
  EXPECT_EQ(evaluate(body.expr(e), iv, rv), -2 + 2);  // (1-7)//4 = -2 (floor), 5 % 3 = 2
  EXPECT_EQ(evaluate(body.expr(twice), iv, rv), 9);

  struct Count : ExprVisitor<int> {  // leaves visited; the shared sub-DAG only once
    int constant(int64_t) override { return ++n, 0; }
    int iter_var(int32_t) override { return ++n, 0; }
    int reduce_var(int32_t) override { return ++n, 0; }
    int indirect(int32_t) override { return ++n, 0; }
    int add(const int&, const int&) override { return 0; }
    int mul(const int&, const int&) override { return 0; }
    int floordiv(const int&, const int&) override { return 0; }
    int mod(const int&, const int&) override { return 0; }
    int min(const int&, const int&) override { return 0; }
    int max(const int&, const int&) override { return 0; }
    int n = 0;
  } count;
  visit(body.expr(twice), count);
  EXPECT_EQ(count.n, 2);
}

// ---- Listing 6.2: the body of Example 1.1 -------------------------------------------------

// Example 1.1 (Listing 6.2) as a kernel description: tests/support/example11_kernel.h.
using stax::sdk::test::Example11;

// Formats every op as in Listing 6.2 (a recording handler: one line per call, in order).
class Recorder : public OpsHandler<std::string> {
 public:
  std::vector<std::string> lines;
  std::vector<int32_t> begun;

#define STAX_UNARY_OP(name) \
  std::string name(std::string x) override { return def(#name, quote(x)); }
#define STAX_BINARY_OP(name) \
  std::string name(std::string a, std::string b) override { \
    return def(#name, quote(a) + ", " + quote(b));           \
  }
#define STAX_COMPARE_OP(name) STAX_BINARY_OP(name)
#include "stax/sdk/ops.def"

  std::string constant(Scalar v, DType t) override {
    std::string s = v.integral ? std::to_string(v.i) : std::to_string(static_cast<int>(v.f));
    return def("constant", s + ", " + dtype_name(t));
  }
  std::string load(const Buffer& b, const Expr& e) override {
    return def("load", quote(b.name()) + ", " + format_expr(e));
  }
  std::string masked_load(const Buffer& b, const Expr& e, std::string m, Scalar) override {
    return def("masked_load", quote(b.name()) + ", " + format_expr(e) + ", " + quote(m));
  }
  std::string index_expr(const Expr& e, DType t) override {
    return def("index_expr", format_expr(e) + ", " + dtype_name(t));
  }
  std::string to_dtype(std::string x, DType t) override {
    return def("to_dtype", quote(x) + ", " + dtype_name(t));
  }
  std::string where(std::string c, std::string a, std::string b) override {
    return def("where", quote(c) + ", " + quote(a) + ", " + quote(b));
  }
  std::string indirect_indexing(std::string x, int64_t size, bool, bool) override {
    return def("indirect_indexing", quote(x) + ", " + std::to_string(size));
  }
  std::string reduction(ReductionType r, DType t, std::string v) override {
    return def("reduction", std::string(reduction_type_name(r)) + ", " + dtype_name(t) + ", " +
                                quote(v));
  }
  void store(const Buffer& b, const Expr& e, std::string v) override {
    lines.push_back("ops.store(" + quote(b.name()) + ", " + format_expr(e) + ", " + quote(v) + ")");
  }
  void store_reduction(const Buffer& b, const Expr& e, std::string v) override {
    lines.push_back("ops.store_reduction(" + quote(b.name()) + ", " + format_expr(e) + ", " +
                    quote(v) + ")");
  }
  void begin_op(int32_t i, DType) override { begun.push_back(i); }

 private:
  static std::string quote(const std::string& s) { return "'" + s + "'"; }
  std::string def(const char* op, const std::string& args) {
    std::string name = "tmp" + std::to_string(n_++);
    lines.push_back(name + " = ops." + op + "(" + args + ")");
    return name;
  }
  int n_ = 0;
};

TEST(Replay, RecordsListing62) {
  Example11 ex;
  validate(ex.desc);
  Kernel k(ex.desc);
  Recorder rec;
  std::vector<std::optional<std::string>> values = replay(k.body(0), rec);
  std::vector<std::string> expected = {
      "tmp0 = ops.load('primals_1', 128*i0 + r0_0)",
      "tmp1 = ops.load('primals_2', 128*i0 + r0_0)",
      "tmp2 = ops.add('tmp0', 'tmp1')",
      "tmp3 = ops.relu('tmp2')",
      "tmp4 = ops.constant(2, float32)",
      "tmp5 = ops.mul('tmp3', 'tmp4')",
      "tmp6 = ops.reduction(sum, float32, 'tmp5')",
      "ops.store_reduction('buf2', i0, 'tmp6')",
  };
  EXPECT_EQ(rec.lines, expected);
  EXPECT_EQ(rec.begun, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  ASSERT_EQ(values.size(), 8u);
  EXPECT_EQ(*values[5], "tmp5");
  EXPECT_FALSE(values[7].has_value());
  EXPECT_EQ(k.reduction_type(), ReductionType::Sum);
  EXPECT_EQ(k.body(0).op(6).name(), "reduction");
}

// ---- CStylePrinter ----------------------------------------------------------------------

std::string join(const PrintedBody& b) {
  std::string s;
  for (const std::string& l : b.prologue) s += "P: " + l + "\n";
  for (const std::string& l : b.lines) s += "L: " + l + "\n";
  for (const std::string& l : b.epilogue) s += "E: " + l + "\n";
  return s;
}

TEST(CStylePrinter, Listing62Golden) {
  Example11 ex;
  Kernel k(ex.desc);
  CStylePrinter p(k);
  EXPECT_EQ(p.signature(),
            "extern \"C\" void kernel0(const float* in_ptr0, const float* in_ptr1, "
            "float* out_ptr0)");
  EXPECT_EQ(join(p.print(k.body(0))),
            "P: float acc0 = 0.0f;\n"
            "L: float tmp0 = in_ptr0[128*i0 + r0_0];\n"
            "L: float tmp1 = in_ptr1[128*i0 + r0_0];\n"
            "L: float tmp2 = stax_scalar::add(tmp0, tmp1);\n"
            "L: float tmp3 = stax_scalar::relu(tmp2);\n"
            "L: float tmp4 = 2.0f;\n"
            "L: float tmp5 = stax_scalar::mul(tmp3, tmp4);\n"
            "L: acc0 = stax_scalar::add(acc0, tmp5);\n"
            "E: out_ptr0[i0] = acc0;\n");
}

// The framing helper (cstyle_framing.hpp) around the same statements: the loop nest of Example 1.1.
TEST(CStyleFraming, Example11LoopNest) {
  Example11 ex;
  Kernel k(ex.desc);
  CStylePrinter p(k);
  EXPECT_EQ(frame_loops(p),
            "  for (long long i0 = 0; i0 < 64; ++i0) {\n"
            "    // buf2\n"
            "    float acc0 = 0.0f;\n"
            "    for (long long r0_0 = 0; r0_0 < 128; ++r0_0) {\n"
            "      float tmp0 = in_ptr0[128*i0 + r0_0];\n"
            "      float tmp1 = in_ptr1[128*i0 + r0_0];\n"
            "      float tmp2 = stax_scalar::add(tmp0, tmp1);\n"
            "      float tmp3 = stax_scalar::relu(tmp2);\n"
            "      float tmp4 = 2.0f;\n"
            "      float tmp5 = stax_scalar::mul(tmp3, tmp4);\n"
            "      acc0 = stax_scalar::add(acc0, tmp5);\n"
            "    }\n"
            "    out_ptr0[i0] = acc0;\n"
            "  }\n");
}

TEST(CStylePrinter, CseOfExample62) {
  // Listing 6.4's first level: x*x reads the same location twice; the printer loads it once.
  KernelBuilder kb("kernel1");
  int x = kb.add_buffer("primals_1", DType::Float32, {64, 16384}, BufferRole::Input);
  int out = kb.add_buffer("buf1", DType::Float32, {64, 2}, BufferRole::Output);
  kb.set_ranges({64, 2}, {8192});
  BodyBuilder& b = kb.add_body("buf1", true);
  int t0 = b.load(x, b.linear({{16384, b.i(0)}, {8192, b.i(1)}, {1, b.r(0)}}));
  int t1 = b.load(x, b.linear({{16384, b.i(0)}, {8192, b.i(1)}, {1, b.r(0)}}));
  int t2 = b.binary(STAX_OP_mul, t0, t1);
  b.store_reduction(out, b.linear({{2, b.i(0)}, {1, b.i(1)}}),
                    b.reduction(ReductionType::Sum, DType::Float32, t2));
  Kernel k(kb.desc());
  CStylePrinter p(k);
  EXPECT_EQ(join(p.print(k.body(0))),
            "P: float acc0 = 0.0f;\n"
            "L: float tmp0 = in_ptr0[16384*i0 + 8192*i1 + r0_0];\n"
            "L: float tmp1 = stax_scalar::mul(tmp0, tmp0);\n"
            "L: acc0 = stax_scalar::add(acc0, tmp1);\n"
            "E: out_ptr0[2*i0 + i1] = acc0;\n");
}

// y[i0] = where(idx[i0] >= 0, x[indirect(idx[i0])], 0) as half, plus a masked load and
// conversions through int32 and float16.
void build_special_ops(KernelBuilder& kb) {
  int x = kb.add_buffer("x", DType::Float16, {128}, BufferRole::Input);
  int idx = kb.add_buffer("idx", DType::Int64, {16}, BufferRole::Input);
  int y = kb.add_buffer("y", DType::Float16, {16}, BufferRole::Output, {}, 4);
  kb.set_ranges({16});
  BodyBuilder& b = kb.add_body("y");
  int t0 = b.load(idx, b.i(0));
  int t1 = b.indirect_indexing(t0, 128);
  int t2 = b.load(x, b.indirect(t1));
  int t3 = b.constant_int(0, DType::Int64);
  int t4 = b.binary(STAX_OP_ge, t0, t3);
  int t5 = b.constant(0.5, DType::Float16);
  int t6 = b.where(t4, t2, t5);
  int t7 = b.masked_load(x, b.i(0), t4, Scalar::floating(-1.5));
  int t8 = b.binary(STAX_OP_add, t6, t7);
  int t9 = b.to_dtype(t8, DType::Int32);
  int t10 = b.to_dtype(t9, DType::Float16);
  b.store(y, b.i(0), t10);
}

TEST(CStylePrinter, SpecialOpsAndTables) {
  KernelBuilder kb("kernel2");
  build_special_ops(kb);
  Kernel k(kb.desc());
  validate(k.raw());
  CStyleTables t;
  t.op_templates[STAX_OP_add] = "({0} + {1})";
  t.pointer_qualifier = "__restrict__";
  CStylePrinter p(k, t);
  EXPECT_EQ(p.signature(),
            "extern \"C\" void kernel2(const _Float16* __restrict__ in_ptr0, "
            "const long long* __restrict__ in_ptr1, _Float16* __restrict__ out_ptr0)");
  EXPECT_EQ(join(p.print(k.body(0))),
            "L: long long tmp0 = in_ptr1[i0];\n"
            "L: long long tmp1 = tmp0 < 0 ? tmp0 + 128 : tmp0;\n"
            "L: STAX_CHECK(0 <= tmp1 && tmp1 < 128, \"index out of bounds: 0 <= tmp1 < 128\");\n"
            "L: float tmp2 = stax_scalar::convert<float>(in_ptr0[tmp1]);\n"
            "L: long long tmp3 = 0LL;\n"
            "L: bool tmp4 = stax_scalar::ge(tmp0, tmp3);\n"
            "L: float tmp5 = 0.5f;\n"
            "L: float tmp6 = stax_scalar::where(tmp4, tmp2, tmp5);\n"
            "L: float tmp7 = tmp4 ? stax_scalar::convert<float>(in_ptr0[i0]) : -1.5f;\n"
            "L: float tmp8 = (tmp6 + tmp7);\n"
            "L: long long tmp9 = stax_scalar::convert<long long>(stax_scalar::convert<int>("
            "stax_scalar::convert<long long>(tmp8)));\n"
            "L: float tmp10 = stax_scalar::convert<float>(stax_scalar::convert<_Float16>(tmp9));\n"
            "L: out_ptr0[4 + i0] = stax_scalar::convert<_Float16>(tmp10);\n");
}

// The same kernel in plain C99 (c99_tables(): per-dtype op and conversion names of
// stax/sdk/scalar_ops.h, float16 as bits): the printed statements, and the whole framed source
// compiles with the system C compiler as strict C99.
TEST(CStylePrinter, C99Tables) {
  KernelBuilder kb("kernel2");
  build_special_ops(kb);
  Kernel k(kb.desc());
  CStylePrinter p(k, c99_tables());
  EXPECT_EQ(p.signature(),
            "void kernel2(const unsigned short* restrict in_ptr0, "
            "const long long* restrict in_ptr1, unsigned short* restrict out_ptr0)");
  EXPECT_EQ(join(p.print(k.body(0))),
            "L: long long tmp0 = in_ptr1[i0];\n"
            "L: long long tmp1 = tmp0 < 0 ? tmp0 + 128 : tmp0;\n"
            "L: STAX_CHECK(0 <= tmp1 && tmp1 < 128, \"index out of bounds: 0 <= tmp1 < 128\");\n"
            "L: float tmp2 = stax_f16_load(in_ptr0[tmp1]);\n"
            "L: long long tmp3 = 0LL;\n"
            "L: bool tmp4 = stax_ge_i64(tmp0, tmp3);\n"
            "L: float tmp5 = 0.5f;\n"
            "L: float tmp6 = (tmp4 ? tmp2 : tmp5);\n"
            "L: float tmp7 = tmp4 ? stax_f16_load(in_ptr0[i0]) : -1.5f;\n"
            "L: float tmp8 = stax_add_f32(tmp6, tmp7);\n"
            "L: long long tmp9 = stax_convert_f16_i32(tmp8);\n"
            "L: float tmp10 = stax_convert_i32_f16(tmp9);\n"
            "L: out_ptr0[4 + i0] = stax_f16_store(tmp10);\n");
  // a spelling for one (op, dtype) beats the per-dtype name
  CStyleTables t = c99_tables();
  t.op_dtype_templates[{STAX_OP_add, DType::Float16}] = "my_hadd({0}, {1})";
  std::string own = join(CStylePrinter(k, t).print(k.body(0)));
  EXPECT_NE(own.find("L: float tmp8 = my_hadd(tmp6, tmp7);\n"), std::string::npos) << own;
  FramingStyle style;
  style.entry_linkage = "";
  CStylePrinter q(k, c99_tables());
  std::string src = "#include \"stax/sdk/scalar_ops.h\"\n" + c_check_prelude(q, style) +
                    frame_kernel(q, style) + c_entry_point(q, style);
  EXPECT_EQ(src.find("auto "), std::string::npos) << src;
  EXPECT_EQ(src.find("__builtin"), std::string::npos) << src;
  EXPECT_EQ(src.find("::"), std::string::npos) << src;
  // built as strict C99 (warnings are errors) into a shared object and run (shared_object.hpp)
  SharedObjectCompiler cc;
  cc.command = "cc -std=c99 -pedantic-errors -Wall -Werror -O1 -ffp-contract=off -fPIC -shared "
               "-I" STAX_SOURCE_DIR "/sdk/include";
  cc.extension = ".c";
  cc.work_dir = ::testing::TempDir();
  cc.plugin = "sdk_test";
  cc.link_flags = "-lm";
  std::unique_ptr<CompiledKernel> ck = compile_shared_object(src, cc, k);
  // x[j] = j (float16 bits), idx[i] = 2i: y[4 + i] = float16(int32(x[2i] + x[i])) = 3i
  std::vector<uint16_t> x(128), y(32, 0);
  std::vector<long long> idx(16);
  for (int j = 0; j < 128; ++j) x[j] = stax_f16::float_to_half(static_cast<float>(j));
  for (int i = 0; i < 16; ++i) idx[i] = 2 * i;
  void* bufs[] = {x.data(), idx.data(), y.data()};
  ck->run(bufs, 3, nullptr);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(stax_f16::half_to_float(y[4 + i]), 3.0f * i) << "y[" << 4 + i << "]";
  EXPECT_EQ(y[3], 0);
  // a negative index wraps once (x[127] is loaded), and idx < 0 selects 0.5 + -1.5 = -1;
  // an index out of bounds stops the kernel with the check's message
  idx[5] = -1;
  ck->run(bufs, 3, nullptr);
  EXPECT_EQ(stax_f16::half_to_float(y[4 + 5]), -1.0f);
  idx[7] = 128;
  try {
    ck->run(bufs, 3, nullptr);
    FAIL() << "an out-of-bounds index ran";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.code(), STAX_ERROR_RUNTIME);
    EXPECT_NE(std::string(e.what()).find("index out of bounds"), std::string::npos) << e.what();
  }
  // a compiler error is a compile error with the compiler's output and the source
  try {
    compile_shared_object("int broken = ;\n", cc, k);
    FAIL() << "broken source compiled";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.code(), STAX_ERROR_COMPILE);
    EXPECT_NE(std::string(e.what()).find("error"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("int broken = ;"), std::string::npos) << e.what();
  }
}

TEST(CStylePrinter, ArgMaxAndStoreForgetsLoads) {
  KernelBuilder kb("kernel3");
  int x = kb.add_buffer("x", DType::Float32, {8, 4, 5}, BufferRole::Input);
  int io = kb.add_buffer("acc", DType::Float32, {8}, BufferRole::InOut);
  int out = kb.add_buffer("out", DType::Int64, {8}, BufferRole::Output);
  kb.set_ranges({8}, {4, 5});
  BodyBuilder& b = kb.add_body("out", true);
  int v = b.load(x, b.linear({{20, b.i(0)}, {5, b.r(0)}, {1, b.r(1)}}));
  b.store_reduction(out, b.i(0), b.reduction(ReductionType::ArgMax, DType::Int64, v));
  BodyBuilder& b2 = kb.add_body("acc");
  int a0 = b2.load(io, b2.i(0));
  int one = b2.constant(1, DType::Float32);
  b2.store(io, b2.i(0), b2.binary(STAX_OP_add, a0, one));
  int a1 = b2.load(io, b2.i(0));  // after the store: must be reloaded, not CSE'd with a0
  b2.store(io, b2.i(0), b2.binary(STAX_OP_mul, a1, a1));
  Kernel k(kb.desc());
  validate(k.raw());
  CStylePrinter p(k);
  EXPECT_EQ(join(p.print(k.body(0))),
            "P: float acc0 = -__builtin_huge_valf();\n"
            "P: long long acc0_index = 0;\n"
            "L: float tmp0 = in_ptr0[20*i0 + 5*r0_0 + r0_1];\n"
            "L: if (!(acc0 != acc0) && (tmp0 > acc0 || tmp0 != tmp0)) { acc0 = tmp0; "
            "acc0_index = 5*r0_0 + r0_1; }\n"
            "E: out_ptr1[i0] = acc0_index;\n");
  EXPECT_EQ(join(p.print(k.body(1))),
            "L: float tmp1 = out_ptr0[i0];\n"
            "L: float tmp2 = 1.0f;\n"
            "L: float tmp3 = stax_scalar::add(tmp1, tmp2);\n"
            "L: out_ptr0[i0] = tmp3;\n"
            "L: float tmp4 = out_ptr0[i0];\n"
            "L: float tmp5 = stax_scalar::mul(tmp4, tmp4);\n"
            "L: out_ptr0[i0] = tmp5;\n");
}

// ABI 1.1: index_bits. The view reads it only when the host's struct holds it; the printer indexes
// in int when it is 32 (the checked indirect index narrowed after its check).
TEST(CStylePrinter, IndexBitsChooseTheIndexType) {
  KernelBuilder kb("kernel4");
  int x = kb.add_buffer("x", DType::Float32, {128}, BufferRole::Input);
  int idx = kb.add_buffer("idx", DType::Int64, {16}, BufferRole::Input);
  int y = kb.add_buffer("y", DType::Float32, {16}, BufferRole::Output);
  kb.set_ranges({16});
  BodyBuilder& b = kb.add_body("y");
  int t1 = b.indirect_indexing(b.load(idx, b.i(0)), 128, STAX_INDIRECT_CHECK);
  b.store(y, b.i(0), b.load(x, b.indirect(t1)));
  EXPECT_EQ(Kernel(kb.desc()).index_bits(), 64);  // the builder's default
  kb.set_index_bits(32);
  Kernel k(kb.desc());
  validate(k.raw());
  EXPECT_EQ(k.index_bits(), 32);
  CStylePrinter p(k);
  EXPECT_EQ(p.index_type(), "int");
  EXPECT_EQ(join(p.print(k.body(0))),
            "L: long long tmp0 = in_ptr1[i0];\n"
            "L: STAX_CHECK(0 <= tmp0 && tmp0 < 128, \"index out of bounds: 0 <= tmp0 < 128\");\n"
            "L: int tmp1 = stax_scalar::convert<int>(tmp0);\n"
            "L: float tmp2 = in_ptr0[tmp1];\n"
            "L: out_ptr0[i0] = tmp2;\n");

  // An ABI 1.0 host's description ends before the field: 64 bits, whatever lies beyond.
  StaxKernelDesc old = *kb.desc();
  old.struct_size = offsetof(StaxKernelDesc, index_bits);
  EXPECT_EQ(Kernel(&old).index_bits(), 64);
  validate(&old);
  EXPECT_EQ(CStylePrinter(Kernel(&old)).index_type(), "long long");
  // 0 (a host that left it unset) is 64 too; other values are invalid
  StaxKernelDesc unset = *kb.desc();
  unset.index_bits = 0;
  EXPECT_EQ(Kernel(&unset).index_bits(), 64);
  validate(&unset);
  unset.index_bits = 48;
  EXPECT_THROW(validate(&unset), PluginError);
}

// ---- validation -------------------------------------------------------------------------------

TEST(Validate, RejectsBrokenDescriptions) {
  Example11 ex;
  StaxOpNode ops[3];
  for (int i = 0; i < 3; ++i) ops[i] = ex.desc->bodies[0]->ops[i];
  ops[2].operands[1] = 2;  // refers to itself
  StaxLoopBody body = *ex.desc->bodies[0];
  body.ops = ops;
  body.num_ops = 3;
  const StaxLoopBody* bodies[] = {&body};
  StaxKernelDesc k = *ex.desc;
  k.bodies = bodies;
  try {
    validate(&k);
    FAIL() << "accepted";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.code(), STAX_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("body 0: op 2 (add): operands must be earlier ops"),
              std::string::npos)
        << e.what();
  }
  ops[2].operands[1] = 1;
  ops[1].buffer = 9;
  EXPECT_THROW(validate(&k), PluginError);
  ops[1].buffer = 1;
  ops[0].opcode = 999;
  EXPECT_THROW(validate(&k), PluginError);
}

// ---- options and copies -------------------------------------------------------------------

TEST(Options, TypedGettersAndErrors) {
  StaxOptionNode nodes[] = {
      {STAX_OPTION_MAP, -1, nullptr, nullptr, "c.yaml:3:5"},
      {STAX_OPTION_SCALAR, 0, "threads", "4", "c.yaml:3:15"},
      {STAX_OPTION_SCALAR, 0, "fast", "maybe", "c.yaml:3:27"},
      {STAX_OPTION_LIST, 0, "flags", nullptr, "c.yaml:4:7"},
      {STAX_OPTION_SCALAR, 3, nullptr, "-O3", "c.yaml:4:15"},
      {STAX_OPTION_SCALAR, 3, nullptr, "-g", "c.yaml:4:20"},
  };
  StaxOptions raw = {sizeof(StaxOptions), nodes, 6};
  Options o(&raw, "toy");
  EXPECT_EQ(o.get_int("threads", 1), 4);
  EXPECT_EQ(o.get_int("absent", 7), 7);
  EXPECT_EQ(o.get_string_list("flags", {}), (std::vector<std::string>{"-O3", "-g"}));
  try {
    o.get_bool("fast", false);
    FAIL();
  } catch (const PluginError& e) {
    EXPECT_STREQ(e.what(),
                 "c.yaml:3:27: option 'fast' of backend 'toy' must be true or false, got 'maybe'");
    EXPECT_EQ(e.code(), STAX_ERROR_INVALID_OPTION);
  }
  try {
    o.check_known({"threads", "flags"});
    FAIL();
  } catch (const PluginError& e) {
    EXPECT_STREQ(e.what(),
                 "c.yaml:3:27: unknown option 'fast' for backend 'toy' (known options: threads, "
                 "flags)");
  }
  Options empty(nullptr, "toy");
  EXPECT_TRUE(empty.empty());
  EXPECT_NO_THROW(empty.check_known({}));
}

TEST(OwnedKernelDesc, DeepCopyPrintsTheSame) {
  std::string a, b;
  std::unique_ptr<OwnedKernelDesc> copy;
  {
    Example11 ex;
    copy.reset(new OwnedKernelDesc(ex.desc));
    Kernel k(ex.desc);
    CStylePrinter p(k);
    a = join(p.print(k.body(0)));
  }  // the original is gone
  Kernel k(copy->desc());
  validate(copy->desc());
  CStylePrinter p(k);
  b = join(p.print(k.body(0)));
  EXPECT_EQ(a, b);
  EXPECT_EQ(k.buffer(2).name(), "buf2");
}

TEST(StructSize, CopyOutRespectsTheCallersSize) {
  // An "older caller" knows only the first fields of StaxRealizationThresholds.
  StaxRealizationThresholds small;
  std::memset(&small, 0x7f, sizeof small);
  small.struct_size = offsetof(StaxRealizationThresholds, users_limit);
  StaxRealizationThresholds full = make_struct<StaxRealizationThresholds>();
  full.op_limit = 50;
  full.users_limit = 5;
  copy_out(&small, full);
  EXPECT_EQ(small.struct_size, offsetof(StaxRealizationThresholds, users_limit));
  EXPECT_EQ(small.op_limit, 50);
  EXPECT_NE(small.users_limit, 5);  // beyond the caller's struct: untouched
  StaxRealizationThresholds in = copy_in(&small);
  EXPECT_EQ(in.struct_size, sizeof(StaxRealizationThresholds));
  EXPECT_EQ(in.users_limit, 0);
  EXPECT_TRUE(STAX_SDK_HAS_FIELD(&small, StaxRealizationThresholds, op_limit));
  EXPECT_FALSE(STAX_SDK_HAS_FIELD(&small, StaxRealizationThresholds, users_limit));
}

}  // namespace
