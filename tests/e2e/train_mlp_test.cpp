// examples/train_mlp: the training example, run as a process for a few steps with --check (the
// first and final steps' gradients against the interpreter, one compilation per graph).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/cli_runner.h"

using namespace stax::test;

namespace {

// Runs `stax_train_mlp ARGS`, its stderr merged into its stdout.
CliResult run(const std::string& args) {
  return run_command(binary("stax_train_mlp") + " " + args);
}

}  // namespace

TEST(TrainMlp, FewCompiledStepsPassTheirChecks) {
  ASSERT_TRUE(std::filesystem::exists(binary("stax_train_mlp")));
  CliResult r = run("--steps 12 --print-every 4 --check");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "(compiled)")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "check (first step): loss and 4 gradients vs the interpreter's "
                       "joint graph: ok"))
      << r.out;
  EXPECT_TRUE(contains(r.out,
                       "check (final step): loss and 4 gradients vs the interpreter's "
                       "joint graph: ok"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "step    8  loss ")) << r.out;
  EXPECT_TRUE(contains(r.out, "compilations: forward 1")) << r.out;
  EXPECT_TRUE(contains(r.out, "backward 1")) << r.out;
  EXPECT_TRUE(contains(r.out, "memory per step: saved ")) << r.out;
  EXPECT_TRUE(contains(r.out, "(fell)")) << r.out;
}

TEST(TrainMlp, InterpreterPathAndUsageErrors) {
  CliResult r = run("--steps 3 --interpret");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "(reference interpreter)")) << r.out;
  CliResult bad = run("--steps 0");
  EXPECT_NE(bad.code, 0) << bad.out;
}
