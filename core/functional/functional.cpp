#include "core/functional/functional.h"

#include "core/autodiff/joint_graph.h"
#include "core/autodiff/jvp.h"
#include "core/support/error.h"

namespace stax {
namespace {

void check_count(size_t got, size_t want, const std::string& what, const std::string& fn) {
  if (got != want)
    throw Error("autodiff", fn,
                "expected " + std::to_string(want) + " " + what + " (one per " +
                    (what == "cotangents" ? "output" : "placeholder") + " of the graph), got " +
                    std::to_string(got));
}

// The floating-point and complex placeholders (the differentiable inputs) and their positions.
struct Inputs {
  std::vector<Node*> all;
  std::vector<std::string> names;  // floating ones
  std::vector<size_t> pos;         // their positions in `all`
};
Inputs differentiable_inputs(const Graph& f, const std::vector<Tensor>* selected = nullptr) {
  Inputs in;
  in.all = f.placeholders();
  for (size_t i = 0; i < in.all.size(); ++i) {
    if (!is_floating(in.all[i]->dtype()) && !is_complex(in.all[i]->dtype())) continue;
    if (selected && !(*selected)[i].defined()) continue;
    in.names.push_back(in.all[i]->name());
    in.pos.push_back(i);
  }
  return in;
}

// t converted to n's dtype (a tangent given in another precision), or zeros when undefined.
Tensor value_for(const Tensor& t, const Node* n) {
  if (!t.defined()) return Tensor::zeros(n->shape(), n->dtype());
  return t.dtype() == n->dtype() ? t : t.to(n->dtype());
}

Tensor one_hot(const Node* n, int64_t k) {
  Tensor t = Tensor::zeros(n->shape(), n->dtype());
  t.set_double(k, 1.0);
  return t;
}

void check_scalar_output(const Graph& f, const std::string& fn) {
  std::vector<Node*> outs = f.outputs();
  if (outs.size() != 1 || !outs[0] || !is_floating(outs[0]->dtype()) ||
      shape_numel(outs[0]->shape()) != 1)
    throw Error("autodiff", fn,
                fn + " needs a graph with a single one-element floating-point output, got " +
                    std::to_string(outs.size()) + " output(s)" +
                    (outs.size() == 1 && outs[0]
                         ? " of shape " + shape_str(outs[0]->shape()) + " and dtype " +
                               std::string(dtype_name(outs[0]->dtype()))
                         : std::string()));
}

// Forward over reverse: the tangent graph of the joint graph of f (built once, run per v).
struct HvpProgram {
  Inputs grad_inputs;  // gradients are taken with respect to every floating placeholder
  Inputs v_inputs;     // the placeholders v may be non-zero for
  JointGraph joint;
  JvpGraph tangent;

  HvpProgram(const Graph& f, const Inputs& g, const Inputs& v)
      : grad_inputs(g),
        v_inputs(v),
        joint(build_joint_graph(f, g.names)),
        tangent(build_jvp_graph(joint.graph, v.names)) {}

