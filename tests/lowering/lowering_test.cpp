// GraphLowering (core/lowering): the seed's listings as golden tests (Listing 6.2, 6.3, 6.4),
// realization decisions (§6.6), views (Prop. 6.2), reductions, extern and fallback kernels.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "core/graph/op_registry.h"
#include "core/ops/common/infer_helpers.h"
#include "core/ops/install.h"
#include "core/codegen/kernel_desc.h"
#include "core/ir/normalize_loops.h"
#include "core/backend/policy_from_plugin.h"
#include "core/lowering/graph_lowering.h"
#include "core/support/error.h"
#include "stax/plugin_api.h"
#include "stax/sdk/backend.hpp"
#include "stax/sdk/loop_body.hpp"

namespace stax {
namespace {

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Compares line by line; a listing line that is just "..." (after indentation) stands for exactly
// one line of `actual` (the seed elides fields there).
void expect_matches_listing(const std::string& actual, const std::string& listing) {
  auto a = lines(actual), e = lines(listing);
  ASSERT_EQ(a.size(), e.size()) << "actual:\n" << actual << "\nlisting:\n" << listing;
  for (size_t k = 0; k < e.size(); ++k) {
    if (e[k].find_first_not_of(' ') != std::string::npos &&
        e[k].substr(e[k].find_first_not_of(' ')) == "...")
      continue;
    EXPECT_EQ(a[k], e[k]) << "line " << k + 1 << " of\n" << actual;
  }
}

TensorMeta cuda(Shape sizes) {
  return TensorMeta::contiguous(std::move(sizes), DType::Float32, "cuda:0");
}

const ComputedBuffer& computed(const LoweredGraph& l, size_t i) {
  return static_cast<const ComputedBuffer&>(*l.buffers.at(i));
}

// The load indices of a body, in op order.
std::vector<std::string> load_indices(const LoopBody& body) {
  std::vector<std::string> out;
  for (const MemoryDep& d : read_writes(body).reads) out.push_back(d.buffer + ":" + d.index.str());
  return out;
}

// ---- Listing 6.2: Example 1.1 ----------------------------------------------------------------

const char* kListing62 =
    R"(InputBuffer(name='primals_1', layout=FixedLayout('cpu', float32, size=[64, 128], stride=[128, 1]))
InputBuffer(name='primals_2', layout=FixedLayout('cpu', float32, size=[64, 128], stride=[128, 1]))
ComputedBuffer(name='buf2', layout=FixedLayout('cpu', float32, size=[64], stride=[1]), data=Reduction(
  'cpu',
  tensorplay.float32,
  def inner_fn(index, rindex):
      i0 = index
      r0_0 = rindex
      tmp0 = ops.load('primals_1', 128*i0 + r0_0)
      tmp1 = ops.load('primals_2', 128*i0 + r0_0)
      tmp2 = ops.add('tmp0', 'tmp1')
      tmp3 = ops.relu('tmp2')
      tmp4 = ops.constant(2, tensorplay.float32)
      tmp5 = ops.mul('tmp3', 'tmp4')
      return tmp5
  ,
  ranges=[64],
  reduction_ranges=[128],
  reduction_type=sum,
  ...
))
)";

// Example 1.1: sum(relu(primals_1 + primals_2) * 2, dim=-1), both inputs (64, 128).
Graph example_1_1() {
  Graph g;
  Node* x = g.placeholder("primals_1", {64, 128});
  Node* y = g.placeholder("primals_2", {64, 128});
  Node* add = g.call("add.Tensor", {x, y});
  Node* relu = g.call("relu", {add});
  Node* mul = g.call("mul.Scalar", {relu, 2});
  Node* sum = g.call("sum.dim_IntList", {mul, std::vector<int64_t>{-1}});
  g.output({sum});
  return g;
}

TEST(Lowering, Example11IsOneComputedBufferAsListing62) {
  Graph g = example_1_1();
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.inputs.size(), 2u);
  ASSERT_EQ(l.buffers.size(), 1u);
  ASSERT_EQ(l.buffers[0]->kind(), IRKind::ComputedBuffer);
  expect_matches_listing(l.str(), kListing62);
  // The elided line holds the origins.
  EXPECT_NE(l.str().find("origins=OrderedSet([primals_1, primals_2, add, relu, mul, sum_0])"),
            std::string::npos);
  ASSERT_EQ(l.outputs.size(), 1u);
  EXPECT_EQ(l.outputs[0].buffer->name(), "buf2");
  // The recorded body ends with the reduction and its store.
  EXPECT_EQ(format_loop_body(computed(l, 0).body())
                .substr(format_loop_body(computed(l, 0).body()).find("tmp6")),
            "tmp6 = ops.reduction('sum', tensorplay.float32, 'tmp5')\n"
            "ops.store_reduction('buf2', i0, 'tmp6')\n");
}

// ---- Listing 6.3: Example 6.1 ----------------------------------------------------------------

