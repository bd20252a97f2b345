#include "core/scheduler/schedule.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/scheduler/extern_epilogue.h"
#include "core/support/error.h"

namespace stax {

namespace {

std::string space_str(const Extents& ranges, const Extents& reduction_ranges) {
  std::string s = extents_str(ranges);
  if (!reduction_ranges.empty()) s += " x reduction " + extents_str(reduction_ranges);
  return s;
}

// A buffer's body with unit extents dropped (a reduction over one point keeps {1}; an empty
// body stays as it is): nullopt when that is the body itself (no copy).
std::optional<LoopBody> unit_free(const LoopBody& b, BodyReindexerCache& reindexers) {
  if (extents_numel(b.ranges) * extents_numel(b.reduction_ranges) == 0) return std::nullopt;
  Extents ranges = drop_unit_extents(b.ranges);
  Extents rr = drop_unit_extents(b.reduction_ranges);
  if (b.is_reduction() && rr.empty()) rr = {1};
  if (ranges == b.ranges && rr == b.reduction_ranges) return std::nullopt;
  BodyPlacement p = b.is_reduction() ? BodyPlacement::Reduction : BodyPlacement::Iteration;
  return reindex_body(b, p, ranges, rr, reindexers);
}

BodyPlacement placement_in(const LoopBody& b, const Extents& ranges, const Extents& rr) {
  if (b.is_reduction()) return BodyPlacement::Reduction;
  if (rr.empty() || extents_numel(b.ranges) == extents_numel(ranges)) return BodyPlacement::Iteration;
  return BodyPlacement::Full;
}

// The write of a body (its one store / store_reduction): buffer and index.
const LoopOp* store_of(const LoopBody& b) {
  for (const LoopOp& op : b.ops)
    if (op.opcode == Opcode::store || op.opcode == Opcode::store_reduction) return &op;
  return nullptr;
}

struct Member {
  const ComputedBuffer* buffer;
  int64_t id;                   // the buffer's LoweredGraph id
  std::optional<LoopBody> own;  // unit_free(buffer->body()) when it differs from that body
  const LoopBody& body() const { return own ? *own : buffer->body(); }
};

// Buffers by their LoweredGraph id (LoweredGraph::index): vectors by id instead of maps keyed by
// name. A kernel's sets are small (bounded by FusionLimits::max_fused_nodes): a vector searched
// linearly costs less than a hash set per kernel (50k kernels in the 100k-node MLP step).
struct IdSet {
  std::vector<int64_t> ids;
  bool count(int64_t id) const { return std::find(ids.begin(), ids.end(), id) != ids.end(); }
  void insert(int64_t id) {
    if (!count(id)) ids.push_back(id);
  }
};

// The ids of the buffers a body loads: per op (-1 for other ops or an unknown buffer) and the
// distinct ones in first-load order.
struct LoadIds {
  std::vector<int64_t> of_op;
  std::vector<int64_t> distinct;
};

LoadIds load_ids(const LoopBody& body, const LoweredGraph& graph) {
  LoadIds r;
  r.of_op.assign(body.ops.size(), -1);
  for (size_t k = 0; k < body.ops.size(); ++k) {
    const LoopOp& op = body.ops[k];
    if (op.opcode != Opcode::load && op.opcode != Opcode::masked_load) continue;
    int64_t id = graph.id_of_op(op);
    r.of_op[k] = id;
    if (id >= 0 && std::find(r.distinct.begin(), r.distinct.end(), id) == r.distinct.end())
      r.distinct.push_back(id);
  }
  return r;
}

// A short list of distinct group numbers: the first two inline (most buffers are read or written
// by one or two kernels), the rest in a vector. One per buffer of the graph: no allocation for
// most of them.
class GroupList {
 public:
  template <class F>
  void for_each(F&& f) const {
    for (uint8_t i = 0; i < n_; ++i) f(first_[i]);
    for (size_t g : more_) f(g);
  }
  void insert(size_t g) {
    for (uint8_t i = 0; i < n_; ++i)
      if (first_[i] == g) return;
    if (std::find(more_.begin(), more_.end(), g) != more_.end()) return;
    if (n_ < first_.size())
      first_[n_++] = g;
    else
      more_.push_back(g);
  }

