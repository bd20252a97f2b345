#include "core/scheduler/memory_plan.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/support/error.h"

namespace stax {

namespace {

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Buffer names as views of names the LoweredGraph and the Schedule own (buffer names, the loads
// of scheduled bodies), which outlive plan_memory: no name is copied per lookup.
using NameSet = std::unordered_set<std::string_view>;

// One arena storage: a chain of in-place buffers, live over steps [first, last].
struct Storage {
  int64_t bytes = 0, offset = 0;
  size_t first = SIZE_MAX, last = 0;
};

// Placed storages by lifetime. A segment tree over the steps keeps each lifetime at its
// O(log steps) canonical nodes, so the storages live at one step are the lists on one
// root-to-leaf path; an ordered set by first step gives those starting inside a range.
class LifetimeIndex {
 public:
  explicit LifetimeIndex(size_t steps) : steps_(std::max<size_t>(steps, 1)), nodes_(4 * steps_) {}

  void insert(const Storage* s) {
    add(1, 0, steps_ - 1, s->first, std::min(s->last, steps_ - 1), s);
    by_first_.emplace(s->first, s);
  }

  // Calls f once for each placed storage whose lifetime intersects [first, last].
  template <typename F>
  void overlapping(size_t first, size_t last, F&& f) const {
    if (first < steps_) {
      size_t node = 1, lo = 0, hi = steps_ - 1;
      for (;;) {
        for (const Storage* s : nodes_[node]) f(s);
        if (lo == hi) break;
        size_t mid = lo + (hi - lo) / 2;
        if (first <= mid) node = 2 * node, hi = mid;
        else node = 2 * node + 1, lo = mid + 1;
      }
    }
    for (auto it = by_first_.upper_bound(first); it != by_first_.end() && it->first <= last; ++it)
      f(it->second);
  }

 private:
  void add(size_t node, size_t lo, size_t hi, size_t a, size_t b, const Storage* s) {
    if (b < lo || hi < a || a > b) return;
    if (a <= lo && hi <= b) {
      nodes_[node].push_back(s);
      return;
    }
    size_t mid = lo + (hi - lo) / 2;
    add(2 * node, lo, mid, a, b, s);
    add(2 * node + 1, mid + 1, hi, a, b, s);
  }

  size_t steps_;
  std::vector<std::vector<const Storage*>> nodes_;
  std::multimap<size_t, const Storage*> by_first_;
};

bool is_load(const LoopOp& op) {
  return op.opcode == Opcode::load || op.opcode == Opcode::masked_load;
}

// The body's last store (or reduction store), or nullptr.
const LoopOp* last_store(const LoopBody& b) {
  const LoopOp* st = nullptr;
  for (const LoopOp& op : b.ops)
    if (op.opcode == Opcode::store || op.opcode == Opcode::store_reduction) st = &op;
  return st;
}

// Whether two buffers lay their elements out alike (same dtype, sizes, strides and offset).
bool same_layout(const Layout& a, const Layout& b) {
  return a.dtype == b.dtype && a.size == b.size && a.stride == b.stride && a.offset == b.offset;
}

// The arena buffer whose bytes `body` (of `kernel`, writing placement `out`) may take over, or
// "" (see memory_plan.h: in place).
// The buffers (positions in graph.buffers and plan.buffers = LoweredGraph ids) `body` loads,
// distinct, in first-load order; graph inputs left out.
std::vector<size_t> loaded_positions(const LoopBody& body, const LoweredGraph& graph) {
  std::vector<size_t> out;
  for (const LoopOp& op : body.ops) {
    if (!is_load(op)) continue;
    int64_t id = graph.id_of_op(op);
    if (id < 0 || static_cast<size_t>(id) >= graph.buffers.size()) continue;
    auto k = static_cast<size_t>(id);
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}

// `out_pos`: the position of the buffer `body` writes.
std::string in_place_donor(const ScheduledKernel& kernel, size_t body, size_t out_pos,
                           const MemoryPlan& plan, const LoweredGraph& graph,
                           const NameSet& taken) {
  const LoopBody& b = kernel.bodies[body];
  const LoopOp* store = last_store(b);
  if (!store) return "";
  const BufferPlacement& out = plan.buffers[out_pos];
  const Buffer* o = graph.buffers[out_pos].get();
  for (size_t at : loaded_positions(b, graph)) {
    const std::string& name = plan.buffers[at].buffer;
    const BufferPlacement* donor = &plan.buffers[at];
    if (donor->kind != BufferPlacement::Kind::Arena || taken.count(name) ||
        donor->last_step != out.first_step || donor->first_step >= out.first_step)
      continue;
    if (!same_layout(graph.buffers[at]->layout(), o->layout())) continue;
    bool ok = true;
    for (size_t k = 0; k < kernel.bodies.size() && ok; ++k)
      for (const LoopOp& op : kernel.bodies[k].ops) {
        if (!is_load(op) || op.buffer != name) continue;
        if (k > body || kernel.bodies[k].index_of(op) != b.index_of(*store)) ok = false;
      }
    if (ok) return std::string(name);
  }
  return "";
}

// The buffer of `kernel` whose bytes the kernel temporary computed by body `t` may live in, or ""
// (memory_plan.h: kernel temporaries). `hosts`: buffers that already hold a temporary.
std::string temporary_host(const ScheduledKernel& kernel, size_t t, const NameSet& hosts) {
  const LoopBody& bt = kernel.bodies[t];
  const LoopOp* st = last_store(bt);
  if (!st || st->opcode != Opcode::store || st->buffer != kernel.buffers[t]->name()) return "";
  const std::string& temp = kernel.buffers[t]->name();
  const Expr& at = bt.index_of(*st);
  const Layout& lt = kernel.buffers[t]->layout();
  for (size_t h = t + 1; h < kernel.bodies.size(); ++h) {
    const LoopBody& bh = kernel.bodies[h];
    const std::string& host = kernel.buffers[h]->name();
    const LoopOp* sh = last_store(bh);
    if (!sh || sh->opcode != Opcode::store || sh->buffer != host || hosts.count(host) ||
        bh.index_of(*sh) != at || !same_layout(kernel.buffers[h]->layout(), lt))
      continue;
    bool ok = true;
    for (size_t k = 0; k < kernel.bodies.size() && ok; ++k)
      for (const LoopOp& op : kernel.bodies[k].ops) {
        if (!is_load(op)) continue;
        if (op.buffer == temp && (k <= t || k > h || kernel.bodies[k].index_of(op) != at))
          ok = false;
        if (op.buffer == host && k < h) ok = false;
      }
    if (ok) return host;
  }
  return "";
}

}  // namespace

const BufferPlacement* MemoryPlan::find(std::string_view buffer) const {
  auto it = index.find(buffer);
  return it == index.end() ? nullptr : &buffers[it->second];
}

std::string MemoryPlan::host_of(const std::string& buffer) const {
  std::string name = buffer;
  for (const BufferPlacement* p = find(name); p && p->kind == BufferPlacement::Kind::Temporary;
       p = find(name))
    name = p->stored_in;
  return name;
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
      case BufferPlacement::Kind::Temporary: s += "kernel temporary in " + p.stored_in; break;
    }
    if (!p.in_place_of.empty()) s += " in place of " + p.in_place_of;
    s += " steps " + std::to_string(p.first_step) + ".." + std::to_string(p.last_step) + "\n";
  }
  return s;
}

namespace {

constexpr size_t kNone = SIZE_MAX;

// A buffer's position in graph.buffers (= in plan.buffers): its LoweredGraph id.
size_t position(const LoweredGraph& graph, const Buffer* b) {
  int64_t id = graph.id_of(b);
  if (id < 0 || static_cast<size_t>(id) >= graph.buffers.size())
    throw Error("schedule", b->name(), "internal: the buffer is not in the graph");
  return static_cast<size_t>(id);
}

// By buffer position: the step that writes each buffer, the last step that reads it
// (Schedule::reads of each step) and whether the graph returns it.
struct Lifetimes {
  std::vector<size_t> written_at, last_read;
  std::vector<bool> returned;
};

Lifetimes buffer_lifetimes(const LoweredGraph& graph, const Schedule& schedule) {
  const size_t n = graph.buffers.size();
  Lifetimes l{std::vector<size_t>(n, kNone), std::vector<size_t>(n, kNone),
              std::vector<bool>(n, false)};
  auto wrote = [&](const Buffer* b, size_t i) {
    int64_t id = graph.id_of(b);
    if (id >= 0 && static_cast<size_t>(id) < n) l.written_at[static_cast<size_t>(id)] = i;
  };
  // A kernel's buffers are written, and its loads read, at step i.
  auto kernel_at = [&](const ScheduledKernel& k, size_t i) {
    for (const ComputedBuffer* b : k.buffers) wrote(b, i);
    for (const LoopBody& body : k.bodies)
      for (const LoopOp& op : body.ops) {
        if (!is_load(op)) continue;
        int64_t id = graph.id_of_op(op);
        if (id >= 0 && static_cast<size_t>(id) < n) l.last_read[static_cast<size_t>(id)] = i;
      }
  };
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const ScheduleStep& step = schedule.steps[i];
    if (step.kind == ScheduleStep::Kind::Kernel) {
      kernel_at(schedule.kernels.at(step.kernel), i);
      continue;
    }
    wrote(step.buffer, i);
    // An extern's epilogue (extern_epilogue.h) runs inside its step, while the product still
    // reads its inputs: its buffers live from this step on, so they share no bytes with the
    // product's inputs (and, being in no Kernel step, take no one's bytes in place below).
    if (step.has_epilogue()) kernel_at(schedule.kernels.at(step.epilogue), i);
    const auto& inputs = step.kind == ScheduleStep::Kind::Extern
                             ? static_cast<const ExternKernel*>(step.buffer)->inputs()
                             : static_cast<const FallbackKernel*>(step.buffer)->inputs();
    for (const KernelInput& in : inputs) {
      int64_t id = graph.id_of(in.buffer.get());
      if (id >= 0 && static_cast<size_t>(id) < n) l.last_read[static_cast<size_t>(id)] = i;
    }
  }
  for (const GraphOutput& o : graph.outputs) {
    int64_t id = graph.id_of(o.buffer.get());
    if (id >= 0 && static_cast<size_t>(id) < n) l.returned[static_cast<size_t>(id)] = true;
  }
  return l;
}

// One placement per buffer: its bytes, its lifetime and its kind (output, fallback, arena).
MemoryPlan place_buffers(const LoweredGraph& graph, const Lifetimes& l) {
  const size_t n = graph.buffers.size();
  MemoryPlan plan;
  plan.buffers.reserve(n);
  plan.index.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    const Buffer* b = graph.buffers[k].get();
    if (l.written_at[k] == kNone)
      throw Error("schedule", b->name(), "internal: the buffer is written by no step");
    BufferPlacement p;
    p.buffer = b->name();
    p.bytes = std::max<int64_t>(b->layout().storage_numel(), 1) *
              static_cast<int64_t>(dtype_size(b->dtype()));
    p.first_step = l.written_at[k];
    p.last_step = l.last_read[k] == kNone ? p.first_step : std::max(p.first_step, l.last_read[k]);
    p.kind = l.returned[k]                            ? BufferPlacement::Kind::Output
             : b->kind() == IRKind::FallbackKernel    ? BufferPlacement::Kind::Fallback
                                                      : BufferPlacement::Kind::Arena;
    plan.index.emplace(p.buffer, k);
    plan.buffers.push_back(std::move(p));
  }
  return plan;
}

