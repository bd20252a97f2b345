#include "core/partition/checkpoint.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "core/support/error.h"

namespace stax::partition {

// ---------------------------------------------------------------------------------------------
// Printing and parsing

namespace {

constexpr std::string_view kActionNames[] = {"advance", "save", "load", "free", "backward"};

}  // namespace

std::string to_string(const Action& action) {
  return std::string(kActionNames[static_cast<int>(action.kind)]) + " " +
         std::to_string(action.arg);
}

std::string format_schedule(const Schedule& schedule) {
  std::string out;
  for (const Action& a : schedule) out += to_string(a) + "\n";
  return out;
}

Schedule parse_schedule(std::string_view text) {
  Schedule out;
  int line_no = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    ++line_no;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    std::istringstream is{std::string(line)};
    std::string word, number, extra;
    if (!(is >> word)) continue;
    const std::string where = "line " + std::to_string(line_no);
    const auto* name = std::find(std::begin(kActionNames), std::end(kActionNames), word);
    check(name != std::end(kActionNames), "checkpoint", where,
          "unknown action '" + word + "' (expected advance, save, load, free or backward)");
    check(static_cast<bool>(is >> number) && !(is >> extra), "checkpoint", where,
          "'" + word + "' takes exactly one integer argument");
    int64_t arg = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), arg);
    check(ec == std::errc() && ptr == number.data() + number.size(), "checkpoint", where,
          "'" + number + "' is not an integer");
    out.push_back({static_cast<ActionKind>(name - std::begin(kActionNames)), arg});
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// beta(s, t) = C(s + t, s)

int64_t binomial_beta(int64_t s, int64_t t) {
  assert(s >= 0 && t >= 0);
  const int64_t k = std::min(s, t);
  const int64_t n = s + t;
  // C(n, k) built as C(n-k+i, i) for i = 1..k; each step is exact: C(n-k+i, i) =
  // C(n-k+i-1, i-1) * (n-k+i) / i.
  __int128 c = 1;
  for (int64_t i = 1; i <= k; ++i) {
    c = c * (n - k + i) / i;
    if (c >= INT64_MAX) return INT64_MAX;
  }
  return static_cast<int64_t>(c);
}

namespace {

// The least x >= lo with pred(x), for a monotone pred that holds somewhere: doubling, then
// bisection (beta saturates, so pred never flips back through overflow).
template <typename Pred>
int64_t least_true(Pred pred, int64_t lo) {
  if (pred(lo)) return lo;
  int64_t step = 1;
  while (!pred(lo + step)) step *= 2;
  int64_t bad = lo + step / 2, good = lo + step;  // pred(bad) false (or bad == lo), pred(good)
  while (good - bad > 1) {
    const int64_t mid = bad + (good - bad) / 2;
    (pred(mid) ? good : bad) = mid;
  }
  return good;
}

}  // namespace

int64_t min_repetitions(int64_t l, int64_t s) {
  check(l >= 1 && s >= 1, "checkpoint", "",
        "min_repetitions needs l >= 1 and s >= 1 (got l=" + std::to_string(l) +
            ", s=" + std::to_string(s) + ")");
  return least_true([&](int64_t t) { return binomial_beta(s, t) >= l; }, 0);
}

int64_t min_slots(int64_t l, int64_t t) {
  check(l >= 1 && t >= 0, "checkpoint", "",
        "min_slots needs l >= 1 and t >= 0 (got l=" + std::to_string(l) +
            ", t=" + std::to_string(t) + ")");
  if (l == 1) return 1;
  if (t == 0) return -1;
  return least_true([&](int64_t s) { return binomial_beta(s, t) >= l; }, 1);  // beta >= s + 1
}

// ---------------------------------------------------------------------------------------------
// Schedule construction

namespace {

// Emits actions while tracking the current state and which slot holds what, so that loads are
// only emitted when needed and saves take the lowest free slot id.
class ScheduleBuilder {
 public:
  explicit ScheduleBuilder(int64_t slots) : slot_state_(static_cast<size_t>(slots), -1) {
    assert(slots >= 1);
    slot_state_[0] = 0;  // z_0
  }

