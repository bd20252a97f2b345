#include "core/runtime/step_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace stax {

namespace {

struct Row {
  std::string label;
  int64_t ns = 0;
  int64_t calls = 0;
  size_t graph_index = 0;
};

class Table {
 public:
  ~Table() { print(); }
  void add(const void* graph, size_t step, int64_t ns, const std::string& label) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [g, new_graph] = graphs_.try_emplace(graph, graphs_.size());
    Row& r = rows_[{g->second, step}];
    if (r.calls == 0) {
      r.label = label;
      r.graph_index = g->second;
    }
    r.ns += ns;
    ++r.calls;
  }

 private:
  void print() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (rows_.empty()) return;
    const char* env = std::getenv("STAX_STEP_PROFILE");
    FILE* out = env && std::string(env) != "1" ? std::fopen(env, "w") : nullptr;
    FILE* f = out ? out : stderr;
    std::vector<std::pair<std::pair<size_t, size_t>, Row>> rows(rows_.begin(), rows_.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    int64_t total = 0;
    for (const auto& r : rows) total += r.second.ns;
    std::fprintf(f, "stax step profile: %.3f ms in %zu steps of %zu graphs\n", total * 1e-6, rows.size(),
                 graphs_.size());
    std::fprintf(f, "%10s %6s %8s %9s  %s\n", "total ms", "%", "calls", "us/call", "graph.step  what");
    for (const auto& [key, r] : rows)
      std::fprintf(f, "%10.3f %6.2f %8lld %9.2f  g%zu.%zu  %s\n", r.ns * 1e-6, 100.0 * r.ns / std::max<int64_t>(total, 1),
                   static_cast<long long>(r.calls), r.ns * 1e-3 / std::max<int64_t>(r.calls, 1), key.first,
                   key.second, r.label.c_str());
    if (out) std::fclose(out);
  }

  std::mutex mutex_;
  std::map<const void*, size_t> graphs_;
  std::map<std::pair<size_t, size_t>, Row> rows_;
};

Table& table() {
  static Table t;
  return t;
}

}  // namespace

bool StepProfile::enabled() {
  static const bool on = [] {
    const char* env = std::getenv("STAX_STEP_PROFILE");
    return env && *env && std::string(env) != "0";
  }();
  return on;
}

void StepProfile::add(const void* graph, size_t step, int64_t ns, const std::string& label) {
  table().add(graph, step, ns, label);
}

}  // namespace stax
