// Checkpointing schedules for reversing a chain under a storage budget (seed §5.8).
//
// The model (Definition 5.3). A chain of l steps z_k = phi_k(z_{k-1}), k = 1..l. There are s
// checkpoint slots; at the start slot 0 holds z_0 and z_0 is also the current state. The current
// state lives in working memory, outside the slots. A schedule is a list of actions:
//   advance n   current z_j becomes z_{j+n}; computes phi_{j+1} .. phi_{j+n} once each and keeps
//               only the last state (requires j + n <= l, n >= 1)
//   save i      write the current state into slot i (slot i must be free)
//   load i      make the state held in slot i the current state (slot i must be occupied)
//   free i      release slot i (it must be occupied)
//   backward k  backward step k (computes zbar_{k-1}); requires zbar_k, i.e. the steps run in the
//               order k = l, l-1, ..., 1, and z_{k-1} as the current state or in a slot
// Slot ids are any non-negative integers; the budget s bounds how many are occupied at once.
// The repetition number of a schedule is the largest number of times any phi_k is computed.
//
// uniform_schedule   Theorem 5.3: c segments, peak slots <= c + l/c, every phi_k computed <= 2x.
// binomial_schedule  Theorem 5.4: the recursive construction of the proof; reverses a chain of up
//                    to beta(s, t) = C(s+t, s) steps with s slots and repetition number t.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stax::partition {

enum class ActionKind { kAdvance, kSave, kLoad, kFree, kBackward };

struct Action {
  ActionKind kind = ActionKind::kAdvance;
  int64_t arg = 0;  // steps for advance, slot for save/load/free, step k for backward

  static Action advance(int64_t n) { return {ActionKind::kAdvance, n}; }
  static Action save(int64_t slot) { return {ActionKind::kSave, slot}; }
  static Action load(int64_t slot) { return {ActionKind::kLoad, slot}; }
  static Action free(int64_t slot) { return {ActionKind::kFree, slot}; }
  static Action backward(int64_t k) { return {ActionKind::kBackward, k}; }
  friend bool operator==(const Action&, const Action&) = default;
};

using Schedule = std::vector<Action>;

// "advance 3", "save 1", "load 0", "free 1", "backward 4".
std::string to_string(const Action& action);
// One action per line, each line ending in '\n'.
std::string format_schedule(const Schedule& schedule);
// Inverse of format_schedule. Blank lines and text after '#' are ignored. Throws stax::Error
// (stage "checkpoint", location "line N") for an unknown action or a malformed argument.
Schedule parse_schedule(std::string_view text);

// beta(s, t) = C(s + t, s), saturating at INT64_MAX. s >= 0, t >= 0.
int64_t binomial_beta(int64_t s, int64_t t);
// The least t with binomial_beta(s, t) >= l (l >= 1, s >= 1).
int64_t min_repetitions(int64_t l, int64_t s);
// The least s >= 1 with binomial_beta(s, t) >= l, or -1 when none exists (only t = 0, l > 1).
int64_t min_slots(int64_t l, int64_t t);

// Theorem 5.3: the chain is cut into c segments of floor/ceil(l / c) steps; the forward sweep
// saves the start of every segment, and each segment is reversed by recomputing it once from its
// checkpoint while saving its states. c = 0 picks round(sqrt(l)); c is clamped to [1, l].
// Peak slots <= c + ceil(l / c) - 2 (<= c + l/c); every phi_k is computed at most twice.
Schedule uniform_schedule(int64_t l, int64_t c = 0);

// Theorem 5.4's construction for a chain of l <= beta(s, t) steps: advance m = min(beta(s, t-1),
// l-1) steps, save z_m, reverse the tail with s-1 slots and repetition t, free z_m, reverse the
// head with s slots and repetition t-1; with one slot, reverse by recomputing from the start.
// Uses at most s slots; every phi_k is computed at most t times. Throws stax::Error when
// l > beta(s, t), l < 1, s < 1 or t < 0.
Schedule binomial_schedule(int64_t l, int64_t s, int64_t t);

enum class Violation {
  kNone,
  kBadArgument,         // advance n < 1, negative slot, backward k outside [1, l]
  kAdvancePastEnd,      // advance beyond z_l
  kSlotOccupied,        // save into an occupied slot
  kSlotEmpty,           // load or free of a free slot (e.g. reading a freed slot)
  kTooManySlots,        // more than s slots occupied at once
  kRepetitionExceeded,  // some phi_k computed more than t times
  kBackwardOutOfOrder,  // backward k when l, l-1, ..., 1 requires another step
  kStateUnavailable,    // backward k while z_{k-1} is neither current nor in a slot
  kIncomplete,          // the schedule ends before backward step 1
};

std::string_view violation_name(Violation v);

struct ValidationReport {
  bool ok = true;
  Violation violation = Violation::kNone;  // the first one
  int64_t violation_index = -1;            // index of the offending action; size() for kIncomplete
  std::string reason;                      // human-readable, names the action and the state
  // Statistics of the replay. Budget violations (kTooManySlots, kRepetitionExceeded) do not stop
  // the replay, so these cover the whole schedule; any other violation stops it there.
  int64_t peak_slots = 0;            // most slots occupied at once (slot 0 with z_0 counts)
  int64_t max_repetition = 0;        // max over k of repetitions[k]
  std::vector<int64_t> repetitions;  // [k] = times phi_k was computed, k = 1..l ([0] unused)
  int64_t total_forward_steps = 0;   // sum of repetitions
  int64_t backward_steps = 0;        // backward actions executed in order
  bool backward_order_ok = true;     // no backward action out of order
};

// Replays the schedule for a chain of l steps with at most s occupied slots and, if given, at
// most max_repetition computations of each phi_k.
ValidationReport validate(const Schedule& schedule, int64_t l, int64_t s,
                          std::optional<int64_t> max_repetition = std::nullopt);

}  // namespace stax::partition
