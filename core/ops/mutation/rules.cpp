// How each mutating op is functionalized (core/graph/functionalize.h): the in-place and out=
// forms of form_pairs() through their functional op; copy_, fill_, zero_ and the random in-place
// ops composed from other ops; batch norm in training, whose running statistics torch updates.
#include <optional>
#include <string>

#include "core/graph/functionalize.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/infer_helpers.h"
#include "core/ops/mutation/form_pairs.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

using Effect = std::optional<MutationEffect>;

Node* self_of(const CallArgs& c) { return c.get("self").node(); }

// The value written by copy_ / fill_.Tensor: `src` broadcast to self's shape, in self's dtype
// (any cast, as torch's copy_), as a value of its own.
Node* copied(Graph& g, Node* self, Node* src, const std::string& name) {
  if (src->shape() != self->shape()) src = g.call("expand.default", {src, Arg(self->shape())});
  return g.call("_to_copy.default", {src}, {{"dtype", Arg(self->dtype())}}, name);
}

MutationEffect writes_self(Node* value) { return MutationEffect{{{"self", value}}, "self", nullptr}; }

void add_composed_rules(FunctionalizationTable& t, const OpRegistry& r) {
  auto add = [&](const char* form, MutationFn fn) {
    const OpDef* d = r.find(form);
    if (d && d->category == OpCategory::Mutating && !t.mutation(d->name()))
      t.add_mutation(d->name(), std::move(fn));
  };
  add("copy_.default", [](Graph& g, const CallArgs& c, const std::string& name) -> Effect {
    return writes_self(copied(g, self_of(c), c.get("src").node(), name));
  });
  add("fill_.Tensor", [](Graph& g, const CallArgs& c, const std::string& name) -> Effect {
    Node* value = c.get("value").node();
    if (value->meta().dim() != 0)
      c.fail("fill_ only supports 0-dimension value tensor but got tensor with " +
             std::to_string(value->meta().dim()) + " dimensions");
    return writes_self(copied(g, self_of(c), value, name));
  });
  add("fill_.Scalar", [](Graph& g, const CallArgs& c, const std::string& name) -> Effect {
    return writes_self(g.call("full_like.default", {self_of(c), c.get("value")}, {}, name));
  });
  add("zero_.default", [](Graph& g, const CallArgs& c, const std::string& name) -> Effect {
    return writes_self(g.call("zeros_like.default", {self_of(c)}, {}, name));
  });
  add("normal_.default", [](Graph& g, const CallArgs& c, const std::string& name) -> Effect {
    Node* mean = g.call("full_like.default", {self_of(c), c.get("mean")});
    return writes_self(g.call("normal.Tensor_float", {mean, c.get("std")}, {}, name));
  });
  add("uniform_.default", [](Graph& g, const CallArgs& c, const std::string& name) -> Effect {
    double from = c.get("from").to_double(), to = c.get("to").to_double();
    Node* u = g.call("rand_like.default", {self_of(c)});
    Node* scaled = g.call("mul.Scalar", {u, Arg(to - from)});
    return writes_self(g.call("add.Scalar", {scaled, Arg(from)}, {}, name));
  });
  add("bernoulli_.float", [](Graph& g, const CallArgs& c, const std::string& name) -> Effect {
    return writes_self(g.call("bernoulli.p", {self_of(c), c.get("p")}, {}, name));
  });
  // Only autograd's flags: the value stays.
  for (const char* form : {"detach_.default", "requires_grad_.default"})
    add(form, [](Graph&, const CallArgs&, const std::string&) -> Effect {
      return MutationEffect{{}, "self", nullptr};
    });
}

// Batch norm in training updates the running statistics it is given, as torch's CPU kernel:
//   running_mean = momentum * mean + (1 - momentum) * running_mean
//   running_var  = momentum * var_unbiased + (1 - momentum) * running_var
// over every dim but the channels (1), in the statistics' dtype. The normalization itself reads
// no running statistics in training: the functional call gets None for them, so it writes
// nothing (and a printed, functionalized graph parses back to the same graph).
MutationFn batch_norm_rule(const std::string& functional) {
  return [functional](Graph& g, const CallArgs& c, const std::string& name) -> Effect {
    if (!c.get("training").to_bool() || (!c.has("running_mean") && !c.has("running_var")))
      return std::nullopt;
    Node* x = c.get("input").node();
    if (x->meta().dim() < 2) c.fail("batch norm needs an input of 2 or more dims");
    if (c.has("running_mean") != c.has("running_var"))
      c.fail("running_mean and running_var must either both be None or neither be None");
    for (const char* p : {"running_mean", "running_var"})
      if (c.get(p).node()->shape() != Shape{x->shape()[1]})
        c.fail(std::string(p) + " " + shape_str(c.get(p).node()->shape()) + " must have shape (" +
               std::to_string(x->shape()[1]) + ",): one value per channel");
    // The functional call below gets no running statistics: their dtypes are checked here, as
    // torch's kernel does ("expected scalar type Double but found BFloat16").
    infer::check_norm_param_dtypes(c, x->dtype(), {"weight", "bias", "running_mean", "running_var"});
    std::vector<Arg> args = c.args();
    args[static_cast<size_t>(c.op().schema.index_of("running_mean"))] = Arg();
    args[static_cast<size_t>(c.op().schema.index_of("running_var"))] = Arg();
    Node* result = g.call(functional, std::move(args), c.kwargs(), name);
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < x->meta().dim(); ++d)
      if (d != 1) dims.push_back(d);
    double m = c.get("momentum").to_double();
    MutationEffect e{{}, "", result};
    auto update = [&](const char* param, bool var) {
      if (!c.has(param)) return;
      Node* old = c.get(param).node();
      Node* xs = x->dtype() == old->dtype()
                     ? x
                     : g.call("_to_copy.default", {x}, {{"dtype", Arg(old->dtype())}});
      Node* stat = var ? g.call("var.correction", {xs, Arg(dims)}, {{"correction", Arg(1)}})
                       : g.call("mean.dim", {xs, Arg(dims)});
      Node* fresh = g.call("add.Tensor", {g.call("mul.Scalar", {stat, Arg(m)}),
                                          g.call("mul.Scalar", {old, Arg(1.0 - m)})});
      e.writes.emplace_back(param, fresh);
    };
    update("running_mean", false);
    update("running_var", true);
    return e;
  };
}

