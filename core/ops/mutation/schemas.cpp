// The in-place and out= forms (category Mutating): aten's schemas, derived from the functional
// op's. Graph::call never makes a node of them: rules.cpp says how each is functionalized
// (core/graph/functionalize.h).
#include <string>

#include "core/graph/op_registry.h"
#include "core/ops/mutation/form_pairs.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {
namespace {

// "add.Tensor(Tensor self, ...) -> Tensor" -> "Tensor self, ..." (what is between the outer
// parentheses of the parameter list).
std::string params_of(const OpDef& f) {
  const std::string& t = f.schema.text;
  size_t lp = t.find('('), rp = t.rfind(") ->");
  if (lp == std::string::npos || rp == std::string::npos || rp < lp)
    throw Error("registry", f.name(), "cannot read the parameters of '" + t + "'");
  return t.substr(lp + 1, rp - lp - 1);
}

// "add_.Tensor" -> "add_.Tensor", "abs_.default" -> "abs_" (as aten prints a schema's name).
std::string schema_name(const std::string& form) {
  const std::string suffix = ".default";
  if (form.size() > suffix.size() && form.compare(form.size() - suffix.size(), suffix.size(),
                                                  suffix) == 0)
    return form.substr(0, form.size() - suffix.size());
  return form;
}

// The functional's parameters with `self` written: Tensor(a!) self.
std::string inplace_schema(const OpDef& f, const std::string& form) {
  std::string p = params_of(f);
  const std::string self = "Tensor self";
  if (p.compare(0, self.size(), self) != 0)
    throw Error("registry", form, "the functional form " + f.name() +
                                      " does not start with 'Tensor self': " + f.schema.text);
  return schema_name(form) + "(Tensor(a!) self" + p.substr(self.size()) + ") -> Tensor(a!)";
}

// The functional's parameters and a kwarg-only `Tensor(a!) out`.
std::string out_schema(const OpDef& f, const std::string& form) {
  std::string p = params_of(f);
  std::string tail = p.find('*') != std::string::npos ? ", Tensor(a!) out"
                     : p.empty()                       ? "*, Tensor(a!) out"
                                                       : ", *, Tensor(a!) out";
  return schema_name(form) + "(" + p + tail + ") -> Tensor(a!)";
}

// The forms' metadata are the written tensor's: never inferred for a node.
TensorMeta written_meta(const CallArgs& c) {
  return c.tensor(c.op().schema.params.back().name == "out" ? "out" : "self");
}

}  // namespace

void register_mutating_forms(OpRegistry& r) {
  for (const mutation::FormPair& p : mutation::form_pairs()) {
    const OpDef* f = r.find(p.functional);
    if (!f || f->multi_output() || r.find(p.form)) continue;
    std::string schema = p.out ? out_schema(*f, p.form) : inplace_schema(*f, p.form);
    OpDef& d = r.add(schema, OpCategory::Mutating, f->promotion, written_meta);
    d.differentiable = false;
  }
  // In-place view ops (rules.cpp): self's shape or strides change; never a node (the rule makes
  // the functional view).
  for (const auto& [schema, functional] : mutation::inplace_view_forms()) {
    std::string s(schema);
    if (r.find(s.substr(0, s.find('(')))) continue;
    if (!r.find(functional)) continue;
    OpDef& d = r.add(s, OpCategory::Mutating, Promotion::None, written_meta);
    d.differentiable = false;
  }
  // In-place ops whose functional form (copy, fill, zero, normal_functional ...) Stax composes
  // from other ops (rules.cpp), and the two that only touch autograd's flags.
  for (const char* schema : {
           "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
           "fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)",
           "fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)",
           "zero_(Tensor(a!) self) -> Tensor(a!)",
           "normal_(Tensor(a!) self, float mean=0., float std=1., *, Generator? generator=None) "
           "-> Tensor(a!)",
           "uniform_(Tensor(a!) self, float from=0., float to=1., *, Generator? generator=None) "
           "-> Tensor(a!)",
           "bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> "
           "Tensor(a!)",
           "detach_(Tensor(a!) self) -> Tensor(a!)",
           "requires_grad_(Tensor(a!) self, bool requires_grad=True) -> Tensor(a!)",
       }) {
    std::string s(schema);
    std::string name = s.substr(0, s.find('('));
    if (r.find(name)) continue;  // registered from its functional form above
    OpDef& d = r.add(s, OpCategory::Mutating, Promotion::None, written_meta);
    d.differentiable = false;
  }
}

}  // namespace stax