 private:
  std::array<size_t, 2> first_{};
  uint8_t n_ = 0;
  std::vector<size_t> more_;
};

struct Group {
  std::vector<Member> members;
  Extents ranges, reduction_ranges;
  IdSet writes, reads;
  size_t step = 0;
  bool closed = false;  // a reduction over one point, or an empty space: kept alone
};

// The iteration space of `group` with `body` added, or nullopt when they do not fit.
std::optional<std::pair<Extents, Extents>> joint_space(const Group& g, const LoopBody& b) {
  const int64_t n = extents_numel(g.ranges);
  if (g.reduction_ranges.empty()) {
    if (!b.is_reduction()) {
      auto r = common_refinement(g.ranges, b.ranges);
      if (!r) return std::nullopt;
      return std::make_pair(*r, Extents{});
    }
    const int64_t bi = extents_numel(b.ranges), br = extents_numel(b.reduction_ranges);
    if (n == bi * br) {  // the group's pointwise bodies run inside the reduction loop
      Extents both = b.ranges;
      both.insert(both.end(), b.reduction_ranges.begin(), b.reduction_ranges.end());
      auto r = common_refinement(g.ranges, both);
      if (!r) return std::nullopt;
      return split_extents(*r, br);
    }
    if (n == bi) {  // ... or once per iteration point, before the reduction
      auto r = common_refinement(g.ranges, b.ranges);
      if (!r) return std::nullopt;
      return std::make_pair(*r, drop_unit_extents(b.reduction_ranges));
    }
    return std::nullopt;
  }
  const int64_t nr = extents_numel(g.reduction_ranges);
  if (b.is_reduction()) {
    auto r = common_refinement(g.ranges, b.ranges);
    auto rr = common_refinement(g.reduction_ranges, b.reduction_ranges);
    if (!r || !rr) return std::nullopt;
    return std::make_pair(*r, *rr);
  }
  const int64_t bn = extents_numel(b.ranges);
  if (bn == n) {
    auto r = common_refinement(g.ranges, b.ranges);
    if (!r) return std::nullopt;
    return std::make_pair(*r, g.reduction_ranges);
  }
  if (bn == n * nr) {
    Extents both = g.ranges;
    both.insert(both.end(), g.reduction_ranges.begin(), g.reduction_ranges.end());
    auto r = common_refinement(both, b.ranges);
    if (!r) return std::nullopt;
    return split_extents(*r, nr);
  }
  return std::nullopt;
}

// `b` placed in the space: `b` itself when that is the identity, else a re-indexed copy kept in
// `storage`.
const LoopBody& placed_ref(const LoopBody& b, const Extents& ranges, const Extents& rr,
                           std::optional<LoopBody>& storage, BodyReindexerCache& reindexers) {
  BodyPlacement p = placement_in(b, ranges, rr);
  if (is_identity_placement(b, p, ranges, rr)) return b;
  storage = reindex_body(b, p, ranges, rr, reindexers);
  return *storage;
}

class Scheduler {
 public:
  Scheduler(const LoweredGraph& graph, const FusionLimits& limits)
      : graph_(graph), limits_(limits) {
    const size_t n = graph.buffers.size();
    group_of_.assign(graph.num_ids(), kNoStep);
    step_of_.assign(graph.num_ids(), kNoStep);
    groups_touching_.resize(graph.num_ids());
    groups_.reserve(n);
    steps_.reserve(n);
    splits_.reserve(n);
  }

  Schedule run() {
    const Buffer* prev = nullptr;
    for (const BufferPtr& b : graph_.buffers) {
      if (b->kind() == IRKind::ComputedBuffer)
        add_computed(static_cast<const ComputedBuffer&>(*b), prev);
      else
        add_single(*b, prev);
      prev = b.get();
    }
    return finish();
  }

