#include "core/driver/compiled_function.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <utility>

#include "core/driver/double_backward.h"
#include "core/graph/multi_output.h"
#include "core/interpreter/interpreter.h"
#include "core/lowering/graph_lowering.h"
#include "core/ops/nn/attention_fusion.h"
#include "core/support/error.h"

namespace stax {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string fmt_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", ms);
  return buf;
}

std::string count_str(size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// Checks a tensor handed to the function against the metadata its placeholder expects.
void check_tensor(const Tensor& t, const TensorMeta& expected, const std::string& where) {
  check(t.defined(), "runtime", where, "undefined tensor");
  check(t.sizes() == expected.sizes && t.dtype() == expected.dtype, "runtime", where,
        "expected " + std::string(dtype_name(expected.dtype)) + shape_str(expected.sizes) +
            ", got " + std::string(dtype_name(t.dtype())) + shape_str(t.sizes()));
}

// The backward graph with each saved value's placeholder in the layout the compiled forward
// returns it in. A saved value that is a view of a forward buffer (the GPT block's v: a permute
// of the qkv product's columns) comes out strided; a row-major placeholder made the backward's
// input loading copy it every step, where this one reads it in place. A tensor of another layout
// is still copied into the placeholder's (the runtime's input loading), so this only saves work.
Graph backward_in_forward_layouts(const partition::PartitionResult& part,
                                  const LoweredGraph& fl) {
  Graph g = part.backward.clone();
  std::map<std::string, size_t> output_of;
  for (size_t i = 0; i < part.saved.size(); ++i) output_of[part.saved[i]] = part.num_forward_outputs + i;
  for (Node* p : g.placeholders()) {
    auto it = output_of.find(p->name());
    if (it == output_of.end() || it->second >= fl.outputs.size()) continue;
    const Layout& lay = fl.outputs[it->second].layout;
    const TensorMeta& m = p->meta();
    if (lay.size != m.sizes || lay.dtype != m.dtype || lay.stride.size() != m.sizes.size() ||
        lay.stride == m.strides)
      continue;
    TensorMeta strided = m;
    strided.strides = lay.stride;
    p->set_meta(std::move(strided));
  }
  return g;
}

}  // namespace

int64_t BackwardContext::saved_bytes() const {
  int64_t total = 0;
  for (const Tensor& t : saved_values_)
    if (t.defined()) total += t.nbytes();
  return total;
}

CompiledFunction::CompiledFunction(const Graph& forward, std::vector<std::string> wrt,
                                   Compiler& compiler, CompiledFunctionOptions options)
    : compiler_(&compiler), options_(std::move(options)) {
  init(forward, std::move(wrt));
}

CompiledFunction::CompiledFunction(const Graph& forward, std::vector<std::string> wrt,
                                   Config config, CompiledFunctionOptions options)
    : options_(std::move(options)) {
  if (!options_.interpret) {
    owned_compiler_ = std::make_unique<Compiler>(std::move(config));
    compiler_ = owned_compiler_.get();
  }
  init(forward, std::move(wrt));
}

CompiledFunction::~CompiledFunction() = default;

void CompiledFunction::init(const Graph& forward, std::vector<std::string> wrt) {
  const CancellationToken* cancel = options_.cancel.get();
  // 1. the joint graph (§5.3)
  check_cancelled(cancel, "CompiledFunction", "the joint graph");
  auto start = Clock::now();
  // Fused attention where the backend runs it, before the joint graph: the backward is then the
  // flash backward from the saved output and log-sum-exp (docs/attention.md).
  Graph fused;
  const Graph* source = &forward;
  if (!options_.interpret && compiler_ && compiler_->fuses_attention(forward)) {
    fused = forward.clone();
    expand_multi_output(fused);
    if (fuse_attention(fused, compiler_->fuses_attention_dropout(forward)).fused > 0) source = &fused;
  }
  joint_ = build_joint_graph(*source, wrt);
  stats_.joint_ms = ms_since(start);
  for (const Node* n : forward.outputs()) output_meta_.push_back(n->meta());

  // 2. the partition (§5.4-5.5)
  check_cancelled(cancel, "CompiledFunction", "the partition");
  start = Clock::now();
  partition_ = partition::partition_min_cut(joint_, options_.partition);
  stats_.partition_ms = ms_since(start);
  stats_.saved_bytes = partition_.saved_bytes;
  stats_.saved_primal_bytes = partition_.saved_primal_bytes;
  stats_.num_saved = partition_.saved.size();
  stats_.num_recomputed = partition_.recomputed.size();
  for (const partition::ValueInfo& v : partition_.analysis.values) {
    if (v.is_primal) continue;
    stats_.all_intermediates_bytes += v.bytes;
    if (!v.in_b) continue;
    stats_.save_all_bytes += v.bytes;
    ++stats_.num_save_all;
  }

  // 3. the forward graph, compiled now; the backward waits for the first backward() (§5.6),
  // unless compile_backward_with_forward asks for both now, as one job
  if (!options_.interpret && options_.compile_backward_with_forward) {
    check(compiler_ != nullptr, "runtime", "CompiledFunction", "no compiler");
    start = Clock::now();
    auto [fw, bw] = compiler_->compile_pair(
        partition_.forward,
        [&](const LoweredGraph& fl) { return backward_in_forward_layouts(partition_, fl); },
        cancel);
    forward_compiled_.emplace(std::move(fw));
    backward_compiled_.emplace(std::move(bw));
    stats_.forward_compile_ms = ms_since(start);
    stats_.forward_compiles = 1;
    stats_.backward_compiles = 1;
    stats_.backward_with_forward = true;
  } else if (!options_.interpret) {
    check(compiler_ != nullptr, "runtime", "CompiledFunction", "no compiler");
    start = Clock::now();
    forward_compiled_.emplace(compiler_->compile(partition_.forward, cancel));
    stats_.forward_compile_ms = ms_since(start);
    stats_.forward_compiles = 1;
  }
}

