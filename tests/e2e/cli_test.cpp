// The stax CLI, run as a process: exit codes, stdout and stderr of `check` and `run` on the
// examples and on bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/tensor/npy.h"
#include "tests/support/cli_runner.h"

namespace fs = std::filesystem;
using namespace stax::test;
using Result = CliResult;
using Cli = CliTest;

TEST_F(Cli, HelpListsSubcommands) {
  Result r = stax("--help");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "check")) << r.out;
  EXPECT_TRUE(contains(r.out, "run")) << r.out;
  for (const char* sub : {"check", "run"}) {
    Result s = stax(std::string(sub) + " --help");
    EXPECT_EQ(s.code, 0) << sub << ": " << s.err;
    EXPECT_TRUE(contains(s.out, "--shape")) << s.out;
  }
  EXPECT_TRUE(contains(stax("run --help").out, "--seed"));
  EXPECT_TRUE(contains(stax("run --help").out, "--save"));
}

TEST_F(Cli, UsageErrorsExitWithTwo) {
  Result none = stax("");
  EXPECT_EQ(none.code, 2);
  EXPECT_FALSE(none.err.empty());
  Result unknown = stax("frobnicate");
  EXPECT_EQ(unknown.code, 2);
  Result missing = stax("check " + (dir_ / "no_such_file.stax").string());
  EXPECT_EQ(missing.code, 2);
  EXPECT_TRUE(contains(missing.err, "no_such_file.stax")) << missing.err;
  Result bad_style = stax("check " + example("example_1_1.stax") + " --style fancy");
  EXPECT_EQ(bad_style.code, 2);
}

TEST_F(Cli, CheckPrintsCanonicalText) {
  Result r = stax("check " + example("example_1_1.stax"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, slurp(example("example_1_1.stax")));
  EXPECT_EQ(r.err, "");
  // A sloppy but valid file comes back canonical, with the inferred shapes filled in.
  fs::path p = write("sloppy.stax",
                     "%b shape=(3,) = placeholder[target=b]\n"
                     "%r = call_function[target=relu](args = (%a,))\n"
                     "%a shape=(3,) = placeholder[target=a]\n"
                     "return r\n");
  Result s = stax("check " + p.string());
  EXPECT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(
      s.out,
      "graph(\n"
      "    %b shape=(3,) : [num_users=0] = placeholder[target=b]\n"
      "    %a shape=(3,) : [num_users=1] = placeholder[target=a]\n"
      "    %r shape=(3,) : [num_users=1] = call_function[target=tensorplay.ops.tp.relu.default]"
      "(args = (%a,), kwargs = {})\n"
      "    return (r,)\n"
      ")\n");
}

TEST_F(Cli, CheckListing52StyleWithShapesGivenOnTheCommandLine) {
  fs::path p = write(
      "joint.stax",
      "[FW] %primals_1 : [num_users=1] = placeholder[target=primals_1]\n"
      "[FW] %relu shape=(2, 3) = call_function[target=tp.relu.default](args = (%primals_1,))\n"
      "[FW] return (relu,)\n");
  Result r = stax("check " + p.string() + " --shape primals_1=2,3 --style listing52");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "[FW] %primals_1 shape=(2, 3) : [num_users=1] = placeholder[target=primals_1]\n"
      "[FW] %relu shape=(2, 3) = call_function[target=tp.relu.default](args = (%primals_1,))\n"
      "[FW] return (relu,)\n");
  Result no_shape = stax("check " + p.string());
  EXPECT_EQ(no_shape.code, 1);
  EXPECT_TRUE(
      contains(no_shape.err, "joint.stax:1:6: error: placeholder %primals_1 needs its metadata"))
      << no_shape.err;
  Result bad_spec = stax("check " + p.string() + " --shape primals_1=2,x");
  EXPECT_EQ(bad_spec.code, 1);
  EXPECT_TRUE(contains(bad_spec.err, "--shape primals_1=2,x: error: bad size 'x'")) << bad_spec.err;
}

