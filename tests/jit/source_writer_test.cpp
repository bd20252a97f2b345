// The SDK's SourceWriter and decompose_index (stax/sdk/source_writer.hpp), which the cpu_cpp,
// cuda_nvrtc and cuda_triton printers and cstyle_framing.hpp print with: the exact text they
// produce (the printers' kernels must not change by a byte when they moved to it).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "stax/sdk/source_writer.hpp"

using stax::sdk::decompose_index;
using stax::sdk::SourceWriter;
using stax::sdk::Span;

TEST(SourceWriter, IndentsOpenedBlocksAndClosesThem) {
  SourceWriter w;
  w.open("for (long long i0 = 0; i0 < 4; ++i0) {");
  w.line("x[i0] = 0;");
  w.open("{");
  w.line("");
  w.close();
  w.close();
  EXPECT_EQ(w.depth(), 0);
  EXPECT_EQ(w.take(),
            "for (long long i0 = 0; i0 < 4; ++i0) {\n  x[i0] = 0;\n  {\n    \n  }\n}\n");
  EXPECT_EQ(w.take(), "");  // taken: empty, and usable again
  w.line("y;");
  EXPECT_EQ(w.take(), "y;\n");
}

TEST(SourceWriter, UnitAndStartingDepthAndCloser) {
  SourceWriter py("    ", 1);
  py.line("xnumel = 8");
  py.line("for roffset in range(0, rnumel, RBLOCK):");
  py.indent();
  py.line("rindex = roffset");
  py.dedent();
  EXPECT_EQ(py.depth(), 1);
  EXPECT_EQ(py.take(),
            "    xnumel = 8\n    for roffset in range(0, rnumel, RBLOCK):\n        rindex = "
            "roffset\n");
  SourceWriter c("\t");
  c.open("do {");
  c.close("} while (0);");
  EXPECT_EQ(c.take(), "do {\n} while (0);\n");
}

TEST(DecomposeIndex, CSpellingAsCudaPrintsIt) {
  const std::vector<int64_t> extents = {3, 8, 32};
  std::vector<std::string> t =
      decompose_index("stax_linear", Span<int64_t>(extents.data(), extents.size()));
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], "(stax_linear / 256LL)");
  EXPECT_EQ(t[1], "((stax_linear / 32LL) % 8LL)");
  EXPECT_EQ(t[2], "(stax_linear % 32LL)");
}

TEST(DecomposeIndex, PythonSpellingAsTritonPrintsIt) {
  const std::vector<int64_t> extents = {3, 8, 32};
  std::vector<std::string> t = decompose_index(
      "xindex", Span<int64_t>(extents.data(), extents.size()), stax::sdk::python_index());
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], "(xindex // 256)");
  EXPECT_EQ(t[1], "(xindex // 32) % 8");
  EXPECT_EQ(t[2], "xindex % 32");
}

TEST(DecomposeIndex, OneAndNoExtents) {
  const std::vector<int64_t> one = {17};
  std::vector<std::string> t = decompose_index("r", Span<int64_t>(one.data(), one.size()));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0], "r");  // the only coordinate is the index itself
  EXPECT_TRUE(decompose_index("r", Span<int64_t>()).empty());
}