const char* kListing63 =
    R"(ComputedBuffer(name='buf2', layout=FixedLayout('cuda:0', float32, size=(256, 512), stride=[512, 1]), data=Pointwise(
  'cuda',
  tensorplay.float32,
  def inner_fn(index):
      i0, i1 = index
      tmp0 = ops.load('primals_1', i0 + 256*i1)
      tmp1 = ops.load('primals_2', 512*i0 + i1)
      tmp2 = ops.add('tmp0', 'tmp1')
      return tmp2
  ,
  ranges=(256, 512),
  origins=OrderedSet([primals_1, primals_2, t, add])
)))";

TEST(Lowering, Example61TransposeIsAnIndexAsListing63) {
  Graph g;
  Node* x = g.placeholder("primals_1", cuda({512, 256}));
  Node* y = g.placeholder("primals_2", cuda({256, 512}));
  Node* t = g.call("t", {x});
  Node* add = g.call("add.Tensor", {t, y});
  g.output({add});
  LoweredGraph l = lower_graph(g, {RealizationThresholds::gpu(), nullptr});
  ASSERT_EQ(l.buffers.size(), 1u);
  EXPECT_EQ(format_buffer(*l.buffers[0]), kListing63);
}

// ---- Listing 6.4: Example 6.2 ----------------------------------------------------------------

const char* kListing64 =
    R"(ComputedBuffer(name='buf1', layout=FixedLayout('cuda:0', float32, size=[64, 2], stride=[2, 1]), data=Reduction(
  def inner_fn(index, rindex):
      i0, i1 = index
      r0_0 = rindex
      tmp0 = ops.load('primals_1', 16384*i0 + 8192*i1 + r0_0)
      tmp1 = ops.load('primals_1', 16384*i0 + 8192*i1 + r0_0)
      tmp2 = ops.mul('tmp0', 'tmp1')
      return tmp2
  ,
  ranges=[64, 2], reduction_ranges=[8192], reduction_type=sum,
))
ComputedBuffer(name='buf2', layout=FixedLayout('cuda:0', float32, size=[64], stride=[1]), data=Reduction(
  def inner_fn(index, rindex):
      i0 = index
      r0_0 = rindex
      tmp0 = ops.load('buf1', 2*i0 + r0_0)
      return tmp0
  ,
  ranges=[64], reduction_ranges=[2], reduction_type=sum,
))
)";

// An H100/H200-like device for the SDK's Algorithm 6.1 (S = 132, w = 32, T = 2048).
sdk::DeviceProperties h200() {
  sdk::DeviceProperties d;
  d.kind = sdk::DeviceKind::CUDA;
  d.multiprocessor_count = 132;
  d.warp_size = 32;
  d.max_threads_per_multiprocessor = 2048;
  return d;
}

LoweringOptions gpu_options() {
  LoweringOptions o{RealizationThresholds::gpu(), nullptr};
  o.split_reduction = [](int64_t n_r, int64_t n, ReductionType type) {
    return sdk::split_reduction_gpu(n_r, n, static_cast<sdk::ReductionType>(type), h200());
  };
  return o;
}

TEST(Lowering, Algorithm61GivesTwoSegmentsForExample62) {
  auto k = gpu_options().split_reduction;
  EXPECT_EQ(k(16384, 64, ReductionType::Sum), 2);
  EXPECT_EQ(k(16384, 264, ReductionType::Sum), 1);  // n >= 2S
  EXPECT_EQ(k(4096, 64, ReductionType::Sum), 1);    // short
}

TEST(Lowering, Example62SplitsAsListing64) {
  Graph g;
  Node* x = g.placeholder("primals_1", cuda({64, 16384}));
  Node* sq = g.call("mul.Tensor", {x, x});
  Node* sum = g.call("sum.dim_IntList", {sq, std::vector<int64_t>{-1}});
  g.output({sum});
  LoweredGraph l = lower_graph(g, gpu_options());
  ASSERT_EQ(l.buffers.size(), 2u);
  std::string text = format_buffer(*l.buffers[0], FormatStyle::Brief) + "\n" +
                     format_buffer(*l.buffers[1], FormatStyle::Brief) + "\n";
  EXPECT_EQ(text, kListing64);
  // §6.8: after normalization the first level reads `8192*i0 + r0_0` over 128 merged outputs.
  LoopBody n = normalize_loops(computed(l, 0).body());
  EXPECT_EQ(n.ranges, (std::vector<int64_t>{128}));
  EXPECT_EQ(n.reduction_ranges, (std::vector<int64_t>{8192}));
  EXPECT_EQ(load_indices(n),
            (std::vector<std::string>{"primals_1:8192*i0 + r0_0", "primals_1:8192*i0 + r0_0"}));
  EXPECT_EQ(read_writes(n).writes[0].index, Expr::iter(0, 128));
  // Without a split policy it is a single reduction.
  EXPECT_EQ(lower_graph(g, {RealizationThresholds::gpu(), nullptr}).buffers.size(), 1u);
}

