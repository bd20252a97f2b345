// The decomposed attention pattern (issue 27 item 3, core/ops/nn/attention_pattern.h): graphs in
// the forms torch traces hand Stax (make_fx / Dynamo with the Core ATen decompositions) compile on
// cpu_cpp to one flash_attention extern, and their values agree with the reference interpreter
// running the graph as written within the bound of the reordered sums; their gradients are the
// flash backward's. Each refusal keeps the decomposition (no flash_attention in the schedule) and
// says why; its compiled values still match the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/driver/compiled_function.h"
#include "core/graph/printer.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/nn/attention_fusion.h"
#include "tests/attention/attention_check.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

using test::contains;
using namespace attention_test;

constexpr double kInf = std::numeric_limits<double>::infinity();
using Ints = std::vector<int64_t>;

// The scores' builder state: q [b,h,l,e], k [b,h,s,e], v [b,h,s,ev] placeholders (and the mask's).
struct Parts {
  Graph* g;
  const Case& c;
  DType t;
  Node *q, *k, *v, *m = nullptr;
};

Node* scalar(Graph& g, double x, DType t) { return g.call("scalar_tensor", {x}, {{"dtype", Arg(t)}}); }

// key j <= query i, [l, s] bool, the way torch's decomposition builds it (arange, sub, le).
Node* causal_keep(Graph& g, int64_t l, int64_t s) {
  Node* j = g.call("unsqueeze", {g.call("arange.start_step", {int64_t{0}, s}), int64_t{-2}});
  Node* i = g.call("unsqueeze", {g.call("arange.start_step", {int64_t{0}, l}), int64_t{-1}});
  Node* le = g.call("le.Scalar", {g.call("sub.Tensor", {j, i}), int64_t{0}});
  Node* all = g.call("full", {Arg(Ints{l, s}), true}, {{"dtype", Arg(DType::Bool)}});
  return g.call("logical_and", {le, all});
}

// torch's guard: rows whose scores are all -inf get 0 instead of softmax's NaN.
Node* guard(Graph& g, Node* x, Node* p) {
  Node* ne = g.call("logical_not", {g.call("eq.Scalar", {x, -kInf})});
  Node* none = g.call("logical_not", {g.call("any.dim", {ne, int64_t{-1}, true})});
  return g.call("where.self", {none, g.call("full_like", {p, 0.0}), p});
}

Node* to3(Graph& g, Node* x, const Ints& s4) {  // expand, clone, view to [b·h, ., .]
  Node* e = g.call("clone", {g.call("expand", {x, Arg(s4)})});
  return g.call("view", {e, Arg(Ints{s4[0] * s4[1], s4[2], s4[3]})});
}

// make_fx's form (the model bench's GPT trace): √scale on q and on kᵀ, bmm over expand / clone /
// view, an additive causal mask where(tril, 0, -inf) from arange, _softmax, the guard, bmm.
Node* trace_form(Parts& p) {
  Graph& g = *p.g;
  const Case& c = p.c;
  const double r = std::sqrt(c.scale);
  Node* qs = g.call("mul.Scalar", {p.q, r});
  Node* ks = g.call("mul.Scalar", {g.call("permute", {p.k, Arg(Ints{0, 1, 3, 2})}), r});
  Node* s = g.call("bmm", {to3(g, qs, {c.b, c.h, c.l, c.e}), to3(g, ks, {c.b, c.h, c.e, c.s})});
  s = g.call("view", {s, Arg(Ints{c.b, c.h, c.l, c.s})});
  Node* mask = g.call("where.self", {causal_keep(g, c.l, c.s), scalar(g, 0.0, p.t), scalar(g, -kInf, p.t)});
  Node* x = g.call("add.Tensor", {s, mask});
  Node* pr = guard(g, x, g.call("_softmax", {x, int64_t{-1}, false}));
  Node* pv = g.call("bmm", {g.call("view", {g.call("expand", {pr, Arg(Ints{c.b, c.h, c.l, c.s})}),
                                           Arg(Ints{c.b * c.h, c.l, c.s})}),
                            to3(g, p.v, {c.b, c.h, c.s, c.ev})});
  return g.call("view", {pv, Arg(Ints{c.b, c.h, c.l, c.ev})});
}

