// The main of every GoogleTest executable of tests/ (stax_add_test, cmake/StaxHelpers.cmake):
// GoogleTest's flags, then the engines' op tables filled (core/ops/install.h), then the tests.
#include <gtest/gtest.h>

#include "core/ops/install.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  stax::install_ops();
  return RUN_ALL_TESTS();
}