// Kernel temporaries: arena buffers no other step reads, living in a later buffer of their
// kernel (chains T -> U -> H resolve to H's storage, see host_of). Returns the hosts.
NameSet place_temporaries(MemoryPlan& plan, const LoweredGraph& graph, const Schedule& schedule) {
  NameSet hosts;
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const ScheduleStep& step = schedule.steps[i];
    if (step.kind != ScheduleStep::Kind::Kernel && !step.has_epilogue()) continue;
    const ScheduledKernel& kernel =
        schedule.kernels[step.kind == ScheduleStep::Kind::Kernel ? step.kernel : step.epilogue];
    if (kernel.bodies.size() != kernel.buffers.size()) continue;
    for (size_t t = 0; t < kernel.buffers.size(); ++t) {
      BufferPlacement& p = plan.buffers[position(graph, kernel.buffers[t])];
      if (p.kind != BufferPlacement::Kind::Arena || p.first_step != i || p.last_step != i) continue;
      std::string host = temporary_host(kernel, t, hosts);
      if (host.empty()) continue;
      p.kind = BufferPlacement::Kind::Temporary;
      p.stored_in = host;
      hosts.insert(p.stored_in);
      plan.intermediate_bytes += p.bytes;
    }
  }
  return hosts;
}

// In place: kernel buffers taking over a dying input's bytes. Chains (I -> O -> P) share one
// storage; returns root, where root[k] is the first buffer of k's chain.
std::vector<size_t> chain_in_place(MemoryPlan& plan, const LoweredGraph& graph,
                                   const Schedule& schedule, const NameSet& hosts) {
  std::vector<size_t> root(plan.buffers.size());
  for (size_t k = 0; k < root.size(); ++k) root[k] = k;
  NameSet taken;
  for (const ScheduleStep& step : schedule.steps) {
    if (step.kind != ScheduleStep::Kind::Kernel) continue;
    const ScheduledKernel& kernel = schedule.kernels[step.kernel];
    for (size_t b = 0; b < kernel.buffers.size(); ++b) {
      const size_t out_pos = position(graph, kernel.buffers[b]);
      BufferPlacement& out = plan.buffers[out_pos];
      if (out.kind != BufferPlacement::Kind::Arena || hosts.count(out.buffer)) continue;
      std::string donor = in_place_donor(kernel, b, out_pos, plan, graph, taken);
      if (donor.empty()) continue;
      out.in_place_of = donor;
      taken.insert(plan.buffers[plan.index.at(donor)].buffer);
      root[out_pos] = root[plan.index.at(donor)];
    }
  }
  return root;
}

