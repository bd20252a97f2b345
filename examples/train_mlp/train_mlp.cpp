// stax_train_mlp: a small regression MLP trained with SGD through the compiled forward and
// backward (CompiledFunction, core/driver/compiled_function.h; seed §5.6).
//
//   model:  pred = gelu(x @ W1 + b1) @ W2 + b2      x (256, 32), W1 (32, 64), b1 (64,),
//   loss:   mean((pred - y)^2)                      W2 (64, 1), b2 (1,), y (256, 1)
//
// The data are synthetic: x is standard normal, y is the output of a fixed random "teacher"
// network of the same architecture (run once on the reference interpreter). The student starts
// from other random weights (scaled by 1/sqrt(fan_in)) and follows the gradient of the loss.
// Every step runs the compiled forward (which keeps the partitioner's saved values in a context)
// and the compiled backward (compiled on the first step's backward only).
//
// At the end the final step's loss and gradients are compared with the joint graph run by the
// reference interpreter (within kGradientRtol / kGradientAtol); the program exits with 1 when
// they disagree or when the loss did not fall. --check adds the same comparison at the first
// step and checks that forward and backward were each compiled exactly once.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/graph/graph.h"
#include "core/driver/compiled_function.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/install.h"
#include "core/support/error.h"

using namespace stax;

namespace {

constexpr int64_t kBatch = 256, kIn = 32, kHidden = 64, kOut = 1;

// pred = gelu(x @ W1 + b1) @ W2 + b2, then (with a target) the MSE loss as the only output.
Graph build_mlp(bool with_loss) {
  Graph g;
  Node* x = g.placeholder("x", {kBatch, kIn});
  Node* w1 = g.placeholder("W1", {kIn, kHidden});
  Node* b1 = g.placeholder("b1", {kHidden});
  Node* w2 = g.placeholder("W2", {kHidden, kOut});
  Node* b2 = g.placeholder("b2", {kOut});
  Node* h = g.call("add.Tensor", {g.call("matmul", {x, w1}), b1}, {}, "h");
  Node* a = g.call("gelu", {h}, {}, "a");
  Node* pred = g.call("add.Tensor", {g.call("matmul", {a, w2}), b2}, {}, "pred");
  if (!with_loss) {
    g.output({pred});
    return g;
  }
  Node* y = g.placeholder("y", {kBatch, kOut});
  Node* diff = g.call("sub.Tensor", {pred, y}, {}, "diff");
  g.output({g.call("mean", {g.call("mul.Tensor", {diff, diff}, {}, "sq")}, {}, "loss")});
  return g;
}

// Weights of one network, drawn with `seed`: W ~ N(0, 1) / sqrt(fan_in), b ~ 0.1 N(0, 1).
std::vector<Tensor> init_params(uint64_t seed) {
  auto scaled = [&](const Shape& s, double scale) {
    Tensor t = Tensor::randn(s, DType::Float32, seed++);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(p[i] * scale);
    return t;
  };
  return {scaled({kIn, kHidden}, 1.0 / std::sqrt(double(kIn))), scaled({kHidden}, 0.1),
          scaled({kHidden, kOut}, 1.0 / std::sqrt(double(kHidden))), scaled({kOut}, 0.1)};
}

// --config, or the source tree's configs/cpu.yaml (as `stax compile` / `stax grad`).
Config load_config(const std::string& path) {
  return Config::load(path.empty() ? std::string(STAX_SOURCE_DIR) + "/configs/cpu.yaml" : path);
}

// Compares the compiled loss and gradients with the interpreter's joint graph; prints one line.
bool check_against_interpreter(const CompiledFunction& f, const std::vector<Tensor>& inputs,
                               const Tensor& loss, const std::vector<Tensor>& grads,
                               const char* label) {
  std::vector<Tensor> ref = f.reference(inputs);
  std::vector<Tensor> got = {loss};
  got.insert(got.end(), grads.begin(), grads.end());
  bool ok = ref.size() == got.size();
  double worst = 0;
  for (size_t i = 0; ok && i < ref.size(); ++i) {
    std::vector<double> a = got[i].to_vector<double>(), b = ref[i].to_vector<double>();
    for (size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]));
    if (!got[i].allclose(ref[i], kGradientRtol, kGradientAtol)) {
      std::cout << "  mismatch in " << (i == 0 ? std::string("loss") : "grad " + f.wrt()[i - 1])
                << ":\n    compiled    " << got[i].summary() << "\n    interpreter "
                << ref[i].summary() << "\n";
      ok = false;
    }
  }
  std::printf(
      "check (%s step): loss and %zu gradients vs the interpreter's joint graph: %s "
      "(max |diff| %.3g; bound %g + %g |ref|)\n",
      label, grads.size(), ok ? "ok" : "MISMATCH", worst, kGradientAtol, kGradientRtol);
  return ok;
}

