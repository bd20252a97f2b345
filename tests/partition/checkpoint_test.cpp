// Checkpointing schedules under a storage budget (seed §5.8, Definition 5.3, Theorems 5.3, 5.4).
#include "core/partition/checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/support/error.h"

namespace stax::partition {
namespace {

TEST(Checkpoint, BinomialBeta) {
  EXPECT_EQ(binomial_beta(0, 0), 1);
  EXPECT_EQ(binomial_beta(3, 0), 1);
  EXPECT_EQ(binomial_beta(1, 4), 5);  // beta(1, t) = t + 1
  EXPECT_EQ(binomial_beta(2, 2), 6);
  EXPECT_EQ(binomial_beta(5, 5), 252);
  EXPECT_EQ(binomial_beta(10, 10), 184756);
  EXPECT_EQ(binomial_beta(30, 30), 118264581564861424);
  EXPECT_EQ(binomial_beta(40, 40), INT64_MAX);  // saturates
  for (int64_t s = 1; s <= 12; ++s)
    for (int64_t t = 1; t <= 12; ++t)  // the recurrence of the proof of Theorem 5.4
      EXPECT_EQ(binomial_beta(s, t), binomial_beta(s, t - 1) + binomial_beta(s - 1, t));
}

TEST(Checkpoint, MinimalParameters) {
  EXPECT_EQ(min_repetitions(1, 1), 0);
  EXPECT_EQ(min_repetitions(2, 1), 1);
  EXPECT_EQ(min_repetitions(1000000, 1), 999999);
  EXPECT_EQ(min_repetitions(252, 5), 5);
  EXPECT_EQ(min_repetitions(253, 5), 6);
  EXPECT_EQ(min_repetitions(10000, 10), 7);  // C(16, 6) = 8008 < 10000 <= C(17, 7) = 19448
  EXPECT_EQ(min_slots(1, 0), 1);
  EXPECT_EQ(min_slots(2, 0), -1);
  EXPECT_EQ(min_slots(6, 2), 2);
  EXPECT_EQ(min_slots(7, 2), 3);
  EXPECT_EQ(min_slots(100, 1), 99);
  EXPECT_THROW(min_repetitions(0, 1), Error);
  EXPECT_THROW(min_slots(5, -1), Error);
}

// Theorem 5.4: for every small (s, t) the construction reverses C(s+t, s) steps within s slots
// and repetition number t, and so does it for every shorter chain.
TEST(Checkpoint, BinomialScheduleAttainsBeta) {
  for (int64_t s = 1; s <= 5; ++s) {
    for (int64_t t = 0; t <= 5; ++t) {
      const int64_t beta = binomial_beta(s, t);
      for (int64_t l = 1; l <= beta; ++l) {
        SCOPED_TRACE("s=" + std::to_string(s) + " t=" + std::to_string(t) +
                     " l=" + std::to_string(l));
        const Schedule sched = binomial_schedule(l, s, t);
        const ValidationReport r = validate(sched, l, s, t);
        ASSERT_TRUE(r.ok) << r.reason << "\n" << format_schedule(sched);
        EXPECT_LE(r.peak_slots, s);
        EXPECT_LE(r.max_repetition, t);
        EXPECT_EQ(r.backward_steps, l);
        EXPECT_TRUE(r.backward_order_ok);
        int64_t sum = 0;
        for (int64_t k = 1; k <= l; ++k) sum += r.repetitions[k];
        EXPECT_EQ(sum, r.total_forward_steps);
        if (l == beta && l > 1) {
          EXPECT_EQ(r.max_repetition, t);  // a chain of full length uses the whole budget
          EXPECT_EQ(r.peak_slots, std::min(s, l));
        }
      }
    }
  }
}

// One step past beta(s, t) is out of reach: the construction refuses, and what it builds with
// one more repetition or one more slot breaks the (s, t) budget, which the validator reports.
TEST(Checkpoint, BetaPlusOneIsRejected) {
  for (int64_t s = 1; s <= 5; ++s) {
    for (int64_t t = 0; t <= 5; ++t) {
      const int64_t l = binomial_beta(s, t) + 1;
      SCOPED_TRACE("s=" + std::to_string(s) + " t=" + std::to_string(t));
      EXPECT_THROW(binomial_schedule(l, s, t), Error);

      const Schedule more_reps = binomial_schedule(l, s, t + 1);
      const ValidationReport a = validate(more_reps, l, s, t);
      EXPECT_FALSE(a.ok);
      EXPECT_EQ(a.violation, Violation::kRepetitionExceeded) << a.reason;
      EXPECT_EQ(a.max_repetition, t + 1);
      EXPECT_TRUE(validate(more_reps, l, s, t + 1).ok);

      if (binomial_beta(s + 1, t) >= l) {  // t >= 1
        const Schedule more_slots = binomial_schedule(l, s + 1, t);
        const ValidationReport b = validate(more_slots, l, s, t);
        EXPECT_FALSE(b.ok);
        EXPECT_EQ(b.violation, Violation::kTooManySlots) << b.reason;
        EXPECT_EQ(b.peak_slots, s + 1);
        EXPECT_LE(b.max_repetition, t);
      }
      // The uniform schedules, for any segment count, also break the (s, t) budget.
      for (int64_t c = 1; c <= l; ++c)
        EXPECT_FALSE(validate(uniform_schedule(l, c), l, s, t).ok) << "c=" << c;
    }
  }
}

// An exhaustive search over all schedules of Definition 5.3 (with the dominance reductions:
// backward steps run as soon as possible, states never needed again are dropped, advances go
// one step at a time and never past the next needed state). It confirms Griewank's equality
// beta(s, t) = C(s+t, s) [44] on small cases in this exact model.
class ScheduleSearch {
 public:
  ScheduleSearch(int l, int s, int t) : l_(l), s_(s), t_(t) {}

