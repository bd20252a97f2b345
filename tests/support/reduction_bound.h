// The seed's §6.5 error bound of a reordered float reduction, shared by the tests that compare the
// segmented order (cpu_cpp's default, the interpreter's ReductionOrder::Segmented) with the
// sequential one. Any summation order of n terms a_i in a dtype of unit roundoff u gives
// |ŝ - s| <= (n - 1)·u·Σ|a_i| (to first order) against the exact sum s, so two orders differ by
// at most 2·(n - 1)·u·Σ|a_i|; a result stored as float16 / bfloat16 adds one rounding of each.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph/graph.h"
#include "core/interpreter/interpreter.h"
#include "core/tensor/tensor.h"
#include "tests/support/compiled_check.h"

namespace stax::test {

// Unit roundoff of the storage dtype (0 when it is the computation dtype).
inline double storage_roundoff(DType d) {
  if (d == DType::Float16) return std::ldexp(1.0, -11);
  if (d == DType::BFloat16) return std::ldexp(1.0, -8);
  return 0;
}

// The largest |a - b| of two sums of n terms in two orders, Σ|a_i| = sum_abs, result `value`.
inline double reorder_bound(int64_t n, double sum_abs, double value, DType dtype) {
  double terms = static_cast<double>(std::max<int64_t>(n - 1, 0));
  return 2 * terms * unit_roundoff(dtype) * sum_abs * 1.01 +
         2 * storage_roundoff(dtype) * std::fabs(value);
}

// got and want: two sums (same shape) of n terms each in two orders; sum_abs: Σ|a_i| per output.
inline ::testing::AssertionResult within_reorder_bound(const Tensor& got, const Tensor& want,
                                                       const Tensor& sum_abs, int64_t n) {
  std::vector<double> bound(static_cast<size_t>(want.numel()));
  for (int64_t i = 0; i < want.numel(); ++i)
    bound[static_cast<size_t>(i)] =
        reorder_bound(n, sum_abs.get_double(i), want.get_double(i), want.dtype());
  return within_bound(got, want, bound);
}

}  // namespace stax::test

// ---- per output: the §6.5 bound of a graph whose float reductions may run in another order ----

