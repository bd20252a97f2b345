// libFuzzer target: compile-and-compare. The input is decoded into a random valid graph and its
// inputs (tests/support/random_graphs.h, the generator of compiled_fuzz_test with its draws taken
// from the fuzz bytes); the graph is compiled with cpu_cpp and run, and every output must equal
// the reference interpreter's bit for bit (reductions in the matching order), or lie within the
// gemm / softmax rounding bound. The first byte picks the reduction order (segmented or strict)
// and one of the Theorem 6.1 schedule variants to compare as well. Both rejecting the inputs is
// fine; a mismatch, one side throwing, a crash or a sanitizer report is a finding (the case is
// printed and the target aborts).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "core/ops/install.h"
#include "tests/support/random_graphs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stax::install_ops();  // the engines' op tables (core/ops/install.h); once
  using namespace stax;
  if (size < 2) return 0;
  const uint8_t control = data[0];
  test::Order order = control & 1 ? test::Order::Strict : test::Order::Segmented;
  int variant = control >> 1;  // modulo the number of variants
  test::Gen r(data + 1, size - 1);
  test::FuzzCase fc = test::generate(r);
  std::string err = test::check_case(fc, order, variant);
  if (!err.empty()) {
    std::cerr << "compile-and-compare finding (" << test::order_name(order) << "):\n"
              << err << test::describe(fc) << std::flush;
    std::abort();
  }
  return 0;
}
