// Issue 12 "Also": the Release build compiled internal assertions out (CMake's default
// -DNDEBUG) although the top-level CMakeLists.txt says they stay on in every build type. An
// internal invariant is an assert (core/support/error.h: "Internal invariants are asserts, not
// Errors"); this test breaks one inside the library (core/ir/layout.cpp, a size and a stride of
// different ranks) and expects the process to abort with the assertion's text. Built with
// -DNDEBUG anywhere (this file or the library), it fails.
#include <gtest/gtest.h>

#include "core/ir/layout.h"

namespace stax {
namespace {

TEST(Assertions, TestsAreBuiltWithAssertionsOn) {
#ifdef NDEBUG
  FAIL() << "NDEBUG is defined: this build type compiles assertions out";
#endif
}

TEST(Assertions, InternalAssertionsInTheLibraryFire) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(Layout::fixed("cpu", DType::Float32, Shape{2, 3}, Shape{1}),
               "size.size\\(\\) == stride.size\\(\\)");
}

}  // namespace
}  // namespace stax
