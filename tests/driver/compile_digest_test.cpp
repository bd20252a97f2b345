// Golden digests of what the backend stages compute (issue 12's scale work must not change it):
// for the example graphs, the CNN and a 1k-node MLP training step (joint graph -> min-cut
// partition -> forward and backward), a 1k-node relu chain and a 1k-node fan, the digest covers
//   * the lowered graph's Listing 6.2 dump (every buffer, its layout, origins and loop body),
//   * the schedule dump (kernels, their buffers and iteration spaces, splits and their reasons),
//   * the memory plan dump (kind, offset, bytes, lifetime, in-place and temporary hosts),
//   * every kernel plan: name, run-order buffer names and the canonical bytes of its C
//     description (core/codegen/kernel_canonical.h: every field that decides the compiled code),
// hashed with 64-bit FNV-1a. A change of any byte fails the test, naming the graph and the new
// digest. The goldens were taken on the tree before the data-structure rework of issue 12
// (main at 4674373); a change that is MEANT to alter generated code must update them and say
// why in its commit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/autodiff/joint_graph.h"
#include "core/codegen/kernel_canonical.h"
#include "core/codegen/kernel_codegen.h"
#include "core/graph/graph.h"
#include "core/graph/parser.h"
#include "core/lowering/graph_lowering.h"
#include "core/partition/partitioner.h"
#include "core/scheduler/memory_plan.h"
#include "core/scheduler/schedule.h"
#include "tests/support/scale_graphs.h"

using namespace stax;

namespace {

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Everything lower -> schedule -> plan_memory -> plan_kernels produce for `g`, as text.
std::string backend_text(const Graph& g) {
  LoweredGraph l = lower_graph(g);
  Schedule s = schedule(l);
  MemoryPlan m = plan_memory(l, s);
  std::string text = l.str() + "\n--schedule\n" + s.str() + "\n--memory\n" + m.str();
  for (const KernelPlan& p : plan_kernels(s, l, {})) {
    text += "\n--" + p.name + ":";
    for (const std::string& n : p.desc.buffer_names()) text += " " + n;
    text += "\n" + canonical_kernel_bytes(*p.desc.get());
  }
  return text;
}

// The forward and backward halves of the training step of `g` w.r.t. `wrt`.
std::string training_text(const Graph& g, const std::vector<std::string>& wrt) {
  JointGraph joint = build_joint_graph(g, wrt);
  partition::PartitionResult p = partition::partition_min_cut(joint);
  return backend_text(p.forward) + "\n==backward\n" + backend_text(p.backward);
}

Graph example(const std::string& name) {
  return parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/" + name);
}

// bench/scale_bench.cpp's generators (tests/support/scale_graphs.h), at 1k nodes.
using scale_graphs::chain;
using scale_graphs::fan;
using scale_graphs::mlp;

struct Golden {
  const char* name;
  uint64_t digest;
};

void expect_digest(const Golden& golden, const std::string& text) {
  uint64_t d = fnv1a(text);
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llxull", static_cast<unsigned long long>(d));
  EXPECT_EQ(d, golden.digest) << golden.name << ": the generated kernels / memory plan changed; "
                              << "new digest " << buf << " (" << text.size() << " bytes)";
}

}  // namespace

TEST(CompileDigest, ExampleGraphs) {
  const Golden goldens[] = {
      {"example_1_1.stax", 0x1aa12d52c0360cddull},        {"example_5_1_forward.stax", 0x515e6e391a17c62full},
      {"example_5_1_joint.stax", 0x02980246107f8210ull},  {"layer_norm.stax", 0xd366c84b926ae996ull},
      {"mlp_layer.stax", 0x50692458f6b71dddull},          {"softmax.stax", 0x7ddb72a5550d43d2ull},
      {"transformer_block.stax", 0xc6e72f9216ab8189ull},  {"cnn_train_step.stax", 0x4d800365d85de559ull},
  };
  for (const Golden& g : goldens) expect_digest(g, backend_text(example(g.name)));
}

TEST(CompileDigest, CnnTrainingStep) {
  expect_digest({"cnn_train_step.stax (training step)", 0x8cc8cb9c131590b3ull},
                training_text(example("cnn_train_step.stax"),
                              {"conv_w", "conv_b", "bn_w", "bn_b", "fc_w", "fc_b"}));
}

TEST(CompileDigest, Mlp1kTrainingStep) {
  std::vector<std::string> wrt;
  Graph g = mlp(1000, &wrt);
  expect_digest({"1k-node MLP training step", 0xcd02e4f142cb76e7ull}, training_text(g, wrt));
}

TEST(CompileDigest, Chain1kAndFan1k) {
  expect_digest({"1k relu chain", 0xd0c55504c1a6bebcull}, backend_text(chain(1000)));
  expect_digest({"1k fan", 0x98b02adb864795f9ull}, backend_text(fan(1000)));
}
