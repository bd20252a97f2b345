// The min-cut rematerialization partitioner (seed §5.4-5.6, §5.8's memory_budget):
// Table 5.1 exactly, each U rule, beta and d, both forced-save rules, the save-all fallback, the
// memory budget (fits / recompute more / relaxed / infeasible), Edmonds-Karp vs Dinic on
// generated graphs, and bitwise numerics of forward + backward against the joint graph.
#include "core/partition/partitioner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <map>

#include "core/autodiff/joint_graph.h"
#include "core/graph/op_registry.h"
#include "core/graph/printer.h"
#include "core/graph/verifier.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"

using namespace stax;
using namespace stax::partition;

namespace {

// Example 5.1: f(x, W) = gelu(x @ W).sum(), x: 32x64, W: 64x64, gradient for W only.
Graph example_5_1() {
  Graph g;
  Node* x = g.placeholder("", {32, 64});
  Node* w = g.placeholder("", {64, 64});
  Node* h = g.call("matmul", {x, w});
  Node* y = g.call("gelu", {h});
  g.output({g.call("sum", {y})});
  return g;
}

std::vector<std::string> names(const std::vector<Node*>& nodes) {
  std::vector<std::string> out;
  for (const Node* n : nodes) out.push_back(n ? n->name() : "None");
  return out;
}

std::vector<std::string> call_names(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes())
    if (n->is_call()) out.push_back(n->name());
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The stax::Error message of f(), or "" when it does not throw.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const ValueInfo& info(const PartitionResult& r, const std::string& name) {
  const ValueInfo* v = r.analysis.find(name);
  EXPECT_NE(v, nullptr) << name;
  return *v;
}

// Random inputs for every placeholder of `g` (floats in [-1, 1]).
std::vector<Tensor> random_inputs(const std::vector<Node*>& placeholders, uint64_t seed) {
  std::vector<Tensor> out;
  for (const Node* p : placeholders) {
    Tensor t = Tensor::rand(p->shape(), p->dtype(), seed++);
    out.push_back(t);
  }
  return out;
}

// Runs the joint graph and the split pair on the same inputs and expects bitwise-equal forward
// outputs and gradients.
void expect_same_numerics(const JointGraph& j, const PartitionResult& r, uint64_t seed = 1) {
  // Both halves are valid graphs of their own.
  EXPECT_NO_THROW(verify(r.forward));
  EXPECT_NO_THROW(verify(r.backward));
  std::vector<Tensor> joint_in = random_inputs(j.graph.placeholders(), seed);
  std::vector<Tensor> joint_out = interpret(j.graph, joint_in);

  std::map<std::string, Tensor> by_name;
  std::vector<Node*> jp = j.graph.placeholders();
  for (size_t i = 0; i < jp.size(); ++i) by_name[jp[i]->name()] = joint_in[i];
  std::vector<Tensor> fw_in;
  for (const Node* p : r.forward.placeholders()) fw_in.push_back(by_name.at(p->name()));
  std::vector<Tensor> fw_out = interpret(r.forward, fw_in);
  ASSERT_EQ(fw_out.size(), r.num_forward_outputs + r.saved.size());
  for (size_t i = 0; i < r.saved.size(); ++i)
    by_name[r.saved[i]] = fw_out[r.num_forward_outputs + i];
  std::vector<Tensor> bw_in;
  for (const Node* p : r.backward.placeholders()) bw_in.push_back(by_name.at(p->name()));
  std::vector<Tensor> grads = interpret(r.backward, bw_in);

  ASSERT_EQ(joint_out.size(), r.num_forward_outputs + grads.size());
  for (size_t i = 0; i < r.num_forward_outputs; ++i)
    EXPECT_TRUE(fw_out[i].equal(joint_out[i])) << "forward output " << i;
  for (size_t i = 0; i < grads.size(); ++i)
    EXPECT_TRUE(grads[i].equal(joint_out[r.num_forward_outputs + i])) << "gradient " << i;
}

// Checks Proposition 5.1 on a result: the saved set's capacity is the max flow and every path
// from U to B passes through it (the backward recomputes no U / forced value: split checks it).
void expect_min_cut_consistent(const PartitionResult& r) {
  ASSERT_FALSE(r.save_all_fallback);
  EXPECT_EQ(r.saved_cost, r.max_flow);
  EXPECT_EQ(cut_capacity(r.network.network, r.cut.source_side), r.max_flow);
  for (const std::string& name : r.recomputed) EXPECT_FALSE(info(r, name).from_source()) << name;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Table 5.1

TEST(Partitioner, Table51Exactly) {
  JointGraph j = build_joint_graph(example_5_1(), {"primals_2"});
  for (FlowAlgorithm algo : {FlowAlgorithm::kDinic, FlowAlgorithm::kEdmondsKarp}) {
    PartitionOptions o;
    o.algorithm = algo;
    PartitionResult r = partition_min_cut(j, o);
    SCOPED_TRACE(std::string(algorithm_name(algo)));

    const ValueInfo& mm = info(r, "matmul");
    EXPECT_EQ(mm.bytes, 8192);
    EXPECT_EQ(mm.distance, 1);
    EXPECT_EQ(mm.beta(), 1);
    EXPECT_EQ(mm.capacity, 9011);
    EXPECT_TRUE(mm.in_b);
    EXPECT_EQ(mm.u_rules, kUNotCheap);

    const ValueInfo& gelu = info(r, "gelu");
    EXPECT_EQ(gelu.distance, 100);
    EXPECT_EQ(gelu.beta(), 2);
    EXPECT_EQ(gelu.capacity, static_cast<int64_t>(2.0 * 8192 * std::pow(1.1, 100)));
    EXPECT_EQ(gelu.capacity, 225781552);  // ≈ 2.26e8
    EXPECT_FALSE(gelu.in_b);
    EXPECT_FALSE(gelu.from_source());

    const ValueInfo& sum = info(r, "sum_0");
    EXPECT_EQ(sum.u_rules, kUReduction);  // 4 * 4 bytes < 8192
    EXPECT_FALSE(sum.in_b);

    // Primals: split edges with beta = 1, never connected to s.
    EXPECT_TRUE(info(r, "primals_1").in_b);
    EXPECT_FALSE(info(r, "primals_1").from_source());
    EXPECT_FALSE(info(r, "primals_2").in_b);

    EXPECT_FALSE(r.save_all_fallback);
    EXPECT_EQ(r.max_flow, 9011);
    EXPECT_EQ(r.saved, std::vector<std::string>{"matmul"});
    EXPECT_EQ(r.saved_primals, std::vector<std::string>{"primals_1"});
    EXPECT_TRUE(r.recomputed.empty());
    EXPECT_EQ(r.saved_bytes, 8192);
    // The one cut edge is matmul_in -> matmul_out.
    ASSERT_EQ(r.cut.cut_edges.size(), 1u);
    const FlowEdge& e = r.network.network.edge(r.cut.cut_edges[0]);
    EXPECT_EQ(r.network.network.name(e.from), "matmul_in");
    EXPECT_EQ(r.network.network.name(e.to), "matmul_out");
    // Exactly one augmenting path: s -> matmul_in -> matmul_out -> t.
    EXPECT_EQ(r.cut.augmentations, 1);
    expect_min_cut_consistent(r);
  }
}

TEST(Partitioner, Example51Graphs) {
  JointGraph j = build_joint_graph(example_5_1(), {"primals_2"});
  PartitionResult r = partition_min_cut(j);
  // forward: matmul, gelu, sum_0 returning (sum_0, matmul)
  EXPECT_EQ(names(r.forward.placeholders()), (std::vector<std::string>{"primals_1", "primals_2"}));
  EXPECT_EQ(call_names(r.forward), (std::vector<std::string>{"matmul", "gelu", "sum_0"}));
  EXPECT_EQ(names(r.forward.outputs()), (std::vector<std::string>{"sum_0", "matmul"}));
  // backward: (primals_1, matmul, tangents_1) -> expand, gelu_backward, t, matmul_0. No gelu
  // node: GELU'(h) (erf, exp) is recomputed from h inside gelu_backward.
  EXPECT_EQ(names(r.backward.placeholders()),
            (std::vector<std::string>{"primals_1", "matmul", "tangents_1"}));
  EXPECT_EQ(call_names(r.backward),
            (std::vector<std::string>{"expand", "gelu_backward", "t", "matmul_0"}));
  EXPECT_EQ(names(r.backward.outputs()), std::vector<std::string>{"matmul_0"});
  for (const Node* n : r.forward.nodes()) EXPECT_EQ(n->phase(), Phase::None);
  EXPECT_EQ(print_graph(r.backward),
            "graph(\n"
            "    %primals_1 shape=(32, 64) : [num_users=1] = placeholder[target=primals_1]\n"
            "    %matmul shape=(32, 64) : [num_users=1] = placeholder[target=matmul]\n"
            "    %tangents_1 shape=() : [num_users=1] = placeholder[target=tangents_1]\n"
            "    %expand shape=(32, 64) : [num_users=1] = call_function[target=tensorplay.ops.tp."
            "expand.default](args = (%tangents_1, [32, 64]), kwargs = {implicit: False})\n"
            "    %gelu_backward shape=(32, 64) : [num_users=1] = call_function[target=tensorplay."
            "ops.tp.gelu_backward.default](args = (%expand, %matmul), kwargs = {approximate: "
      "'none'})\n"
            "    %t shape=(64, 32) : [num_users=1] = call_function[target=tensorplay.ops.tp."
            "t.default](args = (%primals_1,), kwargs = {})\n"
            "    %matmul_0 shape=(64, 64) : [num_users=1] = call_function[target=tensorplay.ops.tp."
            "matmul.default](args = (%t, %gelu_backward), kwargs = {})\n"
            "    return (matmul_0,)\n"
            ")\n");
  expect_same_numerics(j, r);
}

TEST(Partitioner, Example51Report) {
  JointGraph j = build_joint_graph(example_5_1(), {"primals_2"});
  PartitionResult r = partition_min_cut(j);
  std::string text = format_partition_report(r);
  EXPECT_NE(text.find("max flow = min cut = 9011"), std::string::npos) << text;
  EXPECT_NE(text.find("matmul_in -> matmul_out"), std::string::npos);
  EXPECT_NE(text.find("225781552"), std::string::npos);
  EXPECT_NE(text.find("[cut]"), std::string::npos);
  EXPECT_NE(text.find("saved (8192 bytes, cost 9011): matmul"), std::string::npos) << text;
  EXPECT_NE(text.find("saved primals (8192 bytes): primals_1"), std::string::npos);
  std::string dot = partition_to_dot(r);
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_NE(dot.find("color=red"), std::string::npos);
  EXPECT_NE(dot.find("9011/9011"), std::string::npos) << dot;
}

// ---------------------------------------------------------------------------------------------
// U, beta, d

TEST(Partitioner, URuleNotCheapRandomAndComposite) {
  Graph g;
  Node* x = g.placeholder("x", {8, 16});
  Node* w = g.placeholder("w", {16, 16});
  Node* h = g.call("mm", {x, w}, {}, "h");
  Node* d = g.call("dropout", {h, 0.5, true}, {}, "drop");
  Node* s = g.call("softmax.int", {d, 1}, {}, "sm");
  Node* q = g.call("silu", {s}, {}, "q");
  g.output({g.call("sum", {q}, {}, "loss")});
  JointGraph j = build_joint_graph(g, {"w"});
  PartitionResult r = partition_min_cut(j);
  EXPECT_TRUE(info(r, "h").u_rules & kUNotCheap);     // extern
  EXPECT_TRUE(info(r, "drop").u_rules & kUNotCheap);  // random: never recomputed
  EXPECT_TRUE(info(r, "sm").u_rules & kUNotCheap);    // composite holding reductions
  EXPECT_FALSE(info(r, "q").u_rules & kUNotCheap);    // silu: a pointwise composite
  for (const std::string& name : r.recomputed) EXPECT_NE(name, "drop");
  expect_min_cut_consistent(r);
  expect_same_numerics(j, r);
}

TEST(Partitioner, URuleNoLowering) {
  Graph g;
  Node* x = g.placeholder("x", {8, 8});
  Node* a = g.call("tanh", {x}, {}, "a");
  Node* b = g.call("sin", {a}, {}, "b");
  g.output({g.call("sum", {b}, {}, "loss")});
  JointGraph j = build_joint_graph(g, {"x"});
  PartitionOptions o;
  o.policy.has_lowering = [](const Node& n) { return n.op()->schema.base != "sin"; };
  PartitionResult r = partition_min_cut(j, o);
  EXPECT_EQ(info(r, "b").u_rules, kUNotCheap);  // a fallback kernel
  EXPECT_EQ(info(r, "a").u_rules, kUNone);
  EXPECT_EQ(info(r, "a").beta(), 1);  // read by an opaque (fallback) kernel in the forward
  EXPECT_EQ(partition_min_cut(j).analysis.find("b")->u_rules, kUNone);
}

TEST(Partitioner, URuleMaterializedInBackward) {
  // y = relu(x @ W1) is read by the backward's mT(y) @ z̄ (a view feeding an extern kernel).
  Graph g;
  Node* x = g.placeholder("x", {8, 16});
  Node* w1 = g.placeholder("w1", {16, 16});
  Node* w2 = g.placeholder("w2", {16, 4});
  Node* y = g.call("relu", {g.call("mm", {x, w1}, {}, "h")}, {}, "y");
  Node* z = g.call("mm", {y, w2}, {}, "z");
  g.output({g.call("sum", {z}, {}, "loss")});
  JointGraph j = build_joint_graph(g, {"w1", "w2"});
  PartitionResult r = partition_min_cut(j);
  const ValueInfo& yi = info(r, "y");
  EXPECT_TRUE(yi.in_b);
  EXPECT_EQ(yi.u_rules, kUMaterializedInBackward);
  EXPECT_EQ(yi.beta(), 1);  // an extern kernel's input in the forward
  EXPECT_TRUE(contains(r.saved, "y"));
  // Example 5.1's matmul is read only by the fusible gelu_backward: not rule 2.
  // The result points into the joint graph: keep it alive while `e` is read.
  JointGraph joint51 = build_joint_graph(example_5_1(), {"primals_2"});
  PartitionResult e = partition_min_cut(joint51);
  EXPECT_FALSE(info(e, "matmul").u_rules & kUMaterializedInBackward);
  expect_min_cut_consistent(r);
  expect_same_numerics(j, r);
}

TEST(Partitioner, AViewOfAPrimalIsReviewedNotSaved) {
  // A Linear as torch traces it: h = x @ permute(W) (W: [out, in]), then gelu and a second
  // Linear. The backward reads permute(W) through views feeding its products (dX = dH @ Wᵀᵀ):
  // case 2 would put it in U and save it, a forward output the backward's row-major placeholder
  // copied. A chain of views of a primal is exempt: the backward takes W (held anyway) and
  // re-views it.
  Graph g;
  Node* x = g.placeholder("x", {8, 16});
  Node* w = g.placeholder("w", {32, 16});
  Node* w2 = g.placeholder("w2", {4, 32});
  Node* wt = g.call("permute", {w, std::vector<int64_t>{1, 0}}, {}, "wt");
  Node* w2t = g.call("t", {g.call("view", {w2, std::vector<int64_t>{4, 32}}, {}, "w2v")}, {}, "w2t");
  Node* h = g.call("mm", {x, wt}, {}, "h");
  Node* z = g.call("mm", {g.call("gelu", {h}, {}, "y"), w2t}, {}, "z");
  g.output({g.call("sum", {z}, {}, "loss")});
  JointGraph j = build_joint_graph(g, {"x", "w", "w2"});
  PartitionResult r = partition_min_cut(j);
  for (const char* view : {"wt", "w2v", "w2t"}) {
    SCOPED_TRACE(view);
    const ValueInfo& v = info(r, view);
    EXPECT_EQ(v.u_rules, kUNone);
    EXPECT_FALSE(contains(r.saved, view));
  }
  EXPECT_TRUE(info(r, "wt").in_b);
  EXPECT_TRUE(contains(r.recomputed, "wt"));
  EXPECT_TRUE(contains(r.recomputed, "w2t"));
  EXPECT_TRUE(contains(r.saved_primals, "w"));
  EXPECT_TRUE(contains(r.saved_primals, "w2"));
  // A view of a computed value still counts: the extern's output h is saved (case 1) and the
  // gelu y that the second product's weight gradient reads (yᵀ @ dZ) is in U by case 2.
  EXPECT_TRUE(contains(r.saved, "h"));
  EXPECT_TRUE(info(r, "y").u_rules & kUMaterializedInBackward);
  expect_min_cut_consistent(r);
  expect_same_numerics(j, r);
}

TEST(Partitioner, URuleReductionRatio) {
  Graph g;
  Node* x = g.placeholder("x", {64, 8});
  Node* y = g.placeholder("y", {64, 2});
  Node* big = g.call("sum.dim_IntList", {g.call("tanh", {x}, {}, "tx"), std::vector<int64_t>{1}},
                     {}, "big");  // 256 bytes out, 2048 in: 4 * 256 < 2048
  Node* small = g.call("sum.dim_IntList", {g.call("tanh", {y}, {}, "ty"), std::vector<int64_t>{1}},
                       {}, "small");  // 256 out, 512 in: 4 * 256 >= 512
  Node* m = g.call("mul.Tensor", {big, small}, {}, "m");
  g.output({g.call("sum", {m}, {}, "loss")});
  JointGraph j = build_joint_graph(g, {"x", "y"});
  PartitionResult r = partition_min_cut(j);
  EXPECT_EQ(info(r, "big").u_rules, kUReduction);
  EXPECT_EQ(info(r, "small").u_rules, kUNone);
  EXPECT_EQ(info(r, "small").beta(), 1);  // a reduction writes its result
  PartitionOptions o;
  o.policy.ban_recompute_reductions = false;
  EXPECT_EQ(partition_min_cut(j, o).analysis.find("big")->u_rules, kUNone);
  expect_min_cut_consistent(r);
  expect_same_numerics(j, r);
}

TEST(Partitioner, BetaAndDistance) {
  Graph g;
  Node* x = g.placeholder("x", {8, 8});
  Node* a = g.call("tanh", {x}, {}, "a");  // a forward output, read by tanh_backward
  Node* b = g.call("mul.Scalar", {a, 2.0}, {}, "b");
  Node* c = g.call("add.Scalar", {b, 1.0}, {}, "c");
  Node* d = g.call("sigmoid", {c}, {}, "d");  // read by sigmoid_backward
  g.output({g.call("sum", {d}, {}, "loss"), a});
  JointGraph j = build_joint_graph(g, {"x"});
  PartitionResult r = partition_min_cut(j);
  EXPECT_EQ(info(r, "a").beta(), 1);
  EXPECT_EQ(info(r, "a").distance, 1);
  EXPECT_EQ(info(r, "b").beta(), 2);
  EXPECT_EQ(info(r, "b").distance, 3);  // b -> c -> d -> sigmoid_backward
  EXPECT_EQ(info(r, "c").distance, 2);
  EXPECT_EQ(info(r, "b").capacity, remat_capacity(256, 3, false));
  EXPECT_EQ(info(r, "x").beta(), 1);
  EXPECT_EQ(info(r, "loss").distance, 100);
  expect_same_numerics(j, r);
}

// ---------------------------------------------------------------------------------------------
// Forced saves

namespace {

// a = x @ W (U); b = tanh(a) read at once by c = b * 3 and, 20 steps later, by z = chain + b.
JointGraph near_far_graph() {
  Graph g;
  Node* x = g.placeholder("x", {16, 16});
  Node* w = g.placeholder("w", {16, 16});
  Node* a = g.call("mm", {x, w}, {}, "a");
  Node* b = g.call("tanh", {a}, {}, "b");
  Node* c = g.call("mul.Scalar", {b, 3.0}, {}, "c");
  for (int i = 0; i < 20; ++i) c = g.call("add.Scalar", {c, 0.5}, {}, "c" + std::to_string(i));
  Node* z = g.call("add.Tensor", {c, b}, {}, "z");
  g.output({g.call("sum", {z}, {}, "loss")});
  return build_joint_graph(g, {"w"});
}

// x -> 9 cheap pointwise ops -> tanh (read by tanh_backward): a fusible chain of 10.
JointGraph long_chain_graph() {
  Graph g;
  Node* v = g.placeholder("x", {16, 16});
  for (int i = 0; i < 9; ++i)
    v = g.call(i % 2 ? "add.Scalar" : "mul.Scalar", {v, 1.5}, {}, "p" + std::to_string(i));
  Node* e = g.call("tanh", {v}, {}, "e");
  g.output({g.call("sum", {e}, {}, "loss")});
  return build_joint_graph(g, {"x"});
}

}  // namespace

TEST(Partitioner, ForcedSaveNearFar) {
  JointGraph j = near_far_graph();
  PartitionOptions off;
  off.policy.force_save_near_far = false;
  PartitionResult without = partition_min_cut(j, off);
  // c(a) = 1024 * 1.1^2 (beta 1) < c(b) = 2 * 1024 * 1.1: save a, recompute tanh in the backward.
  EXPECT_EQ(without.saved, std::vector<std::string>{"a"});
  EXPECT_EQ(without.recomputed, std::vector<std::string>{"b"});
  expect_same_numerics(j, without);

  PartitionResult with = partition_min_cut(j);
  EXPECT_EQ(info(with, "b").forced, ForceReason::kNearFar);
  EXPECT_EQ(with.saved, std::vector<std::string>{"b"});
  EXPECT_TRUE(with.recomputed.empty());
  expect_min_cut_consistent(with);
  expect_same_numerics(j, with);

  // The far reader must be far enough.
  PartitionOptions farther;
  farther.policy.far_distance = 30;
  EXPECT_EQ(partition_min_cut(j, farther).saved, std::vector<std::string>{"a"});
}

TEST(Partitioner, ForcedSaveLongChain) {
  JointGraph j = long_chain_graph();
  PartitionOptions off;
  off.policy.force_save_long_chains = false;
  PartitionResult without = partition_min_cut(j, off);
  // No U value on any path to B: nothing saved, the whole chain recomputed from x.
  EXPECT_EQ(without.max_flow, 0);
  EXPECT_TRUE(without.saved.empty());
  EXPECT_EQ(without.saved_primals, std::vector<std::string>{"x"});
  EXPECT_EQ(without.recomputed.size(), 10u);
  expect_same_numerics(j, without);

  PartitionResult with = partition_min_cut(j);
  EXPECT_EQ(info(with, "e").chain, 0);  // restarted at the forced save
  EXPECT_EQ(info(with, "p8").chain, 9);
  EXPECT_EQ(info(with, "e").forced, ForceReason::kLongChain);
  EXPECT_EQ(with.saved, std::vector<std::string>{"e"});
  EXPECT_TRUE(with.recomputed.empty());
  expect_min_cut_consistent(with);
  expect_same_numerics(j, with);

  PartitionOptions longer;
  longer.policy.long_chain_length = 11;
  EXPECT_TRUE(partition_min_cut(j, longer).saved.empty());
}

TEST(Partitioner, UserMustSaveAndMustRecompute) {
  JointGraph j = near_far_graph();
  PartitionOptions o;
  o.policy.force_save_near_far = false;
  o.policy.must_save = {"b"};
  EXPECT_EQ(partition_min_cut(j, o).saved, std::vector<std::string>{"b"});
  // a may not be saved: the cut moves below it, to b.
  o.policy.must_save.clear();
  o.policy.must_recompute = {"a"};
  PartitionResult r = partition_min_cut(j, o);
  EXPECT_FALSE(r.save_all_fallback);
  EXPECT_EQ(r.saved, std::vector<std::string>{"b"});
  expect_same_numerics(j, r);
  o.policy.must_recompute = {"nope"};
  EXPECT_NE(error_of([&] { partition_min_cut(j, o); }).find("no value named 'nope'"),
            std::string::npos);
  o.policy.must_recompute = {"tangents_1"};
  EXPECT_NE(error_of([&] { partition_min_cut(j, o); }).find("not a forward value"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Save-all fallback

TEST(Partitioner, NoFiniteCutFallsBackToSaveAll) {
  // matmul is in U (an extern kernel) and in B; forbidding its save leaves no finite cut.
  JointGraph j = build_joint_graph(example_5_1(), {"primals_2"});
  PartitionOptions o;
  o.policy.must_recompute = {"matmul"};
  for (FlowAlgorithm algo : {FlowAlgorithm::kDinic, FlowAlgorithm::kEdmondsKarp}) {
    o.algorithm = algo;
    PartitionResult r = partition_min_cut(j, o);
    EXPECT_TRUE(r.save_all_fallback);
    EXPECT_EQ(r.max_flow, kInfinite);
    EXPECT_FALSE(r.cut.finite);
    EXPECT_NE(r.fallback_reason.find("%matmul"), std::string::npos) << r.fallback_reason;
    EXPECT_EQ(r.saved, std::vector<std::string>{"matmul"});
    EXPECT_EQ(r.saved_primals, std::vector<std::string>{"primals_1"});
    EXPECT_TRUE(r.recomputed.empty());
    EXPECT_NE(format_partition_report(r).find("max flow = inf"), std::string::npos);
    EXPECT_NE(partition_to_dot(r).find("save-all fallback"), std::string::npos);
    expect_same_numerics(j, r);
  }
  // A budget below what saving all of B takes is reported.
  o.memory_budget = 100;
  EXPECT_NE(error_of([&] { partition_min_cut(j, o); }).find("saving all of B takes 8192 bytes"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// memory_budget

namespace {

// Per branch k: a_k = x @ W_k (U, 512 bytes), s_k = a_k + y_k of (4 * scale_k, 8, 16) floats, 32
// cheap steps, e_k = tanh(...) read by tanh_backward. a_k is far from the backward (d = 35), so
// the min cut saves e_k (c(e_k) < c(a_k)); the fewest bytes save a_k.
JointGraph budget_graph(const std::vector<int64_t>& scales) {
  Graph g;
  Node* x = g.placeholder("x", {8, 16});
  Node* loss = nullptr;
  for (size_t k = 0; k < scales.size(); ++k) {
    std::string K = std::to_string(k);
    Node* w = g.placeholder("w" + K, {16, 16});
    Node* y = g.placeholder("y" + K, {4 * scales[k], 8, 16});
    Node* v = g.call("add.Tensor", {g.call("mm", {x, w}, {}, "a" + K), y}, {}, "s" + K);
    for (int i = 0; i < 32; ++i)
      v = g.call("add.Scalar", {v, 0.25}, {}, "c" + K + "_" + std::to_string(i));
    Node* e = g.call("tanh", {v}, {}, "e" + K);
    Node* l = g.call("sum", {e}, {}, "l" + K);
    loss = loss ? g.call("add.Tensor", {loss, l}) : l;
  }
  g.output({loss});
  std::vector<std::string> wrt;
  for (size_t k = 0; k < scales.size(); ++k) wrt.push_back("w" + std::to_string(k));
  return build_joint_graph(g, wrt);
}

}  // namespace

TEST(Partitioner, BudgetFits) {
  JointGraph j = budget_graph({1});
  PartitionResult plain = partition_min_cut(j);
  EXPECT_EQ(plain.saved, std::vector<std::string>{"e0"});
  EXPECT_EQ(plain.saved_bytes, 2048);
  PartitionOptions o;
  o.memory_budget = 2048;
  PartitionResult r = partition_min_cut(j, o);
  ASSERT_TRUE(r.budget);
  EXPECT_EQ(r.budget->outcome, BudgetOutcome::kFits);
  EXPECT_EQ(r.saved, plain.saved);
  EXPECT_EQ(r.max_flow, plain.max_flow);
  o.memory_budget = -1;
  EXPECT_NE(error_of([&] { partition_min_cut(j, o); }).find(">= 0"), std::string::npos);
}

TEST(Partitioner, BudgetRecomputesMore) {
  JointGraph j = budget_graph({1});
  PartitionOptions o;
  o.policy.force_save_long_chains = false;
  PartitionResult plain = partition_min_cut(j, o);
  EXPECT_EQ(plain.saved, std::vector<std::string>{"e0"});  // 2048 bytes, cheaper in c
  o.memory_budget = 1024;
  for (FlowAlgorithm algo : {FlowAlgorithm::kDinic, FlowAlgorithm::kEdmondsKarp}) {
    o.algorithm = algo;
    PartitionResult r = partition_min_cut(j, o);
    ASSERT_TRUE(r.budget);
    EXPECT_EQ(r.budget->outcome, BudgetOutcome::kRecomputeMore);
    EXPECT_EQ(r.budget->min_cut_bytes, 2048);
    EXPECT_EQ(r.budget->min_bytes, 512);
    EXPECT_EQ(r.saved, std::vector<std::string>{"a0"});
    EXPECT_EQ(r.saved_bytes, 512);
    EXPECT_EQ(r.recomputed.size(), 34u);    // s0, 32 steps, e0
    EXPECT_EQ(r.max_flow, plain.max_flow);  // the unconstrained min cut, for reference
    EXPECT_GT(r.saved_cost, r.max_flow);
    EXPECT_EQ(cut_capacity(r.network.network, r.cut.source_side), r.saved_cost);
    EXPECT_NE(format_partition_report(r).find("recompute-more"), std::string::npos);
    expect_same_numerics(j, r);
  }
}

TEST(Partitioner, BudgetPicksTheCheapestFittingParetoCut) {
  // Two branches; e1 is twice e0. 3000 bytes allow e0 + a1 (2560) or a0 + a1 (1024): the first
  // recomputes less (c(e0) < c(a0)).
  JointGraph j = budget_graph({1, 2});
  PartitionOptions o;
  o.policy.force_save_long_chains = false;
  EXPECT_EQ(partition_min_cut(j, o).saved, (std::vector<std::string>{"e0", "e1"}));
  o.memory_budget = 3000;
  PartitionResult r = partition_min_cut(j, o);
  EXPECT_EQ(r.budget->outcome, BudgetOutcome::kRecomputeMore);
  EXPECT_EQ(r.saved, (std::vector<std::string>{"e0", "a1"}));  // graph order
  EXPECT_EQ(r.saved_bytes, 2560);
  expect_same_numerics(j, r);
}

TEST(Partitioner, BudgetRelaxesHeuristicForcedSaves) {
  // With the long-chain rule e0 is forced (its chain is 34 long), so 1024 bytes fit only when the
  // heuristic forced saves are dropped.
  JointGraph j = budget_graph({1});
  PartitionOptions o;
  o.memory_budget = 1024;
  PartitionResult r = partition_min_cut(j, o);
  EXPECT_EQ(info(r, "e0").forced, ForceReason::kLongChain);
  EXPECT_EQ(r.budget->outcome, BudgetOutcome::kRelaxedForcedSaves);
  EXPECT_EQ(r.saved, std::vector<std::string>{"a0"});
  EXPECT_FALSE(r.network.heuristic_forced);
  expect_same_numerics(j, r);
}

TEST(Partitioner, BudgetInfeasible) {
  JointGraph j = budget_graph({1});
  PartitionOptions o;
  o.memory_budget = 100;
  std::string msg = error_of([&] { partition_min_cut(j, o); });
  EXPECT_NE(msg.find("memory budget of 100 bytes is infeasible"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fewest bytes any feasible save set needs is 512 (saving %a0)"),
            std::string::npos)
      << msg;
  // Example 5.1: matmul (U and B) must be saved: 8192 bytes at least.
  o.memory_budget = 8191;
  msg = error_of([&] { partition_min_cut(build_joint_graph(example_5_1(), {"primals_2"}), o); });
  EXPECT_NE(msg.find("needs is 8192"), std::string::npos) << msg;
}

// ---------------------------------------------------------------------------------------------
// Generated graphs: Edmonds-Karp and Dinic agree; the cut is the cheapest feasible save set
// (Proposition 5.1, by brute force on the small ones); forward + backward = joint, bitwise.

namespace {

Graph random_forward(std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  Graph g;
  std::vector<Node*> pool;
  const size_t num_inputs = 2 + pick(3);
  for (size_t i = 0; i < num_inputs; ++i) pool.push_back(g.placeholder("", {4, 4}));
  // Operands favour recent values (chains) but sometimes reach far back (long-range users).
  auto operand = [&]() -> Node* {
    if (pick(4) == 0) return pool[pick(pool.size())];
    return pool[pool.size() - 1 - pick(std::min<size_t>(3, pool.size()))];
  };
  const size_t num_ops = 4 + pick(16);
  for (size_t i = 0; i < num_ops; ++i) {
    Node* v = nullptr;
    switch (pick(9)) {
      case 0:
        v = g.call(std::vector<const char*>{"tanh", "sigmoid", "relu", "gelu", "sin", "neg",
                                            "silu"}[pick(7)],
                   {operand()});
        break;
      case 1: v = g.call("mul.Scalar", {operand(), 0.75}); break;
      case 2: v = g.call("add.Scalar", {operand(), 0.5}); break;
      case 3: v = g.call("add.Tensor", {operand(), operand()}); break;
      case 4: v = g.call("mul.Tensor", {operand(), operand()}); break;
      case 5: v = g.call("mm", {operand(), operand()}); break;
      case 6: {
        Node* r = g.call("sum.dim_IntList", {operand(), std::vector<int64_t>{1}, true});
        v = g.call("add.Tensor", {r, operand()});
        break;
      }
      case 7: v = g.call("t", {operand()}); break;
      default: v = g.call("sub.Tensor", {operand(), operand()}); break;
    }
    pool.push_back(v);
  }
  Node* loss = g.call("sum", {pool.back()});
  if (pick(2)) loss = g.call("add.Tensor", {loss, g.call("sum", {pool[pool.size() / 2]})});
  if (pick(3) == 0)
    g.output({loss, pool[num_inputs + pick(num_ops)]});
  else
    g.output({loss});
  return g;
}

// The cheapest feasible save set by enumeration (Definition 5.1: every path from a value with an
// s-edge to a value of B passes through the set), over the values that lie on such a path.
// Returns -1 when there are too many of them.
int64_t brute_force_min_cost(const RematAnalysis& a) {
  const size_t n = a.values.size();
  std::vector<bool> from_u(n, false), to_b(n, false);
  for (size_t i = 0; i < n; ++i) {
    from_u[i] = a.values[i].from_source();
    for (int in : a.values[i].inputs)
      if (from_u[static_cast<size_t>(in)]) from_u[i] = true;
  }
  for (size_t i = n; i-- > 0;) {
    if (a.values[i].in_b) to_b[i] = true;
    if (!to_b[i]) continue;
    for (int in : a.values[i].inputs) to_b[static_cast<size_t>(in)] = true;
  }
  std::vector<size_t> cand;
  for (size_t i = 0; i < n; ++i)
    if (from_u[i] && to_b[i] && !a.values[i].is_primal) cand.push_back(i);
  if (cand.size() > 16) return -1;
  int64_t best = kInfinite;
  std::vector<bool> in_c(n), reach(n);
  for (uint32_t mask = 0; mask < (1u << cand.size()); ++mask) {
    std::fill(in_c.begin(), in_c.end(), false);
    int64_t cost = 0;
    for (size_t k = 0; k < cand.size(); ++k)
      if (mask >> k & 1) {
        in_c[cand[k]] = true;
        cost += a.values[cand[k]].capacity;
      }
    if (cost >= best) continue;
    bool feasible = true;
    for (size_t i = 0; i < n && feasible; ++i) {
      reach[i] = false;
      if (in_c[i]) continue;
      reach[i] = a.values[i].from_source();
      for (int in : a.values[i].inputs) reach[i] = reach[i] || reach[static_cast<size_t>(in)];
      if (reach[i] && a.values[i].in_b) feasible = false;
    }
    if (feasible) best = cost;
  }
  return best;
}

}  // namespace

TEST(Partitioner, EdmondsKarpAndDinicAgreeOnGeneratedGraphs) {
  std::mt19937_64 rng(20240611);
  int brute_forced = 0, with_recompute = 0, with_forced = 0;
  for (int iter = 0; iter < 300; ++iter) {
    SCOPED_TRACE("graph " + std::to_string(iter));
    Graph f = random_forward(rng);
    std::vector<std::string> wrt;
    for (const Node* p : f.placeholders()) wrt.push_back(p->name());
    JointGraph j = build_joint_graph(f, wrt);
    PartitionOptions o;
    if (iter % 2) {  // aggressive thresholds exercise the forced-save rules
      o.policy.far_distance = 3;
      o.policy.long_chain_length = 3;
    }
    o.algorithm = FlowAlgorithm::kDinic;
    PartitionResult d = partition_min_cut(j, o);
    o.algorithm = FlowAlgorithm::kEdmondsKarp;
    PartitionResult e = partition_min_cut(j, o);
    ASSERT_FALSE(d.save_all_fallback);
    EXPECT_EQ(d.max_flow, e.max_flow);
    EXPECT_EQ(d.saved, e.saved);
    EXPECT_EQ(d.recomputed, e.recomputed);
    EXPECT_EQ(d.cut.cut_edges, e.cut.cut_edges);
    expect_min_cut_consistent(d);
    int64_t brute = brute_force_min_cost(d.analysis);
    if (brute >= 0) {
      ++brute_forced;
      EXPECT_EQ(brute, d.max_flow);
    }
    with_recompute += !d.recomputed.empty();
    for (const ValueInfo& v : d.analysis.values) with_forced += v.forced != ForceReason::kNone;
    expect_same_numerics(j, d, 100 + iter);
    if (HasFailure()) {
      std::cerr << print_graph(j.graph) << format_partition_report(d);
      break;
    }
  }
  std::cout << "300 graphs: " << brute_forced << " checked by enumeration, " << with_recompute
            << " with recomputation, " << with_forced << " forced saves\n";
  EXPECT_GT(brute_forced, 200);
  EXPECT_GT(with_recompute, 50);
  EXPECT_GT(with_forced, 20);
}