TEST_F(Cli, CheckRunsPasses) {
  fs::path p = write("dup.stax",
                     "%x shape=(3,) = placeholder[target=x]\n"
                     "%a = call_function[target=relu](args = (%x,))\n"
                     "%b = call_function[target=relu](args = (%x,))\n"
                     "%dead = call_function[target=neg](args = (%x,))\n"
                     "%c = call_function[target=add.Tensor](args = (%a, %b))\n"
                     "return c\n");
  Result r = stax("check --cse --dce " + p.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "%b ")) << r.out;
  EXPECT_FALSE(contains(r.out, "%dead")) << r.out;
  EXPECT_TRUE(contains(r.out, "(args = (%a, %a), kwargs = {alpha: 1})")) << r.out;
}

TEST_F(Cli, CheckReportsErrorsWithLocation) {
  fs::path p = write("bad.stax",
                     "graph(\n"
                     "    %x shape=(64, 128) = placeholder[target=x]\n"
                     "    %y shape=(64, 64) = call_function[target=relu](args = (%x,))\n"
                     "    return (y,)\n"
                     ")\n");
  Result r = stax("check " + p.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, p.string() +
                       ":3:8: error: %y: shape=(64, 64) given, but the inferred shape is "
                       "(64, 128)\n");
  fs::path q = write("typo.stax",
                     "%x shape=(2,) = placeholder[target=x]\n"
                     "%y = call_function[target=rleu](args = (%x,))\nreturn y\n");
  Result t = stax("check " + q.string());
  EXPECT_EQ(t.code, 1);
  EXPECT_TRUE(
      contains(t.err, "typo.stax:2:27: error: unknown op 'rleu'; did you mean: relu.default"))
      << t.err;
}

TEST_F(Cli, RunPrintsSummariesAndSavesOutputs) {
  fs::path save = dir_ / "out";
  Result r = stax("run " + example("example_1_1.stax") + " --seed 5 --save " + save.string());
  if (r.code != 0 && contains(r.err, "no kernel"))
    GTEST_SKIP() << "interpreter kernels missing: " << r.err;
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "input primals_1 (random, seed 5): float32(64, 128)")) << r.out;
  EXPECT_TRUE(contains(r.out, "out0 sum_0: float32(64,)")) << r.out;
  EXPECT_TRUE(contains(r.out, "wall time: ")) << r.out;
  ASSERT_TRUE(fs::exists(save / "out0.npy"));
  stax::Tensor t = stax::load_npy((save / "out0.npy").string());
  EXPECT_EQ(t.sizes(), (stax::Shape{64}));
  // The same seed gives the same numbers; an input file replaces the random data.
  Result again = stax("run " + example("example_1_1.stax") + " --seed 5");
  EXPECT_EQ(again.code, 0);
  auto line = [](const std::string& s, const std::string& start) {
    size_t b = s.find(start);
    return b == std::string::npos ? std::string() : s.substr(b, s.find('\n', b) - b);
  };
  EXPECT_EQ(line(again.out, "out0 "), line(r.out, "out0 "));
  stax::save_npy((dir_ / "ones.npy").string(), stax::Tensor::ones({64, 128}));
  Result with_input = stax("run " + example("example_1_1.stax") +
                           " --input primals_1=" + (dir_ / "ones.npy").string() +
                           " -i primals_2=" + (dir_ / "ones.npy").string());
  EXPECT_EQ(with_input.code, 0) << with_input.err;
  // relu(1 + 1) * 2 summed over 128 columns = 512 in every row.
  EXPECT_TRUE(contains(with_input.out, "out0 sum_0: float32(64,) min=512 max=512 mean=512"))
      << with_input.out;
}

// Issue 12 "Also": a directory given as --input used to give a message without the path.
TEST_F(Cli, RunInputThatIsADirectoryNamesThePath) {
  Result r = stax("run " + example("example_1_1.stax") + " --input primals_1=" + dir_.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, dir_.string() + ": error: is a directory, not a .npy file")) << r.err;
}

TEST_F(Cli, RunRejectsUnknownInputs) {
  Result r = stax("run " + example("example_1_1.stax") + " --input nope=x.npy");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err,
                       "--input nope=x.npy: error: the graph has no placeholder named 'nope' "
                       "(placeholders: primals_1, primals_2)"))
      << r.err;
}