  int64_t current() const { return current_; }

  void advance(int64_t n) {
    assert(n >= 1);
    out_.push_back(Action::advance(n));
    current_ += n;
  }
  int64_t save() {
    const auto it = std::find(slot_state_.begin(), slot_state_.end(), -1);
    assert(it != slot_state_.end() && "slot budget exceeded by the construction");
    *it = current_;
    const int64_t slot = it - slot_state_.begin();
    out_.push_back(Action::save(slot));
    return slot;
  }
  // Makes z_state (held in slot) current, emitting a load only when it is not already current.
  void restore(int64_t slot, int64_t state) {
    assert(slot_state_[static_cast<size_t>(slot)] == state);
    if (current_ == state) return;
    out_.push_back(Action::load(slot));
    current_ = state;
  }
  void free(int64_t slot) {
    assert(slot_state_[static_cast<size_t>(slot)] >= 0);
    slot_state_[static_cast<size_t>(slot)] = -1;
    out_.push_back(Action::free(slot));
  }
  void backward(int64_t k) { out_.push_back(Action::backward(k)); }

  Schedule take() { return std::move(out_); }

 private:
  Schedule out_;
  int64_t current_ = 0;
  std::vector<int64_t> slot_state_;  // -1 = free
};

// Reverses steps a+n, ..., a+1 (Theorem 5.4). Precondition: z_a is held in slot slot_a; s slots
// (slot_a included) and repetition number t are available for phi_{a+1} .. phi_{a+n}, none of
// which has been computed in this subproblem yet; n <= beta(s, t).
void reverse_binomial(ScheduleBuilder& b, int64_t a, int64_t n, int64_t slot_a, int64_t s,
                      int64_t t) {
  assert(n >= 1 && s >= 1 && t >= 0 && n <= binomial_beta(s, t));
  if (n == 1) {
    b.backward(a + 1);  // z_a is in a slot
    return;
  }
  if (s == 1) {
    // One checkpoint: recompute z_{k-1} from z_a for every k; phi_{a+1} runs n - 1 <= t times.
    for (int64_t k = a + n; k >= a + 2; --k) {
      b.restore(slot_a, a);
      b.advance(k - 1 - a);
      b.backward(k);
    }
    b.backward(a + 1);
    return;
  }
  // t >= 1 here, since n >= 2 > beta(s, 0) = 1.
  const int64_t m = std::min(binomial_beta(s, t - 1), n - 1);
  b.restore(slot_a, a);
  b.advance(m);
  const int64_t slot_m = b.save();
  reverse_binomial(b, a + m, n - m, slot_m, s - 1, t);  // tail: n - m <= beta(s - 1, t)
  b.free(slot_m);
  reverse_binomial(b, a, m, slot_a, s, t - 1);  // head: computed once already
}

}  // namespace

Schedule binomial_schedule(int64_t l, int64_t s, int64_t t) {
  check(l >= 1 && s >= 1 && t >= 0, "checkpoint", "",
        "binomial_schedule needs l >= 1, s >= 1, t >= 0 (got l=" + std::to_string(l) +
            ", s=" + std::to_string(s) + ", t=" + std::to_string(t) + ")");
  const int64_t beta = binomial_beta(s, t);
  if (l > beta) {
    throw Error("checkpoint", "",
                "a chain of " + std::to_string(l) + " steps cannot be reversed with " +
                    std::to_string(s) + " slots and repetition number " + std::to_string(t) +
                    ": beta(s, t) = C(s+t, s) = " + std::to_string(beta) +
                    " (the least sufficient t is " + std::to_string(min_repetitions(l, s)) + ")");
  }
  ScheduleBuilder b(std::min(s, l + 1));  // never more than l + 1 distinct states to hold
  reverse_binomial(b, 0, l, 0, std::min(s, l + 1), t);
  return b.take();
}

