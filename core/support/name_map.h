// Maps keyed by names that are looked up by std::string_view without building a std::string
// (C++20 heterogeneous lookup): LoweredGraph's buffer index and MemoryPlan's index, asked for
// every buffer of a 100k-node graph.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace stax {

struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <typename V>
using NameMap = std::unordered_map<std::string, V, NameHash, std::equal_to<>>;

}  // namespace stax
