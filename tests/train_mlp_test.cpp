// examples/train_mlp: the training example, run as a process for a few steps with --check (the
// first and final steps' gradients against the interpreter, one compilation per graph).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace {

struct Result {
  int code = -1;
  std::string out;
};

Result run(const std::string& args) {
  std::string cmd = std::string(STAX_BINARY_DIR) + "/bin/stax_train_mlp " + args + " 2>&1";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool contains(const std::string& s, const std::string& piece) {
  return s.find(piece) != std::string::npos;
}

}  // namespace

TEST(TrainMlp, FewCompiledStepsPassTheirChecks) {
  ASSERT_TRUE(std::filesystem::exists(std::string(STAX_BINARY_DIR) + "/bin/stax_train_mlp"));
  Result r = run("--steps 12 --print-every 4 --check");
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
  Result r = run("--steps 3 --interpret");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "(reference interpreter)")) << r.out;
  Result bad = run("--steps 0");
  EXPECT_NE(bad.code, 0) << bad.out;
}
