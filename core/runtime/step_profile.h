// A diagnostic profile of compiled runs, step by step (issue 25's training-step work): with the
// environment variable STAX_STEP_PROFILE set, every host run times each of its steps (compiled
// kernel, extern call with its epilogue, interpreter fallback) and adds the time to a table kept
// per (compiled graph, step); at process exit the table goes to stderr (or to the file the
// variable names, when it is not "1"), the largest totals first, each row with the step's kind,
// its kernel or extern and the graph nodes it computes. Off (one relaxed load per run) unless set.
#pragma once

#include <cstdint>
#include <string>

namespace stax {

class StepProfile {
 public:
  static bool enabled();
  // Adds `ns` to the row of step `step` of the graph identified by `graph`; `label` is read only
  // when the row is new.
  static void add(const void* graph, size_t step, int64_t ns, const std::string& label);
};

}  // namespace stax
