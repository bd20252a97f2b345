#include "core/lowering/lowering_rules.h"

#include <cassert>

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

const LoweringTable& default_lowering_table() {
  static const LoweringTable table = [] {
    LoweringTable t;
    register_pointwise_rules(t);
    register_reduction_rules(t);
    register_view_rules(t);
    register_indexing_rules(t);
    register_extern_rules(t);
    register_creation_rules(t);
    register_nn_rules(t);
    return t;
  }();
  return table;
}

}  // namespace stax