 private:
  // Why `b` (body `body`) cannot join `g`; nullopt when it can. On success `space` is the joint
  // iteration space.
  // `explain`: whether the reason is wanted (only the predecessor's kernel's is reported); else a
  // refusal is an empty string, without formatting extents and expressions.
  std::optional<std::string> why_not(const Group& g, const ComputedBuffer& b, const LoopBody& body,
                                     const LoadIds& loads, bool explain,
                                     std::pair<Extents, Extents>& space) const {
    if (!limits_.enable_fusion) return "fusion is off";
    if (g.closed) return "the kernel is a reduction over one point or empty";
    if (body.is_reduction() && extents_numel(body.reduction_ranges) == 1)
      return "a reduction over one point";
    if (extents_numel(body.ranges) * extents_numel(body.reduction_ranges) == 0)
      return "an empty iteration space";
    if (g.members.size() >= static_cast<size_t>(std::max(limits_.max_fused_nodes, 1)))
      return !explain ? std::string() : "the kernel has reached the fusion limit of " +
             std::to_string(limits_.max_fused_nodes) + " buffers";
    // Every producer outside the group must run before it.
    for (int64_t id : loads.distinct) {
      if (g.writes.count(id)) continue;
      size_t step = step_of_[static_cast<size_t>(id)];
      if (step != kNoStep && step > g.step)
        return !explain ? std::string()
                        : "reads " + graph_.by_id(id)->name() + ", which a later step computes";
    }
    auto joint = joint_space(g, body);
    if (!joint)
      return !explain ? std::string() : "iteration space " + space_str(body.ranges, body.reduction_ranges) +
             " does not fit the kernel's " + space_str(g.ranges, g.reduction_ranges);
    // Reads of what the group writes: at the same address as the write, in the joint space.
    // Placing re-indexes only the expressions (the ops stay as they are): the two addresses
    // compared are re-indexed alone, no body is copied.
    const BodyReindexer* mine = nullptr;
    int64_t shared = 0;
    bool reads_group_writes = false;
    for (size_t k = 0; k < body.ops.size(); ++k) {
      const LoopOp& op = body.ops[k];
      const int64_t id = loads.of_op[k];
      if (id < 0) continue;  // not a load (or of no buffer of the graph)
      if (g.reads.count(id)) shared = 1;
      if (!g.writes.count(id)) continue;
      shared = 1;
      reads_group_writes = true;
      const Extents& r = joint->first;
      const Extents& rr = joint->second;
      if (!mine) mine = &reindexers_.get(body, placement_in(body, r, rr), r, rr);
      const LoopBody& producer = std::find_if(g.members.begin(), g.members.end(), [&](const Member& m) {
                                   return m.id == id;
                                 })->body();
      const LoopOp* st = store_of(producer);
      Expr at = (*mine)(body.index_of(op));
      std::optional<Expr> written;
      if (st)
        written = reindexers_.get(producer, placement_in(producer, r, rr), r, rr)(producer.index_of(*st));
      if (!written || *written != at)
        return !explain ? std::string() : "reads " + op.buffer + " at " + at.str() +
               ", not where the kernel writes it (" + (written ? written->str() : std::string("?")) +
               ")";
    }
    if (!shared) return "shares no buffer with the kernel";
    if (!reads_group_writes && runs_in_reduction_loop(g, body, *joint) &&
        !reads_an_element_the_kernel_reads(g, body, loads, *joint))
      return !explain ? std::string()
                      : "inside the kernel's reduction loop it would read the kernel's buffers "
                        "at other elements (no reuse; it would cost the reduction its lanes)";
    (void)b;
    space = *joint;
    return std::nullopt;
  }

  // Whether adding `body` puts a pointwise body inside a reduction loop (`body` itself, or, when
  // `body` is the reduction, the group's pointwise members), placed over the whole space: the
  // elements it visits there follow the reduction's order, not its own.
  static bool runs_in_reduction_loop(const Group& g, const LoopBody& body,
                                     const std::pair<Extents, Extents>& joint) {
    const Extents& r = joint.first;
    const Extents& rr = joint.second;
    if (rr.empty()) return false;
    if (placement_in(body, r, rr) == BodyPlacement::Full) return true;
    if (!body.is_reduction()) return false;
    return std::any_of(g.members.begin(), g.members.end(), [&](const Member& m) {
      return placement_in(m.body(), r, rr) == BodyPlacement::Full;
    });
  }

  // Whether some load of `body` reads an element that a member of `g` loads at the same point of
  // the joint space (the same buffer at the same re-indexed address).
  bool reads_an_element_the_kernel_reads(const Group& g, const LoopBody& body,
                                         const LoadIds& loads,
                                         const std::pair<Extents, Extents>& joint) const {
    const Extents& r = joint.first;
    const Extents& rr = joint.second;
    const BodyReindexer* mine = nullptr;
    for (size_t k = 0; k < body.ops.size(); ++k) {
      const int64_t id = loads.of_op[k];
      if (id < 0 || !g.reads.count(id)) continue;
      if (!mine) mine = &reindexers_.get(body, placement_in(body, r, rr), r, rr);
      const Expr at = (*mine)(body.index_of(body.ops[k]));
      for (const Member& m : g.members) {
        const LoopBody& mb = m.body();
        const BodyReindexer* theirs = nullptr;
        for (const LoopOp& op : mb.ops) {
          if ((op.opcode != Opcode::load && op.opcode != Opcode::masked_load) ||
              graph_.id_of_op(op) != id)
            continue;
          if (!theirs) theirs = &reindexers_.get(mb, placement_in(mb, r, rr), r, rr);
          if ((*theirs)(mb.index_of(op)) == at) return true;
        }
      }
    }
    return false;
  }

