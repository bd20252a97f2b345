#include "core/scheduler/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace stax {

namespace {

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// The buffers each step reads.
std::vector<std::set<std::string>> step_reads(const Schedule& s) {
  std::vector<std::set<std::string>> reads(s.steps.size());
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const ScheduleStep& step = s.steps[i];
    if (step.kind == ScheduleStep::Kind::Kernel) {
      for (const LoopBody& body : s.kernels[step.kernel].bodies)
        for (const std::string& n : read_writes(body).read_buffers()) reads[i].insert(n);
    } else {
      const auto& inputs = step.kind == ScheduleStep::Kind::Extern
                               ? static_cast<const ExternKernel*>(step.buffer)->inputs()
                               : static_cast<const FallbackKernel*>(step.buffer)->inputs();
      for (const KernelInput& in : inputs) reads[i].insert(in.buffer->name());
    }
  }
  return reads;
}

}  // namespace

const BufferPlacement* MemoryPlan::find(const std::string& buffer) const {
  for (const BufferPlacement& p : buffers)
    if (p.buffer == buffer) return &p;
  return nullptr;
}

std::string MemoryPlan::str() const {
  size_t n = 0;
  for (const BufferPlacement& p : buffers) n += p.kind == BufferPlacement::Kind::Arena;
  char pct[32] = "";
  if (intermediate_bytes > 0)
    std::snprintf(pct, sizeof pct, " (%.1f%%)", 100.0 * static_cast<double>(arena_bytes) /
                                                    static_cast<double>(intermediate_bytes));
  std::string s = "arena: " + std::to_string(arena_bytes) + " bytes for " + std::to_string(n) +
                  " intermediates of " + std::to_string(intermediate_bytes) + " bytes" + pct + "\n";
  for (const BufferPlacement& p : buffers) {
    s += "  " + p.buffer + ": ";
    switch (p.kind) {
      case BufferPlacement::Kind::Output: s += "output"; break;
      case BufferPlacement::Kind::Fallback: s += "fallback result"; break;
      case BufferPlacement::Kind::Arena: s += "arena[" + std::to_string(p.offset) + ", +" +
                                              std::to_string(p.bytes) + ")"; break;
    }
    s += " steps " + std::to_string(p.first_step) + ".." + std::to_string(p.last_step) + "\n";
  }
  return s;
}

MemoryPlan plan_memory(const LoweredGraph& graph, const Schedule& schedule) {
  std::map<std::string, size_t> written_at;
  for (size_t i = 0; i < schedule.steps.size(); ++i)
    for (const Buffer* b : schedule.writes(schedule.steps[i])) written_at[b->name()] = i;
  std::map<std::string, size_t> last_read;
  std::vector<std::set<std::string>> reads = step_reads(schedule);
  for (size_t i = 0; i < reads.size(); ++i)
    for (const std::string& n : reads[i]) last_read[n] = i;
  std::set<std::string> returned;
  for (const GraphOutput& o : graph.outputs) returned.insert(o.buffer->name());

  MemoryPlan plan;
  for (const BufferPtr& b : graph.buffers) {
    BufferPlacement p;
    p.buffer = b->name();
    p.bytes = std::max<int64_t>(b->layout().storage_numel(), 1) *
              static_cast<int64_t>(dtype_size(b->dtype()));
    p.first_step = written_at.at(b->name());
    auto it = last_read.find(b->name());
    p.last_step = it == last_read.end() ? p.first_step : std::max(p.first_step, it->second);
    p.kind = returned.count(b->name())                ? BufferPlacement::Kind::Output
             : b->kind() == IRKind::FallbackKernel    ? BufferPlacement::Kind::Fallback
                                                      : BufferPlacement::Kind::Arena;
    plan.buffers.push_back(p);
  }

  // Greedy by size: each arena buffer at the lowest aligned offset where it overlaps no placed
  // buffer whose lifetime intersects its own.
  std::vector<size_t> order;
  for (size_t k = 0; k < plan.buffers.size(); ++k)
    if (plan.buffers[k].kind == BufferPlacement::Kind::Arena) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.buffers[a].bytes > plan.buffers[b].bytes;
  });
  std::vector<size_t> placed;
  for (size_t k : order) {
    BufferPlacement& p = plan.buffers[k];
    std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of live placed buffers
    for (size_t j : placed) {
      const BufferPlacement& q = plan.buffers[j];
      if (q.last_step < p.first_step || p.last_step < q.first_step) continue;
      busy.push_back({q.offset, q.offset + q.bytes});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + p.bytes <= begin) break;
      offset = std::max(offset, align_up(end, MemoryPlan::kArenaAlignment));
    }
    p.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + p.bytes);
    plan.intermediate_bytes += p.bytes;
    placed.push_back(k);
  }
  plan.arena_bytes = align_up(plan.arena_bytes, MemoryPlan::kArenaAlignment);
  return plan;
}

}  // namespace stax
