// stax run GRAPH: runs a graph, on the reference interpreter (core/interpreter/interpreter.h) or, with
// --config / --compiled / --check, compiled by the configured backend (core/driver/compiler.h).
// Placeholders get their data from --input NAME=FILE.npy, or else seeded random data:
//   floating dtypes: standard normal (Tensor::randn); integer dtypes: uniform in [0, 10)
//   (Tensor::randint); bool: uniform in {false, true}. Every random input is drawn with the run's
//   --seed, the k-th one at Philox offset = the element count of the random inputs before it, so
//   the data is reproducible and independent of the other inputs' sources.
// Prints one line per input and per output ("NAME: float32(64,) min=... max=... mean=... [...]")
// and the wall time; --save DIR writes DIR/out0.npy, out1.npy ... in return order, and for each
// output that is an input's new value (`return (y, add_ -> x)`: an in-place op wrote input x,
// core/graph/functionalize.h) also DIR/x.npy, the updated input (through a temporary file and a
// rename; stale outputs of an earlier run are removed: save_outputs.h).
//
// Compiled mode: --config FILE (or --compiled for the default config, configs/cpu.yaml; --device KIND
// runs the graph on the config's device KIND, as default_device would) compiles
// the graph first and prints the compile summary (kernels, fallbacks, compile ms per kernel).
// --check (implies compiled mode) also runs the interpreter on the same inputs and prints, per
// output, the max abs / max rel difference and whether the two are bit-identical. An output that
// is a reduction (sum, mean) or a matrix product (mm, bmm, addmm, matmul) passes within the §6.5
// bound of a sum in any order (docs/backend_guide.md): per element
//     |c - r| <= 2 (n-1) u Σ|a_i| + 2 u_s |r|
// with n the number of terms, u the unit roundoff of the computation type, u_s that of the
// output's storage type and Σ|a_i| from the interpreter on |operands| (a second, small run).
// Any other output passes when |c - r| <= atol * max(1, max|r|) + rtol * |r| (r the
// interpreter's value, max|r| over the output), with
//     float64 (rtol 1e-12, atol 1e-14)   float32 (1e-5, 1e-6)
//     float16 (2e-3, 1e-3)                bfloat16 (1.6e-2, 1e-2)    integers, bool: exact.
// NaN matches NaN and infinities match exactly. Exit status 1 when an output fails.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <unordered_map>

#include "core/driver/compiler.h"
#include "core/interpreter/interpreter.h"
#include "core/tensor/npy.h"
#include "core/support/error.h"
#include "stax/conformance/compare.h"
#include "tools/stax/command.h"
#include "tools/stax/compile_support.h"
#include "tools/stax/save_outputs.h"