  int64_t shared_bytes(const Group& g, const LoadIds& loads) const {
    int64_t bytes = 0;
    for (int64_t id : loads.distinct) {
      if (!g.writes.count(id) && !g.reads.count(id)) continue;
      if (const Buffer* buf = graph_.by_id(id))
        bytes += std::max<int64_t>(buf->layout().storage_numel(), 1) *
                 static_cast<int64_t>(dtype_size(buf->dtype()));
    }
    return bytes;
  }

  void add_computed(const ComputedBuffer& b, const Buffer* prev) {
    if (b.body().ops.empty()) throw Error("schedule", b.name(), "the buffer has no recorded loop body");
    std::optional<LoopBody> own = unit_free(b.body(), reindexers_);
    const LoopBody& body = own ? *own : b.body();
    // The buffers it reads, by id (unit_free keeps the ops).
    const LoadIds loads = load_ids(b.body(), graph_);
    const int64_t self = graph_.id_of(&b);
    if (self < 0) throw Error("schedule", b.name(), "internal: the buffer is not in the graph");
    // Candidates: the kernels that write or read a buffer this one reads (the others share
    // nothing with it), and the kernel of its predecessor (for the reason of a split).
    // (A sorted vector: the same ascending order as a set, without a node per kernel.)
    std::vector<size_t>& candidates = candidates_;
    candidates.clear();
    for (int64_t id : loads.distinct)
      groups_touching_[static_cast<size_t>(id)].for_each(
          [&](size_t k) { candidates.push_back(k); });
    if (prev && prev->kind() == IRKind::ComputedBuffer) candidates.push_back(group_of(prev));
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    size_t best = groups_.size();
    int64_t best_score = -1;
    std::pair<Extents, Extents> best_space;
    // Only the predecessor's kernel's refusal is reported.
    std::optional<std::string> explain_reason;
    const size_t explain_group =
        prev && prev->kind() == IRKind::ComputedBuffer ? group_of(prev) : SIZE_MAX;
    for (size_t k : candidates) {
      std::pair<Extents, Extents> space;
      if (auto why = why_not(groups_[k], b, body, loads, k == explain_group, space)) {
        if (k == explain_group) explain_reason = std::move(*why);
        continue;
      }
      int64_t score = shared_bytes(groups_[k], loads);
      if (score > best_score || (score == best_score && k > best)) {
        best = k;
        best_score = score;
        best_space = space;
      }
    }
    // The reason the buffer is not with its predecessor in the graph's order.
    if (prev && prev->kind() == IRKind::ComputedBuffer) {
      size_t pg = group_of(prev);
      if (pg != best)
        splits_.push_back({prev->name(), b.name(),
                           explain_reason ? *explain_reason : "fits better elsewhere"});
    } else if (prev) {
      splits_.push_back({prev->name(), b.name(),
                         prev->name() + " is " +
                             (prev->kind() == IRKind::ExternKernel ? "an extern" : "a fallback") +
                             " kernel"});
    }
    if (best == groups_.size()) {
      Group g;
      g.ranges = body.ranges;
      g.reduction_ranges = body.is_reduction() ? body.reduction_ranges : Extents{};
      g.closed = (body.is_reduction() && extents_numel(body.reduction_ranges) == 1) ||
                 extents_numel(body.ranges) * extents_numel(body.reduction_ranges) == 0;
      g.step = steps_.size();
      ScheduleStep step;
      step.kind = ScheduleStep::Kind::Kernel;
      step.kernel = groups_.size();
      steps_.push_back(step);
      groups_.push_back(std::move(g));
    } else {
      groups_[best].ranges = best_space.first;
      groups_[best].reduction_ranges = best_space.second;
    }
    Group& g = groups_[best];
    auto touch = [&](int64_t id) { groups_touching_[static_cast<size_t>(id)].insert(best); };
    for (int64_t id : loads.distinct) {
      g.reads.insert(id);
      touch(id);
    }
    g.writes.insert(self);
    touch(self);
    g.members.push_back({&b, self, std::move(own)});
    group_of_[static_cast<size_t>(self)] = best;
    step_of_[static_cast<size_t>(self)] = g.step;
  }

  void add_single(const Buffer& b, const Buffer* prev) {
    ScheduleStep step;
    step.kind = b.kind() == IRKind::ExternKernel ? ScheduleStep::Kind::Extern
                                                 : ScheduleStep::Kind::Fallback;
    step.buffer = &b;
    if (prev)
      splits_.push_back({prev->name(), b.name(),
                         b.name() + " is " + (b.kind() == IRKind::ExternKernel ? "an extern" : "a fallback") +
                             " kernel"});
    const int64_t self = graph_.id_of(&b);
    if (self < 0) throw Error("schedule", b.name(), "internal: the buffer is not in the graph");
    step_of_[static_cast<size_t>(self)] = steps_.size();
    steps_.push_back(step);
  }