// A split factor that does not divide the reduction is rounded down to one that does: 7
// segments asked for 96 elements give 6 of 16; a prime length (97) is not split.
TEST(Lowering, SplitFactorIsRoundedToADivisor) {
  LoweringOptions o{RealizationThresholds::gpu(), nullptr};
  o.split_reduction = [](int64_t, int64_t, ReductionType) { return int64_t{7}; };
  for (int64_t n : {96, 97}) {
    Graph g;
    g.output({g.call("sum.dim_IntList", {g.placeholder("primals_1", cuda({4, n})),
                                         std::vector<int64_t>{-1}})});
    LoweredGraph l = lower_graph(g, o);
    if (n == 97) {
      ASSERT_EQ(l.buffers.size(), 1u);
      EXPECT_EQ(computed(l, 0).body().reduction_ranges, (std::vector<int64_t>{97}));
      continue;
    }
    ASSERT_EQ(l.buffers.size(), 2u);
    EXPECT_EQ(computed(l, 0).body().ranges, (std::vector<int64_t>{4, 6}));
    EXPECT_EQ(computed(l, 0).body().reduction_ranges, (std::vector<int64_t>{16}));
    EXPECT_EQ(computed(l, 1).body().reduction_ranges, (std::vector<int64_t>{6}));
  }
}

TEST(Lowering, ArgmaxIsNeverSplit) {
  Graph g;
  Node* x = g.placeholder("primals_1", cuda({64, 16384}));
  Node* a = g.call("argmax", {x, 1});
  g.output({a});
  LoweredGraph l = lower_graph(g, gpu_options());
  ASSERT_EQ(l.buffers.size(), 1u);
  const auto& b = computed(l, 0);
  EXPECT_EQ(b.dtype(), DType::Int64);
  EXPECT_EQ(b.body().reduction_type(), ReductionType::ArgMax);
  EXPECT_EQ(b.body().reduction_ranges, (std::vector<int64_t>{16384}));
}

// ---- Realization (§6.6) ------------------------------------------------------------------------

// e = exp(x) has two users: CPU thresholds realize it (rule 1), GPU thresholds inline it.
Graph two_users_of_exp() {
  Graph g;
  Node* x = g.placeholder("primals_1", {64, 128});
  Node* e = g.call("exp", {x});
  Node* a = g.call("add.Scalar", {e, 1});
  Node* b = g.call("mul.Scalar", {e, 2});
  Node* s = g.call("add.Tensor", {a, b});
  g.output({s});
  return g;
}

TEST(Lowering, ValueWithTwoUsersAndExpIsRealizedOnCpuInlinedOnGpu) {
  Graph g = two_users_of_exp();
  LoweredGraph cpu = lower_graph(g, {RealizationThresholds::cpu(), nullptr});
  ASSERT_EQ(cpu.buffers.size(), 2u);
  EXPECT_EQ(cpu.buffers[0]->name(), "buf1");
  EXPECT_EQ(load_indices(computed(cpu, 1).body()),
            (std::vector<std::string>{"buf1:128*i0 + i1", "buf1:128*i0 + i1"}));
  EXPECT_EQ(count_ops(computed(cpu, 1).body()).ops.count(Opcode::exp), 0u);

  LoweredGraph gpu = lower_graph(g, {RealizationThresholds::gpu(), nullptr});
  ASSERT_EQ(gpu.buffers.size(), 1u);
  const LoopBody& body = computed(gpu, 0).body();
  EXPECT_EQ(load_indices(body),
            (std::vector<std::string>{"primals_1:128*i0 + i1", "primals_1:128*i0 + i1"}));
  int exps = 0;
  for (const LoopOp& op : body.ops) exps += op.opcode == Opcode::exp;
  EXPECT_EQ(exps, 2);  // recomputed by each user
}

TEST(Lowering, RealizationRules) {
  RealizationThresholds cpu = RealizationThresholds::cpu(), gpu = RealizationThresholds::gpu();
  OpCounts c;
  c.num_ops = 10;
  c.num_loads = 2;
  c.buffers_read = {"a", "b"};
  c.ops = {Opcode::load, Opcode::add};
  EXPECT_FALSE(should_realize(cpu, c, 2));
  EXPECT_FALSE(should_realize(cpu, c, 1));
  c.ops.insert(Opcode::tanh);
  EXPECT_TRUE(should_realize(cpu, c, 2));  // rule 1
  EXPECT_FALSE(should_realize(gpu, c, 2));
  c.ops.erase(Opcode::tanh);
  c.num_ops = 45;
  EXPECT_TRUE(should_realize(cpu, c, 6));  // rule 2
  EXPECT_FALSE(should_realize(cpu, c, 5));
  EXPECT_TRUE(should_realize(gpu, c, 2));  // rule 3 (GPU limit 30)
  c.num_ops = 10;
  c.buffers_read = {"a", "b", "c", "d", "e"};
  EXPECT_TRUE(should_realize(cpu, c, 2));  // rule 4: buffers read
  c.buffers_read = {"a"};
  c.num_loads = 10;
  EXPECT_FALSE(should_realize(cpu, c, 2));
  EXPECT_TRUE(should_realize(gpu, c, 2));  // rule 4: accumulated reads (GPU 8)
}

