// The framing of a C-like kernel around CStylePrinter's statements: the loops over the iteration
// ranges, and per body its accumulators, hoisted statements, the reduction loop nest with the
// body's lines and the stores after it (the kernel semantics of plugin_api.h). What every simple
// C-family backend writes by hand; a target with its own parallel or vector framing (cpu_cpp)
// keeps its own. Also the kernel's check support (a failed indirect-index check records its
// message and returns) and an entry point taking the buffers as an array, so a host calls every
// kernel the same way.
//
//   CStylePrinter p(kernel, c99_tables());       // or the C++ defaults
//   FramingStyle style;  style.entry_linkage = "";   // C: no extern "C"
//   std::string src = "#include \"stax/sdk/scalar_ops.h\"\n" + c_check_prelude(p, style) +
//                     frame_kernel(p, style) + c_entry_point(p, style);
//   // const char* <kernel>_entry(void* const* buffers): null, or the failed check's message
//
// frame_kernel(p) is `p.signature() { frame_loops(p) }`:
//   // for (long long i0 = 0; i0 < 64; ++i0) {
//   //   // buf2
//   //   float acc0 = 0.0f;
//   //   for (long long r0_0 = 0; r0_0 < 128; ++r0_0) {
//   //     float tmp0 = in_ptr0[128*i0 + r0_0];  ...
//   //   }
//   //   out_ptr0[i0] = acc0;
//   // }
#ifndef STAX_SDK_CSTYLE_FRAMING_HPP
#define STAX_SDK_CSTYLE_FRAMING_HPP

#include <string>

#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/source_writer.hpp"

namespace stax {
namespace sdk {

struct FramingStyle {
  std::string indent = "  ";  // one level
  int base_level = 1;         // levels of the outermost loop (inside the function's braces)
  bool body_comments = true;  // "// <body name>" before each body
  // c_entry_point / c_check_prelude: the entry point's linkage ("extern \"C\"" for C++ and CUDA
  // host code, "" for C) and the name of the variable a failed check leaves its message in.
  std::string entry_linkage = "extern \"C\"";
  std::string error_var = "stax_error";
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
  SourceWriter w(style.indent, style.base_level);
  for (size_t i = 0; i < k.ranges().size(); ++i)
    w.open(c_for_header(p, p.iter_var(static_cast<int32_t>(i)), k.ranges()[i]));
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    LoopBody body = k.body(b);
    PrintedBody pb = p.print(body);
    if (style.body_comments) w.line("// " + body.name());
    for (const std::string& l : pb.prologue) w.line(l);
    for (const std::string& l : pb.hoisted) w.line(l);
    const int level = w.depth();
    if (body.is_reduction_loop())
      for (size_t r = 0; r < k.reduction_ranges().size(); ++r)
        w.open(c_for_header(p, p.reduce_var(static_cast<int32_t>(r)), k.reduction_ranges()[r]));
    for (const std::string& l : pb.lines) w.line(l);
    while (w.depth() > level) w.close();
    for (const std::string& l : pb.epilogue) w.line(l);
  }
  while (w.depth() > style.base_level) w.close();
  return w.take();
}

// The kernel function: `<signature> {` + frame_loops + `}`.
inline std::string frame_kernel(CStylePrinter& p, const FramingStyle& style = FramingStyle()) {
  return p.signature() + " {\n" + frame_loops(p, style) + "}\n";
}

// What the printer's check() lines need (valid C and C++): a variable holding the first failed
// check's message and the check macro, which sets it and returns from the kernel function. One
// variable per shared object: a kernel runs on one thread at a time.
inline std::string c_check_prelude(const CStylePrinter& p,
                                   const FramingStyle& style = FramingStyle()) {
  return "static const char* " + style.error_var + " = 0;\n#define " + p.tables().check_macro +
         "(cond, msg) if (!(cond)) { " + style.error_var + " = msg; return; }\n";
}

// `<linkage> const char* <kernel>_entry(void* const* b)`: runs the kernel function on the
// buffers b[0], b[1], ... (the kernel's buffer order, cast to their storage types) and returns
// null, or the message of the check that failed.
inline std::string c_entry_point(const CStylePrinter& p,
                                 const FramingStyle& style = FramingStyle()) {
  const Kernel& k = p.kernel();
  std::string s = (style.entry_linkage.empty() ? "" : style.entry_linkage + " ") +
                  "const char* " + k.name() + "_entry(void* const* b) {\n" + style.indent +
                  style.error_var + " = 0;\n" + style.indent + k.name() + "(";
  for (size_t i = 0; i < k.num_buffers(); ++i) {
    Buffer buf = k.buffer(i);
    s += (i ? ", " : "") + std::string("(") + (buf.is_input() ? "const " : "") +
         p.storage_type(buf.dtype()) + "*)b[" + std::to_string(i) + "]";
  }
  return s + ");\n" + style.indent + "return " + style.error_var + ";\n}\n";
}

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_CSTYLE_FRAMING_HPP