  Schedule finish() {
    Schedule s;
    s.kernels.reserve(groups_.size());
    for (Group& g : groups_) {
      ScheduledKernel k;
      k.buffers.reserve(g.members.size());
      k.bodies.reserve(g.members.size());
      if (g.members.size() == 1) {  // alone: the body as lowered
        const LoopBody& body = g.members[0].buffer->body();
        k.buffers.push_back(g.members[0].buffer);
        k.bodies.push_back(body);
        k.ranges = body.ranges;
        k.reduction_ranges = body.reduction_ranges;
        s.kernels.push_back(std::move(k));
        continue;
      }
      k.ranges = g.ranges;
      k.reduction_ranges = g.reduction_ranges;
      for (Member& m : g.members) {
        k.buffers.push_back(m.buffer);
        std::optional<LoopBody> storage;
        const LoopBody& body = placed_ref(m.body(), g.ranges, g.reduction_ranges, storage, reindexers_);
        if (storage) k.bodies.push_back(std::move(*storage));
        else if (m.own) k.bodies.push_back(std::move(*m.own));
        else k.bodies.push_back(body);
      }
      s.kernels.push_back(std::move(k));
    }
    s.steps = std::move(steps_);
    s.splits = std::move(splits_);
    return s;
  }

  const LoweredGraph& graph_;
  FusionLimits limits_;
  // Reindexers by body extents, placement and space (shared by every fusion check).
  mutable BodyReindexerCache reindexers_;
  std::vector<size_t> candidates_;  // add_computed's scratch list
  std::vector<Group> groups_;
  std::vector<ScheduleStep> steps_;
  static constexpr size_t kNoStep = SIZE_MAX;
  size_t group_of(const Buffer* b) const {
    int64_t id = graph_.id_of(b);
    size_t g = id < 0 ? kNoStep : group_of_[static_cast<size_t>(id)];
    if (g == kNoStep) throw Error("schedule", b->name(), "internal: the buffer has no kernel");
    return g;
  }
  std::vector<size_t> group_of_;  // by id: a ComputedBuffer's group (kNoStep: none)
  std::vector<size_t> step_of_;   // by id: a scheduled buffer's step (kNoStep: none)
  // by id: the groups reading or writing the buffer (distinct)
  std::vector<GroupList> groups_touching_;
  std::vector<Schedule::Split> splits_;
};

}  // namespace

std::vector<const Buffer*> Schedule::writes(const ScheduleStep& step) const {
  if (step.kind != ScheduleStep::Kind::Kernel) {
    std::vector<const Buffer*> out = {step.buffer};
    if (step.has_epilogue())
      for (const ComputedBuffer* b : kernels.at(step.epilogue).buffers) out.push_back(b);
    return out;
  }
  const ScheduledKernel& k = kernels.at(step.kernel);
  return std::vector<const Buffer*>(k.buffers.begin(), k.buffers.end());
}

std::set<std::string> Schedule::reads(const ScheduleStep& step) const {
  std::set<std::string> r;
  if (step.kind == ScheduleStep::Kind::Kernel) {
    for (const LoopBody& body : kernels.at(step.kernel).bodies)
      for (const std::string& n : read_writes(body).read_buffers()) r.insert(n);
    return r;
  }
  const auto& inputs = step.kind == ScheduleStep::Kind::Extern
                           ? static_cast<const ExternKernel*>(step.buffer)->inputs()
                           : static_cast<const FallbackKernel*>(step.buffer)->inputs();
  for (const KernelInput& in : inputs) r.insert(in.buffer->name());
  if (step.has_epilogue())
    for (const LoopBody& body : kernels.at(step.epilogue).bodies)
      for (const std::string& n : read_writes(body).read_buffers()) r.insert(n);
  return r;
}

Schedule schedule(const LoweredGraph& graph, const FusionLimits& limits) {
  // The scheduler works by buffer id (LoweredGraph::index, done by lower_graph); a graph edited
  // since is indexed afresh (the same buffers, so the schedule refers to `graph`'s).
  if (!graph.is_indexed()) {
    LoweredGraph copy = graph;
    copy.index();
    Schedule s = Scheduler(copy, limits).run();
    fuse_extern_epilogues(s, copy, limits);
    return s;
  }
  Schedule s = Scheduler(graph, limits).run();
  fuse_extern_epilogues(s, graph, limits);
  return s;
}

}  // namespace stax
