#include "python/src/graph_bindings.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <utility>
#include <vector>

#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/support/error.h"

namespace stax::python {

namespace {

constexpr const char* kStage = "graph";

// stax.undefined: the printed default of an absent optional dtype (tensorplay.undefined).
struct UndefinedValue {};

std::string type_name_of(nb::handle h) { return nb::type_name(h.type()).c_str(); }

// The __module__ and __name__ of an object's type ("torch", "dtype").
std::pair<std::string, std::string> type_of(nb::handle h) {
  nb::handle t = h.type();
  std::string module, name;
  if (nb::hasattr(t, "__module__")) module = nb::cast<std::string>(nb::str(t.attr("__module__")));
  if (nb::hasattr(t, "__name__")) name = nb::cast<std::string>(nb::str(t.attr("__name__")));
  return {module, name};
}

bool is_numpy_module(const std::string& m) { return m == "numpy" || m.rfind("numpy.", 0) == 0; }

// A dtype from stax.float32, "float32", torch.float32, a numpy dtype or numpy scalar type.
std::optional<DType> dtype_of_object(nb::handle h) {
  if (nb::isinstance<DType>(h)) return nb::cast<DType>(h);
  if (nb::isinstance<nb::str>(h)) return parse_dtype(nb::cast<std::string>(h));
  auto [module, name] = type_of(h);
  if (module == "torch" && name == "dtype") {
    std::string s = nb::cast<std::string>(nb::str(h));  // "torch.float32"
    return parse_dtype(s.rfind("torch.", 0) == 0 ? s.substr(6) : s);
  }
  if (is_numpy_module(module) && nb::hasattr(h, "kind") && nb::hasattr(h, "itemsize") &&
      nb::hasattr(h, "name"))  // a numpy.dtype instance (numpy.dtypes.Float32DType ...)
    return parse_dtype(nb::cast<std::string>(h.attr("name")));
  if (nb::isinstance<nb::type_object>(h) && nb::hasattr(h, "__module__") &&
      is_numpy_module(nb::cast<std::string>(nb::str(h.attr("__module__"))))) {
    nb::object np = nb::module_::import_("numpy");  // numpy.float32, the scalar type
    return parse_dtype(nb::cast<std::string>(np.attr("dtype")(h).attr("name")));
  }
  return std::nullopt;
}

// A memory format or layout of torch (torch.contiguous_format, torch.strided).
std::optional<EnumLiteral> enum_of_object(nb::handle h) {
  auto [module, name] = type_of(h);
  if (module != "torch" || (name != "memory_format" && name != "layout")) return std::nullopt;
  return parse_enum_literal(nb::cast<std::string>(nb::str(h)));
}

Arg to_arg(nb::handle v, const Graph& g, const std::string& where) {
  if (v.is_none()) return Arg();
  if (nb::isinstance<PyNode>(v)) {
    const PyNode& n = nb::cast<const PyNode&>(v);
    if (n.graph.get() != &g)
      throw Error(kStage, where, "%" + n.node->name() + " is a node of another graph");
    return Arg(n.node);
  }
  if (nb::isinstance<UndefinedValue>(v)) return Arg(Undefined{});
  if (PyBool_Check(v.ptr())) return Arg(v.ptr() == Py_True);
  if (PyLong_Check(v.ptr())) {
    int overflow = 0;
    long long i = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow)
      throw Error(kStage, where,
                  "integer " + nb::cast<std::string>(nb::str(v)) + " does not fit in 64 bits");
    return Arg(static_cast<int64_t>(i));
  }
  if (PyFloat_Check(v.ptr())) return Arg(PyFloat_AsDouble(v.ptr()));
  if (nb::isinstance<nb::str>(v)) return Arg(nb::cast<std::string>(v));
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
    Arg::List items;
    for (nb::handle item : v) items.push_back(to_arg(item, g, where));
    return Arg(std::move(items));
  }
  if (std::optional<DType> dt = dtype_of_object(v)) return Arg(*dt);
  if (std::optional<EnumLiteral> e = enum_of_object(v)) return Arg(*e);
  std::string type = type_name_of(v);
  if (type_of(v) == std::make_pair(std::string("torch"), std::string("device")))
    return Arg(nb::cast<std::string>(nb::str(v)));
  if (nb::hasattr(v, "__index__"))
    return Arg(static_cast<int64_t>(nb::cast<int64_t>(v.attr("__index__")())));
  if (nb::hasattr(v, "__float__")) return Arg(nb::cast<double>(v.attr("__float__")()));
  throw Error(kStage, where, "cannot pass a " + type + " as an argument of an op");
}