TEST(Lowering, ThresholdsFromTheCStruct) {
  int32_t ops[] = {static_cast<int32_t>(Opcode::exp)};
  StaxRealizationThresholds c{};
  c.struct_size = sizeof(c);
  c.op_limit = 7;
  c.max_accumulated_reads = 3;
  c.transcendental_ops = ops;
  c.num_transcendental_ops = 1;
  RealizationThresholds t = realization_thresholds_from_c(c);
  EXPECT_EQ(t.op_limit, 7);
  EXPECT_EQ(t.max_accumulated_reads, 3);
  EXPECT_EQ(t.transcendental_ops, std::vector<Opcode>{Opcode::exp});
  // The SDK's defaults convert to core's.
  RealizationThresholds cpu = realization_thresholds_from_sdk(sdk::RealizationThresholds::cpu());
  EXPECT_EQ(cpu.transcendental_ops, RealizationThresholds::cpu().transcendental_ops);
  EXPECT_EQ(cpu.max_accumulated_reads, 12);
  RealizationThresholds gpu = realization_thresholds_from_sdk(sdk::RealizationThresholds::gpu());
  EXPECT_EQ(gpu.op_limit, RealizationThresholds::gpu().op_limit);
  EXPECT_EQ(gpu.max_accumulated_reads, 8);
  EXPECT_TRUE(gpu.transcendental_ops.empty());
}

// ---- Extern and fallback kernels --------------------------------------------------------------

TEST(Lowering, MatmulIsAnExternKernelWithRealizedInputs) {
  Graph g;
  Node* x = g.placeholder("primals_1", {64, 32});
  Node* w = g.placeholder("primals_2", {64, 64});
  Node* xt = g.call("t", {x});
  Node* r = g.call("relu", {w});
  Node* m = g.call("matmul", {xt, r});
  Node* ge = g.call("gelu", {m});
  Node* s = g.call("sum.default", {ge});
  g.output({s});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 3u);
  EXPECT_EQ(l.buffers[0]->kind(), IRKind::ComputedBuffer);  // relu, realized for the extern kernel
  ASSERT_EQ(l.buffers[1]->kind(), IRKind::ExternKernel);
  const auto& k = static_cast<const ExternKernel&>(*l.buffers[1]);
  EXPECT_EQ(k.kernel(), "matmul");
  // x.t() is passed as a view of primals_1's storage, not copied.
  EXPECT_EQ(
      format_buffer(k),
      "ExternKernel(name='buf3', layout=FixedLayout('cpu', float32, size=[32, 64], stride=[64, "
      "1]), kernel='matmul', inputs=[ReinterpretView('primals_1', FixedLayout('cpu', float32, "
      "size=[32, 64], stride=[1, 32])), 'buf2'])");
  const auto& red = computed(l, 2);
  EXPECT_EQ(red.body().reduction_type(), ReductionType::Sum);
  EXPECT_EQ(count_ops(red.body()).ops.count(Opcode::erf), 1u);  // gelu inlined into the sum
  EXPECT_EQ(load_indices(red.body()), (std::vector<std::string>{"buf3:64*r0_0 + r0_1"}));
}

TEST(Lowering, OpWithoutRuleBecomesFallbackKernel) {
  OpRegistry reg;
  register_all_ops(reg);
  reg.add("stax_test_unlowered(Tensor self) -> Tensor", OpCategory::Pointwise, Promotion::Default,
          infer::elementwise_rule({"self"}));
  Graph g(reg);
  Node* x = g.placeholder("primals_1", {8, 16});
  Node* r = g.call("relu", {x});
  Node* u = g.call("stax_test_unlowered", {r});
  Node* e = g.call("exp", {u});
  g.output({e});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 3u);
  EXPECT_EQ(l.buffers[0]->kind(), IRKind::ComputedBuffer);  // relu: its user needs it in memory
  ASSERT_EQ(l.buffers[1]->kind(), IRKind::FallbackKernel);
  const auto& f = static_cast<const FallbackKernel&>(*l.buffers[1]);
  EXPECT_EQ(f.node(), u);
  ASSERT_EQ(f.inputs().size(), 1u);
  EXPECT_EQ(f.inputs()[0].buffer->name(), "buf1");
  EXPECT_EQ(format_buffer(f),
            "FallbackKernel(name='buf2', layout=FixedLayout('cpu', float32, "
            "size=[8, 16], stride=[16, 1]), op='stax_test_unlowered.default', "
            "inputs=['buf1'])");
  EXPECT_EQ(load_indices(computed(l, 2).body()), (std::vector<std::string>{"buf2:16*i0 + i1"}));
}

// ---- Views (Prop. 6.2) -------------------------------------------------------------------------

// Lowers out = view(x) + 0 and returns the index x is read with.
std::string view_index(const std::function<Node*(Graph&, Node*)>& make, Shape in = {4, 6}) {
  Graph g;
  Node* x = g.placeholder("primals_1", in);
  Node* v = make(g, x);
  Node* y = g.call("add.Scalar", {v, 1});
  g.output({y});
  LoweredGraph l = lower_graph(g);
  EXPECT_EQ(l.buffers.size(), 1u);
  auto idx = load_indices(computed(l, 0).body());
  EXPECT_EQ(idx.size(), 1u);
  return idx.empty() ? "" : idx[0];
}