  bool reversible() {
    State st;
    st.current = 0;
    st.next = l_;
    st.reps.assign(static_cast<size_t>(l_) + 1, 0);
    st.slots = {0};
    return dfs(st);
  }
  size_t states_visited() const { return seen_.size(); }

 private:
  struct State {
    int current = 0, next = 0;
    std::vector<int> reps;   // [k] = computations of phi_k so far
    std::vector<int> slots;  // sorted states held
  };

  static void canonicalize(State& st) {
    for (;;) {
      const int need = st.next - 1;
      const bool avail =
          st.next > 0 && (st.current == need || std::count(st.slots.begin(), st.slots.end(), need));
      if (!avail) break;
      --st.next;  // run backward step `next` right away
    }
    std::erase_if(st.slots, [&](int z) { return z >= st.next; });
    // phi_k for k >= next is never computed again: its count no longer matters.
    std::fill(st.reps.begin() + st.next, st.reps.end(), 0);
  }

  bool dfs(State st) {
    canonicalize(st);
    if (st.next == 0) return true;
    std::vector<int> key{st.current, st.next};
    key.insert(key.end(), st.reps.begin(), st.reps.end());
    key.push_back(-1);
    key.insert(key.end(), st.slots.begin(), st.slots.end());
    if (!seen_.insert(key).second) return false;
    // advance 1
    if (st.current + 1 <= st.next - 1 && st.reps[st.current + 1] < t_) {
      State n = st;
      ++n.reps[++n.current];
      if (dfs(n)) return true;
    }
    // save the current state
    const bool held = std::count(st.slots.begin(), st.slots.end(), st.current) > 0;
    if (!held && st.current < st.next && static_cast<int>(st.slots.size()) < s_) {
      State n = st;
      n.slots.insert(std::upper_bound(n.slots.begin(), n.slots.end(), n.current), n.current);
      if (dfs(n)) return true;
    }
    for (size_t i = 0; i < st.slots.size(); ++i) {
      if (st.slots[i] != st.current) {  // load
        State n = st;
        n.current = st.slots[i];
        if (dfs(n)) return true;
      }
      State n = st;  // free
      n.slots.erase(n.slots.begin() + static_cast<long>(i));
      if (dfs(n)) return true;
    }
    return false;
  }

