#include <cstdlib>

#include "core/graph/parser.h"
#include "core/graph/verifier.h"
#include "core/support/error.h"
#include "core/tensor/npy.h"
#include "tools/stax/command.h"

namespace stax::cli {

void add_shape_option(CLI::App& sub, std::vector<std::string>& specs) {
  sub.add_option("--shape", specs,
                 "Metadata of a placeholder whose text has no shape=, as NAME=D0,D1[:DTYPE] "
                 "(e.g. primals_1=32,64 or idx=8:int64; NAME= is 0-d). Repeatable.")
      ->type_name("NAME=SHAPE[:DTYPE]");
}

CLI::Option* add_seed_option(CLI::App& sub, uint64_t& seed, const std::string& help) {
  auto whole_uint64 = [](std::string& text) -> std::string {
    static const std::string max = "18446744073709551615";
    size_t digits = text.find_first_not_of("0123456789");
    size_t first = text.find_first_not_of('0');
    std::string significant = first == std::string::npos ? "0" : text.substr(first);
    if (text.empty() || digits != std::string::npos || significant.size() > max.size() ||
        (significant.size() == max.size() && significant > max))
      return "must be a whole number from 0 to " + max + ", got '" +
             (text.size() > 40 ? text.substr(0, 40) + "..." : text) + "'";
    return "";
  };
  return sub.add_option("--seed", seed, help)->check(CLI::Validator(whole_uint64, "UINT64"));
}

static TensorMeta parse_shape_spec(const std::string& spec, std::string& name) {
  auto bad = [&](const std::string& why) -> Error {
    return Error("cli", "--shape " + spec, why + " (expected NAME=D0,D1[:DTYPE])");
  };
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) throw bad("missing NAME=");
  name = spec.substr(0, eq);
  std::string rest = spec.substr(eq + 1);
  DType dtype = DType::Float32;
  if (auto colon = rest.find(':'); colon != std::string::npos) {
    auto dt = parse_dtype(rest.substr(colon + 1));
    if (!dt) throw bad("unknown dtype '" + rest.substr(colon + 1) + "'");
    dtype = *dt;
    rest = rest.substr(0, colon);
  }
  if (rest.size() >= 2 && rest.front() == '(' && rest.back() == ')')
    rest = rest.substr(1, rest.size() - 2);
  Shape sizes;
  size_t start = 0;
  while (start < rest.size()) {
    size_t comma = rest.find(',', start);
    std::string item =
        rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? rest.size() : comma + 1;
    if (item.empty() && start >= rest.size()) break;  // a trailing comma: "64,"
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0) throw bad("bad size '" + item + "'");
    sizes.push_back(v);
  }
  return TensorMeta::contiguous(sizes, dtype);
}

Graph load_graph(const std::string& path, const std::vector<std::string>& shape_specs,
                 const std::vector<std::string>& input_specs) {
  ParseOptions options;
  for (const auto& spec : shape_specs) {
    std::string name;
    TensorMeta meta = parse_shape_spec(spec, name);
    options.placeholder_meta[name] = meta;
  }
  for (const auto& spec : input_specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) continue;  // reported later
    std::string name = spec.substr(0, eq);
    if (options.placeholder_meta.count(name)) continue;
    try {
      Tensor t = load_npy(spec.substr(eq + 1));
      options.placeholder_meta_if_missing[name] = TensorMeta::contiguous(t.sizes(), t.dtype());
    } catch (const Error&) {
      // Reported with its context once the graph is read (an unknown name, an unreadable file).
    }
  }
  Graph g = parse_graph_file(path, options);
  verify(g);
  return g;
}

}  // namespace stax::cli