TEST(Lowering, ViewsAreIndexTransforms) {
  EXPECT_EQ(view_index([](Graph& g, Node* x) { return g.call("t", {x}); }), "primals_1:i0 + 6*i1");
  EXPECT_EQ(view_index([](Graph& g, Node* x) {
              return g.call("permute", {x, std::vector<int64_t>{1, 0}});
            }),
            "primals_1:i0 + 6*i1");
  EXPECT_EQ(view_index([](Graph& g, Node* x) {
              return g.call("transpose.int", {x, 0, -1});
            }),
            "primals_1:i0 + 6*i1");
  EXPECT_EQ(view_index([](Graph& g, Node* x) {
              return g.call("reshape", {x, std::vector<int64_t>{24}});
            }),
            "primals_1:i0");
  EXPECT_EQ(view_index([](Graph& g, Node* x) {
              return g.call("view", {x, std::vector<int64_t>{2, 12}});
            }),
            "primals_1:12*i0 + i1");
  EXPECT_EQ(view_index([](Graph& g, Node* x) {
              return g.call("slice.Tensor", {x, 1, 2, 6, 2});
            }),
            "primals_1:6*i0 + 2*i1 + 2");
  EXPECT_EQ(view_index([](Graph& g, Node* x) {
              return g.call("select.int", {x, 0, -1});
            }),
            "primals_1:i0 + 18");
  EXPECT_EQ(view_index([](Graph& g, Node* x) {
              return g.call("unsqueeze", {x, 1});
            }),
            "primals_1:6*i0 + i2");
  EXPECT_EQ(view_index([](Graph& g, Node* x) {
              return g.call("expand", {x, std::vector<int64_t>{3, 4, 6}});
            }),
            "primals_1:6*i1 + i2");
  EXPECT_EQ(view_index(
                [](Graph& g, Node* x) {
                  return g.call("expand", {x, std::vector<int64_t>{4, 6}});
                },
                {4, 1}),
            "primals_1:i0");
  EXPECT_EQ(view_index(
                [](Graph& g, Node* x) {
                  return g.call("squeeze.dim", {x, 1});
                },
                {4, 1}),
            "primals_1:i0");
  // A reshape of a transpose is not affine: the floor division and modulo stay in the index.
  EXPECT_EQ(view_index([](Graph& g, Node* x) {
              Node* t = g.call("t", {x});
              return g.call("reshape", {t, std::vector<int64_t>{24}});
            }),
            "primals_1:i0//4 + 6*(i0 % 4)");
}

TEST(Lowering, ViewsOfUnrealizedValuesComposeLoaders) {
  // relu(x) is never realized; its transpose reads x through the composed index.
  Graph g;
  Node* x = g.placeholder("primals_1", {4, 6});
  Node* r = g.call("relu", {x});
  Node* t = g.call("t", {r});
  Node* y = g.call("add.Scalar", {t, 1});
  g.output({y});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 1u);
  EXPECT_EQ(load_indices(computed(l, 0).body()), (std::vector<std::string>{"primals_1:i0 + 6*i1"}));
  EXPECT_EQ(computed(l, 0).layout().size, (Shape{6, 4}));
}

TEST(Lowering, OutputThatIsAViewOfAnInputIsNotCopied) {
  Graph g;
  Node* x = g.placeholder("primals_1", {4, 6});
  Node* t = g.call("t", {x});
  g.output({t});
  LoweredGraph l = lower_graph(g);
  EXPECT_TRUE(l.buffers.empty());
  ASSERT_EQ(l.outputs.size(), 1u);
  EXPECT_EQ(l.outputs[0].buffer->name(), "primals_1");
  EXPECT_EQ(l.outputs[0].layout.stride, (Shape{1, 6}));
}

// A training forward that returns (saves) the flattened view of a pointwise value which an
// extern also reads (ConvNeXt: the (8, 16, 16, 64) LayerNorm output as the Linear's (2048, 64)
// input): one buffer, the output and the mm's input are views of it; before, each was a copy.
TEST(Lowering, OutputThatIsAReshapeOfAPointwiseValueIsNotCopied) {
  Graph g;
  Node* x = g.placeholder("primals_1", {2, 4, 4, 8});
  Node* w = g.placeholder("primals_2", {8, 3});
  Node* r = g.call("relu", {x});
  Node* v = g.call("view", {r, Arg(Shape{32, 8})});
  Node* m = g.call("mm", {v, w});
  g.output({v, m});
  LoweredGraph l = lower_graph(g);
  size_t computed_buffers = 0;
  for (const BufferPtr& b : l.buffers) computed_buffers += b->kind() == IRKind::ComputedBuffer;
  EXPECT_EQ(computed_buffers, 1u);
  ASSERT_EQ(l.outputs.size(), 2u);
  EXPECT_EQ(l.outputs[0].buffer->name(), computed(l, 0).name());
  EXPECT_EQ(l.outputs[0].layout.size, (Shape{32, 8}));
  EXPECT_EQ(l.outputs[0].layout.stride, (Shape{8, 1}));
  // A transposing view of the value is not a reshape: the output is its own (contiguous) buffer.
  Graph g2;
  Node* x2 = g2.placeholder("primals_1", {4, 6});
  Node* t2 = g2.call("t", {g2.call("relu", {x2})});
  g2.output({t2});
  LoweredGraph l2 = lower_graph(g2);
  ASSERT_EQ(l2.buffers.size(), 1u);
  EXPECT_EQ(l2.outputs[0].layout.stride, (Shape{4, 1}));
  EXPECT_EQ(load_indices(computed(l2, 0).body()), (std::vector<std::string>{"primals_1:i0 + 6*i1"}));
}