// 4-D matmul, div of the scores by 1/scale, masked_fill of the keys after the query with -inf,
// softmax.int, no guard.
Node* masked_fill_form(Parts& p) {
  Graph& g = *p.g;
  const Case& c = p.c;
  Node* s = g.call("matmul", {p.q, g.call("transpose.int", {p.k, int64_t{-2}, int64_t{-1}})});
  s = g.call("div.Scalar", {s, 1.0 / c.scale});
  Node* after = g.call("logical_not", {causal_keep(g, c.l, c.s)});
  Node* x = g.call("masked_fill.Scalar", {s, after, -kInf});
  return g.call("matmul", {g.call("softmax.int", {x, int64_t{-1}}), p.v});
}

// No mask: mul of the scores by the scale, _softmax.
Node* plain_form(Parts& p) {
  Graph& g = *p.g;
  Node* s = g.call("matmul", {p.q, g.call("transpose.int", {p.k, int64_t{2}, int64_t{3}})});
  Node* x = g.call("mul.Scalar", {s, p.c.scale});
  return g.call("matmul", {g.call("_softmax", {x, int64_t{-1}, false}), p.v});
}

// A bool mask input [l, s] by where(m, scores, -inf); an additive mask input [h, l, s] by add.
Node* input_mask_form(Parts& p) {
  Graph& g = *p.g;
  Node* s = g.call("mul.Scalar", {g.call("matmul", {p.q, g.call("transpose.int", {p.k, int64_t{-2}, int64_t{-1}})}),
                                  p.c.scale});
  Node* x = p.m->dtype() == DType::Bool ? g.call("where.self", {p.m, s, scalar(g, -kInf, p.t)})
                                        : g.call("add.Tensor", {s, p.m});
  return g.call("matmul", {g.call("_softmax", {x, int64_t{-1}, false}), p.v});
}

// A softmax written out, as hand-written attention gives it: the scores times the scale, the keys
// after the query masked_fill'ed with -inf (when causal), amax, sub, exp, sum, div, matmul.
Node* written_softmax(Graph& g, Node* x) {
  Node* mx = g.call("amax", {x, Arg(Ints{-1}), true});
  Node* e = g.call("exp", {g.call("sub.Tensor", {x, mx})});
  return g.call("div.Tensor", {e, g.call("sum.dim_IntList", {e, Arg(Ints{-1}), true})});
}

Node* written_form(Parts& p) {
  Graph& g = *p.g;
  const Case& c = p.c;
  Node* s = g.call("matmul", {p.q, g.call("transpose.int", {p.k, int64_t{-2}, int64_t{-1}})});
  Node* x = g.call("mul.Scalar", {s, c.scale});
  if (c.causal) x = g.call("masked_fill.Scalar", {x, g.call("logical_not", {causal_keep(g, c.l, c.s)}), -kInf});
  return g.call("matmul", {written_softmax(g, x), p.v});
}

// The same with masked_fill as torch decomposes it: where(keys after the query, -inf, scores).
Node* written_where_form(Parts& p) {
  Graph& g = *p.g;
  const Case& c = p.c;
  Node* s = g.call("matmul", {p.q, g.call("transpose.int", {p.k, int64_t{-2}, int64_t{-1}})});
  Node* after = g.call("logical_not", {causal_keep(g, c.l, c.s)});
  Node* x = g.call("where.self", {after, scalar(g, -kInf, p.t), g.call("mul.Scalar", {s, c.scale})});
  return g.call("matmul", {written_softmax(g, x), p.v});
}

using Form = std::function<Node*(Parts&)>;

std::unique_ptr<Graph> build(const Case& c, DType t, const Form& form) {
  auto g = std::make_unique<Graph>();
  Parts p{g.get(), c, t, g->placeholder("q", {c.b, c.h, c.l, c.e}, t),
          g->placeholder("k", {c.b, c.h, c.s, c.e}, t), g->placeholder("v", {c.b, c.h, c.s, c.ev}, t)};
  if (c.mask == MaskKind::Bool) p.m = g->placeholder("m", {c.l, c.s}, DType::Bool);
  if (c.mask == MaskKind::Additive) p.m = g->placeholder("m", {c.h, c.l, c.s}, t);
  g->output({form(p)});
  return g;
}

struct FormCase {
  Case c;
  Form form;
  const char* note;  // what the rewrite's note says of the mask
};

std::ostream& operator<<(std::ostream& os, const FormCase& f) { return os << f.c.name; }

