#include "core/lowering/lowering_rules.h"

#include <cassert>

#include "core/support/error.h"

namespace stax {

void LoweringTable::add(const std::string& op_name, LoweringRule rule, bool realizes_inputs) {
  bool inserted = rules_.emplace(op_name, LoweringEntry{std::move(rule), realizes_inputs}).second;
  assert(inserted && "duplicate lowering rule");
  (void)inserted;
}

const LoweringEntry* LoweringTable::find(std::string_view op_name) const {
  auto it = rules_.find(op_name);
  return it == rules_.end() ? nullptr : &it->second;
}

std::vector<std::string> LoweringTable::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : rules_) out.push_back(name);
  return out;
}

namespace {
LoweringTable& lowering_storage() {
  static LoweringTable table;
  return table;
}
}  // namespace

const LoweringTable& default_lowering_table() {
  const LoweringTable& t = lowering_storage();
  if (t.empty()) throw_ops_not_installed("lowering table");
  return t;
}

LoweringTable& lowering_table_to_fill() { return lowering_storage(); }

}  // namespace stax
