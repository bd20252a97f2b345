// Exact division by a row-invariant divisor in fused multiply-adds (row_division.h).
#include "plugins/cpu_cpp/row_division.h"

#include <regex>

namespace stax::cpu {

const char kRowDivisionPrelude[] = R"(
// Exact float32 division by a divisor the same over a row (cpu_cpp row_division.h): with
// r = 1 / |s| and x' = x * sign(s), q0 - (q0 * |s| - x') * r in two fmas is the correctly
// rounded x / s for x of magnitude 0 or in [2^-64, 2^64) and |s| in [2^-32, 2^32)
// (docs/DECISIONS.md); stax_row_div_exact says whether a row's x (their magnitudes' min and
// max, from stax_row_div_range) and s are in range, else the row takes the division.
struct stax_row_div {
  float s, r;     // |s|, 1 / |s|
  unsigned sign;  // s's sign bit
  unsigned ok;    // |s| in [2^-32, 2^32)
};
static inline stax_row_div stax_row_div_prepare(float s) {
  const unsigned b = __builtin_bit_cast(unsigned, s);
  stax_row_div d;
  d.sign = b & 0x80000000u;
  d.s = __builtin_bit_cast(float, b & 0x7fffffffu);
  d.r = 1.0f / d.s;
  d.ok = (b & 0x7fffffffu) - 0x2f800000u < 0x4f800000u - 0x2f800000u;
  return d;
}
static inline void stax_row_div_range(float x, unsigned& lo, unsigned& hi) {
  const unsigned m = __builtin_bit_cast(unsigned, x) & 0x7fffffffu;
  lo = m - 1u < lo ? m - 1u : lo;  // a zero wraps to the top: it does not lower lo
  hi = m > hi ? m : hi;
}
static inline bool stax_row_div_exact(const stax_row_div& d, unsigned lo, unsigned hi) {
  return d.ok && lo >= 0x1f800000u - 1u && hi < 0x5f800000u;
}
static inline float stax_row_div_apply(float x, const stax_row_div& d) {
  const float xs = __builtin_bit_cast(float, __builtin_bit_cast(unsigned, x) ^ d.sign);
  const float q0 = xs * d.r;
  const float ne = __builtin_fmaf(q0, d.s, -xs);
  return __builtin_fmaf(-ne, d.r, q0);
}
)";

std::optional<RowDivision> find_row_division(const sdk::PrintedBody& pb,
                                             const std::string& reduce_var) {
  if (!pb.prologue.empty() || !pb.epilogue.empty()) return std::nullopt;
  static const std::regex divide(
      "^float (tmp[0-9]+) = stax_scalar::truediv\\((tmp[0-9]+), (tmp[0-9]+)\\);$");
  static const std::regex load("^float (tmp[0-9]+) = ([A-Za-z_][A-Za-z0-9_]*)\\[([^\\]]+)\\];$");
  static const std::regex store("^([A-Za-z_][A-Za-z0-9_]*)\\[([^\\]]+)\\] = ");
  static const std::regex affine("^[A-Za-z0-9_ +*()]+$");  // no value, floordiv or modulo
  RowDivision d;
  int found = 0;
  std::smatch m;
  for (size_t i = 0; i < pb.lines.size(); ++i) {
    if (pb.lines[i].find("stax_scalar::truediv(") == std::string::npos) continue;
    if (++found > 1 || !std::regex_match(pb.lines[i], m, divide)) return std::nullopt;
    d.line = i;
    d.quotient = m[1];
    d.dividend = m[2];
    d.divisor = m[3];
  }
  if (found != 1) return std::nullopt;
  bool hoisted = false;
  for (const std::string& l : pb.hoisted)
    hoisted = hoisted || l.rfind("float " + d.divisor + " = ", 0) == 0;
  if (!hoisted) return std::nullopt;
  std::string buffer, index;
  for (size_t i = 0; i < d.line; ++i)
    if (std::regex_match(pb.lines[i], m, load) && m[1] == d.dividend) {
      buffer = m[2];
      index = m[3];
    }
  const std::regex var("\\b" + reduce_var + "\\b");
  if (buffer.empty() || !std::regex_match(index, affine) || index.find("tmp") != std::string::npos ||
      !std::regex_search(index, var))
    return std::nullopt;
  for (const std::string& l : pb.lines)
    if (std::regex_search(l, m, store) && m[1] == buffer && m[2] != index) return std::nullopt;
  d.load = buffer + "[" + index + "]";
  return d;
}

void emit_row_division_body(sdk::SourceWriter& w, const sdk::PrintedBody& pb,
                            const RowDivision& d, const std::function<void()>& open_loops,
                            int id) {
  const std::string v = "stax_div" + std::to_string(id);
  auto loop_over = [&](const std::vector<std::string>& lines) {
    const int depth = w.depth();
    open_loops();
    for (const std::string& l : lines) w.line(l);
    while (w.depth() > depth) w.close();
  };
  for (const std::string& l : pb.hoisted) w.line(l);
  w.line("const stax_row_div " + v + " = stax_row_div_prepare(" + d.divisor + ");");
  w.line("unsigned " + v + "_lo = 0xffffffffu, " + v + "_hi = 0u;");
  loop_over({"stax_row_div_range(" + d.load + ", " + v + "_lo, " + v + "_hi);"});
  std::vector<std::string> fast = pb.lines;
  fast[d.line] =
      "float " + d.quotient + " = stax_row_div_apply(" + d.dividend + ", " + v + ");";
  w.open("if (stax_row_div_exact(" + v + ", " + v + "_lo, " + v +
         "_hi)) {  // x / s in two fmas: exact here");
  loop_over(fast);
  w.close("} else {");
  w.indent();
  loop_over(pb.lines);
  w.close();
}

}  // namespace stax::cpu
