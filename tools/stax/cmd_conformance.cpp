// stax conformance --config C [--device D] [--filter PATTERN] [--fuzz N] [--seed S]: the plugin
// conformance suite (stax/conformance/conformance.h) against the backend the config selects for
// device D (default: the config's first device). PATTERN is a GoogleTest filter over the test
// names Conformance<Category>.<Case> (e.g. 'ConformancePointwise.*:ConformanceExtern.*').
// Exit status 0 when every selected case passes.
#include "stax/conformance/conformance.h"
#include "tools/stax/command.h"

namespace stax::cli {

Subcommand make_conformance_command(CLI::App& parent) {
  struct State {
    std::string config, device, filter;
    int fuzz = 16;
    uint64_t seed = 1;
  };
  auto s = std::make_shared<State>();
  CLI::App* sub = parent.add_subcommand(
      "conformance", "Run the plugin conformance suite against the backend a config selects");
  sub->add_option("--config", s->config, "YAML config selecting the backend under test")
      ->required();
  sub->add_option("--device", s->device, "the config's device to test (default: its first)");
  sub->add_option("--filter", s->filter,
                  "GoogleTest filter over Conformance<Category>.<Case> names");
  sub->add_option("--fuzz", s->fuzz, "number of random graphs in the fuzz slice")
      ->check(CLI::NonNegativeNumber);
  add_seed_option(*sub, s->seed, "seed of the fuzz slice");
  return {sub, [s] {
            conformance::SuiteOptions o;
            o.config = s->config;
            o.device = s->device;
            o.fuzz_graphs = s->fuzz;
            o.fuzz_seed = s->seed;
            return conformance::run_suite(o, s->filter) == 0 ? 0 : 1;
          }};
}

}  // namespace stax::cli