namespace stax::cli {

namespace {

struct RunOptions {
  std::string graph;
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  uint64_t seed = 0;
  std::string save;
  std::string config;
  std::string device;  // --device
  bool compiled = false;
  bool check = false;
};

struct Tolerance {
  double rtol, atol;
};

Tolerance tolerance_for(DType d) {
  switch (d) {
    case DType::Float64: return {1e-12, 1e-14};
    case DType::Float32: return {1e-5, 1e-6};
    case DType::Float16: return {2e-3, 1e-3};
    case DType::BFloat16: return {1.6e-2, 1e-2};
    default: return {0, 0};
  }
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// The §6.5 error model of one output: Σ|a_i| per element and the number of terms n, for an
// output computed by a sum / mean over its operands or a matrix product; null for other outputs.
struct SumBound {
  Tensor abs_sum;
  int64_t terms = 0;
};

// The number of terms of each element of `n` when it is a sum-like op, else 0.
int64_t terms_of(const Node& n) {
  const std::string& t = n.target();
  const bool sum = t == "sum.default" || t == "sum.dim_IntList" || t == "mean.default" ||
                   t == "mean.dim";
  const bool product = t == "mm.default" || t == "bmm.default" || t == "matmul.default" ||
                       t == "addmm.default";
  if (!sum && !product) return 0;
  const bool addmm = t == "addmm.default";
  const Node& a = *n.input(addmm ? 1 : 0);
  if (sum)
    return n.meta().numel() == 0 ? 0 : a.meta().numel() / std::max<int64_t>(1, n.meta().numel());
  // k products summed: k roundings of products and k-1 of sums, within the bound for n = k + 1
  return a.shape().empty() ? 0 : a.shape().back() + (addmm ? 2 : 1);
}

// For every output of g that is sum-like (terms_of > 0): the same op on the absolute values of its
// tensor operands, run by the interpreter on `inputs` (one run for all of them).
std::vector<SumBound> sum_bounds(const Graph& g, const std::vector<Tensor>& inputs, uint64_t seed) {
  std::vector<Node*> outs = g.outputs();
  std::vector<SumBound> bounds(outs.size());
  std::unordered_map<const Node*, Node*> map;
  Graph h = g.clone(&map);
  std::vector<Node*> mags;
  std::vector<size_t> which;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i]->is_call() || !is_floating(outs[i]->dtype()) || terms_of(*outs[i]) == 0)
      continue;
    const Node& n = *map.at(outs[i]);
    std::vector<Arg> args = n.args();
    for (Arg& a : args)
      if (a.is_node()) a = Arg(h.call("abs", {a.node()}));
    mags.push_back(h.call(n.target(), args, n.kwargs()));
    which.push_back(i);
  }
  if (mags.empty()) return bounds;
  h.output(mags);
  InterpreterOptions io;
  io.seed = seed;
  std::vector<Tensor> got = interpret(h, inputs, io);
  for (size_t k = 0; k < which.size(); ++k)
    bounds[which[k]] = {got[k], terms_of(*outs[which[k]])};
  return bounds;
}

// Compares a compiled output with the interpreter's; prints one line; returns whether it passes.
bool check_output(size_t i, const std::string& name, const Tensor& got, const Tensor& want,
                  const SumBound& sum) {
  std::cout << "check out" << i << " " << name << ": ";
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype()) {
    std::cout << "FAIL: compiled " << dtype_name(got.dtype()) << shape_str(got.sizes())
              << ", interpreter " << dtype_name(want.dtype()) << shape_str(want.sizes()) << "\n";
    return false;
  }
  const bool bounded = sum.terms > 0 && is_floating(want.dtype());
  std::vector<double> bound;
  if (bounded) bound = conformance::reduction_bound(want, sum.abs_sum, sum.terms);
  Tolerance tol = tolerance_for(want.dtype());
  double max_ref = 0;
  for (int64_t k = 0; k < want.numel(); ++k)
    if (std::isfinite(want.get_double(k))) max_ref = std::max(max_ref, std::fabs(want.get_double(k)));
  double max_abs = 0, max_rel = 0;
  int64_t bad = 0;
  for (int64_t k = 0; k < want.numel(); ++k) {
    double c = got.get_double(k), r = want.get_double(k);
    if (std::isnan(c) || std::isnan(r) || std::isinf(c) || std::isinf(r)) {
      if (!(std::isnan(c) && std::isnan(r)) && c != r) ++bad;
      continue;
    }
    double d = std::fabs(c - r);
    max_abs = std::max(max_abs, d);
    if (r != 0) max_rel = std::max(max_rel, d / std::fabs(r));
    double allowed = bounded ? bound[static_cast<size_t>(k)]
                             : tol.atol * std::max(1.0, max_ref) + tol.rtol * std::fabs(r);
    if (d > allowed) ++bad;
  }
  std::string criterion = bounded ? "the §6.5 bound 2(n-1)u*sum|a_i| + 2u_s|r|, n = " +
                                        std::to_string(sum.terms)
                                  : "rtol " + number(tol.rtol) + ", atol " + number(tol.atol);
  std::cout << "max abs diff " << number(max_abs) << ", max rel diff " << number(max_rel)
            << ", bit-identical " << (got.equal(want) ? "yes" : "no") << ": ";
  if (bad == 0) {
    std::cout << "ok";
    if (is_floating(want.dtype())) std::cout << " (" << criterion << ")";
    std::cout << "\n";
    return true;
  }
  std::cout << "FAIL (" << bad << " of " << want.numel() << " elements outside " << criterion
            << ")\n";
  return false;
}