const CompiledGraph* CompiledFunction::compiled_forward() const {
  return forward_compiled_ ? &*forward_compiled_ : nullptr;
}

const CompiledGraph* CompiledFunction::compiled_backward() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return backward_compiled_ ? &*backward_compiled_ : nullptr;
}

bool CompiledFunction::backward_compiled() const { return compiled_backward() != nullptr; }

CompiledFunctionStats CompiledFunction::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::string CompiledFunction::stats_str() const {
  CompiledFunctionStats s = stats();
  std::string text = "saved " + std::to_string(s.saved_bytes) + " B/step (" +
                     count_str(s.num_saved, "value") + ") vs save-all " +
                     std::to_string(s.save_all_bytes) + " B (" +
                     count_str(s.num_save_all, "value") + "), every intermediate " +
                     std::to_string(s.all_intermediates_bytes) + " B; recomputed " +
                     count_str(s.num_recomputed, "value") + "; saved primals " +
                     std::to_string(s.saved_primal_bytes) + " B";
  if (options_.interpret) return text + "; interpreter (nothing compiled)";
  if (s.backward_with_forward)
    return text + "; forward + backward compile " + fmt_ms(s.forward_compile_ms) + " (one job)";
  text += "; forward compile " + fmt_ms(s.forward_compile_ms) + ", backward compile " +
          (s.backward_compiles ? fmt_ms(s.backward_compile_ms) : std::string("(not compiled)"));
  return text;
}

ForwardResult CompiledFunction::forward(const std::vector<Tensor>& inputs,
                                        std::optional<uint64_t> seed) {
  const uint64_t run_seed = seed.value_or(options_.seed);
  std::vector<Node*> placeholders = partition_.forward.placeholders();
  check(inputs.size() == placeholders.size(), "runtime", "CompiledFunction::forward",
        "expected " + std::to_string(placeholders.size()) + " inputs, got " +
            std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    check_tensor(inputs[i], placeholders[i]->meta(),
                 "CompiledFunction::forward input " + placeholders[i]->name());

  std::vector<Tensor> out;
  if (forward_compiled_) {
    GraphRunOptions run;
    run.seed = run_seed;
    out = forward_compiled_->run(inputs, run);
  } else {
    InterpreterOptions run;
    run.seed = run_seed;
    out = interpret(partition_.forward, inputs, run);
  }
  const size_t n = partition_.num_forward_outputs;
  check(out.size() == n + partition_.saved.size(), "runtime", "CompiledFunction::forward",
        "the forward graph returned " + std::to_string(out.size()) + " values, expected " +
            std::to_string(n + partition_.saved.size()));

  ForwardResult result;
  result.ctx = std::make_shared<BackwardContext>();
  result.ctx->owner_ = this;
  result.ctx->seed_ = run_seed;
  result.ctx->output_meta_ = output_meta_;
  result.ctx->saved_values_.assign(out.begin() + static_cast<std::ptrdiff_t>(n), out.end());
  std::map<std::string, size_t> primal_index;
  for (size_t i = 0; i < placeholders.size(); ++i) primal_index[placeholders[i]->name()] = i;
  for (const std::string& name : partition_.saved_primals)
    result.ctx->saved_primals_.push_back(inputs.at(primal_index.at(name)));
  out.resize(n);
  result.outputs = std::move(out);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.forward_calls;
  return result;
}

std::vector<Tensor> CompiledFunction::tangents_of(
    const std::vector<Tensor>& grad_outputs, const std::vector<TensorMeta>& output_meta) const {
  check(grad_outputs.empty() || grad_outputs.size() == output_meta.size(), "runtime",
        "CompiledFunction::backward",
        "expected " + std::to_string(output_meta.size()) +
            " upstream gradients (one per forward output) or none, got " +
            std::to_string(grad_outputs.size()));
  std::vector<Tensor> tangents(joint_.tangents.size());
  for (size_t k = 0; k < joint_.output_tangent.size(); ++k) {
    const int ti = joint_.output_tangent[k];
    if (ti < 0) continue;  // not differentiable: no tangent placeholder
    const TensorMeta& meta = output_meta.at(k);
    const std::string where = "CompiledFunction::backward upstream gradient " + std::to_string(k) +
                              " (" + joint_.tangents.at(static_cast<size_t>(ti)) + ")";
    Tensor t;
    if (grad_outputs.empty())
      t = Tensor::ones(meta.sizes, meta.dtype);
    else if (!grad_outputs[k].defined())
      t = Tensor::zeros(meta.sizes, meta.dtype);
    else
      t = grad_outputs[k];
    check_tensor(t, meta, where);
    tangents[static_cast<size_t>(ti)] = t;
  }
  return tangents;
}

const CompiledGraph& CompiledFunction::ensure_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!backward_compiled_) {
    auto start = Clock::now();
    Graph strided;
    if (forward_compiled_)
      strided = backward_in_forward_layouts(partition_, forward_compiled_->lowered());
    backward_compiled_.emplace(compiler_->compile(forward_compiled_ ? strided : partition_.backward,
                                                  options_.cancel.get()));
    stats_.backward_compile_ms = ms_since(start);
    ++stats_.backward_compiles;
  }
  return *backward_compiled_;
}