namespace stax::test {

// How an output of a graph compares when a backend reduces in another order (a tree, numpy's
// pairwise order) than the interpreter:
//   Exact      no float sum / mean / prod on its path: bit for bit;
//   Reordered  within `bound`, per element: the §6.5 bound of each reordered reduction on its
//              path (sum: 2·(n-1)·u·Σ|a_i|; mean: that / n and the division's roundings; prod:
//              2·(n-1)·u·|p|; + the storage rounding of half types), carried to the output by
//              running error propagation through the ops after it (views and cat move
//              it; add / sub / mul / div add it up with both sides' rounding; min / max / clamp /
//              amax / amin are 1-Lipschitz; floor / ceil / trunc / comparisons / integer
//              conversions count the jumps inside [w - e, w + e], where() adds the gap between
//              its sides where its condition may flip; exp and sigmoid by their slope,
//              with two 1-ulp evaluations); all of it computed by the interpreter in float64 on
//              a clone of the graph;
//   Downstream an op on the path that the propagation does not cover (softmax, log, pow, ...):
//              no bound; the caller decides (compiled_fuzz_test counts them).
struct OutputBound {
  enum Kind { Exact, Reordered, Downstream } kind = Exact;
  std::vector<double> bound;  // Reordered: per element of the output, in logical order
  std::string what;           // Downstream: the op the propagation stopped at
};

namespace detail {

inline std::string base_op(const Node* n) {
  std::string t = n->target();
  const std::string d = ".default";
  if (t.size() > d.size() && t.compare(t.size() - d.size(), d.size(), d) == 0)
    t.resize(t.size() - d.size());
  return t;
}

inline bool is_view_op(const std::string& t) {
  static const char* const kViews[] = {"view",       "reshape",      "permute", "transpose.int",
                                       "unsqueeze",  "squeeze.dim",  "squeeze", "expand",
                                       "select.int", "slice.Tensor", "t",       "alias",
                                       "contiguous", "_unsafe_view", "clone"};
  for (const char* v : kViews)
    if (t == v) return true;
  return false;
}

// A float reduction whose result depends on the summation order (max / min / arg / integer
// reductions do not).
inline bool reorders(const Node* n) {
  if (!n->is_call() || !is_floating(n->dtype())) return false;
  const std::string t = base_op(n);
  return t == "sum.dim_IntList" || t == "sum" || t == "mean.dim" || t == "mean" ||
         t == "prod.dim_int" || t == "prod" || t == "softmax.int" || t == "log_softmax.int" ||
         t == "_softmax" || t == "_log_softmax" || t == "var.correction" || t == "std.correction";
}

}  // namespace detail

// One OutputBound per output of `g` on `inputs` (the interpreter's values of every node give the
// |w| terms; `want`, its outputs, fixes nothing but the count).
inline std::vector<OutputBound> reorder_bounds(const Graph& g, const std::vector<Tensor>& inputs,
                                               const std::vector<Tensor>& want) {
  const std::vector<Node*> outs = g.outputs();
  std::vector<OutputBound> result(outs.size());
  if (want.size() != outs.size()) throw std::logic_error("reorder_bounds: outputs differ");
  std::unordered_map<const Node*, Node*> map;
  Graph aux = g.clone(&map);
  aux.set_insert_point(nullptr);
  // Per node: its error bound in aux (float64, the node's shape), null when exact; `stop` names
  // the op where the propagation gave up (then every node that depends on it is Downstream).
  std::unordered_map<const Node*, Node*> err;
  std::unordered_map<const Node*, std::string> stop;
  const double inf = std::numeric_limits<double>::infinity();
  auto f64 = [&](const Node* n) { return aux.call("to.dtype", {map.at(n), DType::Float64}); };
  auto absw = [&](const Node* n) { return aux.call("abs", {f64(n)}); };
  auto scale = [&](Node* e, double c) { return aux.call("mul.Scalar", {e, c}); };
  auto add = [&](Node* a, Node* b) { return a ? (b ? aux.call("add.Tensor", {a, b}) : a) : b; };
  auto zeros = [&](const Node* n) { return aux.call("zeros_like", {f64(n)}); };
  auto full = [&](const Node* n, Node* e) {  // e broadcast to n's shape
    return e->shape() == n->shape() ? e : aux.call("expand", {e, n->shape()});
  };
  // e (the exact-arithmetic error) widened by both sides' rounding of n's result: k·u·|w|
  auto rounded = [&](const Node* n, Node* e, double k) {
    const double u = unit_roundoff(n->dtype());
    return full(n, add(e ? scale(e, 1 + 2 * u) : nullptr, scale(absw(n), k * u * 1.01)));
  };
  // e where the divisor check holds, else inf
  auto guard = [&](Node* ok, Node* e) {
    return aux.call("where.ScalarOther", {ok, e, inf});
  };
  for (const Node* n : g.nodes()) {
    if (!n->is_call()) continue;
    std::vector<const Node*> ins;
    for (const Node* i : n->input_nodes()) ins.push_back(i);
    std::string why;
    for (const Node* i : ins)
      if (stop.count(i)) why = stop.at(i);
    bool any = false;
    for (const Node* i : ins) any = any || err.count(i);
    if (!why.empty()) {
      stop[n] = why;
      continue;
    }
    if (!any && !detail::reorders(n)) continue;  // exact
    auto E = [&](const Node* i) -> Node* {
      auto it = err.find(i);
      return it == err.end() ? nullptr : it->second;
    };
    const std::string t = detail::base_op(n);
    const std::vector<Arg>& args = n->args();
    Node* e = nullptr;
    try {
      if (detail::reorders(n)) {
        const bool sum_like = t == "sum.dim_IntList" || t == "sum" || t == "mean.dim" || t == "mean";
        const bool prod = t == "prod.dim_int" || t == "prod";
        if (!sum_like && !prod) throw std::runtime_error(t);
        const Node* a = n->input(0);
        const int64_t cnt = n->meta().numel() > 0 ? a->meta().numel() / n->meta().numel() : 0;
        const double terms = static_cast<double>(std::max<int64_t>(cnt - 1, 0));
        const double u = unit_roundoff(n->dtype()), st = storage_roundoff(n->dtype());
        const bool whole = t == "sum" || t == "mean" || t == "prod";
        auto reduce = [&](Node* x) {  // sum of x over n's dims
          return whole ? aux.call("sum", {x}) : aux.call("sum.dim_IntList", {x, args[1], args[2]});
        };
        if (prod) {
          if (E(a)) throw std::runtime_error("prod of an inexact value");
          e = scale(absw(n), 2 * terms * u * 1.01);
        } else {
          e = scale(reduce(aux.call("abs", {f64(a)})), 2 * terms * u * 1.01);
          if (E(a)) e = add(e, reduce(E(a)));
          if (t == "mean.dim" || t == "mean")
            e = add(scale(e, (1 + u) / static_cast<double>(std::max<int64_t>(cnt, 1))),
                    scale(absw(n), 3 * u * 1.01));
        }
        e = add(e, scale(absw(n), 2 * st));
      } else if (detail::is_view_op(t)) {
        std::vector<Arg> va = args;
        va[0] = Arg(E(n->input(0)));
        e = aux.call(n->target(), va, n->kwargs());
      } else if (t == "cat") {
        std::vector<Node*> parts;
        for (Node* p : args[0].to_node_list()) parts.push_back(E(p) ? E(p) : zeros(p));
        std::vector<Arg> va = args;
        va[0] = Arg(parts);
        e = aux.call(n->target(), va, n->kwargs());
      } else if (t == "neg" || t == "abs" || t == "clamp" || t == "clamp_min" ||
                 t == "clamp_max" || t == "relu") {
        e = E(n->input(0));  // 1-Lipschitz, exact
      } else if (t == "maximum" || t == "minimum") {
        Node* a = E(n->input(0));
        Node* b = E(n->input(1));
        e = a && b ? aux.call("maximum", {a, b}) : (a ? a : b);
        e = full(n, e);
      } else if (t == "amax" || t == "amin") {
        std::vector<Arg> va = args;
        va[0] = Arg(E(n->input(0)));
        e = aux.call("amax", va, n->kwargs());
      } else if (t == "add.Tensor" || t == "sub.Tensor") {
        double alpha = args.size() > 2 ? std::fabs(args[2].to_double()) : 1.0;
        Node* b = E(n->input(1));
        e = rounded(n, add(E(n->input(0)), b ? scale(b, alpha) : nullptr), 2);
      } else if (t == "add.Scalar" || t == "sub.Scalar") {
        e = rounded(n, E(n->input(0)), 2);
      } else if (t == "mul.Scalar") {
        e = rounded(n, scale(E(n->input(0)), std::fabs(args[1].to_double())), 2);
      } else if (t == "div.Scalar") {
        e = rounded(n, scale(E(n->input(0)), 1.0 / std::fabs(args[1].to_double())), 2);
      } else if (t == "mul.Tensor") {
        const Node* a = n->input(0);
        const Node* b = n->input(1);
        Node* ea = E(a);
        Node* eb = E(b);
        Node* s = nullptr;
        if (ea) s = add(s, aux.call("mul.Tensor", {ea, absw(b)}));
        if (eb) s = add(s, aux.call("mul.Tensor", {eb, absw(a)}));
        if (ea && eb) s = add(s, aux.call("mul.Tensor", {ea, eb}));
        e = rounded(n, s, 2);
      } else if (t == "div.Tensor") {
        const Node* b = n->input(1);
        Node* ea = E(n->input(0));
        Node* eb = E(b);
        Node* num = add(ea, eb ? aux.call("mul.Tensor", {eb, absw(n)}) : nullptr);
        Node* den = eb ? aux.call("sub.Tensor", {absw(b), eb}) : absw(b);
        e = guard(aux.call("gt.Scalar", {den, 0.0}), aux.call("div.Tensor", {num, den}));
        e = rounded(n, e, 2);
      } else if (t == "floor" || t == "ceil" || t == "trunc" || t == "round") {
        Node* w = f64(n->input(0));
        Node* ea = E(n->input(0));
        e = aux.call("sub.Tensor", {aux.call(t, {aux.call("add.Tensor", {w, ea})}),
                                    aux.call(t, {aux.call("sub.Tensor", {w, ea})})});
      } else if (t == "eq.Tensor" || t == "ne.Tensor" || t == "gt.Tensor" || t == "ge.Tensor" ||
                 t == "lt.Tensor" || t == "le.Tensor" || t == "eq.Scalar" || t == "ne.Scalar" ||
                 t == "gt.Scalar" || t == "ge.Scalar" || t == "lt.Scalar" || t == "le.Scalar") {
        // may flip where the operands are within their errors of each other
        const bool scalar = t.find(".Scalar") != std::string::npos;
        const Node* a = n->input(0);
        Node* diff = scalar ? aux.call("sub.Scalar", {f64(a), args[1]})
                            : aux.call("sub.Tensor", {f64(a), f64(n->input(1))});
        Node* es = scalar ? E(a) : add(E(a), E(n->input(1)));
        e = full(n, aux.call("to.dtype", {aux.call("le.Tensor", {aux.call("abs", {diff}), es}),
                                          DType::Float64}));
      } else if (t == "where.self") {
        // the chosen side's error; where the condition may flip, the distance to the other side
        const Node* c = n->input(0);
        const Node* a = n->input(1);
        const Node* b = n->input(2);
        Node* ea = E(a) ? E(a) : zeros(a);
        Node* eb = E(b) ? E(b) : zeros(b);
        e = full(n, aux.call("where.self", {map.at(c), ea, eb}));
        if (E(c)) {
          Node* gap = add(aux.call("abs", {aux.call("sub.Tensor", {f64(a), f64(b)})}),
                          add(ea, eb));
          e = full(n, add(e, aux.call("mul.Tensor", {E(c), gap})));
        }
      } else if (t == "exp") {
        // exp(w)·(e^e - 1), both sides 1 ulp (SLEEF / libdevice): 4u·|w|
        Node* ea = E(n->input(0));
        e = aux.call("mul.Tensor", {aux.call("exp", {f64(n->input(0))}), aux.call("expm1", {ea})});
        e = rounded(n, e, 4);
      } else if (t == "sigmoid") {
        e = rounded(n, scale(E(n->input(0)), 0.25), 8);  // slope <= 1/4; a few roundings
      } else if (t == "to.dtype" || t == "_to_copy") {
        const Node* a = n->input(0);
        Node* ea = E(a);
        if (is_floating(n->dtype())) {
          e = rounded(n, ea, 2);
        } else if (n->dtype() == DType::Bool) {  // flips where 0 lies in [w - e, w + e]
          e = aux.call("to.dtype", {aux.call("le.Tensor", {absw(a), ea}), DType::Float64});
        } else {  // truncation: the jumps inside the interval
          Node* w = f64(a);
          e = aux.call("sub.Tensor", {aux.call("trunc", {aux.call("add.Tensor", {w, ea})}),
                                      aux.call("trunc", {aux.call("sub.Tensor", {w, ea})})});
        }
      } else {
        throw std::runtime_error(n->target());
      }
    } catch (const std::exception& x) {
      stop[n] = x.what();
      continue;
    }
    err[n] = e;
  }
  std::vector<Node*> bounds;
  std::vector<size_t> which;
  for (size_t o = 0; o < outs.size(); ++o) {
    if (stop.count(outs[o])) {
      result[o].kind = OutputBound::Downstream;
      result[o].what = stop.at(outs[o]);
    } else if (err.count(outs[o])) {
      result[o].kind = OutputBound::Reordered;
      bounds.push_back(err.at(outs[o]));
      which.push_back(o);
    }
  }
  if (bounds.empty()) return result;
  aux.output(bounds);
  std::vector<Tensor> b = interpret(aux, inputs);
  for (size_t k = 0; k < which.size(); ++k) {
    if (b[k].sizes() != want[which[k]].sizes()) {  // a rule above broke the shape: no bound
      result[which[k]] = OutputBound{OutputBound::Downstream, {}, "the bound's shape"};
      continue;
    }
    std::vector<double>& v = result[which[k]].bound;
    v.resize(static_cast<size_t>(b[k].numel()));
    for (int64_t i = 0; i < b[k].numel(); ++i) {
      double x = b[k].get_double(i);
      v[static_cast<size_t>(i)] = std::isnan(x) ? inf : x;  // inf·0 of an inf input: no bound
    }
  }
  return result;
}

}  // namespace stax::test