Tensor random_input(const TensorMeta& m, uint64_t seed, uint64_t offset) {
  if (is_floating(m.dtype)) return Tensor::randn(m.sizes, m.dtype, seed, offset);
  if (is_bool(m.dtype)) return Tensor::randint(m.sizes, 0, 2, m.dtype, seed, offset);
  return Tensor::randint(m.sizes, 0, 10, m.dtype, seed, offset);
}

// The graph's inputs: --input NAME=FILE.npy, else random values (seeded, each placeholder its own
// stretch of the stream); one line each.
std::vector<Tensor> read_inputs(const Graph& g, const RunOptions& o) {
  std::map<std::string, std::string> files;
  for (const auto& spec : o.inputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw Error("cli", "--input " + spec, "expected NAME=FILE.npy");
    std::string name = spec.substr(0, eq);
    Node* n = g.find(name);
    if (!n || !n->is_placeholder()) {
      std::string names;
      for (const Node* p : g.placeholders()) names += (names.empty() ? "" : ", ") + p->name();
      throw Error(
          "cli", "--input " + spec,
          "the graph has no placeholder named '" + name + "' (placeholders: " + names + ")");
    }
    if (!files.emplace(name, spec.substr(eq + 1)).second)
      throw Error("cli", "--input " + spec, "'" + name + "' is given twice");
  }
  std::vector<Tensor> inputs;
  uint64_t offset = 0;
  for (const Node* p : g.placeholders()) {
    auto it = files.find(p->name());
    if (it != files.end()) {
      inputs.push_back(load_npy(it->second));
      std::cout << "input " << p->name() << " (" << it->second << "): " << inputs.back().summary()
                << "\n";
    } else {
      try {
        inputs.push_back(random_input(p->meta(), o.seed, offset));
      } catch (const Error& e) {  // e.g. out of memory: name the placeholder
        if (!e.location().empty()) throw;
        throw Error("cli", "%" + p->name(), "random input: " + e.message());
      }
      offset += static_cast<uint64_t>(p->meta().numel());
      std::cout << "input " << p->name() << " (random, seed " << o.seed
                << "): " << inputs.back().summary() << "\n";
    }
  }
  return inputs;
}