class PatternForward : public ::testing::TestWithParam<FormCase> {};

TEST_P(PatternForward, FusedAndWithinTheBoundOfTheInterpreter) {
  const FormCase& f = GetParam();
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = build(f.c, t, f.form);
    std::vector<Tensor> in = inputs_for(f.c, t, 5);
    CompiledGraph cg = compiler(true).compile(*g);
    const std::string sched = cg.schedule().str();
    EXPECT_TRUE(contains(sched, "extern flash_attention ->")) << sched;
    EXPECT_FALSE(contains(sched, "extern bmm") || contains(sched, "extern matmul")) << sched;
    EXPECT_EQ(cg.num_fallbacks(), 0u) << cg.summary();
    EXPECT_TRUE(contains(sched, std::string("fused the decomposed attention (") + f.note)) << sched;
    Tensor got = cg.run(in).at(0);
    Tensor want = interpret(*g, in).at(0);  // the graph as written
    EXPECT_TRUE(within(got, want, attention_bound(f.c, in, t)));
  }
}

const FormCase kForms[] = {
    {{"trace_causal", 2, 3, 67, 67, 32, 32, true, MaskKind::None, 0.125}, trace_form, "causal mask"},
    {{"trace_t1", 1, 2, 1, 1, 16, 16, true, MaskKind::None, 0.25}, trace_form, "causal mask"},
    {{"masked_fill_causal_l_lt_s", 1, 2, 40, 90, 32, 24, true, MaskKind::None, 0.2}, masked_fill_form,
     "causal mask"},
    {{"plain_cross", 2, 2, 33, 70, 48, 16, false, MaskKind::None, 0.3}, plain_form, "no mask"},
    {{"bool_mask_input", 1, 2, 50, 70, 32, 32, false, MaskKind::Bool, 0.17}, input_mask_form, "mask"},
    {{"additive_mask_input", 2, 3, 65, 65, 32, 32, false, MaskKind::Additive, 0.3}, input_mask_form,
     "mask"},
    {{"written_softmax_causal", 2, 2, 70, 70, 32, 32, true, MaskKind::None, 0.18}, written_form,
     "causal mask"},
    {{"written_softmax_where_causal", 1, 2, 40, 90, 32, 24, true, MaskKind::None, 0.2},
     written_where_form, "causal mask"},
    {{"written_softmax_cross", 1, 3, 33, 50, 16, 24, false, MaskKind::None, 0.25}, written_form,
     "no mask"},
};

INSTANTIATE_TEST_SUITE_P(Forms, PatternForward, ::testing::ValuesIn(kForms),
                         [](const auto& info) { return info.param.c.name; });

// The trace's form trained: the forward saves the packed (out, lse), not the probabilities, and
// the gradients agree with the interpreter's gradients of the graph as written.
TEST(AttentionPattern, TrainedTraceFormSavesOutAndLse) {
  // S well above the saved values' widths (out + lse: Ev + 1; the scaled q and k: E each), so
  // that saving one L x S tensor would exceed the bound below.
  const Case c{"trained", 2, 2, 150, 150, 16, 16, true, MaskKind::None, 0.125};
  const GradientReference ref = decomposed_gradients(c, *build(c, DType::Float64, trace_form));
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = build(c, t, trace_form);
    CompiledFunction f(*g, ref.wrt, compiler(true));
    ForwardResult r = f.forward(ref.inputs(t));
    std::vector<Tensor> got = f.backward(*r.ctx, {ref.up64.to(t)});
    ASSERT_TRUE(f.compiled_forward() && f.compiled_backward());
    EXPECT_TRUE(contains(f.compiled_forward()->schedule().str(), "extern flash_attention ->"));
    EXPECT_TRUE(contains(f.compiled_backward()->schedule().str(), "extern flash_attention_backward ->"))
        << f.compiled_backward()->schedule().str();
    bool saved_packed = false, saved_softmax = false;
    for (const std::string& s : f.partition().saved) {
      saved_packed |= contains(s, "flash_attention");
      saved_softmax |= contains(s, "softmax");
    }
    EXPECT_TRUE(saved_packed) << f.stats_str();
    EXPECT_FALSE(saved_softmax) << f.stats_str();
    EXPECT_LT(f.stats().saved_bytes, c.b * c.h * c.l * c.s * static_cast<int64_t>(dtype_size(t)))
        << f.stats_str();
    expect_gradients_close(got, ref, t);
  }
}