Schedule uniform_schedule(int64_t l, int64_t c) {
  check(l >= 1, "checkpoint", "", "uniform_schedule needs l >= 1 (got " + std::to_string(l) + ")");
  check(c >= 0, "checkpoint", "", "uniform_schedule: negative segment count " + std::to_string(c));
  if (c == 0) c = std::llround(std::sqrt(static_cast<double>(l)));
  c = std::clamp<int64_t>(c, 1, l);
  // Segment j covers steps bound(j)+1 .. bound(j+1); lengths are floor or ceil of l / c.
  auto bound = [&](int64_t j) { return static_cast<int64_t>(static_cast<__int128>(j) * l / c); };
  Schedule out;
  // Forward sweep: checkpoint the start of every segment; checkpoint j lives in slot j.
  for (int64_t j = 1; j < c; ++j) {
    out.push_back(Action::advance(bound(j) - bound(j - 1)));
    out.push_back(Action::save(j));
  }
  int64_t current = bound(c - 1);
  // Backward sweep, one segment at a time: recompute it from its checkpoint, saving its states
  // z_{a+1} .. z_{b-2} in slots c, c+1, ... (z_{b-1} stays current), then reverse it.
  for (int64_t j = c - 1; j >= 0; --j) {
    const int64_t a = bound(j), b = bound(j + 1);
    if (current != a) out.push_back(Action::load(j));
    for (int64_t i = a + 1; i <= b - 1; ++i) {
      out.push_back(Action::advance(1));
      if (i < b - 1) out.push_back(Action::save(c + (i - a - 1)));
    }
    current = b - 1;
    out.push_back(Action::backward(b));
    for (int64_t k = b - 1; k >= a + 1; --k) {
      out.push_back(Action::backward(k));
      if (k - 1 > a) out.push_back(Action::free(c + (k - 1 - a - 1)));
    }
    out.push_back(Action::free(j));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Validation

std::string_view violation_name(Violation v) {
  switch (v) {
    case Violation::kNone: return "none";
    case Violation::kBadArgument: return "bad argument";
    case Violation::kAdvancePastEnd: return "advance past the end of the chain";
    case Violation::kSlotOccupied: return "save into an occupied slot";
    case Violation::kSlotEmpty: return "slot is free";
    case Violation::kTooManySlots: return "too many slots";
    case Violation::kRepetitionExceeded: return "repetition number exceeded";
    case Violation::kBackwardOutOfOrder: return "backward step out of order";
    case Violation::kStateUnavailable: return "state unavailable";
    case Violation::kIncomplete: return "incomplete";
  }
  return "?";
}

namespace {

// Replays a schedule action by action (the state of validate()); each step returns false when
// the replay must stop at that action.
class Replay {
 public:
  Replay(const Schedule& schedule, int64_t l, int64_t s, std::optional<int64_t> max_repetition)
      : schedule_(schedule), l_(l), s_(s), max_repetition_(max_repetition), next_backward_(l) {
    r_.repetitions.assign(static_cast<size_t>(l) + 1, 0);
    slots_[0] = 0;
    held_[0] = 1;
    r_.peak_slots = 1;
  }

  ValidationReport run() {
    for (size_t i = 0; i < schedule_.size(); ++i)
      if (!step(i)) return r_;
    if (next_backward_ != 0)
      flag(schedule_.size(), Violation::kIncomplete,
           "the schedule ends before backward step " + std::to_string(next_backward_));
    return r_;
  }

 private:
  static std::string z(int64_t k) { return "z_" + std::to_string(k); }

  void flag(size_t i, Violation v, const std::string& why) {
    if (!r_.ok) return;
    r_.ok = false;
    r_.violation = v;
    r_.violation_index = static_cast<int64_t>(i);
    r_.reason = "action " + std::to_string(i) +
                (i < schedule_.size() ? " (" + to_string(schedule_[i]) + ")" : std::string()) +
                ": " + std::string(violation_name(v)) + ": " + why;
  }

  bool step(size_t i) {
    const Action& act = schedule_[i];
    switch (act.kind) {
      case ActionKind::kAdvance: return advance(i, act.arg);
      case ActionKind::kSave: return save(i, act.arg);
      case ActionKind::kLoad:
      case ActionKind::kFree: return load_or_free(i, act);
      case ActionKind::kBackward: return backward(i, act.arg);
    }
    return true;
  }

  bool advance(size_t i, int64_t arg) {
    if (arg < 1) {
      flag(i, Violation::kBadArgument, "advance needs at least one step");
      return false;
    }
    if (arg > l_ - current_) {
      flag(i, Violation::kAdvancePastEnd,
           "the current state is " + z(current_) + " and the chain ends at " + z(l_));
      return false;
    }
    for (int64_t k = current_ + 1; k <= current_ + arg; ++k) {
      const int64_t rep = ++r_.repetitions[static_cast<size_t>(k)];
      r_.max_repetition = std::max(r_.max_repetition, rep);
      if (max_repetition_ && rep > *max_repetition_)
        flag(i, Violation::kRepetitionExceeded,
             "phi_" + std::to_string(k) + " computed " + std::to_string(rep) +
                 " times, the limit is " + std::to_string(*max_repetition_));
    }
    r_.total_forward_steps += arg;
    current_ += arg;
    return true;
  }

  bool save(size_t i, int64_t arg) {
    if (arg < 0) {
      flag(i, Violation::kBadArgument, "negative slot id");
      return false;
    }
    if (auto it = slots_.find(arg); it != slots_.end()) {
      flag(i, Violation::kSlotOccupied,
           "slot " + std::to_string(arg) + " still holds " + z(it->second));
      return false;
    }
    slots_[arg] = current_;
    ++held_[current_];
    const int64_t used = static_cast<int64_t>(slots_.size());
    r_.peak_slots = std::max(r_.peak_slots, used);
    if (used > s_)
      flag(i, Violation::kTooManySlots,
           std::to_string(used) + " slots occupied, the budget is " + std::to_string(s_));
    return true;
  }

  bool load_or_free(size_t i, const Action& act) {
    const int64_t arg = act.arg;
    auto it = slots_.find(arg);
    if (it == slots_.end()) {
      flag(i, arg < 0 ? Violation::kBadArgument : Violation::kSlotEmpty,
           "slot " + std::to_string(arg) + " holds no state");
      return false;
    }
    if (act.kind == ActionKind::kLoad) {
      current_ = it->second;
    } else {
      if (--held_[it->second] == 0) held_.erase(it->second);
      slots_.erase(it);
    }
    return true;
  }

  bool backward(size_t i, int64_t arg) {
    if (arg < 1 || arg > l_) {
      flag(i, Violation::kBadArgument, "backward steps are numbered 1.." + std::to_string(l_));
      return false;
    }
    if (arg != next_backward_) {
      r_.backward_order_ok = false;
      flag(i, Violation::kBackwardOutOfOrder,
           next_backward_ == 0
               ? std::string("all backward steps are already done")
               : "the next backward step must be " + std::to_string(next_backward_) +
                     " (steps run l, l-1, ..., 1)");
      return false;
    }
    if (current_ != arg - 1 && !held_.count(arg - 1)) {
      flag(i, Violation::kStateUnavailable,
           z(arg - 1) + " is neither the current state (" + z(current_) + ") nor in a slot");
      return false;
    }
    --next_backward_;
    ++r_.backward_steps;
    return true;
  }

  const Schedule& schedule_;
  const int64_t l_, s_;
  const std::optional<int64_t> max_repetition_;
  ValidationReport r_;
  std::map<int64_t, int64_t> slots_;  // slot id -> state index
  std::map<int64_t, int64_t> held_;   // state index -> number of slots holding it
  int64_t current_ = 0;
  int64_t next_backward_;
};

}  // namespace

ValidationReport validate(const Schedule& schedule, int64_t l, int64_t s,
                          std::optional<int64_t> max_repetition) {
  check(l >= 1 && s >= 1, "checkpoint", "",
        "validate needs l >= 1 and s >= 1 (got l=" + std::to_string(l) +
            ", s=" + std::to_string(s) + ")");
  return Replay(schedule, l, s, max_repetition).run();
}

}  // namespace stax::partition