// Two products reading the same transposing reshape of a realized value (the Mixer's backward):
// one copy of it, read by both.
TEST(Lowering, TwoExternsReadingTheSameCopiedViewShareOneCopy) {
  Graph g;
  Node* x = g.placeholder("primals_1", {2, 4, 8});
  Node* w1 = g.placeholder("primals_2", {4, 3});
  Node* w2 = g.placeholder("primals_3", {4, 5});
  Node* r = g.call("relu", {x});
  Node* v = g.call("reshape", {g.call("permute", {r, Arg(Shape{0, 2, 1})}), Arg(Shape{16, 4})});
  g.output({g.call("mm", {v, w1}), g.call("mm", {v, w2})});
  LoweredGraph l = lower_graph(g);
  std::vector<const ComputedBuffer*> copies;
  for (const BufferPtr& b : l.buffers)
    if (b->kind() == IRKind::ComputedBuffer) copies.push_back(&static_cast<const ComputedBuffer&>(*b));
  ASSERT_EQ(copies.size(), 2u);  // relu(x), and one (16, 4) copy of its transposing view
  EXPECT_EQ(copies[1]->layout().size, (Shape{16, 4}));
  size_t externs = 0;
  for (const BufferPtr& b : l.buffers) {
    if (b->kind() != IRKind::ExternKernel) continue;
    ++externs;
    EXPECT_EQ(static_cast<const ExternKernel&>(*b).inputs().at(0).buffer->name(), copies[1]->name());
  }
  EXPECT_EQ(externs, 2u);
}

// ---- Reductions and dtypes ---------------------------------------------------------------------

TEST(Lowering, ReductionOverAnOuterDim) {
  Graph g;
  Node* x = g.placeholder("primals_1", {64, 128});
  Node* s = g.call("sum.dim_IntList", {x, std::vector<int64_t>{0}, true});
  g.output({s});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 1u);
  const LoopBody& b = computed(l, 0).body();
  EXPECT_EQ(b.ranges, (std::vector<int64_t>{1, 128}));
  EXPECT_EQ(b.reduction_ranges, (std::vector<int64_t>{64}));
  EXPECT_EQ(load_indices(b), (std::vector<std::string>{"primals_1:i1 + 128*r0_0"}));
  EXPECT_EQ(computed(l, 0).layout().str(),
            "FixedLayout('cpu', float32, size=[1, 128], stride=[128, 1])");
}

TEST(Lowering, MeanIsSumThenDivide) {
  Graph g;
  Node* x = g.placeholder("primals_1", {8, 32});
  Node* m = g.call("mean.dim", {x, std::vector<int64_t>{1}});
  g.output({m});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 2u);
  EXPECT_EQ(computed(l, 0).body().reduction_type(), ReductionType::Sum);
  EXPECT_EQ(format_inner_fn(computed(l, 1).body(), ""),
            "def inner_fn(index):\n"
            "    i0 = index\n"
            "    tmp0 = ops.load('buf1', i0)\n"
            "    tmp1 = ops.constant(32, tensorplay.float32)\n"
            "    tmp2 = ops.truediv('tmp0', 'tmp1')\n"
            "    return tmp2\n");
}

TEST(Lowering, HalfComputesInFloat32AndRoundsPerNode) {
  Graph g;
  Node* x = g.placeholder("primals_1", {16}, DType::Float16);
  Node* r = g.call("relu", {x});
  Node* n = g.call("neg", {r});
  g.output({n});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 1u);
  EXPECT_EQ(format_loop_body(computed(l, 0).body()),
            "tmp0 = ops.load('primals_1', i0)\n"
            "tmp1 = ops.to_dtype('tmp0', tensorplay.float32)\n"
            "tmp2 = ops.relu('tmp1')\n"
            "tmp3 = ops.to_dtype('tmp2', tensorplay.float16)\n"
            "tmp4 = ops.to_dtype('tmp3', tensorplay.float32)\n"
            "tmp5 = ops.neg('tmp4')\n"
            "tmp6 = ops.to_dtype('tmp5', tensorplay.float16)\n"
            "ops.store('buf1', i0, 'tmp6')\n");
}

TEST(Lowering, ComparisonsPromoteThenGiveBool) {
  Graph g;
  Node* x = g.placeholder("primals_1", {16}, DType::Int32);
  Node* c = g.call("lt.Scalar", {x, 2.5});
  Node* w = g.call("where.ScalarOther", {c, x, 0});
  g.output({w});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 1u);
  EXPECT_EQ(format_loop_body(computed(l, 0).body()),
            "tmp0 = ops.load('primals_1', i0)\n"
            "tmp1 = ops.to_dtype('tmp0', tensorplay.float32)\n"
            "tmp2 = ops.constant(2.5, tensorplay.float32)\n"
            "tmp3 = ops.lt('tmp1', 'tmp2')\n"
            "tmp4 = ops.load('primals_1', i0)\n"
            "tmp5 = ops.to_dtype('tmp4', tensorplay.int64)\n"
            "tmp6 = ops.constant(0, tensorplay.int64)\n"
            "tmp7 = ops.where('tmp3', 'tmp5', 'tmp6')\n"
            "tmp8 = ops.to_dtype('tmp7', tensorplay.int32)\n"
            "ops.store('buf1', i0, 'tmp8')\n");
}

