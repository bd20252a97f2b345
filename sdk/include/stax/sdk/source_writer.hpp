// SourceWriter: the lines of a generated kernel at an indentation depth, and the row-major
// decomposition of a flat index into loop variables. What every printer's framing needs (cpu_cpp,
// cuda_nvrtc and cuda_triton print with them), so that a printer is its own framing and little
// else.
//
//   sdk::SourceWriter w;                        // C family: two spaces per level, depth 0
//   w.open("for (long long i0 = 0; i0 < 64; ++i0) {");
//   w.line("out_ptr0[i0] = in_ptr0[i0];");
//   w.close();                                  // "}" one level up
//   std::string text = w.take();
//
//   sdk::SourceWriter py("    ", 1);             // Python (Triton): four spaces, inside a def
//   for (const std::string& t : sdk::decompose_index("xindex", extents, sdk::python_index()))
//     ...                                        // (xindex // 32) % 8, xindex % 32
#ifndef STAX_SDK_SOURCE_WRITER_HPP
#define STAX_SDK_SOURCE_WRITER_HPP

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stax/sdk/types.hpp"

namespace stax {
namespace sdk {

class SourceWriter {
 public:
  // `unit`: the text of one indentation level; `depth`: the level of the first line.
  explicit SourceWriter(std::string unit = "  ", int depth = 0)
      : unit_(std::move(unit)), depth_(depth) {}

  // One line at the current depth (an empty `text` still gets the indentation).
  void line(const std::string& text) {
    for (int i = 0; i < depth_; ++i) out_ += unit_;
    out_ += text;
    out_ += '\n';
  }
  // A line that opens a block (`for (...) {`); the lines after it go one level deeper.
  void open(const std::string& text) {
    line(text);
    ++depth_;
  }
  // Closes the innermost block: one level up, then `closer`.
  void close(const std::string& closer = "}") {
    --depth_;
    line(closer);
  }
  void indent() { ++depth_; }
  void dedent() { --depth_; }
  int depth() const { return depth_; }
  // The text written so far; the writer is empty afterwards (its depth stays).
  std::string take() { return std::move(out_); }

 private:
  std::string unit_;
  std::string out_;
  int depth_;
};

// How decompose_index spells its terms.
struct IndexSpelling {
  std::string floordiv = " / ";       // the linear index and strides are nonnegative
  std::string mod = " % ";
  std::string literal_suffix = "LL";  // after every integer literal
  bool parenthesize_mod = true;       // `(x % 8LL)` rather than `x % 8`
};

// C and CUDA C: `(x / 32LL)`, `((x / 32LL) % 8LL)`.
inline IndexSpelling c_index() { return IndexSpelling(); }
// Python / Triton: `(x // 32)`, `(x // 32) % 8`.
inline IndexSpelling python_index() {
  IndexSpelling s;
  s.floordiv = " // ";
  s.literal_suffix = "";
  s.parenthesize_mod = false;
  return s;
}

// The row-major decomposition of the flat index `linear` over `extents`: term k is the k-th
// coordinate, (linear / stride_k) % extent_k (no division for the innermost extent, no modulo for
// the outermost). One term per extent; the caller declares the variables in its language.
inline std::vector<std::string> decompose_index(const std::string& linear, Span<int64_t> extents,
                                                const IndexSpelling& spelling = IndexSpelling()) {
  std::vector<int64_t> strides(extents.size());
  int64_t stride = 1;
  for (size_t k = extents.size(); k-- > 0;) {
    strides[k] = stride;
    stride *= extents[k];
  }
  std::vector<std::string> terms;
  for (size_t k = 0; k < extents.size(); ++k) {
    std::string v = linear;
    if (strides[k] != 1)
      v = "(" + v + spelling.floordiv + std::to_string(strides[k]) + spelling.literal_suffix + ")";
    if (k > 0) {
      v += spelling.mod + std::to_string(extents[k]) + spelling.literal_suffix;
      if (spelling.parenthesize_mod) v = "(" + v + ")";
    }
    terms.push_back(std::move(v));
  }
  return terms;
}

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_SOURCE_WRITER_HPP
