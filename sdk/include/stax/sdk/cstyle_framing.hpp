// The framing of a C-like kernel around CStylePrinter's statements: the loops over the iteration
// ranges, and per body its accumulators, hoisted statements, the reduction loop nest with the
// body's lines and the stores after it (the kernel semantics of plugin_api.h). What every simple
// C-family backend writes by hand; a target with its own parallel or vector framing (cpu_cpp)
// keeps its own.
//
//   CStylePrinter p(kernel);
//   std::string src = p.signature() + " {\n" + frame_loops(p) + "}\n";
//   // for (long long i0 = 0; i0 < 64; ++i0) {
//   //   // buf2
//   //   float acc0 = 0.0f;
//   //   for (long long r0_0 = 0; r0_0 < 128; ++r0_0) {
//   //     auto tmp0 = in_ptr0[128*i0 + r0_0];  ...
//   //   }
//   //   out_ptr0[i0] = acc0;
//   // }
#ifndef STAX_SDK_CSTYLE_FRAMING_HPP
#define STAX_SDK_CSTYLE_FRAMING_HPP

#include <string>

#include "stax/sdk/cstyle_printer.hpp"

namespace stax {
namespace sdk {

struct FramingStyle {
  std::string indent = "  ";  // one level
  int base_level = 1;         // levels of the outermost loop (inside the function's braces)
  bool body_comments = true;  // "// <body name>" before each body
};

// `for (<type> <var> = 0; <var> < <extent>; ++<var>) {` with the printer's index type.
inline std::string c_for_header(const CStylePrinter& p, const std::string& var, int64_t extent) {
  return "for (" + p.index_type() + " " + var + " = 0; " + var + " < " + std::to_string(extent) +
         "; ++" + var + ") {";
}

// The statements of the kernel function's body (everything between its braces), one per line.
// Prints every body of the kernel with `p` (one printer per kernel: temporaries are numbered
// across bodies).
inline std::string frame_loops(CStylePrinter& p, const FramingStyle& style = FramingStyle()) {
  const Kernel& k = p.kernel();
  std::string out;
  auto line = [&](int level, const std::string& text) {
    for (int i = 0; i < level; ++i) out += style.indent;
    out += text + "\n";
  };
  int level = style.base_level;
  for (size_t i = 0; i < k.ranges().size(); ++i)
    line(level++, c_for_header(p, p.iter_var(static_cast<int32_t>(i)), k.ranges()[i]));
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    LoopBody body = k.body(b);
    PrintedBody pb = p.print(body);
    if (style.body_comments) line(level, "// " + body.name());
    for (const std::string& l : pb.prologue) line(level, l);
    for (const std::string& l : pb.hoisted) line(level, l);
    int inner = level;
    if (body.is_reduction_loop())
      for (size_t r = 0; r < k.reduction_ranges().size(); ++r)
        line(inner++, c_for_header(p, p.reduce_var(static_cast<int32_t>(r)),
                                   k.reduction_ranges()[r]));
    for (const std::string& l : pb.lines) line(inner, l);
    while (inner > level) line(--inner, "}");
    for (const std::string& l : pb.epilogue) line(level, l);
  }
  while (level > style.base_level) line(--level, "}");
  return out;
}

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_CSTYLE_FRAMING_HPP