nb::object from_arg(const Arg& a, const std::shared_ptr<Graph>& g) {
  return std::visit(
      [&](const auto& x) -> nb::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>)
          return nb::none();
        else if constexpr (std::is_same_v<T, Node*>)
          return nb::cast(PyNode{g, x});
        else if constexpr (std::is_same_v<T, Undefined>)
          return nb::cast(UndefinedValue{});
        else if constexpr (std::is_same_v<T, Arg::List>) {
          nb::list out;
          for (const Arg& item : x) out.append(from_arg(item, g));
          return out;
        } else if constexpr (std::is_same_v<T, EnumLiteral>)
          return nb::cast(x.name);
        else
          return nb::cast(x);
      },
      a.v);
}

Shape shape_from_py(nb::handle h, const std::string& where) {
  Shape s;
  try {
    if (PyLong_Check(h.ptr())) return {nb::cast<int64_t>(h)};
    for (nb::handle d : h) s.push_back(nb::cast<int64_t>(d.attr("__index__")()));
  } catch (const std::exception&) {
    throw Error(kStage, where, "a shape is a sequence of ints, got " + type_name_of(h));
  }
  return s;
}

// Placeholder metadata from a shape tuple, a (shape, dtype) pair, or a tensor-like object with
// .shape and .dtype (torch, numpy, stax).
TensorMeta meta_from_py(nb::handle h, const std::string& where) {
  if (nb::hasattr(h, "shape") && nb::hasattr(h, "dtype")) {
    std::optional<DType> dt = dtype_of_object(h.attr("dtype"));
    if (!dt)
      throw Error(kStage, where, "the dtype of a " + type_name_of(h) + " is not a Stax dtype");
    return TensorMeta::contiguous(shape_from_py(h.attr("shape"), where), *dt);
  }
  if (nb::isinstance<nb::tuple>(h) && nb::len(h) == 2 && !PyLong_Check(h[0].ptr()) &&
      !nb::isinstance<nb::int_>(h[0]))
    return TensorMeta::contiguous(shape_from_py(h[0], where), dtype_from_py(h[1], where));
  return TensorMeta::contiguous(shape_from_py(h, where));
}

ParseOptions parse_options(nb::handle placeholders) {
  ParseOptions options;
  if (placeholders.is_none()) return options;
  for (auto [key, value] : nb::cast<nb::dict>(placeholders)) {
    std::string name = nb::cast<std::string>(key);
    options.placeholder_meta_if_missing[name] = meta_from_py(value, "placeholder " + name);
  }
  return options;
}

Graph& mutable_graph(PyGraph& g) {
  if (g.read_only)
    throw Error(kStage, "stax.Graph",
                "this graph belongs to a compiled object and is read-only (clone() it to edit)");
  return *g.graph;
}

const char* kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Placeholder:
      return "placeholder";
    case NodeKind::CallFunction:
      return "call_function";
    case NodeKind::Output:
      return "output";
  }
  return "?";
}

std::vector<PyNode> wrap_nodes(const std::shared_ptr<Graph>& g, const std::vector<Node*>& nodes) {
  std::vector<PyNode> out;
  out.reserve(nodes.size());
  for (Node* n : nodes) out.push_back(PyNode{g, n});
  return out;
}