  int l_, s_, t_;
  std::set<std::vector<int>> seen_;
};

TEST(Checkpoint, ExhaustiveSearchConfirmsBetaIsExact) {
  // (3, 2) and (2, 3) also hold (1.4M and 10.7M states, 4 s and 28 s): too slow to run here.
  const int cases[][2] = {{1, 0}, {3, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4},
                          {2, 1}, {3, 1}, {4, 1}, {5, 1}, {2, 2}};
  for (const auto& [s, t] : cases) {
    const int beta = static_cast<int>(binomial_beta(s, t));
    SCOPED_TRACE("s=" + std::to_string(s) + " t=" + std::to_string(t));
    EXPECT_TRUE(ScheduleSearch(beta, s, t).reversible());
    ScheduleSearch longer(beta + 1, s, t);
    EXPECT_FALSE(longer.reversible());
    EXPECT_GT(longer.states_visited(), 0u);
  }
}

// Theorem 5.3: peak storage <= c + l/c, every step computed at most twice.
TEST(Checkpoint, UniformSchedule) {
  for (int64_t l : {1, 2, 3, 4, 7, 10, 16, 17, 50, 99, 100, 1000, 12345}) {
    const int64_t c_default = std::llround(std::sqrt(static_cast<double>(l)));
    for (int64_t c : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}, c_default + 1, l}) {
      const int64_t cc = c == 0 ? c_default : std::min(c, l);
      SCOPED_TRACE("l=" + std::to_string(l) + " c=" + std::to_string(cc));
      const Schedule sched = uniform_schedule(l, c);
      const ValidationReport r = validate(sched, l, l + 1, 2);
      ASSERT_TRUE(r.ok) << r.reason;
      EXPECT_LE(static_cast<double>(r.peak_slots),
                static_cast<double>(cc) + static_cast<double>(l) / static_cast<double>(cc));
      EXPECT_LE(r.max_repetition, 2);
      EXPECT_LE(r.total_forward_steps, 2 * l);
      EXPECT_EQ(r.backward_steps, l);
    }
  }
  // c = sqrt(l): storage <= 2 sqrt(l).
  const ValidationReport r = validate(uniform_schedule(10000), 10000, 10000);
  EXPECT_TRUE(r.ok);
  EXPECT_LE(r.peak_slots, 200);
  EXPECT_EQ(r.peak_slots, 100 + 100 - 2);  // "in reality it is 1 less", and z_{b-1} stays current
  // c = 1 keeps the whole chain; c = l keeps every state as a checkpoint and recomputes nothing.
  EXPECT_EQ(validate(uniform_schedule(10, 1), 10, 100).peak_slots, 9);
  EXPECT_EQ(validate(uniform_schedule(10, 10), 10, 100).max_repetition, 1);
  EXPECT_THROW(uniform_schedule(0), Error);
  EXPECT_THROW(uniform_schedule(5, -1), Error);
}

TEST(Checkpoint, SmallScheduleText) {
  // beta(2, 1) = 3: advance to z_1, save it, reverse the tail {2, 3} from z_1 with one slot,
  // then the head {1} from z_0.
  EXPECT_EQ(format_schedule(binomial_schedule(3, 2, 1)),
            "advance 1\n"
            "save 1\n"
            "advance 1\n"
            "backward 3\n"
            "backward 2\n"
            "free 1\n"
            "backward 1\n");
  // One slot: recompute from z_0 for every step.
  EXPECT_EQ(format_schedule(binomial_schedule(3, 1, 2)),
            "advance 2\nbackward 3\nload 0\nadvance 1\nbackward 2\nbackward 1\n");
}

Schedule parse(std::string_view text) { return parse_schedule(text); }

ValidationReport check_text(std::string_view text, int64_t l, int64_t s,
                            std::optional<int64_t> t = std::nullopt) {
  return validate(parse(text), l, s, t);
}

