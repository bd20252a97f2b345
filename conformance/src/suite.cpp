// Registration of the conformance cases as GoogleTest tests, and the runner `stax conformance`
// calls.
#include <gtest/gtest.h>

#include <memory>

#include "core/ops/install.h"
#include "stax/conformance/conformance.h"
#include "target.h"

namespace stax::conformance {
namespace {

class ConformanceTest : public ::testing::Test {
 public:
  ConformanceTest(std::shared_ptr<Target> target, std::function<void(Target&)> body)
      : target_(std::move(target)), body_(std::move(body)) {}
  void TestBody() override { body_(*target_); }

 private:
  std::shared_ptr<Target> target_;
  std::function<void(Target&)> body_;
};

}  // namespace

void register_tests(const SuiteOptions& options) {
  install_ops();  // the engines' op tables (core/ops/install.h); idempotent
  auto target = std::make_shared<Target>(options);
  std::vector<Case> cases;
  add_pointwise_cases(cases);
  add_reduction_cases(cases);
  add_extern_cases(cases);
  add_fuzz_cases(cases);
  add_error_cases(cases);
  for (Case& c : cases) {
    std::string suite = "Conformance" + c.category;
    ::testing::RegisterTest(suite.c_str(), c.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [target, body = c.body]() -> ::testing::Test* {
                              return new ConformanceTest(target, body);
                            });
  }
}

int run_suite(const SuiteOptions& options, const std::string& filter) {
  std::vector<std::string> args = {"stax conformance"};
  if (!filter.empty()) args.push_back("--gtest_filter=" + filter);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  argv.push_back(nullptr);  // argv[argc] == NULL, as InitGoogleTest (like main) expects
  ::testing::InitGoogleTest(&argc, argv.data());
  register_tests(options);
  return RUN_ALL_TESTS();
}

}  // namespace stax::conformance
