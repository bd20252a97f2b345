// Shared by the must-fail inference tests (inference_checks_test.cpp,
// inference_checks_sweep_test.cpp): the message a graph-building call throws, and a check that
// it names the expected cause.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax::test {

// The message of the stax::Error the call throws ("" when it builds).
inline std::string call_error(Graph& g, std::string_view op, std::vector<Arg> args,
                              Kwargs kw = {}) {
  try {
    g.call(op, std::move(args), std::move(kw));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace stax::test

#define EXPECT_REJECTS(msg_piece, ...)                                              \
  do {                                                                              \
    std::string m_ = ::stax::test::call_error(__VA_ARGS__);                         \
    EXPECT_NE(m_.find(msg_piece), std::string::npos) << "message: '" << m_ << "'"; \
  } while (0)