TEST(Lowering, GeluUsesTheSharedFormula) {
  Graph g;
  Node* x = g.placeholder("primals_1", {16});
  Node* y = g.call("gelu", {x});
  g.output({y});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 1u);
  // The formula's ops (the recording order of nested calls is the compiler's argument order, so
  // only the op multiset and the final multiply are checked).
  const LoopBody& b = computed(l, 0).body();
  std::map<std::string, int> ops;
  for (const LoopOp& op : b.ops) ++ops[std::string(opcode_name(op.opcode))];
  EXPECT_EQ(ops,
            (std::map<std::string, int>{
                {"load", 1}, {"constant", 3}, {"mul", 3}, {"erf", 1}, {"add", 1}, {"store", 1}}));
  const LoopOp& last = b.ops[static_cast<size_t>(b.result())];
  EXPECT_EQ(last.opcode, Opcode::mul);
  EXPECT_EQ(last.operands[0], 0);  // h * Φ(h)
  EXPECT_NE(format_inner_fn(b).find("ops.constant(0.7071067811865476, tensorplay.float32)"),
            std::string::npos);
}

TEST(Lowering, ArangeIsAnIndexExpression) {
  Graph g;
  Node* a = g.call("arange", {128}, {{"dtype", DType::Int64}});
  Node* m = g.call("mul.Scalar", {a, 3});
  Node* r = g.call("remainder.Scalar", {m, 128});
  g.output({r});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 1u);
  const LoopBody& b = computed(l, 0).body();
  EXPECT_EQ(b.ops[0].opcode, Opcode::index_expr);
  EXPECT_EQ(b.index_of(b.ops[0]).str(), "i0");
  std::vector<Interval> vr = value_ranges(b);
  EXPECT_EQ(vr[static_cast<size_t>(b.result())], (Interval{0, 127}));  // Example 6.3
}

// ---- Indirect reads and concatenation -----------------------------------------------------------

// Example 6.3 g2: the index is computed by arange, so the read is direct and idx never exists.
TEST(Lowering, Example63ComputedIndexBecomesADirectRead) {
  Graph g;
  Node* x = g.placeholder("primals_1", {128});
  Node* a = g.call("arange", {128}, {{"dtype", DType::Int64}});
  Node* m = g.call("mul.Scalar", {a, 3});
  Node* idx = g.call("remainder.Scalar", {m, 128});
  Node* sel = g.call("index.Tensor", {x, std::vector<Node*>{idx}});
  Node* y = g.call("mul.Scalar", {sel, 2});
  g.output({y});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 1u);
  EXPECT_EQ(format_loop_body(computed(l, 0).body()),
            "tmp0 = ops.load('primals_1', (3*i0) % 128)\n"
            "tmp1 = ops.constant(2, tensorplay.float32)\n"
            "tmp2 = ops.mul('tmp0', 'tmp1')\n"
            "ops.store('buf1', i0, 'tmp2')\n");
}

// Example 6.3 g1: the index is read from memory: an indirect index with wrap and check.
TEST(Lowering, Example63LoadedIndexIsIndirect) {
  Graph g;
  Node* x = g.placeholder("primals_1", {128});
  Node* idx = g.placeholder("primals_2", {128}, DType::Int64);
  Node* sel = g.call("index.Tensor", {x, std::vector<Node*>{idx}});
  Node* y = g.call("mul.Scalar", {sel, 2});
  g.output({y});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 1u);
  const LoopBody& b = computed(l, 0).body();
  EXPECT_EQ(format_loop_body(b),
            "tmp0 = ops.load('primals_2', i0)\n"
            "tmp1 = ops.indirect_indexing('tmp0', 128)\n"
            "tmp2 = ops.load('primals_1', tmp1)\n"
            "tmp3 = ops.constant(2, tensorplay.float32)\n"
            "tmp4 = ops.mul('tmp2', 'tmp3')\n"
            "ops.store('buf2', i0, 'tmp4')\n");
  EXPECT_TRUE(b.ops[1].check);
  EXPECT_TRUE(b.ops[1].wrap_negative);
}

TEST(Lowering, GatherAndIndexSelect) {
  Graph g;
  Node* x = g.placeholder("primals_1", {4, 6});
  Node* i = g.placeholder("primals_2", {4, 2}, DType::Int64);
  Node* v = g.placeholder("primals_3", {3}, DType::Int64);
  Node* ga = g.call("gather", {x, 1, i});
  Node* is = g.call("index_select", {x, 0, v});
  g.output({ga, is});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 2u);
  EXPECT_EQ(load_indices(computed(l, 0).body()),
            (std::vector<std::string>{"primals_2:2*i0 + i1", "primals_1:6*i0 + tmp1"}));
  EXPECT_EQ(load_indices(computed(l, 1).body()),
            (std::vector<std::string>{"primals_3:i0", "primals_1:i1 + 6*tmp1"}));
}