// The written-out softmax trained: the forward saves the packed (out, lse), and neither the exps
// nor the probabilities; gradients agree with the interpreter's gradients of the graph as written.
TEST(AttentionPattern, TrainedWrittenSoftmaxSavesOutAndLse) {
  const Case c{"trained_written", 2, 2, 130, 130, 16, 16, true, MaskKind::None, 0.2};
  const GradientReference ref = decomposed_gradients(c, *build(c, DType::Float64, written_form));
  for (DType t : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = build(c, t, written_form);
    CompiledFunction f(*g, ref.wrt, compiler(true));
    ForwardResult r = f.forward(ref.inputs(t));
    std::vector<Tensor> got = f.backward(*r.ctx, {ref.up64.to(t)});
    ASSERT_TRUE(f.compiled_forward() && f.compiled_backward());
    EXPECT_TRUE(contains(f.compiled_forward()->schedule().str(), "extern flash_attention ->"));
    EXPECT_TRUE(contains(f.compiled_backward()->schedule().str(), "extern flash_attention_backward ->"))
        << f.compiled_backward()->schedule().str();
    EXPECT_LT(f.stats().saved_bytes, c.b * c.h * c.l * c.s * static_cast<int64_t>(dtype_size(t)))
        << f.stats_str();
    expect_gradients_close(got, ref, t);
  }
}

// A constant mask that is not causal (keys i - 3 .. i + 2: a band, every row keeps some key) is
// evaluated and passed to the fused op as a tensor; torch's guard is dropped (no row is fully
// masked).
TEST(AttentionPattern, ConstantBandMaskIsPassedAndTheGuardDropped) {
  const Case c{"band", 2, 2, 40, 40, 32, 32, false, MaskKind::Bool, 0.2};
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    Graph g;
    Node* q = g.placeholder("q", {c.b, c.h, c.l, c.e}, t);
    Node* k = g.placeholder("k", {c.b, c.h, c.s, c.e}, t);
    Node* v = g.placeholder("v", {c.b, c.h, c.s, c.ev}, t);
    Node* j = g.call("unsqueeze", {g.call("arange.start_step", {int64_t{0}, c.s}), int64_t{-2}});
    Node* i = g.call("unsqueeze", {g.call("arange.start_step", {int64_t{0}, c.l}), int64_t{-1}});
    Node* d = g.call("sub.Tensor", {j, i});
    Node* band = g.call("logical_and", {g.call("le.Scalar", {d, int64_t{2}}), g.call("ge.Scalar", {d, int64_t{-3}})});
    Node* s = g.call("mul.Scalar", {g.call("matmul", {q, g.call("transpose.int", {k, int64_t{-2}, int64_t{-1}})}), c.scale});
    Node* x = g.call("where.self", {band, s, scalar(g, -kInf, t)});
    g.output({g.call("matmul", {guard(g, x, g.call("_softmax", {x, int64_t{-1}, false})), v})});
    std::vector<Tensor> in = inputs_for(c, t, 21);
    in.pop_back();  // the case's bool mask input: the graph's mask is its own constant
    CompiledGraph cg = compiler(true).compile(g);
    const std::string sched = cg.schedule().str();
    EXPECT_TRUE(contains(sched, "extern flash_attention ->")) << sched;
    EXPECT_TRUE(contains(sched, "fused the decomposed attention (mask)")) << sched;
    Tensor got = cg.run(in).at(0);
    Tensor want = interpret(g, in).at(0);
    Tensor mask = Tensor::empty({c.l, c.s}, DType::Bool);  // the band, for the bound
    for (int64_t a = 0; a < c.l; ++a)
      for (int64_t b = 0; b < c.s; ++b) mask.set_int(a * c.s + b, b - a <= 2 && b - a >= -3);
    in.push_back(mask);
    EXPECT_TRUE(within(got, want, attention_bound(c, in, t)));
  }
}

// ---- refusals: the subgraph stays as written, with the reason ------------------------------------