std::string ms_text(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return std::string(buf);
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// --check: each output against the reference interpreter's (§6.5's bound for sum-like ones);
// false when one disagrees.
bool check_outputs(const Graph& g, const std::vector<Tensor>& inputs, const RunOptions& o,
                   const std::vector<Tensor>& outputs,
                   const std::function<std::string(size_t)>& name_of) {
  InterpreterOptions io;
  io.seed = o.seed;
  auto t = std::chrono::steady_clock::now();
  std::vector<Tensor> want = interpret(g, inputs, io);
  double ref_ms = ms_since(t);
  std::cout << "wall time: " << ms_text(ref_ms) << " ms (reference interpreter, for --check)\n";
  std::vector<SumBound> bounds = sum_bounds(g, inputs, o.seed);
  size_t failed = 0;
  for (size_t i = 0; i < outputs.size() && i < want.size(); ++i)
    if (!check_output(i, name_of(i), outputs[i], want[i], bounds[i])) ++failed;
  if (failed == 0) {
    std::cout << "check: all " << outputs.size()
              << " output(s) agree with the reference interpreter\n";
    return true;
  }
  std::cout << "check: " << failed << " of " << outputs.size()
            << " output(s) disagree with the reference interpreter\n";
  return false;
}

int run(const RunOptions& o) {
  Graph g = load_graph(o.graph, o.shapes, o.inputs);
  std::vector<Tensor> inputs = read_inputs(g, o);
  std::vector<Node*> returned = g.outputs();
  const std::vector<std::string> updates = g.output_updates();
  auto name_of = [&](size_t i) {
    std::string n = i < returned.size() && returned[i] ? returned[i]->name() : std::string("?");
    return i < updates.size() && !updates[i].empty() ? n + " -> " + updates[i] : n;
  };
  const bool compiled = o.compiled || o.check || !o.config.empty() || !o.device.empty();
  std::vector<Tensor> outputs;
  double ms = 0;
  int status = 0;
  if (!compiled) {
    InterpreterOptions options;
    options.seed = o.seed;
    auto start = std::chrono::steady_clock::now();
    outputs = interpret(g, inputs, options);
    ms = ms_since(start);
    for (size_t i = 0; i < outputs.size(); ++i)
      std::cout << "out" << i << " " << name_of(i) << ": " << outputs[i].summary() << "\n";
    std::cout << "wall time: " << ms_text(ms) << " ms (reference interpreter)\n";
  } else {
    Config config = load_cli_config(o.config);
    apply_device_option(config, o.device);
    Compiler compiler(std::move(config));
    CompiledGraph cg = compiler.compile(g);
    std::cout << "compiled: " << cg.summary() << "\n";
    GraphRunOptions options;
    options.seed = o.seed;
    auto start = std::chrono::steady_clock::now();
    outputs = cg.run(inputs, options);
    ms = ms_since(start);
    for (size_t i = 0; i < outputs.size(); ++i)
      std::cout << "out" << i << " " << name_of(i) << ": " << outputs[i].summary() << "\n";
    std::cout << "wall time: " << ms_text(ms) << " ms (compiled, backend " << cg.backend_name()
              << ")\n";
    if (o.check && !check_outputs(g, inputs, o, outputs, name_of)) status = 1;
  }
  if (!o.save.empty()) {
    std::vector<std::pair<std::string, Tensor>> files;
    for (size_t i = 0; i < outputs.size(); ++i)
      files.emplace_back("out" + std::to_string(i) + ".npy", outputs[i]);
    for (size_t i = 0; i < outputs.size() && i < updates.size(); ++i)
      if (!updates[i].empty()) files.emplace_back(updates[i] + ".npy", outputs[i]);
    std::vector<std::string> removed = save_outputs(o.save, files);
    std::cout << saved_summary(std::to_string(outputs.size()) + " output(s)", o.save, removed)
              << "\n";
  }
  return status;
}

}  // namespace

Subcommand make_run_command(CLI::App& parent) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* sub = parent.add_subcommand(
      "run", "Run a graph (.stax) on the reference interpreter, or compiled (--config, --check)");
  sub->add_option("graph", opts->graph, "Graph text file (.stax)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--input,-i", opts->inputs,
                  "Data of a placeholder as NAME=FILE.npy (repeatable); placeholders without one "
                  "get seeded random data (normal for floats, [0, 10) for ints)")
      ->type_name("NAME=FILE");
  add_shape_option(*sub, opts->shapes);
  add_seed_option(*sub, opts->seed, "Seed of the random inputs and random ops")
      ->capture_default_str();
  sub->add_option("--save", opts->save, "Write the outputs to DIR/out0.npy, DIR/out1.npy, ...")
      ->type_name("DIR");
  sub->add_option("--config,-c", opts->config,
                  "Compile with the backends of this YAML config and run the compiled graph")
      ->type_name("FILE");
  add_device_option(*sub, opts->device);
  sub->add_flag("--compiled", opts->compiled,
                "Compile and run with the default config (" + default_config_path() + ")");
  sub->add_flag("--check", opts->check,
                "Run compiled and on the interpreter; compare every output (max abs / rel "
                "difference) and fail beyond the documented tolerance");
  return {sub, [opts] { return run(*opts); }};
}

}  // namespace stax::cli