TEST(Lowering, CatIsOnePointwiseNodeWithClampedReads) {
  Graph g;
  Node* x = g.placeholder("primals_1", {2, 3});
  Node* y = g.placeholder("primals_2", {4, 3});
  Node* c = g.call("cat", {std::vector<Node*>{x, y}, 0});
  g.output({c});
  LoweredGraph l = lower_graph(g);
  ASSERT_EQ(l.buffers.size(), 1u);
  EXPECT_EQ(format_loop_body(computed(l, 0).body()),
            "tmp0 = ops.load('primals_1', 3*min(i0, 1) + i1)\n"
            "tmp1 = ops.load('primals_2', 3*max(i0 - 2, 0) + i1)\n"
            "tmp2 = ops.index_expr(i0, tensorplay.int64)\n"
            "tmp3 = ops.constant(2, tensorplay.int64)\n"
            "tmp4 = ops.lt('tmp2', 'tmp3')\n"
            "tmp5 = ops.where('tmp4', 'tmp0', 'tmp1')\n"
            "ops.store('buf2', 3*i0 + i1, 'tmp5')\n");
}

TEST(Lowering, BufferNamesCountInputs) {
  Graph g = two_users_of_exp();
  LoweredGraph l = lower_graph(g);
  EXPECT_NE(l.find("primals_1"), nullptr);
  EXPECT_NE(l.find("buf2"), nullptr);
  EXPECT_EQ(l.find("buf0"), nullptr);
}

// ---- The bridge to the plugin boundary ----------------------------------------------------------

TEST(KernelDesc, Example11BecomesAValidCKernelDescription) {
  Graph g = example_1_1();
  LoweredGraph l = lower_graph(g);
  const ComputedBuffer& buf = computed(l, 0);
  KernelDesc k = make_kernel_desc("kernel0", {&buf.body()}, {buf.name()},
                                  [&](std::string_view n) { return l.find(n); });
  ASSERT_NO_THROW(sdk::validate(k.get()));
  EXPECT_EQ(k.buffer_names(), (std::vector<std::string>{"primals_1", "primals_2", "buf2"}));
  sdk::Kernel kernel(k.get());
  EXPECT_EQ(kernel.reduction_type(), sdk::ReductionType::Sum);
  EXPECT_EQ(kernel.ranges().size(), 1u);
  EXPECT_EQ(kernel.reduction_numel(), 128);
  EXPECT_EQ(kernel.buffer(2).role(), sdk::BufferRole::Output);
  EXPECT_EQ(kernel.buffer(0).strides()[0], 128);
  sdk::LoopBody body = kernel.body(0);
  EXPECT_TRUE(body.is_reduction_loop());
  EXPECT_EQ(body.name(), "buf2");
  ASSERT_EQ(body.num_ops(), buf.body().ops.size());
  for (size_t i = 0; i < body.num_ops(); ++i) {
    const LoopOp& op = buf.body().ops[i];
    EXPECT_EQ(body.op(i).name(), opcode_name(op.opcode));
    if (op.index >= 0) {
      EXPECT_EQ(sdk::format_expr(body.index_of(body.op(i))), buf.body().index_of(op).str());
    }
  }
  EXPECT_EQ(body.op(4).immediate().as_double(), 2.0);  // ops.constant(2, float32)
}

TEST(KernelDesc, ExpressionsPrintAlikeInCoreAndSdk) {
  Expr a = Expr::iter(0, 64), b = Expr::iter(1, 8), r = Expr::reduce(0, 32);
  for (const Expr& e :
       {16384 * a + 8192 * b + r, a - 2 * b - 3, -a + 5, 4 * floordiv(a, 4) + mod(a, 3),
        mod(3 * a, 128), min(a, Expr(5)) + max(b, Expr(2)), a * b + 7 * a * r, -floordiv(a, 3),
        Expr(0), Expr(-4)}) {
    std::vector<StaxExprNode> nodes;
    int32_t root = append_expr(nodes, e);
    EXPECT_EQ(sdk::format_expr(sdk::Expr(nodes.data(), nodes.size(), root)), e.str());
    int64_t iv[2] = {5, 3}, rv[1] = {7};
    auto value_of = [&](const Expr& v) {
      return v.var_kind() == VarKind::Reduce ? rv[0] : iv[v.var_index()];
    };
    EXPECT_EQ(sdk::evaluate(sdk::Expr(nodes.data(), nodes.size(), root), iv, rv),
              evaluate(e, value_of));
  }
}

TEST(Lowering, EveryRuleNamesARegisteredOp) {
  const OpRegistry& reg = default_registry();
  std::vector<std::string> missing;
  for (const std::string& name : default_lowering_table().names())
    if (!reg.find(name)) missing.push_back(name);
  EXPECT_TRUE(missing.empty()) << "rules for unknown ops: " << ::testing::PrintToString(missing);
}

}  // namespace
}  // namespace stax