// Checks that `g` keeps its decomposition with a note containing `why`, and that it compiles to
// the interpreter's values (float64, a reordered-sum tolerance).
void expect_refused(const Graph& g, const std::vector<Tensor>& in, const std::string& why,
                    double rel = 1e-12) {
  Graph copy = g.clone();
  AttentionFusion a = fuse_attention(copy);
  EXPECT_EQ(a.fused, 0) << print_graph(g);
  EXPECT_TRUE(contains(a.str(), "not fused: " + why)) << a.str() << print_graph(g);
  CompiledGraph cg = compiler(true).compile(g);
  EXPECT_FALSE(contains(cg.schedule().str(), "flash_attention ->")) << cg.schedule().str();
  std::vector<Tensor> got = cg.run(in), want = interpret(g, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], want[i], rel));
}

const DType f64 = DType::Float64;

TEST(AttentionPatternRefusal, MaskThatBroadcastsTheScores) {
  // scores [h, l, s] + mask [2, h, l, s]: the result has more rows than the product.
  Graph g;
  Node* q = g.placeholder("q", {3, 8, 16}, f64);
  Node* k = g.placeholder("k", {3, 9, 16}, f64);
  Node* v = g.placeholder("v", {3, 9, 4}, f64);
  Node* m = g.placeholder("m", {2, 3, 8, 9}, f64);
  Node* s = g.call("matmul", {q, g.call("transpose.int", {k, int64_t{-2}, int64_t{-1}})});
  Node* x = g.call("add.Tensor", {g.call("mul.Scalar", {s, 0.25}), m});
  g.output({g.call("matmul", {g.call("_softmax", {x, int64_t{-1}, false}), v})});
  expect_refused(g, {Tensor::randn({3, 8, 16}, f64, 1), Tensor::randn({3, 9, 16}, f64, 2),
                     Tensor::randn({3, 9, 4}, f64, 3), Tensor::randn({2, 3, 8, 9}, f64, 4)},
                 "the mask (2, 3, 8, 9) broadcasts the scores (3, 8, 9)");
}

// float32 scores plus a float64 mask: the softmax runs in float64, the fused kernel would not.
TEST(AttentionPatternRefusal, MaskOfAWiderDtype) {
  const DType f32 = DType::Float32;
  Graph g;
  Node* q = g.placeholder("q", {2, 8, 16}, f32);
  Node* k = g.placeholder("k", {2, 8, 16}, f32);
  Node* v = g.placeholder("v", {2, 8, 4}, f64);
  Node* m = g.placeholder("m", {8, 8}, f64);
  Node* s = g.call("bmm", {q, g.call("transpose.int", {k, int64_t{1}, int64_t{2}})});
  Node* x = g.call("add.Tensor", {s, m});
  g.output({g.call("bmm", {g.call("_softmax", {x, int64_t{-1}, false}), v})});
  expect_refused(g, {Tensor::randn({2, 8, 16}, f32, 1), Tensor::randn({2, 8, 16}, f32, 2),
                     Tensor::randn({2, 8, 4}, f64, 3), Tensor::randn({8, 8}, f64, 4)},
                 "the products' dtypes differ from the softmax's", 1e-5);
}

TEST(AttentionPatternRefusal, SoftmaxOverTheQueries) {
  Graph g;
  Node* q = g.placeholder("q", {2, 8, 16}, f64);
  Node* k = g.placeholder("k", {2, 8, 16}, f64);
  Node* v = g.placeholder("v", {2, 8, 4}, f64);
  Node* s = g.call("bmm", {q, g.call("transpose.int", {k, int64_t{1}, int64_t{2}})});
  g.output({g.call("bmm", {g.call("_softmax", {s, int64_t{1}, false}), v})});
  expect_refused(g, {Tensor::randn({2, 8, 16}, f64, 1), Tensor::randn({2, 8, 16}, f64, 2),
                     Tensor::randn({2, 8, 4}, f64, 3)},
                 "softmax over dim 1, not over the keys (dim 2)");
}

// A written-out softmax over the queries (amax and sum over dim 1) is no attention over the keys.
TEST(AttentionPatternRefusal, WrittenSoftmaxOverTheQueries) {
  Graph g;
  Node* q = g.placeholder("q", {2, 8, 16}, f64);
  Node* k = g.placeholder("k", {2, 8, 16}, f64);
  Node* v = g.placeholder("v", {2, 8, 4}, f64);
  Node* s = g.call("bmm", {q, g.call("transpose.int", {k, int64_t{1}, int64_t{2}})});
  Node* e = g.call("exp", {g.call("sub.Tensor", {s, g.call("amax", {s, Arg(Ints{1}), true})})});
  Node* p = g.call("div.Tensor", {e, g.call("sum.dim_IntList", {e, Arg(Ints{1}), true})});
  g.output({g.call("bmm", {p, v})});
  expect_refused(g, {Tensor::randn({2, 8, 16}, f64, 1), Tensor::randn({2, 8, 16}, f64, 2),
                     Tensor::randn({2, 8, 4}, f64, 3)},
                 "softmax over dim 1, not over the keys (dim 2)");
}

