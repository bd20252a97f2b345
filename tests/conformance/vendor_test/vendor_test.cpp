// A vendor's test binary: the Stax conformance suite registered next to the vendor's own tests
// (here one), run on the backend the YAML config given as the first argument selects.
//   vendor_conformance_test CONFIG.yaml [--gtest_filter=...]
#include <gtest/gtest.h>

#include <cstdio>

#include "stax/conformance/conformance.h"

TEST(VendorOwn, RunsNextToTheSuite) { EXPECT_EQ(2 + 2, 4); }

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CONFIG.yaml [--gtest_filter=...]\n", argv[0]);
    return 2;
  }
  stax::conformance::SuiteOptions options;
  options.config = argv[1];
  options.fuzz_graphs = 4;
  stax::conformance::register_tests(options);
  return RUN_ALL_TESTS();
}