  // r[0] = f, r[1 .. 1+n) = gradients, r[1+n] = ḟ, r[2+n ...) = H v (n = gradient count).
  std::vector<Tensor> run(const std::vector<Tensor>& primals, const std::vector<Tensor>& v,
                          const InterpreterOptions& options) const {
    std::vector<Tensor> in = primals;
    for (const auto& name : joint.tangents)
      in.push_back(Tensor::ones(joint.graph.find(name)->shape(), joint.graph.find(name)->dtype()));
    for (size_t k = 0; k < v_inputs.pos.size(); ++k)
      in.push_back(value_for(v[v_inputs.pos[k]], v_inputs.all[v_inputs.pos[k]]));
    return interpret(tangent.graph, in, options);
  }
};

}  // namespace

JvpResult jvp(const Graph& f, const std::vector<Tensor>& primals,
              const std::vector<Tensor>& tangents, const InterpreterOptions& options) {
  std::vector<Node*> ph = f.placeholders();
  check_count(primals.size(), ph.size(), "primals", "jvp");
  check_count(tangents.size(), ph.size(), "tangents", "jvp");
  Inputs in = differentiable_inputs(f, &tangents);
  JvpGraph jg = build_jvp_graph(f, in.names);
  std::vector<Tensor> args = primals;
  for (size_t p : in.pos) args.push_back(value_for(tangents[p], ph[p]));
  std::vector<Tensor> r = interpret(jg.graph, args, options);
  JvpResult out;
  out.outputs.assign(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(jg.num_outputs));
  out.tangents.assign(r.begin() + static_cast<std::ptrdiff_t>(jg.num_outputs), r.end());
  return out;
}

VjpResult vjp(const Graph& f, const std::vector<Tensor>& primals,
              const std::vector<Tensor>& cotangents, const InterpreterOptions& options) {
  std::vector<Node*> ph = f.placeholders();
  std::vector<Node*> outs = f.outputs();
  check_count(primals.size(), ph.size(), "primals", "vjp");
  check_count(cotangents.size(), outs.size(), "cotangents", "vjp");
  Inputs in = differentiable_inputs(f);
  JointGraph j = build_joint_graph(f, in.names);
  std::vector<Tensor> args = primals;
  args.resize(primals.size() + j.tangents.size());
  for (size_t o = 0; o < outs.size(); ++o)
    if (j.output_tangent[o] >= 0)
      args[primals.size() + static_cast<size_t>(j.output_tangent[o])] =
          value_for(cotangents[o], outs[o]);
  std::vector<Tensor> r = interpret(j.graph, args, options);
  VjpResult out;
  out.outputs.assign(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(outs.size()));
  out.grads.resize(ph.size());
  for (size_t k = 0; k < in.pos.size(); ++k) out.grads[in.pos[k]] = r[outs.size() + k];
  return out;
}

HvpResult hvp(const Graph& f, const std::vector<Tensor>& primals, const std::vector<Tensor>& v,
              const InterpreterOptions& options) {
  std::vector<Node*> ph = f.placeholders();
  check_count(primals.size(), ph.size(), "primals", "hvp");
  check_count(v.size(), ph.size(), "v tensors", "hvp");
  check_scalar_output(f, "hvp");
  HvpProgram prog(f, differentiable_inputs(f), differentiable_inputs(f, &v));
  std::vector<Tensor> r = prog.run(primals, v, options);
  size_t n = prog.grad_inputs.pos.size();
  HvpResult out;
  out.output = r[0];
  out.grads.resize(ph.size());
  out.hvp.resize(ph.size());
  for (size_t k = 0; k < n; ++k) {
    out.grads[prog.grad_inputs.pos[k]] = r[1 + k];
    out.hvp[prog.grad_inputs.pos[k]] = r[2 + n + k];
  }
  return out;
}

std::vector<std::vector<Tensor>> jacobian(const Graph& f, const std::vector<Tensor>& primals,
                                          const InterpreterOptions& options) {
  std::vector<Node*> ph = f.placeholders();
  std::vector<Node*> outs = f.outputs();
  check_count(primals.size(), ph.size(), "primals", "jacobian");
  Inputs in = differentiable_inputs(f);
  JointGraph j = build_joint_graph(f, in.names);
  std::vector<std::vector<Tensor>> jac(outs.size(), std::vector<Tensor>(ph.size()));
  for (size_t o = 0; o < outs.size(); ++o) {
    for (size_t p : in.pos) {
      Shape s = outs[o]->shape();
      s.insert(s.end(), ph[p]->shape().begin(), ph[p]->shape().end());
      jac[o][p] = Tensor::zeros(s, ph[p]->dtype());
    }
    int tangent = j.output_tangent[o];
    if (tangent < 0) continue;  // not differentiable: zeros
    int64_t rows = shape_numel(outs[o]->shape());
    for (int64_t k = 0; k < rows; ++k) {
      std::vector<Tensor> args = primals;
      for (size_t t = 0; t < j.tangents.size(); ++t) {
        const Node* tn = j.graph.find(j.tangents[t]);
        args.push_back(static_cast<int>(t) == tangent ? one_hot(tn, k)
                                                      : Tensor::zeros(tn->shape(), tn->dtype()));
      }
      std::vector<Tensor> r = interpret(j.graph, args, options);
      for (size_t w = 0; w < in.pos.size(); ++w) {
        const Tensor& g = r[outs.size() + w];
        Tensor& dst = jac[o][in.pos[w]];
        int64_t cols = g.numel();
        for (int64_t m = 0; m < cols; ++m) dst.set_double(k * cols + m, g.get_double(m));
      }
    }
  }
  return jac;
}

std::vector<std::vector<Tensor>> hessian(const Graph& f, const std::vector<Tensor>& primals,
                                         const InterpreterOptions& options) {
  std::vector<Node*> ph = f.placeholders();
  check_count(primals.size(), ph.size(), "primals", "hessian");
  check_scalar_output(f, "hessian");
  Inputs in = differentiable_inputs(f);
  HvpProgram prog(f, in, in);
  size_t n = in.pos.size();
  std::vector<std::vector<Tensor>> hes(ph.size(), std::vector<Tensor>(ph.size()));
  for (size_t a : in.pos)
    for (size_t b : in.pos) {
      Shape s = ph[a]->shape();
      s.insert(s.end(), ph[b]->shape().begin(), ph[b]->shape().end());
      hes[a][b] = Tensor::zeros(s, ph[a]->dtype());
    }
  for (size_t jb = 0; jb < n; ++jb) {
    size_t b = in.pos[jb];
    int64_t cols = shape_numel(ph[b]->shape());
    for (int64_t k = 0; k < cols; ++k) {
      std::vector<Tensor> v(ph.size());
      v[b] = one_hot(ph[b], k);
      std::vector<Tensor> r = prog.run(primals, v, options);
      for (size_t ia = 0; ia < n; ++ia) {
        const Tensor& hv = r[2 + n + ia];
        Tensor& dst = hes[in.pos[ia]][b];
        for (int64_t m = 0; m < hv.numel(); ++m) dst.set_double(m * cols + k, hv.get_double(m));
      }
    }
  }
  return hes;
}

}  // namespace stax