// Builds sdpa's math on q, k, v [2, 8, 16] / [2, 8, 4]; `extra` adds outputs that read the
// scores or the probabilities.
void refuse_second_use(bool of_probabilities, const std::string& why) {
  Graph g;
  Node* q = g.placeholder("q", {2, 8, 16}, f64);
  Node* k = g.placeholder("k", {2, 8, 16}, f64);
  Node* v = g.placeholder("v", {2, 8, 4}, f64);
  Node* s = g.call("mul.Scalar", {g.call("bmm", {q, g.call("transpose.int", {k, int64_t{1}, int64_t{2}})}), 0.25});
  Node* p = g.call("_softmax", {s, int64_t{-1}, false});
  Node* out = g.call("bmm", {p, v});
  Node* extra = g.call("sum.dim_IntList", {of_probabilities ? p : s, Arg(Ints{-1})});
  g.output({out, extra});
  expect_refused(g, {Tensor::randn({2, 8, 16}, f64, 1), Tensor::randn({2, 8, 16}, f64, 2),
                     Tensor::randn({2, 8, 4}, f64, 3)},
                 why);
}

TEST(AttentionPatternRefusal, SecondUseOfTheProbabilities) {
  refuse_second_use(true, "the probabilities %_softmax have 2 uses, not only the product with V");
}

TEST(AttentionPatternRefusal, SecondUseOfTheScores) {
  refuse_second_use(false, "the scores %mul have another use");
}

// A mask input may mask whole rows, where torch's guard gives 0 and the fused kernel NaN.
TEST(AttentionPatternRefusal, GuardWithAMaskInput) {
  Graph g;
  Node* q = g.placeholder("q", {2, 8, 16}, f64);
  Node* k = g.placeholder("k", {2, 8, 16}, f64);
  Node* v = g.placeholder("v", {2, 8, 4}, f64);
  Node* m = g.placeholder("m", {8, 8}, DType::Bool);
  Node* s = g.call("bmm", {q, g.call("transpose.int", {k, int64_t{1}, int64_t{2}})});
  Node* x = g.call("where.self", {m, s, scalar(g, -kInf, f64)});
  Node* p = guard(g, x, g.call("_softmax", {x, int64_t{-1}, false}));
  g.output({g.call("bmm", {p, v})});
  Tensor mask = Tensor::randint({8, 8}, 0, 2, DType::Bool, 4);
  for (int64_t j = 0; j < 8; ++j) mask.set_int(2 * 8 + j, 0);  // row 2 fully masked: 0, not NaN
  expect_refused(g, {Tensor::randn({2, 8, 16}, f64, 1), Tensor::randn({2, 8, 16}, f64, 2),
                     Tensor::randn({2, 8, 4}, f64, 3), mask},
                 "the mask is not a constant, and torch's guard zeroes fully masked rows");
}

// A softmax over a product that is no attention (the probabilities multiply a matrix from the
// left) is left alone with a note.
TEST(AttentionPatternRefusal, ProbabilitiesAsTheRightOperand) {
  Graph g;
  Node* q = g.placeholder("q", {2, 8, 16}, f64);
  Node* k = g.placeholder("k", {2, 8, 16}, f64);
  Node* w = g.placeholder("w", {2, 4, 8}, f64);
  Node* s = g.call("bmm", {q, g.call("transpose.int", {k, int64_t{1}, int64_t{2}})});
  g.output({g.call("bmm", {w, g.call("_softmax", {s, int64_t{-1}, false})})});
  expect_refused(g, {Tensor::randn({2, 8, 16}, f64, 1), Tensor::randn({2, 8, 16}, f64, 2),
                     Tensor::randn({2, 4, 8}, f64, 3)},
                 "the probabilities are the right operand");
}

}  // namespace
}  // namespace stax
