// stax grad GRAPH --wrt NAME[,NAME]: reverse-mode gradients of a forward graph, compiled
// (seed §5.3-5.6).
//
// Prints, in order:
//   1. the joint graph in the style of seed Listing 5.2 ([FW] / [BW] prefixes);
//   2. the partitioner's report: the rematerialization network of Definition 5.2 with every
//      capacity (Table 5.1), every edge with its flow, the max flow, the cut, the saved set;
//   3. the forward graph (primals -> outputs, saved values) and the backward graph (saved primals,
//      saved values, tangents -> gradients), in canonical text;
//   4. the run: inputs, outputs and gradients computed by CompiledFunction
//      (core/driver/compiled_function.h: forward compiled, backward compiled on its first call),
//      or by the reference interpreter with --interpret, plus memory and compile-time stats.
// --dump adds stages of the compiled forward and backward graphs, as `stax compile --dump`
// shows them: graph (after decomposition), loop_ir, kernels; `all` is every stage.
//
// Inputs: --input NAME=FILE.npy for forward placeholders and for the upstream gradients
// tangents_1, tangents_2, ... (one per differentiable output, in output order); forward
// placeholders without a file get seeded random data exactly as `stax run` draws it, upstream
// gradients default to ones. --save DIR writes DIR/out0.npy, ... and DIR/grad_NAME.npy per --wrt
// name, and DIR/x.npy for an output that is input x's new value (written by an in-place op,
// core/graph/functionalize.h; it has no upstream gradient). --check compares everything with the joint graph run by the reference interpreter.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "core/graph/printer.h"
#include "core/partition/partitioner.h"
#include "core/driver/compiled_function.h"
#include "core/tensor/npy.h"
#include "core/support/atomic_file.h"
#include "core/support/error.h"
#include "tools/stax/command.h"
#include "tools/stax/compile_support.h"
#include "tools/stax/save_outputs.h"