// One storage per chain, its lifetime spanning the chain's, placed in the arena; each arena
// buffer gets its chain's offset.
void pack_arena(MemoryPlan& plan, const std::vector<size_t>& root, size_t steps) {
  // storages[r]: the storage of the chain rooted at buffer r (used[r] when there is one).
  std::vector<Storage> storages(plan.buffers.size());
  std::vector<bool> used(plan.buffers.size(), false);
  for (size_t k = 0; k < plan.buffers.size(); ++k) {
    const BufferPlacement& p = plan.buffers[k];
    if (p.kind != BufferPlacement::Kind::Arena) continue;
    used[root[k]] = true;
    Storage& s = storages[root[k]];
    s.bytes = std::max(s.bytes, p.bytes);
    s.first = std::min(s.first, p.first_step);
    s.last = std::max(s.last, p.last_step);
    plan.intermediate_bytes += p.bytes;
  }

  // Greedy by size: each storage at the lowest aligned offset where it overlaps no placed
  // storage whose lifetime intersects its own.
  std::vector<Storage*> order;
  for (size_t r = 0; r < storages.size(); ++r)
    if (used[r]) order.push_back(&storages[r]);
  std::stable_sort(order.begin(), order.end(),
                   [](const Storage* a, const Storage* b) { return a->bytes > b->bytes; });
  // The placed storages whose lifetimes intersect [first, last] are those live at `first`
  // (a stabbing query on a segment tree over steps) and those starting in (first, last] (a
  // range of an ordered set): O(log steps + overlaps) per storage instead of a scan of every
  // placed one, which was quadratic at 100k storages (issue 12's scale bench).
  LifetimeIndex placed(steps);
  std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of live placed storages
  for (Storage* p : order) {
    busy.clear();
    placed.overlapping(p->first, p->last, [&](const Storage* q) {
      busy.push_back({q->offset, q->offset + q->bytes});
    });
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + p->bytes <= begin) break;
      offset = std::max(offset, align_up(end, MemoryPlan::kArenaAlignment));
    }
    p->offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + p->bytes);
    placed.insert(p);
  }
  for (size_t k = 0; k < plan.buffers.size(); ++k)
    if (plan.buffers[k].kind == BufferPlacement::Kind::Arena)
      plan.buffers[k].offset = storages[root[k]].offset;
  plan.arena_bytes = align_up(plan.arena_bytes, MemoryPlan::kArenaAlignment);
}

}  // namespace

MemoryPlan plan_memory(const LoweredGraph& graph, const Schedule& schedule) {
  // Positions are LoweredGraph ids (buffers[k] has id k), indexed afresh if the lists were
  // edited since.
  if (!graph.is_indexed()) {
    LoweredGraph copy = graph;
    copy.index();
    return plan_memory(copy, schedule);
  }
  MemoryPlan plan = place_buffers(graph, buffer_lifetimes(graph, schedule));
  const NameSet hosts = place_temporaries(plan, graph, schedule);
  const std::vector<size_t> root = chain_in_place(plan, graph, schedule, hosts);
  pack_arena(plan, root, schedule.steps.size());
  return plan;
}

}  // namespace stax