PyNode call_node(PyGraph& self, const std::string& target, nb::handle args, nb::handle kwargs,
                 const std::optional<std::string>& name) {
  Graph& g = mutable_graph(self);
  const std::string where = "call " + target;
  std::vector<Arg> a;
  for (nb::handle v : args) a.push_back(to_arg(v, g, where));
  Kwargs kw;
  if (!kwargs.is_none())
    for (auto [k, v] : nb::cast<nb::dict>(kwargs))
      kw.emplace_back(nb::cast<std::string>(k), to_arg(v, g, where));
  // FX and make_fx spell targets "aten.add.Tensor" / "torch.ops.aten.add.Tensor": the parser's
  // spellings are accepted by Graph::call too.
  std::string t = target;
  for (const char* prefix : {"torch.ops.aten.", "aten."})
    if (t.rfind(prefix, 0) == 0) t = t.substr(std::string(prefix).size());
  return PyNode{self.graph, g.call(t, std::move(a), std::move(kw), name.value_or(""))};
}

}  // namespace

PyGraph view_graph(std::shared_ptr<const void> keep, const Graph& graph) {
  return PyGraph{std::shared_ptr<Graph>(keep, const_cast<Graph*>(&graph)), true};
}

DType dtype_from_py(nb::handle h, const std::string& where) {
  if (std::optional<DType> dt = dtype_of_object(h)) return *dt;
  std::string text =
      nb::isinstance<nb::str>(h) ? "'" + nb::cast<std::string>(h) + "'" : "a " + type_name_of(h);
  std::string list;
  for (int i = 0; i < kNumDTypes; ++i)
    list += (list.empty() ? "" : ", ") + std::string(dtype_name(static_cast<DType>(i)));
  throw Error(kStage, where, text + " is not a Stax dtype (expected one of: " + list + ")");
}

namespace {

void bind_dtypes(nb::module_& m) {
  nb::enum_<DType> dtype(m, "dtype", "The element types of Stax tensors.");
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    std::string name(dtype_name(t));
    dtype.value(name.c_str(), t);
    m.attr(name.c_str()) = t;
  }
  m.def("promote_types", [](DType a, DType b) { return promote_types(a, b); }, nb::arg("a"),
        nb::arg("b"),
        "torch.promote_types over Stax's dtypes; ValueError (torch: RuntimeError) for the pairs "
        "torch refuses (uint16 / uint32 / uint64 with a non-floating dtype).");
  nb::class_<UndefinedValue>(m, "_Undefined", "tensorplay.undefined: an absent optional dtype.")
      .def("__repr__", [](const UndefinedValue&) { return "stax.undefined"; });
  m.attr("undefined") = UndefinedValue{};
}

void bind_node(nb::module_& m) {
  nb::class_<PyNode>(m, "Node", "A node of a stax.Graph (it keeps its graph alive).")
      .def_prop_ro("name", [](const PyNode& n) { return n.node->name(); })
      .def_prop_ro(
          "kind", [](const PyNode& n) { return kind_name(n.node->kind()); },
          "'placeholder', 'call_function' or 'output'.")
      .def_prop_ro(
          "target", [](const PyNode& n) { return n.node->target(); },
          "The op overload ('add.Tensor'); the placeholder's own name for placeholders.")
      .def_prop_ro("shape", [](const PyNode& n) { return nb::tuple(nb::cast(n.node->shape())); })
      .def_prop_ro("strides",
                   [](const PyNode& n) { return nb::tuple(nb::cast(n.node->meta().strides)); })
      .def_prop_ro("dtype",
                   [](const PyNode& n) { return std::string(dtype_name(n.node->dtype())); })
      .def_prop_ro("device", [](const PyNode& n) { return n.node->meta().device; })
      .def_prop_ro(
          "args",
          [](const PyNode& n) {
            nb::list out;
            for (const Arg& a : n.node->args()) out.append(from_arg(a, n.graph));
            return nb::tuple(out);
          },
          "Normalized arguments: every positional schema parameter, defaults filled in.")
      .def_prop_ro("kwargs",
                   [](const PyNode& n) {
                     nb::dict out;
                     for (const auto& [k, a] : n.node->kwargs())
                       out[k.c_str()] = from_arg(a, n.graph);
                     return out;
                   })
      .def_prop_ro("users", [](const PyNode& n) { return wrap_nodes(n.graph, n.node->users()); })
      .def_prop_ro(
          "phase",
          [](const PyNode& n) {
            switch (n.node->phase()) {
              case Phase::Forward:
                return "forward";
              case Phase::Backward:
                return "backward";
              default:
                return "";
            }
          },
          "'forward' / 'backward' in a joint graph ([FW] / [BW]), else ''.")
      .def("__eq__", [](const PyNode& a, const PyNode& b) { return a.node == b.node; })
      .def("__hash__", [](const PyNode& n) { return std::hash<const void*>()(n.node); })
      .def("__repr__", [](const PyNode& n) { return "<stax.Node " + print_node(*n.node) + ">"; });
}