// _batch_norm_with_update (torch 2.x) writes its running statistics always (it is the training
// form): its value is _batch_norm_with_update_functional's tuple, whose first four elements are
// the form's (output, save_mean, save_invstd, reserve) and whose last two are the updated
// statistics written back.
Effect batch_norm_with_update_rule(Graph& g, const CallArgs& c, const std::string& name) {
  Node* x = c.get("input").node();
  if (x->meta().dim() < 2) c.fail("batch norm needs an input of 2 or more dims");
  for (const char* p : {"running_mean", "running_var"})
    if (c.get(p).node()->shape() != Shape{x->shape()[1]})
      c.fail(std::string(p) + " " + shape_str(c.get(p).node()->shape()) + " must have shape (" +
             std::to_string(x->shape()[1]) + ",): one value per channel");
  Node* result = g.call("_batch_norm_with_update_functional.default", c.args(), c.kwargs(), name);
  MutationEffect e{{}, "", result};
  e.writes.emplace_back("running_mean", g.call("getitem", {result, int64_t{4}}));
  e.writes.emplace_back("running_var", g.call("getitem", {result, int64_t{5}}));
  return e;
}

// rrelu_with_noise writes the slopes it drew into noise in training: its value and the written
// noise are the two elements of rrelu_with_noise_functional. Eval writes nothing.
Effect rrelu_with_noise_rule(Graph& g, const CallArgs& c, const std::string& name) {
  if (!c.get("training").to_bool()) return std::nullopt;
  Node* x = c.get("self").node();
  Node* noise = c.get("noise").node();
  if (noise->shape() != x->shape())
    c.fail("noise " + shape_str(noise->shape()) + " must have self's shape " +
           shape_str(x->shape()) + " in training (torch resizes it; Stax's tensors keep their shape)");
  Node* result = g.call("rrelu_with_noise_functional.default", c.args(), c.kwargs());
  MutationEffect e{{}, "", g.call("getitem", {result, int64_t{0}}, {}, name)};
  e.writes.emplace_back("noise", g.call("getitem", {result, int64_t{1}}));
  return e;
}

}  // namespace

void register_mutation_rules(FunctionalizationTable& t, const OpRegistry& r) {
  for (const mutation::FormPair& p : mutation::form_pairs()) {
    const OpDef* form = r.find(p.form);
    const OpDef* f = r.find(p.functional);
    if (!form || !f || form->category != OpCategory::Mutating) continue;
    std::string functional = f->name();
    std::string written = p.out ? "out" : "self";
    t.add_mutation(form->name(), [functional, written](Graph& g, const CallArgs& c,
                                                       const std::string& name) -> Effect {
      Kwargs kwargs = c.kwargs();
      if (written == "out") kwargs.pop_back();  // `out` is the last kwarg-only parameter
      Node* value = g.call(functional, c.args(), std::move(kwargs), name);
      return MutationEffect{{{written, value}}, written, nullptr};
    });
  }
  add_composed_rules(t, r);
  // In-place view ops: the functional view of self (positional arguments: swapaxes_ names its
  // dims axis0 / axis1); no value is written, and the parser rebinds self's name to the view.
  for (const mutation::InplaceViewForm& v : mutation::inplace_view_forms()) {
    std::string s(v.schema);
    const OpDef* form = r.find(s.substr(0, s.find('(')));
    if (!form || !r.find(v.functional) || t.mutation(form->name())) continue;
    std::string functional = v.functional;
    t.add_inplace_view(form->name(), [functional](Graph& g, const CallArgs& c,
                                                  const std::string& name) -> Effect {
      return MutationEffect{{}, "", g.call(functional, c.args(), {}, name)};
    });
  }
  for (const char* op : {"native_batch_norm.default", "batch_norm.default"})
    if (r.find(op)) t.add_mutation(op, batch_norm_rule(op));
  // _native_batch_norm_legit writes its (non-optional) running statistics in training; its
  // functional call is native_batch_norm's, which returns the same three tensors.
  if (r.find("_native_batch_norm_legit.default") && r.find("native_batch_norm.default"))
    t.add_mutation("_native_batch_norm_legit.default", batch_norm_rule("native_batch_norm.default"));
  if (r.find("rrelu_with_noise.default") && r.find("rrelu_with_noise_functional.default"))
    t.add_mutation("rrelu_with_noise.default", rrelu_with_noise_rule);
  if (r.find("_batch_norm_with_update.default") &&
      r.find("_batch_norm_with_update_functional.default"))
    t.add_mutation("_batch_norm_with_update.default", batch_norm_with_update_rule);
}

}  // namespace stax
