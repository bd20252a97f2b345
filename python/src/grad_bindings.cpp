#include "python/src/grad_bindings.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <utility>

#include "core/driver/compiled_function.h"
#include "core/support/error.h"
#include "python/src/compiler_bindings.h"
#include "python/src/graph_bindings.h"
#include "python/src/interruptible.h"
#include "python/src/tensor_interop.h"

namespace stax::python {

namespace {

// What a Python CompiledFunction and its ForwardResults share.
struct GradState {
  std::shared_ptr<Compiler> compiler;  // null on the interpreter path
  std::shared_ptr<CancellationToken> cancel = std::make_shared<CancellationToken>();
  std::unique_ptr<CompiledFunction> fn;
  std::vector<std::string> input_names;  // the forward's placeholders
};

struct PyCompiledFunction {
  std::shared_ptr<GradState> state;
};

// The result of one forward: outputs, and what the backward needs.
struct PyForwardResult {
  std::shared_ptr<GradState> state;
  std::shared_ptr<BackwardContext> ctx;
  nb::object outputs;  // a tuple, in the inputs' framework
  OutputKind kind = OutputKind::Stax;
};

PyForwardResult forward(const PyCompiledFunction& self, nb::args inputs,
                        std::optional<uint64_t> seed) {
  GradState& s = *self.state;
  OutputKind kind = OutputKind::Stax;
  std::vector<Tensor> in = import_tensors(inputs, s.input_names, &kind);
  ForwardResult r;
  {
    nb::gil_scoped_release release;
    r = s.fn->forward(in, seed);
  }
  return PyForwardResult{self.state, std::move(r.ctx),
                         export_tensors(std::move(r.outputs), kind, false), kind};
}

// One upstream gradient per forward output (None: zeros), or none at all (ones).
std::vector<Tensor> upstream(const GradState& s, nb::handle grad_outputs) {
  std::vector<Tensor> out;
  size_t i = 0;
  for (nb::handle g : grad_outputs) {
    std::string what = "upstream gradient " + std::to_string(i++);
    out.push_back(g.is_none() ? Tensor() : import_tensor(g, what));
  }
  if (!out.empty() && out.size() != s.fn->num_outputs())
    throw Error("input", "backward",
                "expected one upstream gradient per forward output (" +
                    std::to_string(s.fn->num_outputs()) + ") or none, got " +
                    std::to_string(out.size()));
  return out;
}

nb::object backward(PyForwardResult& self, nb::args grad_outputs, bool retain_graph) {
  GradState& s = *self.state;
  std::vector<Tensor> g = upstream(s, grad_outputs);
  BackwardOptions options;
  options.retain_graph = retain_graph;
  if (!s.fn->interpreted() && !s.fn->backward_compiled()) {
    // The first backward compiles the backward graph: Ctrl-C cancels it. Only the compile runs
    // on run_interruptible's helper thread; the kernels run below, on this thread. A kernel run
    // on the helper would open a parallel region of torch's OpenMP runtime on a thread that has
    // no team: the runtime starts a second team (new OS threads) for it, as wide as the runtime's
    // default rather than torch.set_num_threads(), spinning against torch's team while it lives
    // (docs/torch_backend.md "Threads").
    s.cancel->reset();
    run_interruptible(*s.cancel, [&] { s.fn->compile_backward(); });
  }
  std::vector<Tensor> grads;
  {
    nb::gil_scoped_release release;
    grads = s.fn->backward(*self.ctx, g, options);
  }
  return export_tensors(std::move(grads), self.kind, false);
}

nb::dict budget_dict(const partition::BudgetReport& b) {
  nb::dict d;
  d["budget"] = b.budget;
  d["outcome"] = std::string(partition::budget_outcome_name(b.outcome));
  d["min_cut_bytes"] = b.min_cut_bytes;
  d["min_bytes"] = b.min_bytes;
  d["chosen_bytes"] = b.chosen_bytes;
  d["chosen_cost"] = b.chosen_cost;
  d["alpha"] = b.alpha;
  d["solves"] = b.solves;
  return d;
}

nb::dict stats_dict(const CompiledFunctionStats& s) {
  nb::dict d;
  d["forward_compiles"] = s.forward_compiles;
  d["backward_compiles"] = s.backward_compiles;
  d["forward_calls"] = s.forward_calls;
  d["backward_calls"] = s.backward_calls;
  d["joint_ms"] = s.joint_ms;
  d["partition_ms"] = s.partition_ms;
  d["forward_compile_ms"] = s.forward_compile_ms;
  d["backward_compile_ms"] = s.backward_compile_ms;
  d["backward_with_forward"] = s.backward_with_forward;
  d["saved_bytes"] = s.saved_bytes;
  d["saved_primal_bytes"] = s.saved_primal_bytes;
  d["save_all_bytes"] = s.save_all_bytes;
  d["all_intermediates_bytes"] = s.all_intermediates_bytes;
  d["num_saved"] = s.num_saved;
  d["num_save_all"] = s.num_save_all;
  d["num_recomputed"] = s.num_recomputed;
  return d;
}

// One row per forward value of the partition (Table 5.1's columns and the decision).
nb::list partition_values(const partition::PartitionResult& p) {
  auto contains = [](const std::vector<std::string>& v, const std::string& x) {
    for (const std::string& s : v)
      if (s == x) return true;
    return false;
  };
  nb::list rows;
  for (const partition::ValueInfo& v : p.analysis.values) {
    const std::string& name = v.node->name();
    nb::dict row;
    row["name"] = name;
    row["primal"] = v.is_primal;
    row["bytes"] = v.bytes;
    row["distance"] = v.distance;
    row["beta"] = v.beta();
    row["capacity"] = v.capacity;
    row["in_backward"] = v.in_b;
    row["must_recompute"] = v.must_recompute;
    row["saved"] = contains(p.saved, name) || contains(p.saved_primals, name);
    row["recomputed"] = contains(p.recomputed, name);
    rows.append(row);
  }
  return rows;
}

std::shared_ptr<const void> keep_of(const PyCompiledFunction& self) { return self.state; }

void bind_forward_result(nb::module_& m) {
  nb::class_<PyForwardResult>(m, "ForwardResult",
                              "One forward of a CompiledFunction: its outputs, and the values "
                              "saved for backward().")
      .def_prop_ro(
          "outputs", [](const PyForwardResult& r) { return r.outputs; },
          "The forward outputs, a tuple in the inputs' framework (empty after take_outputs()).")
      .def(
          "take_outputs",
          [](PyForwardResult& r) {
            nb::object out = r.outputs;
            r.outputs = nb::tuple();
            return out;
          },
          "The forward outputs, which the ForwardResult then no longer references: a "
          "torch.autograd.Function that keeps the ForwardResult on its ctx must not keep its "
          "outputs too (each output's grad_fn is that ctx: a reference cycle the garbage "
          "collector cannot see through this object, so every step's outputs and saved values "
          "would stay alive).")
      .def("backward", &backward, nb::arg("grad_outputs"), nb::arg("retain_graph") = false,
           "backward(*grad_outputs, retain_graph=False): the gradients, one per `wrt` name, in "
           "that order (a tuple in the inputs' framework). No grad_outputs: ones for every "
           "differentiable output (loss.backward()); None for an output: zeros. The saved "
           "values are released afterwards unless retain_graph.")
      .def_prop_ro(
          "saved_values", [](const PyForwardResult& r) { return r.ctx->saved_values(); },
          "The partition's saved values (stax.Tensor), empty once released.")
      .def_prop_ro("saved_bytes", [](const PyForwardResult& r) { return r.ctx->saved_bytes(); })
      .def_prop_ro("released", [](const PyForwardResult& r) { return r.ctx->released(); })
      .def("__repr__", [](const PyForwardResult& r) {
        return "<stax.ForwardResult: " + std::to_string(nb::len(r.outputs)) + " outputs, " +
               std::to_string(r.ctx->saved_bytes()) + " saved bytes" +
               (r.ctx->released() ? ", released" : "") + ">";
      });
}

// forward / __call__ / reference.
void add_calls(nb::class_<PyCompiledFunction>& cls) {
  cls.def("forward", &forward, nb::arg("inputs"), nb::arg("seed") = nb::none(),
          "forward(*inputs, seed=None) -> ForwardResult (one tensor per placeholder). `seed` "
          "seeds the random ops of this forward and its backward (None: stax.grad's seed).")
      .def("__call__", &forward, nb::arg("inputs"), nb::arg("seed") = nb::none(),
           "cf(*inputs) is cf.forward(*inputs): cf(x, W).backward() gives the gradients.")
      .def(
          "reference",
          [](const PyCompiledFunction& self, nb::args inputs, nb::handle grad_outputs) {
            GradState& s = *self.state;
            OutputKind kind = OutputKind::Stax;
            std::vector<Tensor> in = import_tensors(inputs, s.input_names, &kind);
            std::vector<Tensor> g =
                grad_outputs.is_none() ? std::vector<Tensor>{} : upstream(s, grad_outputs);
            std::vector<Tensor> all;
            {
              nb::gil_scoped_release release;
              all = s.fn->reference(in, g);
            }
            std::vector<Tensor> outputs(all.begin(), all.begin() + s.fn->num_outputs());
            std::vector<Tensor> grads(all.begin() + s.fn->num_outputs(), all.end());
            return nb::make_tuple(export_tensors(std::move(outputs), kind, false),
                                  export_tensors(std::move(grads), kind, false));
          },
          nb::arg("inputs"), nb::arg("grad_outputs") = nb::none(),
          "reference(*inputs, grad_outputs=None) -> (outputs, gradients): the joint graph on "
          "the reference interpreter, the oracle of forward() and backward().");
}

// The partition, the graphs, the compiled halves, statistics.
void add_partition_views(nb::class_<PyCompiledFunction>& cls) {
  cls.def_prop_ro("wrt", [](const PyCompiledFunction& s) { return s.state->fn->wrt(); })
      .def_prop_ro("input_names", [](const PyCompiledFunction& s) { return s.state->input_names; })
      .def_prop_ro(
          "saved", [](const PyCompiledFunction& s) { return s.state->fn->partition().saved; },
          "The computed forward values the forward saves (the min cut), graph order.")
      .def_prop_ro(
          "saved_primals",
          [](const PyCompiledFunction& s) { return s.state->fn->partition().saved_primals; },
          "The inputs the backward reads (held, not copied).")
      .def_prop_ro(
          "recomputed",
          [](const PyCompiledFunction& s) { return s.state->fn->partition().recomputed; },
          "The forward values the backward recomputes.")
      .def_prop_ro("tangents",
                   [](const PyCompiledFunction& s) { return s.state->fn->partition().tangents; })
      .def_prop_ro("saved_bytes",
                   [](const PyCompiledFunction& s) { return s.state->fn->partition().saved_bytes; })
      .def_prop_ro("max_flow",
                   [](const PyCompiledFunction& s) { return s.state->fn->partition().max_flow; })
      .def_prop_ro(
          "save_all_fallback",
          [](const PyCompiledFunction& s) { return s.state->fn->partition().save_all_fallback; })
      .def_prop_ro(
          "fallback_reason",
          [](const PyCompiledFunction& s) { return s.state->fn->partition().fallback_reason; })
      .def_prop_ro(
          "budget",
          [](const PyCompiledFunction& s) -> nb::object {
            const auto& b = s.state->fn->partition().budget;
            return b ? nb::object(budget_dict(*b)) : nb::none();
          },
          "The memory budget's report (None without a budget).")
      .def_prop_ro(
          "partition_values",
          [](const PyCompiledFunction& s) { return partition_values(s.state->fn->partition()); },
          "Per forward value: bytes, distance, beta, capacity c(v), whether the "
          "backward reads it, and whether it is saved or recomputed (Table 5.1).")
      .def_prop_ro(
          "partition_report",
          [](const PyCompiledFunction& s) {
            return partition::format_partition_report(s.state->fn->partition());
          },
          "The rematerialization network, its flows, the cut and the decisions (what "
          "`stax grad` prints).")
      .def_prop_ro("partition_dot",
                   [](const PyCompiledFunction& s) {
                     return partition::partition_to_dot(s.state->fn->partition());
                   })
      .def_prop_ro(
          "joint",
          [](const PyCompiledFunction& s) {
            return view_graph(keep_of(s), s.state->fn->joint().graph);
          },
          "The joint forward+backward graph (read-only; print('listing52') for the "
          "seed's Listing 5.2 layout).")
      .def_prop_ro("forward_graph",
                   [](const PyCompiledFunction& s) {
                     return view_graph(keep_of(s), s.state->fn->partition().forward);
                   })
      .def_prop_ro("backward_graph",
                   [](const PyCompiledFunction& s) {
                     return view_graph(keep_of(s), s.state->fn->partition().backward);
                   })
      .def_prop_ro("compiled_forward",
                   [](const PyCompiledFunction& s) -> std::optional<PyCompiledGraph> {
                     const CompiledGraph* g = s.state->fn->compiled_forward();
                     if (!g) return std::nullopt;
                     return wrap_compiled(*g);
                   })
      .def_prop_ro(
          "compiled_backward",
          [](const PyCompiledFunction& s) -> std::optional<PyCompiledGraph> {
            const CompiledGraph* g = s.state->fn->compiled_backward();
            if (!g) return std::nullopt;
            return wrap_compiled(*g);
          },
          "None until the first backward() compiled it (stax.grad(compile_backward=True): "
          "compiled with the forward), and on the interpreter path.")
      .def_prop_ro("interpreted",
                   [](const PyCompiledFunction& s) { return s.state->fn->interpreted(); })
      .def_prop_ro("stats",
                   [](const PyCompiledFunction& s) { return stats_dict(s.state->fn->stats()); })
      .def("__repr__", [](const PyCompiledFunction& s) {
        return "<stax.CompiledFunction " + s.state->fn->stats_str() + ">";
      });
}

void bind_compiled_function(nb::module_& m) {
  nb::class_<PyCompiledFunction> cls(m, "CompiledFunction",
                                     "Forward and backward of a graph (stax.grad): the joint graph "
                                     "(seed §5.3), the min-cut partition (§5.4-5.5), the forward "
                                     "compiled, the backward compiled on its first use (§5.6).");
  add_calls(cls);
  add_partition_views(cls);
}

}  // namespace

void bind_grad(nb::module_& m) {
  bind_forward_result(m);
  bind_compiled_function(m);
  m.def(
      "_grad",
      [](const PyGraph& graph, std::vector<std::string> wrt, std::optional<PyCompiler> compiler,
         std::optional<int64_t> budget, const std::string& algorithm, uint64_t seed,
         bool compile_backward) {
        auto state = std::make_shared<GradState>();
        CompiledFunctionOptions options;
        options.compile_backward_with_forward = compile_backward;
        if (budget) options.partition.memory_budget = *budget;
        if (algorithm == "edmonds-karp")
          options.partition.algorithm = partition::FlowAlgorithm::kEdmondsKarp;
        else if (algorithm != "dinic")
          throw Error("input", "stax.grad",
                      "algorithm '" + algorithm + "' (expected 'dinic' or 'edmonds-karp')");
        options.seed = seed;
        options.interpret = !compiler.has_value();
        options.cancel = state->cancel;
        for (const Node* p : graph.graph->placeholders()) state->input_names.push_back(p->name());
        if (compiler) state->compiler = compiler->compiler;
        run_interruptible(*state->cancel, [&] {
          if (state->compiler)
            state->fn =
                std::make_unique<CompiledFunction>(*graph.graph, wrt, *state->compiler, options);
          else
            state->fn = std::make_unique<CompiledFunction>(*graph.graph, wrt, Config::default_cpu(),
                                                           options);
        });
        return PyCompiledFunction{std::move(state)};
      },
      nb::arg("graph"), nb::arg("wrt"), nb::arg("compiler").none(), nb::arg("budget").none(),
      nb::arg("algorithm"), nb::arg("seed"), nb::arg("compile_backward") = false);
}

}  // namespace stax::python
