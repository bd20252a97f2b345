#include "core/scheduler/extern_epilogue.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph/op_traits.h"

namespace stax {

namespace {

// An extern matrix product (mm, bmm, matmul, addmm) whose output a pointwise kernel may finish.
bool is_product(const ExternKernel& k) {
  const Node* n = k.node();
  return n && n->is_call() && default_op_traits().has(*n->op(), kTraitProductEpilogue);
}

bool is_load(const LoopOp& op) {
  return op.opcode == Opcode::load || op.opcode == Opcode::masked_load;
}

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// Row-major and dense, from offset 0: element e of the flat index at storage e.
bool contiguous(const Layout& l) {
  int64_t expect = 1;
  for (size_t d = l.size.size(); d-- > 0;) {
    if (l.size[d] != 1 && l.stride[d] != expect) return false;
    expect *= l.size[d];
  }
  return l.offset == 0;
}

// The row-major flat index of a body's iteration point.
Expr flat_index(const LoopBody& b) {
  std::vector<Expr> vars = b.iter_vars();
  std::vector<int64_t> coeffs(vars.size(), 0);
  int64_t stride = 1;
  for (size_t d = vars.size(); d-- > 0;) {
    coeffs[d] = stride;
    stride *= b.ranges[d];
  }
  return linear_sum(vars, coeffs, 0);
}

bool reads(const ScheduledKernel& k, const std::string& buffer) {
  for (const LoopBody& b : k.bodies)
    for (const LoopOp& op : b.ops)
      if (is_load(op) && op.buffer == buffer) return true;
  return false;
}

// Why kernel `k` cannot be the epilogue of `product` (run at step `at`); nullopt when it can.
std::optional<std::string> why_not(const ScheduledKernel& k, const Buffer& product, size_t at,
                                   const std::unordered_map<std::string, size_t>& step_of) {
  const std::string& p = product.name();
  if (!k.reduction_ranges.empty()) return "it is a reduction kernel";
  const int64_t n = numel(product.layout().size);
  if (numel(k.ranges) != n)
    return "it runs over " + std::to_string(numel(k.ranges)) + " points, not the product's " +
           std::to_string(n) + " elements";
  if (!contiguous(product.layout())) return "the product's output is not contiguous";
  std::vector<std::string> own;
  for (const ComputedBuffer* b : k.buffers) own.push_back(b->name());
  for (const LoopBody& body : k.bodies) {
    if (numel(body.ranges) != n || body.is_reduction())
      return "a body runs over " + extents_str(body.ranges) + ", not the product's elements";
    const Expr here = flat_index(body);
    for (const LoopOp& op : body.ops) {
      if (!is_load(op)) continue;
      if (op.buffer == p) {
        if (op.opcode == Opcode::masked_load) return "it reads " + p + " under a mask";
        if (body.index_of(op) != here)
          return "it reads " + p + " at " + body.index_of(op).str() +
                 ", not at the point it computes (" + here.str() + ")";
        continue;
      }
      if (std::find(own.begin(), own.end(), op.buffer) != own.end()) continue;
      auto it = step_of.find(op.buffer);
      if (it != step_of.end() && it->second > at)
        return "it reads " + op.buffer + ", which a step after the product computes";
    }
  }
  return std::nullopt;
}

std::unordered_map<std::string, size_t> producers(const Schedule& s) {
  std::unordered_map<std::string, size_t> step_of;
  for (size_t i = 0; i < s.steps.size(); ++i)
    for (const Buffer* b : s.writes(s.steps[i])) step_of[b->name()] = i;
  return step_of;
}

}  // namespace

void fuse_extern_epilogues(Schedule& s, const LoweredGraph& graph, const FusionLimits& limits) {
  (void)graph;
  if (!limits.extern_epilogues || !limits.enable_fusion) return;
  std::unordered_map<std::string, size_t> step_of = producers(s);
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const ScheduleStep& step = s.steps[i];
    if (step.kind != ScheduleStep::Kind::Extern) continue;
    const auto& ek = static_cast<const ExternKernel&>(*step.buffer);
    if (!is_product(ek)) continue;
    size_t j = i + 1;
    while (j < s.steps.size() && !(s.steps[j].kind == ScheduleStep::Kind::Kernel &&
                                   reads(s.kernels[s.steps[j].kernel], ek.name())))
      ++j;
    if (j == s.steps.size()) continue;  // no kernel reads it
    const size_t kernel = s.steps[j].kernel;
    const ScheduledKernel& k = s.kernels[kernel];
    std::string names;
    for (const ComputedBuffer* b : k.buffers) names += (names.empty() ? "" : ", ") + b->name();
    const std::string who = "kernel" + std::to_string(kernel) + " (" + names + ")";
    if (auto why = why_not(k, ek, i, step_of)) {
      s.epilogues.push_back({ek.name(), false, who + ": " + *why});
      continue;
    }
    s.steps[i].epilogue = kernel;
    s.steps.erase(s.steps.begin() + static_cast<long>(j));
    // The kernel scheduler's note "<product> | <buffer>: an extern kernel" no longer holds.
    std::erase_if(s.splits, [&](const Schedule::Split& sp) {
      return sp.before == ek.name() &&
             std::any_of(k.buffers.begin(), k.buffers.end(),
                         [&](const ComputedBuffer* b) { return b->name() == sp.after; });
    });
    s.epilogues.push_back(
        {ek.name(), true,
         who + " runs on each block of the " + ek.kernel() + "'s rows as it finishes them: "
               "pointwise over its " + extents_str(ek.layout().size) +
               " elements, reading them where it computes"});
    step_of = producers(s);
  }
}

}  // namespace stax