// Graph(), parse, load and the builder.
void add_graph_building(nb::class_<PyGraph>& cls) {
  cls.def("__init__",
          [](PyGraph* self) {
            new (self) PyGraph{std::make_shared<Graph>(), false};
          })
      .def_static(
          "parse",
          [](const std::string& text, const std::string& file_name, nb::handle placeholders) {
            ParseOptions options = parse_options(placeholders);
            return PyGraph{std::make_shared<Graph>(parse_graph(text, file_name, options)), false};
          },
          nb::arg("text"), nb::arg("file_name") = "<string>", nb::arg("placeholders") = nb::none(),
          "Parses the .stax text format, a seed listing or torch.fx's print(gm.graph). "
          "`placeholders` maps names to metadata for texts without shape= (a shape tuple, "
          "(shape, dtype), or a tensor).")
      .def_static(
          "load",
          [](const std::string& path, nb::handle placeholders) {
            ParseOptions options = parse_options(placeholders);
            return PyGraph{std::make_shared<Graph>(parse_graph_file(path, options)), false};
          },
          nb::arg("path"), nb::arg("placeholders") = nb::none(), "Reads and parses a file.")
      .def(
          "placeholder",
          [](PyGraph& self, const std::optional<std::string>& name, nb::handle shape,
             nb::handle dtype, const std::string& device, nb::handle strides) {
            Graph& g = mutable_graph(self);
            const std::string where = "placeholder " + name.value_or("");
            TensorMeta meta = TensorMeta::contiguous(shape_from_py(shape, where),
                                                     dtype_from_py(dtype, where), device);
            if (!strides.is_none()) {
              meta.strides = shape_from_py(strides, where);
              if (meta.strides.size() != meta.sizes.size())
                throw Error(kStage, where, "strides and shape differ in rank");
            }
            check_extent(meta.sizes, meta.dtype, where);
            return PyNode{self.graph, g.placeholder(name.value_or(""), std::move(meta))};
          },
          nb::arg("name") = nb::none(), nb::arg("shape") = nb::tuple(),
          nb::arg("dtype") = "float32", nb::arg("device") = "cpu", nb::arg("strides") = nb::none(),
          "Adds a placeholder (an input); name None picks the next 'primals_N'.")
      .def(
          "call",
          [](PyGraph& self, nb::args args, nb::kwargs kwargs) {
            // target is positional-only: an op may have a keyword argument named "target".
            if (nb::len(args) < 1 || !nb::isinstance<nb::str>(args[0]))
              throw nb::type_error(
                  "call(target, *args, name=None, **kwargs): target is the op "
                  "overload's name ('aten.add.Tensor')");
            const std::string target = nb::cast<std::string>(args[0]);
            std::optional<std::string> name;
            nb::dict op_kwargs;
            for (auto [k, v] : kwargs) {
              if (nb::cast<std::string>(k) == "name")
                name = nb::cast<std::string>(v);
              else
                op_kwargs[k] = v;
            }
            nb::list op_args;
            for (size_t i = 1; i < nb::len(args); ++i) op_args.append(args[i]);
            return call_node(self, target, op_args, op_kwargs, name);
          },
          "g.call('aten.add.Tensor', x, y, alpha=2, name='add'): adds a call of an op overload "
          "(arguments bound to its schema, defaults filled in, the result's shape and dtype "
          "inferred). The keyword `name` names the node; every other keyword is the op's.")
      .def(
          "call_function",
          [](PyGraph& self, nb::handle target, nb::handle args, nb::handle kwargs,
             const std::optional<std::string>& name) {
            // str() of an OpOverload (torch.ops.aten.add.Tensor) is "aten.add.Tensor".
            return call_node(self, nb::cast<std::string>(nb::str(target)), args, kwargs, name);
          },
          nb::arg("target"), nb::arg("args") = nb::tuple(), nb::arg("kwargs") = nb::none(),
          nb::arg("name") = nb::none(),
          "torch.fx's spelling: args a sequence, kwargs a dict (for importers); the target "
          "may be a string or a torch OpOverload such as torch.ops.aten.add.Tensor.")
      .def(
          "output",
          [](PyGraph& self, nb::handle values) {
            Graph& g = mutable_graph(self);
            std::vector<Node*> out;
            auto add = [&](nb::handle v) {
              Arg a = to_arg(v, g, "output");
              if (!a.is_node()) throw Error(kStage, "output", "graph outputs are nodes");
              out.push_back(a.node());
            };
            if (nb::isinstance<PyNode>(values))
              add(values);
            else
              for (nb::handle v : values) add(v);
            g.output(std::move(out));
          },
          nb::arg("values"), "Sets the graph's outputs: a node or a sequence of nodes.");
}

