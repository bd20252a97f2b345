#include "python/src/compiler_bindings.h"

#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <utility>

#include "core/interpreter/interpreter.h"
#include "core/lowering/graph_lowering.h"
#include "core/scheduler/memory_plan.h"
#include "core/scheduler/schedule.h"
#include "core/support/error.h"
#include "python/src/graph_bindings.h"
#include "python/src/interruptible.h"
#include "python/src/tensor_interop.h"

namespace stax::python {

namespace {

// What `stax compile --dump kernels` shows of a kernel: the part after the plugin's prelude
// (the same for every kernel), when the source has the marker line.
std::string kernel_body(const std::string& source) {
  const std::string marker = "// ---- stax kernel ----\n";
  size_t at = source.find(marker);
  return at == std::string::npos ? source : source.substr(at + marker.size());
}

nb::dict compile_stats_dict(const CompileStats& s) {
  nb::dict d;
  d["decompose_ms"] = s.decompose_ms;
  d["lower_ms"] = s.lower_ms;
  d["schedule_ms"] = s.schedule_ms;
  d["codegen_ms"] = s.codegen_ms;
  d["compile_ms"] = s.compile_ms;
  d["total_ms"] = s.total_ms;
  d["kernels_compiled"] = s.kernels_compiled;
  d["kernels_from_memory"] = s.kernels_from_memory;
  d["kernels_from_disk"] = s.kernels_from_disk;
  return d;
}

nb::dict run_stats_dict(const RunStats& s) {
  nb::dict d;
  d["on_device"] = s.on_device;
  d["host_to_device"] = s.host_to_device;
  d["device_to_host"] = s.device_to_host;
  d["host_to_device_bytes"] = s.host_to_device_bytes;
  d["device_to_host_bytes"] = s.device_to_host_bytes;
  d["launches"] = s.launches;
  d["extern_calls"] = s.extern_calls;
  d["interpreter_steps"] = s.interpreter_steps;
  d["synchronizes"] = s.synchronizes;
  return d;
}

std::vector<std::string> placeholder_names(const Graph& g) {
  std::vector<std::string> names;
  for (const Node* p : g.placeholders()) names.push_back(p->name());
  return names;
}

void check_arity(const std::vector<std::string>& names, size_t given, const char* what) {
  if (given == names.size()) return;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  throw Error("input", what,
              "expected " + std::to_string(names.size()) + " input" +
                  (names.size() == 1 ? "" : "s") + " (" + list + "), got " + std::to_string(given));
}

// The hot path: tensors in (DLPack, no copy where possible), run with the GIL released,
// outputs out in the inputs' framework.
nb::object call_compiled(const PyCompiledGraph& self, nb::args args, uint64_t seed) {
  check_arity(self.input_names, nb::len(args), "stax.CompiledGraph");
  OutputKind kind = OutputKind::Stax;
  std::vector<Tensor> inputs = import_tensors(args, self.input_names, &kind);
  std::vector<Tensor> outputs;
  {
    nb::gil_scoped_release release;
    GraphRunOptions options;
    options.seed = seed;
    outputs = self.graph.run(inputs, options);
  }
  return export_tensors(std::move(outputs), kind, /*unwrap_single=*/true);
}

nb::object run_compiled(const PyCompiledGraph& self, nb::handle inputs, uint64_t seed,
                        bool with_stats) {
  check_arity(self.input_names, nb::len(inputs), "stax.CompiledGraph.run");
  std::vector<Tensor> in = import_tensors(inputs, self.input_names);
  std::vector<Tensor> out;
  RunStats stats;
  {
    nb::gil_scoped_release release;
    GraphRunOptions options;
    options.seed = seed;
    options.stats = &stats;
    out = self.graph.run(in, options);
  }
  nb::list result;
  for (Tensor& t : out) result.append(nb::cast(std::move(t)));
  if (with_stats) return nb::make_tuple(result, run_stats_dict(stats));
  return result;
}

void bind_config(nb::module_& m) {
  nb::class_<Config>(m, "Config", "A YAML configuration read into typed fields (configs/*.yaml).")
      .def_static("load", &Config::load, nb::arg("path"), "Reads and checks a YAML file.")
      .def_static(
          "parse",
          [](const std::string& text, const std::string& source, const std::string& base_dir) {
            return Config::parse(text, source, base_dir);
          },
          nb::arg("text"), nb::arg("source") = "<config>", nb::arg("base_dir") = ".",
          "Reads YAML text (JSON is YAML too); `source` names it in error locations, relative "
          "paths resolve against `base_dir`.")
      .def_static("default_cpu", &Config::default_cpu)
      .def_prop_ro("source", [](const Config& c) { return c.source; })
      .def_prop_ro("plugin_path",
                   [](const Config& c) {
                     std::vector<std::string> out;
                     for (const auto& p : c.plugin_path) out.push_back(p.string());
                     return out;
                   })
      .def(
          "prepend_plugin_dir",
          [](Config& c, const std::string& dir) {
            c.plugin_path.insert(c.plugin_path.begin(), std::filesystem::path(dir));
          },
          nb::arg("dir"), "Searches `dir` for plugins first (the package's own plugins/).")
      .def(
          "set_backend_option",
          [](Config& c, const std::string& backend, const std::string& key,
             const std::string& value, bool overwrite) {
            int changed = 0;
            for (auto& [kind, dc] : c.devices) {
              if (dc.backend != backend || (!overwrite && dc.options.find(key))) continue;
              dc.options.set(key, OptionValue::make_scalar(value, "<stax python: " + key + ">"));
              ++changed;
            }
            return changed;
          },
          nb::arg("backend"), nb::arg("key"), nb::arg("value"), nb::arg("overwrite") = false,
          "Sets option `key` of every device on plugin `backend` (unless it is set and not "
          "`overwrite`); returns how many devices changed. The plugin checks the value when "
          "it loads.")
      .def_prop_ro(
          "devices",
          [](const Config& c) {
            nb::dict d;
            for (const auto& [kind, dc] : c.devices) d[kind.c_str()] = dc.backend;
            return d;
          },
          "{device kind: backend plugin name}")
      .def_prop_rw(
          "default_device", [](const Config& c) { return c.default_device; },
          [](Config& c, const std::string& kind) {
            if (!kind.empty() && !c.devices.count(kind)) {
              std::string list;
              for (const auto& [k, d] : c.devices) list += (list.empty() ? "" : ", ") + k;
              throw Error("config", c.source,
                          "no device '" + kind + "' in this config (devices: " + list + ")");
            }
            c.default_device = kind;
          },
          "The device kind that runs graphs whose placeholders are on 'cpu' ('' = theirs).")
      .def_prop_ro("cache_dir",
                   [](const Config& c) -> std::optional<std::string> {
                     if (!c.cache_dir) return std::nullopt;
                     return c.cache_dir->string();
                   })
      .def_prop_ro("cache", [](const Config& c) { return c.cache; })
      .def("__repr__", [](const Config& c) { return "<stax.Config " + c.source + ">"; });
}

void bind_compiled_graph(nb::module_& m) {
  nb::class_<CompiledKernelInfo>(m, "Kernel", "One compiled kernel of a CompiledGraph.")
      .def_ro("name", &CompiledKernelInfo::name)
      .def_ro("buffers", &CompiledKernelInfo::buffer, "The buffers it computes: 'buf0, buf1'.")
      .def_ro("source", &CompiledKernelInfo::source, "The whole source the plugin generated.")
      .def_prop_ro(
          "body", [](const CompiledKernelInfo& k) { return kernel_body(k.source); },
          "The source without the plugin's prelude (what `stax compile --dump "
          "kernels` shows).")
      .def_ro("compile_ms", &CompiledKernelInfo::compile_ms)
      .def("__repr__", [](const CompiledKernelInfo& k) {
        return "<stax.Kernel " + k.name + " (" + k.buffer + ")>";
      });

  nb::class_<PyCompiledGraph>(m, "CompiledGraph",
                              "A graph compiled by a Compiler. Call it with one tensor per "
                              "placeholder; outputs come back in the inputs' framework.")
      .def("__call__", &call_compiled, nb::arg("inputs"), nb::arg("seed") = 0,
           "f(*inputs, seed=0): one tensor per placeholder (torch, numpy, stax ... through "
           "DLPack). Returns the output, or a tuple of outputs, as torch tensors when an input "
           "is one, else as numpy arrays when an input is one, else as stax.Tensor; none is "
           "copied. `seed` seeds random ops.")
      .def("run", &run_compiled, nb::arg("inputs"), nb::kw_only(), nb::arg("seed") = 0,
           nb::arg("with_stats") = false,
           "The outputs as a list of stax.Tensor (with a dict of RunStats when with_stats). "
           "`seed` seeds random ops.")
      .def_prop_ro(
          "graph",
          [](const PyCompiledGraph& self) {
            auto keep = std::make_shared<CompiledGraph>(self.graph);
            return view_graph(keep, keep->graph());
          },
          "The graph as compiled (after decomposition), read-only.")
      .def_prop_ro("input_names", [](const PyCompiledGraph& self) { return self.input_names; })
      .def_prop_ro(
          "loop_ir", [](const PyCompiledGraph& self) { return self.graph.loop_ir(); },
          "Every buffer in the seed's Listing 6.2 form (the 'loop_ir' dump).")
      .def_prop_ro(
          "schedule",
          [](const PyCompiledGraph& self) {
            return self.graph.schedule().str() + self.graph.memory_plan().str();
          },
          "The kernels and steps in order and the memory plan (the 'schedule' dump).")
      .def_prop_ro(
          "schedule_dot",
          [](const PyCompiledGraph& self) {
            return self.graph.schedule().dot(self.graph.lowered());
          },
          "The schedule as Graphviz DOT.")
      .def_prop_ro(
          "kernels", [](const PyCompiledGraph& self) { return self.graph.kernels(); },
          "The compiled kernels, with their sources (the 'kernels' dump).")
      .def_prop_ro("num_kernels",
                   [](const PyCompiledGraph& self) { return self.graph.num_kernels(); })
      .def_prop_ro("num_externs",
                   [](const PyCompiledGraph& self) { return self.graph.num_externs(); })
      .def_prop_ro(
          "num_fallbacks", [](const PyCompiledGraph& self) { return self.graph.num_fallbacks(); },
          "Steps run by the reference interpreter (ops without a lowering rule).")
      .def_prop_ro("backend", [](const PyCompiledGraph& self) { return self.graph.backend_name(); })
      .def_prop_ro(
          "stats",
          [](const PyCompiledGraph& self) { return compile_stats_dict(self.graph.stats()); },
          "Compile times (ms) per stage and where the kernels came from.")
      .def_prop_ro("summary", [](const PyCompiledGraph& self) { return self.graph.summary(); })
      .def("__repr__", [](const PyCompiledGraph& self) {
        return "<stax.CompiledGraph " + self.graph.summary() + ">";
      });
}

}  // namespace

PyCompiledGraph wrap_compiled(const CompiledGraph& g) {
  return PyCompiledGraph{g, placeholder_names(g.graph())};
}

void bind_compiler(nb::module_& m) {
  bind_config(m);
  bind_compiled_graph(m);

  nb::class_<PyCompiler>(m, "_Compiler")
      .def(
          "__init__",
          [](PyCompiler* self, Config config, const std::string& name, bool decompose, bool fuse) {
            CompileOptions options;
            options.name = name;
            options.decompose = decompose;
            options.fuse = fuse;
            std::shared_ptr<Compiler> compiler;
            {
              nb::gil_scoped_release release;  // loads and configures plugins
              compiler = std::make_shared<Compiler>(std::move(config), options);
            }
            new (self) PyCompiler{std::move(compiler)};
          },
          nb::arg("config"), nb::arg("name") = "graph", nb::arg("decompose") = true,
          nb::arg("fuse") = true)
      .def(
          "compile",
          [](PyCompiler& self, const PyGraph& graph) {
            CancellationToken token;
            std::optional<CompiledGraph> compiled;
            run_interruptible(
                token, [&] { compiled.emplace(self.compiler->compile(*graph.graph, &token)); });
            return wrap_compiled(*compiled);
          },
          nb::arg("graph"))
      .def_prop_ro("config", [](const PyCompiler& self) { return self.compiler->config(); })
      .def_prop_ro("cache_dir", [](PyCompiler& self) -> std::optional<std::string> {
        const CacheSettings& s = self.compiler->kernel_cache().settings();
        if (!s.disk()) return std::nullopt;
        return s.dir->string();
      });

  m.def(
      "interpret",
      [](const PyGraph& graph, nb::args inputs, uint64_t seed, const std::string& order) {
        std::vector<std::string> names = placeholder_names(*graph.graph);
        check_arity(names, nb::len(inputs), "stax.interpret");
        InterpreterOptions options;
        options.seed = seed;
        if (order == "segmented")
          options.reduction_order = ReductionOrder::Segmented;
        else if (order != "sequential")
          throw Error("input", "stax.interpret",
                      "reduction_order '" + order + "' (expected 'sequential' or 'segmented')");
        OutputKind kind = OutputKind::Stax;
        std::vector<Tensor> in = import_tensors(inputs, names, &kind);
        std::vector<Tensor> out;
        {
          nb::gil_scoped_release release;
          out = interpret(*graph.graph, in, options);
        }
        return export_tensors(std::move(out), kind, /*unwrap_single=*/true);
      },
      nb::arg("graph"), nb::arg("inputs"), nb::arg("seed") = 0,
      nb::arg("reduction_order") = "sequential",
      "stax.interpret(graph, *inputs): runs the graph op by op on the reference interpreter "
      "(the oracle compiled results are checked against). Outputs as CompiledGraph's call.");
}

}  // namespace stax::python
