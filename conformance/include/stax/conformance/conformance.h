// The plugin conformance suite: end-to-end graphs of every op category and dtype, a differential
// fuzz slice, split reductions, extern kernels and must-fail cases, compiled through whatever
// backend a YAML config selects and compared with the reference interpreter.
//
// A vendor links the CMake target `stax_conformance` (with GoogleTest) into their own test:
//
//   int main(int argc, char** argv) {
//     ::testing::InitGoogleTest(&argc, argv);
//     stax::conformance::register_tests({.config = "my_backend.yaml"});
//     return RUN_ALL_TESTS();
//   }
//
// or runs `stax conformance --config my_backend.yaml [--filter 'Conformance*Pointwise*']`.
// Test names are Conformance<Category>.<Case>[_<dtype>]; every check is backend-neutral (no
// assertion looks at generated source or at one plugin's options), so a backend that implements
// the kernel semantics of the plugin ABI passes it. docs/backend_guide.md lists what is compared
// and with which bound.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace stax::conformance {

struct SuiteOptions {
  std::filesystem::path config;  // the YAML config that selects the backend under test
  std::string device;            // the config's device to test; "": its default_device, else
                                 // its first device
  int fuzz_graphs = 16;          // size of the differential fuzz slice
  uint64_t fuzz_seed = 1;
};

// Registers every conformance case as a GoogleTest test (testing::RegisterTest). The config is
// read here (a bad config throws stax::Error); the backend is created when the first test runs.
void register_tests(const SuiteOptions& options);

// For `stax conformance`: initialises GoogleTest with `filter` ("" runs everything, else a
// --gtest_filter pattern), registers the tests and runs them. Returns 0 when all pass.
int run_suite(const SuiteOptions& options, const std::string& filter);

}  // namespace stax::conformance