// Nodes, printing, copies.
void add_graph_inspection(nb::class_<PyGraph>& cls) {
  cls.def_prop_ro("nodes", [](const PyGraph& g) { return wrap_nodes(g.graph, g.graph->nodes()); })
      .def_prop_ro("placeholders",
                   [](const PyGraph& g) { return wrap_nodes(g.graph, g.graph->placeholders()); })
      .def_prop_ro("outputs",
                   [](const PyGraph& g) { return wrap_nodes(g.graph, g.graph->outputs()); })
      .def_prop_ro("read_only", [](const PyGraph& g) { return g.read_only; })
      .def(
          "find",
          [](const PyGraph& g, const std::string& name) -> std::optional<PyNode> {
            Node* n = g.graph->find(name);
            if (!n) return std::nullopt;
            return PyNode{g.graph, n};
          },
          nb::arg("name"), "The node of that name, or None.")
      .def(
          "clone",
          [](const PyGraph& g) {
            return PyGraph{std::make_shared<Graph>(g.graph->clone()), false};
          },
          "A deep, editable copy.")
      .def(
          "print",
          [](const PyGraph& g, const std::string& style) {
            if (style == "canonical") return print_graph(*g.graph);
            if (style == "listing52") return print_graph(*g.graph, PrintOptions::listing52());
            throw Error(kStage, "print",
                        "unknown style '" + style + "' (expected 'canonical' or 'listing52')");
          },
          nb::arg("style") = "canonical",
          "The graph as text: 'canonical' (the .stax format, parses back to the same bytes) or "
          "'listing52' (the seed's Listing 5.2 layout).")
      .def("__str__", [](const PyGraph& g) { return print_graph(*g.graph); })
      .def("__len__", [](const PyGraph& g) { return g.graph->size(); })
      .def("__repr__", [](const PyGraph& g) {
        return "<stax.Graph: " + std::to_string(g.graph->placeholders().size()) +
               " placeholders, " + std::to_string(g.graph->size()) + " nodes>";
      });
}

void bind_graph_class(nb::module_& m) {
  nb::class_<PyGraph> cls(
      m, "Graph",
      "The operator-level graph: placeholders, call_function nodes naming an op "
      "overload, one output (seed §5.1). Build it with placeholder / call / "
      "output, or parse text.");
  add_graph_building(cls);
  add_graph_inspection(cls);
}

}  // namespace

void bind_graph(nb::module_& m) {
  bind_dtypes(m);
  bind_node(m);
  bind_graph_class(m);
}

}  // namespace stax::python