namespace stax::cli {

namespace {

namespace fs = std::filesystem;

struct GradOptions {
  std::string graph;
  std::vector<std::string> wrt;
  std::string config;
  std::string device;  // --device
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  uint64_t seed = 0;
  std::string save;
  std::vector<std::string> dump;
  std::string dot;
  int64_t budget = -1;
  std::string algorithm = "dinic";
  bool interpret = false;
  bool check = false;
};

const std::vector<std::string>& dump_stages() {
  static const std::vector<std::string> stages = {"graph", "joint", "partition", "loop_ir",
                                                  "kernels"};
  return stages;
}

// `stax run`'s recipe for random inputs (cmd_run.cpp), so both tools see the same data per seed.
Tensor random_input(const TensorMeta& m, uint64_t seed, uint64_t offset) {
  if (is_floating(m.dtype)) return Tensor::randn(m.sizes, m.dtype, seed, offset);
  if (is_bool(m.dtype)) return Tensor::randint(m.sizes, 0, 2, m.dtype, seed, offset);
  return Tensor::randint(m.sizes, 0, 10, m.dtype, seed, offset);
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// --check's bound on |compiled - reference|: atol + rtol |reference| elementwise, NaN matching
// NaN. kGradientRtol / kGradientAtol (reordered float32 sums), widened for the half types to
// what one rounding of their storage allows (`stax run --check`'s tolerances).
struct GradTolerance {
  double rtol, atol;
  std::string text(DType d) const {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%g + %g |ref| (%s)", atol, rtol, std::string(dtype_name(d)).c_str());
    return buf;
  }
};

GradTolerance grad_tolerance(DType d) {
  switch (d) {
    case DType::BFloat16: return {1.6e-2, 1e-2};
    case DType::Float16: return {2e-3, 1e-3};
    default: return {kGradientRtol, kGradientAtol};
  }
}

partition::FlowAlgorithm parse_algorithm(const std::string& name) {
  for (auto a : {partition::FlowAlgorithm::kDinic, partition::FlowAlgorithm::kEdmondsKarp})
    if (partition::algorithm_name(a) == name) return a;
  throw Error("cli", "--algorithm " + name, "expected dinic or edmonds-karp");
}

void print_section(const std::string& title) { std::cout << "== " << title << " ==\n"; }

// Largest |a - b| over the elements (as double); 0 for non-floating or empty tensors.
double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

std::string names_of(const std::vector<Node*>& nodes) {
  std::vector<std::string> names;
  for (const Node* p : nodes) names.push_back(p->name());
  return join(names);
}

// --wrt: comma lists, each name a placeholder of the graph.
std::vector<std::string> parse_wrt(const Graph& g, const GradOptions& o) {
  std::vector<std::string> wrt;
  for (const std::string& spec : o.wrt) {
    std::stringstream ss(spec);
    for (std::string name; std::getline(ss, name, ',');) {
      if (name.empty()) continue;
      const Node* n = g.find(name);
      if (!n || !n->is_placeholder())
        throw Error("cli", "--wrt " + name,
                    "the graph has no placeholder named '" + name +
                        "' (placeholders: " + names_of(g.placeholders()) + ")");
      wrt.push_back(name);
    }
  }
  if (wrt.empty()) throw Error("cli", "--wrt", "no placeholder named");
  return wrt;
}

// --dump: the stages asked for ("all": every one).
std::set<std::string> parse_dump(const GradOptions& o) {
  std::set<std::string> wanted(o.dump.begin(), o.dump.end());
  if (wanted.erase("all")) wanted.insert(dump_stages().begin(), dump_stages().end());
  for (const std::string& s : wanted)
    if (std::find(dump_stages().begin(), dump_stages().end(), s) == dump_stages().end())
      throw Error("cli", "--dump " + s,
                  "unknown stage (expected a comma list of: " + join(dump_stages()) + ", or all)");
  return wanted;
}

// --input files, checked before anything is printed: NAME -> FILE for forward placeholders and
// tangents.
std::map<std::string, std::string> parse_input_files(const GradOptions& o, const Graph& g,
                                                     const JointGraph& joint) {
  std::map<std::string, std::string> files;
  for (const auto& spec : o.inputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw Error("cli", "--input " + spec, "expected NAME=FILE.npy");
    std::string name = spec.substr(0, eq);
    bool known = std::count(joint.tangents.begin(), joint.tangents.end(), name) > 0;
    for (const Node* p : g.placeholders()) known = known || p->name() == name;
    if (!known)
      throw Error("cli", "--input " + spec,
                  "no placeholder or upstream gradient named '" + name + "' (placeholders: " +
                      names_of(g.placeholders()) + "; upstream gradients: " +
                      join(joint.tangents) + ")");
    if (!files.emplace(name, spec.substr(eq + 1)).second)
      throw Error("cli", "--input " + spec, "'" + name + "' is given twice");
  }
  return files;
}

// The joint graph, the network and its cut, the forward and backward graphs (and --dot).
void print_partition(const GradOptions& o, const JointGraph& joint,
                     const partition::PartitionResult& part) {
  print_section("joint graph (Listing 5.2 style)");
  std::cout << print_graph(joint.graph, PrintOptions::listing52());
  print_section("rematerialization network (Definition 5.2, Table 5.1) and min cut");
  std::cout << partition::format_partition_report(part);
  std::cout << "summary: max flow "
            << (part.save_all_fallback ? std::string("infinite (save-all fallback)")
                                       : std::to_string(part.max_flow))
            << ", saved = {" << join(part.saved) << "} (" << part.saved_bytes
            << " bytes), recomputed = {" << join(part.recomputed) << "}\n";
  print_section("forward graph (primals -> outputs..., saved...)");
  std::cout << print_graph(part.forward);
  print_section("backward graph (saved primals..., saved..., tangents... -> gradients)");
  std::cout << print_graph(part.backward);
  if (!o.dot.empty()) {
    write_file_atomically(o.dot, partition::partition_to_dot(part), "cli");
    std::cout << "wrote the network and its cut (Graphviz DOT) to " << o.dot << "\n";
  }
}

// The forward inputs: a --input file, else random values (seeded, each placeholder its own
// stretch of the stream).
std::vector<Tensor> forward_inputs(const GradOptions& o, const Graph& g,
                                   const std::map<std::string, std::string>& files) {
  std::vector<Tensor> inputs;
  uint64_t offset = 0;
  for (const Node* p : g.placeholders()) {
    auto it = files.find(p->name());
    if (it != files.end()) {
      inputs.push_back(load_npy(it->second));
      std::cout << "input " << p->name() << " (" << it->second << "): ";
    } else {
      inputs.push_back(random_input(p->meta(), o.seed, offset));
      offset += static_cast<uint64_t>(p->meta().numel());
      std::cout << "input " << p->name() << " (random, seed " << o.seed << "): ";
    }
    std::cout << inputs.back().summary() << "\n";
  }
  return inputs;
}

// The upstream gradient of each returned value with a tangent: a --input file, else ones.
std::vector<Tensor> upstream_gradients(const Graph& g, const JointGraph& joint,
                                       const std::map<std::string, std::string>& files) {
  std::vector<Node*> returned = g.outputs();
  std::vector<Tensor> upstream(returned.size());
  for (size_t k = 0; k < returned.size(); ++k) {
    int ti = joint.output_tangent[k];
    if (ti < 0) continue;
    const std::string& name = joint.tangents[static_cast<size_t>(ti)];
    auto it = files.find(name);
    if (it != files.end()) {
      upstream[k] = load_npy(it->second);
      std::cout << "upstream " << name << " (" << it->second << "): ";
    } else {
      upstream[k] = Tensor::ones(returned[k]->shape(), returned[k]->dtype());
      std::cout << "upstream " << name << " (ones): ";
    }
    std::cout << upstream[k].summary() << "\n";
  }
  return upstream;
}

// --dump graph / loop_ir / kernels of the compiled forward and backward.
void print_dumps(const std::set<std::string>& wanted, const CompiledFunction& f) {
  for (const char* stage : {"graph", "loop_ir", "kernels"}) {
    if (!wanted.count(stage)) continue;
    for (const auto& [label, cg] : {std::pair{"forward", f.compiled_forward()},
                                    std::pair{"backward", f.compiled_backward()}}) {
      if (!cg) continue;
      print_section(std::string(stage) + " (" + label + ")");
      if (std::string(stage) == "graph") {
        std::cout << print_graph(cg->graph());
      } else if (std::string(stage) == "loop_ir") {
        std::cout << cg->loop_ir();
      } else {
        for (const CompiledKernelInfo& k : cg->kernels())
          std::cout << "// " << k.name << " (" << k.buffer << ")\n"
                    << displayed_kernel_source(k.source) << "\n";
      }
    }
  }
}

// --check: outputs and gradients against the interpreter's joint graph; false on a mismatch.
bool check_against_reference(CompiledFunction& f, const std::vector<Tensor>& inputs,
                             const std::vector<Tensor>& upstream, const ForwardResult& fr,
                             const std::vector<Tensor>& grads) {
  std::vector<Tensor> ref = f.reference(inputs, upstream);
  std::vector<Tensor> got = fr.outputs;
  got.insert(got.end(), grads.begin(), grads.end());
  double worst = 0;
  bool ok = ref.size() == got.size();
  std::set<std::string> bounds;
  for (size_t i = 0; ok && i < ref.size(); ++i) {
    worst = std::max(worst, max_abs_diff(got[i], ref[i]));
    const GradTolerance t = grad_tolerance(ref[i].dtype());
    ok = got[i].dtype() == ref[i].dtype() &&
         got[i].allclose(ref[i], t.rtol, t.atol, /*equal_nan=*/true);
    bounds.insert(t.text(ref[i].dtype()));
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", worst);
  std::cout << "check against the interpreter's joint graph: " << (ok ? "ok" : "MISMATCH")
            << " (max |diff| " << buf << ", bound "
            << join(std::vector<std::string>(bounds.begin(), bounds.end()), "; ")
            << "; NaN matches NaN)\n";
  return ok;
}

// --save DIR: outN.npy, NAME.npy of each written input, grad_NAME.npy.
void save_results(const GradOptions& o, const std::vector<std::string>& updates,
                  const std::vector<std::string>& wrt, const ForwardResult& fr,
                  const std::vector<Tensor>& grads) {
  std::vector<std::pair<std::string, Tensor>> files;
  for (size_t i = 0; i < fr.outputs.size(); ++i)
    files.emplace_back("out" + std::to_string(i) + ".npy", fr.outputs[i]);
  for (size_t i = 0; i < fr.outputs.size() && i < updates.size(); ++i)
    if (!updates[i].empty()) files.emplace_back(updates[i] + ".npy", fr.outputs[i]);
  for (size_t i = 0; i < grads.size(); ++i)
    files.emplace_back("grad_" + wrt[i] + ".npy", grads[i]);
  std::vector<std::string> removed = save_outputs(o.save, files);
  std::cout << saved_summary(std::to_string(fr.outputs.size()) + " output(s) and " +
                                 std::to_string(grads.size()) + " gradient(s)",
                             o.save, removed)
            << "\n";
}

int run(const GradOptions& o) {
  Graph g = load_graph(o.graph, o.shapes, o.inputs);
  const std::vector<std::string> wrt = parse_wrt(g, o);
  const std::set<std::string> wanted = parse_dump(o);

  CompiledFunctionOptions options;
  options.partition.algorithm = parse_algorithm(o.algorithm);
  if (o.budget >= 0) options.partition.memory_budget = o.budget;
  options.interpret = o.interpret;
  options.seed = o.seed;
  Config config = o.interpret ? Config::default_cpu() : load_cli_config(o.config);
  if (!o.interpret) apply_device_option(config, o.device);

  CompiledFunction f(g, wrt, std::move(config), options);
  const JointGraph& joint = f.joint();
  const std::map<std::string, std::string> files = parse_input_files(o, g, joint);
  print_partition(o, joint, f.partition());

  print_section(o.interpret ? "run (reference interpreter)" : "run (compiled)");
  std::vector<Tensor> inputs = forward_inputs(o, g, files);
  std::vector<Tensor> upstream = upstream_gradients(g, joint, files);
  std::vector<Node*> returned = g.outputs();
  const std::vector<std::string> updates = g.output_updates();
  auto label = [&](size_t i) {
    return i < updates.size() && !updates[i].empty() ? returned[i]->name() + " -> " + updates[i]
                                                     : returned[i]->name();
  };

  ForwardResult fr = f.forward(inputs);
  if (const CompiledGraph* cg = f.compiled_forward())
    std::cout << "forward: " << cg->summary() << "\n";
  for (size_t i = 0; i < fr.outputs.size(); ++i)
    std::cout << "out" << i << " " << label(i) << ": " << fr.outputs[i].summary() << "\n";
  std::vector<Tensor> grads = f.backward(*fr.ctx, upstream);
  if (const CompiledGraph* cg = f.compiled_backward())
    std::cout << "backward: " << cg->summary() << "\n";
  for (size_t i = 0; i < grads.size(); ++i)
    std::cout << "grad " << wrt[i] << ": " << grads[i].summary() << "\n";
  std::cout << "stats: " << f.stats_str() << "\n";
  print_dumps(wanted, f);

  int code = 0;
  if (o.check && !check_against_reference(f, inputs, upstream, fr, grads)) code = 1;
  if (!o.save.empty()) save_results(o, updates, wrt, fr, grads);
  return code;
}

}  // namespace

Subcommand make_grad_command(CLI::App& parent) {
  auto opts = std::make_shared<GradOptions>();
  CLI::App* sub = parent.add_subcommand(
      "grad",
      "Gradients of a graph (.stax): joint graph, min-cut partition, compiled forward and "
      "backward (seed §5.3-5.6)");
  sub->add_option("graph", opts->graph, "Forward graph text file (.stax)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--wrt", opts->wrt, "Placeholders to differentiate with respect to")
      ->required()
      ->delimiter(',')
      ->type_name("NAME[,NAME]");
  add_config_option(*sub, opts->config);
  add_device_option(*sub, opts->device);
  sub->add_option("--input,-i", opts->inputs,
                  "Data of a placeholder or of an upstream gradient (tangents_N) as NAME=FILE.npy "
                  "(repeatable); placeholders default to seeded random data as in `stax run`, "
                  "upstream gradients to ones")
      ->type_name("NAME=FILE");
  add_shape_option(*sub, opts->shapes);
  add_seed_option(*sub, opts->seed, "Seed of the random inputs and random ops")
      ->capture_default_str();
  sub->add_option("--save", opts->save,
                  "Write DIR/out0.npy, ... and DIR/grad_NAME.npy per --wrt name")
      ->type_name("DIR");
  sub->add_option("--dump", opts->dump,
                  "Extra stages to print: graph, loop_ir, kernels, or all (joint and partition "
                  "are always printed)")
      ->delimiter(',')
      ->type_name("STAGES");
  sub->add_option("--dot", opts->dot, "Write the network and its cut as Graphviz DOT")
      ->type_name("FILE");
  sub->add_option("--budget", opts->budget,
                  "Memory budget: most bytes of saved values (partitioner memory_budget)")
      ->type_name("BYTES")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--algorithm", opts->algorithm, "Max-flow algorithm")
      ->check(CLI::IsMember({"dinic", "edmonds-karp"}))
      ->capture_default_str();
  sub->add_flag("--interpret", opts->interpret,
                "Run forward and backward on the reference interpreter instead of compiling");
  sub->add_flag("--check", opts->check,
                "Compare outputs and gradients with the joint graph on the reference "
                "interpreter (exit 1 on a mismatch)");
  return {sub, [opts] { return run(*opts); }};
}

}  // namespace stax::cli