void CompiledFunction::compile_backward() {
  if (!options_.interpret) ensure_backward();
}

std::vector<Tensor> CompiledFunction::backward(BackwardContext& ctx,
                                               const std::vector<Tensor>& grad_outputs,
                                               const BackwardOptions& options) {
  check_backward_request(1);
  check(ctx.owner_ == this, "runtime", "CompiledFunction::backward",
        "the context comes from another CompiledFunction's forward()");
  check(!ctx.released_, "runtime", "CompiledFunction::backward",
        "trying to backward through the same forward a second time: its saved values were "
        "released after the first backward (pass BackwardOptions::retain_graph = true to keep "
        "them)");
  std::vector<Tensor> tangents = tangents_of(grad_outputs, ctx.output_meta_);

  // The backward graph's inputs by name: saved primals, saved values, tangents.
  std::map<std::string, Tensor> by_name;
  for (size_t i = 0; i < partition_.saved_primals.size(); ++i)
    by_name[partition_.saved_primals[i]] = ctx.saved_primals_.at(i);
  for (size_t i = 0; i < partition_.saved.size(); ++i)
    by_name[partition_.saved[i]] = ctx.saved_values_.at(i);
  for (size_t i = 0; i < joint_.tangents.size(); ++i) by_name[joint_.tangents[i]] = tangents[i];
  std::vector<Tensor> inputs;
  for (const Node* p : partition_.backward.placeholders()) {
    auto it = by_name.find(p->name());
    check(it != by_name.end() && it->second.defined(), "runtime", "CompiledFunction::backward",
          "no value for the backward graph's input '" + p->name() + "'");
    inputs.push_back(it->second);
  }

  std::vector<Tensor> grads;
  if (options_.interpret) {
    InterpreterOptions run;
    run.seed = ctx.seed_;
    grads = interpret(partition_.backward, inputs, run);
  } else {
    GraphRunOptions run;
    run.seed = ctx.seed_;
    grads = ensure_backward().run(inputs, run);
  }
  check(grads.size() == joint_.wrt.size(), "runtime", "CompiledFunction::backward",
        "the backward graph returned " + std::to_string(grads.size()) + " gradients, expected " +
            std::to_string(joint_.wrt.size()));
  if (!options.retain_graph) {
    ctx.saved_values_.clear();
    ctx.saved_primals_.clear();
    ctx.released_ = true;
  }
  // Listing 5.5: differentiable gradients whose own backward rejects, where it is asked for.
  if (options.create_graph) ctx.gradients_backward_ = rejecting_backward();
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.backward_calls;
  return grads;
}

std::vector<Tensor> CompiledFunction::reference(const std::vector<Tensor>& inputs,
                                                const std::vector<Tensor>& grad_outputs) const {
  check(inputs.size() == joint_.primals.size(), "runtime", "CompiledFunction::reference",
        "expected " + std::to_string(joint_.primals.size()) + " inputs, got " +
            std::to_string(inputs.size()));
  std::vector<Tensor> tangents = tangents_of(grad_outputs, output_meta_);
  std::map<std::string, Tensor> by_name;
  for (size_t i = 0; i < inputs.size(); ++i) by_name[joint_.primals[i]] = inputs[i];
  for (size_t i = 0; i < joint_.tangents.size(); ++i) by_name[joint_.tangents[i]] = tangents[i];
  std::vector<Tensor> joint_inputs;
  for (const Node* p : joint_.graph.placeholders()) joint_inputs.push_back(by_name.at(p->name()));
  InterpreterOptions run;
  run.seed = options_.seed;
  return interpret(joint_.graph, joint_inputs, run);
}

}  // namespace stax