int train(int steps, double lr, int print_every, const std::string& config_path, bool use_interp,
          bool strict) {
  // Data: x and the teacher's y.
  Tensor x = Tensor::randn({kBatch, kIn}, DType::Float32, 1234);
  std::vector<Tensor> teacher = init_params(100);
  std::vector<Tensor> teacher_in = {x};
  teacher_in.insert(teacher_in.end(), teacher.begin(), teacher.end());
  Tensor y = interpret(build_mlp(false), teacher_in)[0];

  Graph model = build_mlp(true);
  CompiledFunctionOptions options;
  options.interpret = use_interp;
  auto t0 = std::chrono::steady_clock::now();
  CompiledFunction f(model, {"W1", "b1", "W2", "b2"},
                     use_interp ? Config::default_cpu() : load_config(config_path), options);
  double setup_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto& part = f.partition();
  std::string saved;
  for (const auto& s : part.saved) saved += (saved.empty() ? "" : ", ") + s;
  std::string recomputed;
  for (const auto& s : part.recomputed) recomputed += (recomputed.empty() ? "" : ", ") + s;
  std::printf(
      "stax_train_mlp: MLP %lldx%lld -> gelu(%lld) -> %lld, MSE loss, SGD lr %g, %d steps "
      "(%s)\n",
      (long long)kBatch, (long long)kIn, (long long)kHidden, (long long)kOut, lr, steps,
      use_interp ? "reference interpreter" : "compiled");
  std::printf("partition: max flow %lld, saved = {%s}, recomputed in backward = {%s}\n",
              (long long)part.max_flow, saved.c_str(), recomputed.c_str());
  std::printf("setup (joint graph, partition, forward compile): %.1f ms\n", setup_ms);

  std::vector<Tensor> params = init_params(7);
  double first_loss = 0, last_loss = 0;
  bool ok = true;
  int64_t ctx_bytes = 0;
  auto train_start = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    std::vector<Tensor> inputs = {x};
    inputs.insert(inputs.end(), params.begin(), params.end());
    inputs.push_back(y);
    ForwardResult r = f.forward(inputs);
    ctx_bytes = r.ctx->saved_bytes();
    const double loss = r.outputs[0].item();
    if (step == 0) first_loss = loss;
    last_loss = loss;
    std::vector<Tensor> grads = f.backward(*r.ctx);
    if (step % print_every == 0 || step == steps - 1)
      std::printf("step %4d  loss %.6f\n", step, loss);
    // Checked before the update below changes the parameters in place.
    const bool checking = (strict && step == 0) || step == steps - 1;
    if (checking && !check_against_interpreter(f, inputs, r.outputs[0], grads,
                                               step == steps - 1 ? "final" : "first"))
      ok = false;
    // SGD, in place (the context released its references to the parameters in backward()).
    for (size_t i = 0; i < params.size(); ++i) {
      float* p = params[i].data<float>();
      std::vector<float> g = grads[i].to_vector<float>();
      for (size_t k = 0; k < g.size(); ++k) p[k] -= static_cast<float>(lr) * g[k];
    }
  }
  double train_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - train_start)
          .count();

  CompiledFunctionStats s = f.stats();
  std::printf(
      "memory per step: saved %lld bytes (%zu values; the context held %lld) vs "
      "save-all %lld bytes (%zu values the backward reads) vs every intermediate %lld "
      "bytes; saved primals (held by the caller) %lld bytes\n",
      (long long)s.saved_bytes, s.num_saved, (long long)ctx_bytes, (long long)s.save_all_bytes,
      s.num_save_all, (long long)s.all_intermediates_bytes, (long long)s.saved_primal_bytes);
  std::printf(
      "compilations: forward %d (%.1f ms), backward %d (%.1f ms, on the first backward); "
      "%d steps in %.1f ms\n",
      s.forward_compiles, s.forward_compile_ms, s.backward_compiles, s.backward_compile_ms, steps,
      train_ms);
  if (strict && !use_interp && (s.forward_compiles != 1 || s.backward_compiles != 1)) {
    std::printf("error: expected one forward and one backward compilation\n");
    ok = false;
  }
  const bool fell = steps < 2 || last_loss < first_loss;
  std::printf("loss %.6f -> %.6f (%s)\n", first_loss, last_loss,
              fell ? (steps < 2 ? "one step" : "fell") : "DID NOT FALL");
  return ok && fell ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  stax::install_ops();  // the engines' op tables (core/ops/install.h)
  CLI::App app{"Train a small MLP with SGD through Stax's compiled forward and backward",
               "stax_train_mlp"};
  int steps = 300;
  double lr = 0.1;
  int print_every = 25;
  std::string config;
  bool interpret = false, strict = false;
  app.add_option("--steps", steps, "SGD steps")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--lr", lr, "Learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--print-every", print_every, "Print the loss every N steps")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--config,-c", config, "Configuration (YAML); default configs/cpu.yaml")
      ->type_name("FILE");
  app.add_flag("--interpret", interpret, "Use the reference interpreter instead of compiling");
  app.add_flag("--check", strict,
               "Also check the first step against the interpreter and the compilation counts");
  CLI11_PARSE(app, argc, argv);
  try {
    return train(steps, lr, print_every, config, interpret, strict);
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
