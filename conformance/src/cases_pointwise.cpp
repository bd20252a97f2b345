// Pointwise ops in every dtype, conversions, broadcasting, views, creation and indexing: the
// seed's semantics fix every bit, so compiled results must equal the interpreter's bit for bit.
#include <string>

#include "stax/conformance/compare.h"
#include "target.h"

namespace stax::conformance {
namespace {

const DType kFloatTypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

std::string suffix(DType d) { return std::string(dtype_name(d)); }

void unary_float(Target& t, DType dt) {
  static const char* ops[] = {"neg",   "abs",  "exp",     "exp2", "expm1",      "log",
                              "log2",  "log10", "log1p",  "sqrt", "rsqrt",      "sin",
                              "cos",   "tan",  "tanh",    "sigmoid", "erf",     "relu",
                              "reciprocal", "sign", "floor", "ceil", "round", "trunc",
                              "logical_not", "isnan"};
  Graph g;
  Node* x = t.input(g, "x", {7, 9}, dt);
  std::vector<Node*> outs;
  for (const char* op : ops) outs.push_back(g.call(op, {x}));
  g.output(outs);
  t.expect_bitwise(g, special_inputs(g));
}

void unary_int_bool(Target& t) {
  Graph g;
  std::vector<Node*> outs;
  for (DType dt : {DType::Int64, DType::Int32, DType::Int8, DType::UInt8, DType::Bool}) {
    Node* x = t.input(g, "x_" + suffix(dt), {5, 6}, dt);
    for (const char* op : {"neg", "abs", "exp", "sqrt", "sign", "relu", "logical_not", "isnan",
                           "floor", "sigmoid"}) {
      if (dt == DType::Bool && (std::string(op) == "neg" || std::string(op) == "floor")) continue;
      try {
        outs.push_back(g.call(op, {x}));
      } catch (const Error&) {
        // the op's type rules reject this dtype: nothing to compile
      }
    }
  }
  g.output(outs);
  t.expect_bitwise(g, random_inputs(g, 2));
}

void binary(Target& t, DType dt) {
  Graph g;
  Node* x = t.input(g, "x", {6, 8}, dt);
  Node* y = t.input(g, "y", {6, 8}, dt);
  std::vector<Node*> outs;
  // An integer division by zero raises (torch's ZeroDivisionError): integer divisors are made
  // non-zero. (By a tensor it runs as a fallback; by a number it is lowered: .Scalar below.)
  Node* nz = is_floating(dt) ? y
                             : g.call("where.ScalarSelf", {g.call("eq.Scalar", {y, 0}), 1, y});
  for (const char* op : {"add", "sub", "mul", "div", "pow", "remainder", "floor_divide"}) {
    std::string o = op;  // aten: pow.Tensor_Tensor / pow.Tensor_Scalar, floor_divide(.default)
    bool division = o == "remainder" || o == "floor_divide";
    outs.push_back(g.call(o == "pow" ? "pow.Tensor_Tensor" : o == "floor_divide" ? o : o + ".Tensor",
                          {x, division ? nz : y}));
    outs.push_back(g.call(o == "pow" ? "pow.Tensor_Scalar" : o + ".Scalar", {x, 3}));
  }
  outs.push_back(g.call("add.Tensor", {x, y}, {{"alpha", Arg(2)}}));
  outs.push_back(g.call("sub.Scalar", {x, 1.5}));
  outs.push_back(g.call("maximum", {x, y}));
  outs.push_back(g.call("minimum", {x, y}));
  g.output(outs);
  t.expect_bitwise(g, special_inputs(g));
}

void compare_logical_where(Target& t, DType dt) {
  Graph g;
  Node* x = t.input(g, "x", {4, 10}, dt);
  Node* y = t.input(g, "y", {4, 10}, dt);
  Node* c = t.input(g, "c", {4, 10}, DType::Bool);
  std::vector<Node*> outs;
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    outs.push_back(g.call(std::string(op) + ".Tensor", {x, y}));
    outs.push_back(g.call(std::string(op) + ".Scalar", {x, 0}));
  }
  outs.push_back(g.call("logical_and", {x, y}));
  outs.push_back(g.call("logical_or", {x, c}));
  outs.push_back(g.call("where.self", {c, x, y}));
  if (dt != DType::Bool) outs.push_back(g.call("clamp", {x}, {{"min", Arg(-1)}, {"max", Arg(1)}}));
  g.output(outs);
  t.expect_bitwise(g, special_inputs(g));
}

void conversions(Target& t) {
  const DType all[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                       DType::Int64,   DType::Int32,   DType::Int8,    DType::UInt8, DType::Bool};
  Graph g;
  std::vector<Node*> outs;
  for (DType from : all) {
    Node* x = t.input(g, "x_" + suffix(from), {3, 11}, from);
    for (DType to : all) outs.push_back(g.call("to.dtype", {x, to}));
  }
  g.output(outs);
  std::vector<Tensor> in = random_inputs(g, 5);
  for (size_t i = 0; i < 4; ++i)  // floats within every target's range, with fractions
    in[i] = Tensor::randn({3, 11}, DType::Float32, 5 + i).to(all[i]);
  t.expect_bitwise(g, in);
}

void broadcasting(Target& t) {
  Graph g;
  Node* a = t.input(g, "a", {4, 1, 8});
  Node* b = t.input(g, "b", {3, 1});
  Node* c = t.input(g, "c", {8});
  Node* s = t.input(g, "s", Shape{});
  Node* abc = g.call("mul.Tensor", {g.call("add.Tensor", {a, b}), c});
  g.output({g.call("sub.Tensor", {abc, s}), g.call("mul.Tensor", {s, s}),
            g.call("add.Tensor", {c, t.input(g, "i", {8}, DType::Int64)})});
  t.expect_bitwise(g, special_inputs(g));
}

void views(Target& t) {
  Graph g;
  Node* x = t.input(g, "x", {4, 6, 8});
  Node* y = t.input(g, "y", {8, 6});
  auto relu = [&](Node* v) { return g.call("relu", {v}); };
  g.output({relu(g.call("permute", {x, std::vector<int64_t>{2, 0, 1}})),
            g.call("add.Tensor", {g.call("t", {y}), g.call("select.int", {x, 0, 1})}),
            relu(g.call("expand", {g.call("unsqueeze", {y, 0}), std::vector<int64_t>{3, 8, 6}})),
            relu(g.call("reshape", {g.call("permute", {x, std::vector<int64_t>{1, 0, 2}}),
                                    std::vector<int64_t>{6, 32}})),
            relu(g.call("slice.Tensor", {x, 2, 1, 7, 2})),
            relu(g.call("as_strided", {y, std::vector<int64_t>{3, 4}, std::vector<int64_t>{1, 6}})),
            g.call("t", {y})});
  t.expect_bitwise(g, special_inputs(g));
}

void creation(Target& t) {
  Graph g;
  Node* x = t.input(g, "x", {3, 4}, DType::Float16);
  g.output({g.call("full", {std::vector<int64_t>{2, 3}, 1.5}),
            g.call("ones", {std::vector<int64_t>{2, 2}}, {{"dtype", Arg(DType::Int32)}}),
            g.call("full_like", {x, -2}), g.call("arange.start_step", {2, 20, 3}),
            g.call("add.Tensor",
                   {x, g.call("arange.start", {1, 5}, {{"dtype", Arg(DType::Float16)}})})});
  t.expect_bitwise(g, special_inputs(g));
}

void indexing(Target& t) {
  Graph g;
  Node* x = t.input(g, "x", {5, 7});
  Node* idx = t.input(g, "idx", {4}, DType::Int64);
  Node* gidx = t.input(g, "gidx", {5, 3}, DType::Int64);
  Node* y = t.input(g, "y", {2, 7});
  Node* nidx = t.input(g, "nidx", {4}, DType::Int64);
  g.output({g.call("index_select", {x, 0, idx}), g.call("index_select", {x, 1, idx}),
            g.call("gather", {x, 1, gidx}),
            g.call("index.Tensor", {x, Arg(Arg::List{Arg(nidx)})}),
            g.call("cat", {std::vector<Node*>{x, y}, 0})});
  std::vector<Tensor> in = special_inputs(g);
  in[1] = Tensor::from_vector<int64_t>({4}, {0, 4, 1, 4});
  in[2] = Tensor::randint({5, 3}, 0, 7, DType::Int64, 9);
  in[4] = Tensor::from_vector<int64_t>({4}, {0, -1, 3, -5});  // negative indices wrap
  t.expect_bitwise(g, in);
}

// Ops without a lowering rule run on the interpreter's kernels, between compiled kernels.
void fallback(Target& t) {
  Graph g;
  Node* x = t.input(g, "x", {6, 10});
  Node* idx = t.input(g, "idx", {6, 3}, DType::Int64);
  Node* src = t.input(g, "src", {6, 3});
  Node* sa = g.call("scatter_add", {g.call("relu", {x}), 1, idx, src});
  g.output({g.call("mul.Scalar", {sa, 3})});
  std::vector<Tensor> in = random_inputs(g, 8);
  in[1] = Tensor::randint({6, 3}, 0, 10, DType::Int64, 8);
  t.expect_bitwise(g, in);
}

}  // namespace

void add_pointwise_cases(std::vector<Case>& out) {
  for (DType dt : kFloatTypes)
    out.push_back({"Pointwise", "Unary_" + suffix(dt), [dt](Target& t) { unary_float(t, dt); }});
  out.push_back({"Pointwise", "UnaryIntegerAndBool", unary_int_bool});
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                   DType::Int32})
    out.push_back({"Pointwise", "Binary_" + suffix(dt), [dt](Target& t) { binary(t, dt); }});
  for (DType dt : {DType::Float32, DType::Float16, DType::Int64, DType::Bool})
    out.push_back({"Pointwise", "CompareLogicalWhere_" + suffix(dt),
                   [dt](Target& t) { compare_logical_where(t, dt); }});
  out.push_back({"Pointwise", "Conversions", conversions});
  out.push_back({"Pointwise", "Broadcasting", broadcasting});
  out.push_back({"Views", "ViewsFusedIntoConsumers", views});
  out.push_back({"Creation", "FillsAndArange", creation});
  out.push_back({"Indexing", "GatherIndexSelectIndexCat", indexing});
  out.push_back({"Fallback", "InterpreterOpBetweenKernels", fallback});
}

}  // namespace stax::conformance