TEST(Checkpoint, ValidatorRejectsInvalidSchedules) {
  {  // backward out of order
    const ValidationReport r = check_text("advance 1\nbackward 1\nbackward 2\n", 2, 2);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.violation, Violation::kBackwardOutOfOrder);
    EXPECT_EQ(r.violation_index, 1);
    EXPECT_FALSE(r.backward_order_ok);
    EXPECT_NE(r.reason.find("must be 2"), std::string::npos) << r.reason;
  }
  {  // reading a freed slot
    const ValidationReport r = check_text("advance 1\nsave 1\nadvance 1\nfree 1\nload 1\n", 3, 3);
    EXPECT_EQ(r.violation, Violation::kSlotEmpty);
    EXPECT_EQ(r.violation_index, 4);
    EXPECT_NE(r.reason.find("action 4 (load 1)"), std::string::npos) << r.reason;
  }
  {  // too many slots: s = 2 with z_0 in slot 0 leaves one
    const ValidationReport r = check_text(
        "advance 1\nsave 1\nadvance 1\nsave 2\nbackward 3\nbackward 2\nbackward 1\n", 3, 2);
    EXPECT_EQ(r.violation, Violation::kTooManySlots);
    EXPECT_EQ(r.violation_index, 3);
    EXPECT_EQ(r.peak_slots, 3);  // the replay continues past budget violations
    EXPECT_EQ(r.backward_steps, 3);
  }
  {  // the needed state is nowhere
    const ValidationReport r = check_text("advance 2\nbackward 3\nbackward 2\n", 3, 1);
    EXPECT_EQ(r.violation, Violation::kStateUnavailable);
    EXPECT_EQ(r.violation_index, 2);
    EXPECT_NE(r.reason.find("z_1 is neither"), std::string::npos) << r.reason;
  }
  {  // repetition limit
    const ValidationReport r =
        check_text("advance 2\nbackward 3\nload 0\nadvance 1\nbackward 2\nbackward 1\n", 3, 1, 1);
    EXPECT_EQ(r.violation, Violation::kRepetitionExceeded);
    EXPECT_EQ(r.violation_index, 3);
    EXPECT_EQ(r.max_repetition, 2);
    EXPECT_EQ(r.repetitions, (std::vector<int64_t>{0, 2, 1, 0}));
    EXPECT_EQ(r.total_forward_steps, 3);
  }
  {  // other structural errors
    EXPECT_EQ(check_text("advance 4\n", 3, 1).violation, Violation::kAdvancePastEnd);
    EXPECT_EQ(check_text("advance 0\n", 3, 1).violation, Violation::kBadArgument);
    EXPECT_EQ(check_text("save 0\n", 3, 2).violation, Violation::kSlotOccupied);
    EXPECT_EQ(check_text("save -1\n", 3, 2).violation, Violation::kBadArgument);
    EXPECT_EQ(check_text("backward 4\n", 3, 2).violation, Violation::kBadArgument);
    EXPECT_EQ(check_text("advance 1\nfree 0\nbackward 2\nbackward 1\n", 2, 1).violation,
              Violation::kStateUnavailable);
    EXPECT_EQ(check_text("backward 1\nbackward 1\n", 1, 1).violation,
              Violation::kBackwardOutOfOrder);
    const ValidationReport r = check_text("advance 1\nbackward 2\n", 2, 1);
    EXPECT_EQ(r.violation, Violation::kIncomplete);
    EXPECT_EQ(r.violation_index, 2);
    EXPECT_EQ(r.backward_steps, 1);
  }
  EXPECT_TRUE(check_text("backward 1\n", 1, 1, 0).ok);  // beta(s, 0) = 1
  EXPECT_THROW(validate({}, 0, 1), Error);
}

TEST(Checkpoint, PrintAndParse) {
  const Schedule sched = binomial_schedule(binomial_beta(3, 3), 3, 3);
  EXPECT_EQ(parse(format_schedule(sched)), sched);
  EXPECT_EQ(to_string(Action::backward(7)), "backward 7");
  EXPECT_EQ(parse("  # comment\n\nadvance 3   # to z_3\nsave 1"),
            (Schedule{Action::advance(3), Action::save(1)}));
  try {
    parse("advance 1\njump 3\n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.location(), "line 2");
    EXPECT_NE(std::string(e.what()).find("unknown action 'jump'"), std::string::npos);
  }
  EXPECT_THROW(parse("advance\n"), Error);
  EXPECT_THROW(parse("advance 1 2\n"), Error);
  EXPECT_THROW(parse("save x1\n"), Error);
  EXPECT_THROW(parse("save 1x\n"), Error);
}

TEST(Checkpoint, LogarithmicBudget) {
  // s = t = O(log l) suffices: 10^5 steps with 10 slots need t = 10 (C(19, 9) = 92378 < 10^5).
  const int64_t l = 100000;
  const int64_t s = 10;
  const int64_t t = min_repetitions(l, s);
  EXPECT_EQ(t, 10);
  EXPECT_LT(binomial_beta(s, t - 1), l);
  const ValidationReport r = validate(binomial_schedule(l, s, t), l, s, t);
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_LE(r.peak_slots, s);
  EXPECT_LE(r.max_repetition, t);
  EXPECT_LE(r.total_forward_steps, t * l);
}

}  // namespace
}  // namespace stax::partition
