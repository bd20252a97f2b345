#include "plugins/cpu_cpp/body_loops.h"

#include <optional>
#include <regex>

#include "plugins/cpu_cpp/row_division.h"

namespace stax::cpu {

using sdk::SourceWriter;

namespace {

// `acc3` / `acc3_index` -> `acc3<subscript>` (`acc3[stax_lane]`: the accumulators of a wide-lane
// body; `acc3[stax_seg]`: of a segmented one).
std::string subscript_accumulators(const std::string& line,
                                   const std::string& subscript = "[stax_lane]") {
  static const std::regex acc("\\b(acc[0-9]+(_index)?)\\b");
  return std::regex_replace(line, acc, "$1" + subscript);
}

// "<type> <name> = <init>;" -> {"<type> <name>", "<name>", "<init>"}
struct Declaration {
  std::string declarator, name, init;
};
Declaration split_declaration(const std::string& l) {
  size_t eq = l.find(" = "), sp = l.rfind(' ', eq - 1);
  return {l.substr(0, eq), l.substr(sp + 1, eq - sp - 1), l.substr(eq + 3, l.size() - eq - 4)};
}

std::string lane_loop(const std::string& index_type, int64_t lanes) {
  return loop(index_type, "stax_lane", "0", std::to_string(lanes));
}

std::string segment_loop(const std::string& index_type, int64_t segments) {
  return loop(index_type, "stax_seg", "0", std::to_string(segments));
}

// The tree of the segmented order (stax/sdk/reduction_order.hpp) over `subscript`ed accumulator
// elements: `<acc>[stax_seg]<lane>`, the result in segment 0.
void emit_segment_tree(SourceWriter& w, const CppPrinter& p,
                       const std::vector<Declaration>& accs, const std::string& lane_subscript,
                       int64_t lanes) {
  for (int64_t h = kSegments / 2; h >= 1; h /= 2) {
    w.open(segment_loop(p.index_type(), h));
    if (lanes > 0) w.open(lane_loop(p.index_type(), lanes));
    for (const Declaration& a : accs)
      w.line(p.combine(a.name, a.name + "[stax_seg]" + lane_subscript,
                       a.name + "[stax_seg + " + std::to_string(h) + "]" + lane_subscript));
    if (lanes > 0) w.close();
    w.close();
  }
}

// The fast form of a floating-point max / min accumulation in the segmented loop (nullopt: the
// line is not one): `acc[s] = stax_scalar::maximum(acc[s], x);` -> `acc[s] = acc[s] > x ? acc[s]
// : x;` plus a NaN flag. Without NaNs maximum(a, b) is exactly `a > b ? a : b` (a tie returns b,
// the later element, as maximum does), a one-instruction chain where maximum's NaN tests make a
// dependency chain of several (the max pass of softmax ran at ~1/4 of hand's speed); a NaN anywhere
// in the row sets the flag and the exact loop runs again (maximum: the first NaN wins). The flag
// counts the NaNs of its segment (a compare and a masked subtract per vector, where `|=` widened
// the compare to 0 / 1 first: softmax's max pass 3% faster); unsigned, as wide as the index
// (a 32-bit kernel's rows have fewer than 2^31 elements), so it cannot wrap to 0.
std::optional<std::vector<std::string>> fast_min_max(const std::string& line,
                                                     const std::vector<Declaration>& accs,
                                                     const std::string& flags) {
  static const std::regex re(
      "^(acc[0-9]+)\\[stax_seg\\] = stax_scalar::(maximum|minimum)\\(\\1\\[stax_seg\\], "
      "([A-Za-z_][A-Za-z0-9_]*)\\);$");
  std::smatch m;
  if (!std::regex_match(line, m, re)) return std::nullopt;
  for (const Declaration& a : accs) {
    if (a.name != m[1].str()) continue;
    std::string type = a.declarator.substr(0, a.declarator.size() - a.name.size() - 1);
    if (type != "float" && type != "double") return std::nullopt;
    const std::string acc = m[1].str() + "[stax_seg]", x = m[3].str();
    const char* cmp = m[2].str() == "maximum" ? " > " : " < ";
    return std::vector<std::string>{acc + " = " + acc + cmp + x + " ? " + acc + " : " + x + ";",
                                    flags + "[stax_seg] += " + x + " != " + x + ";"};
  }
  return std::nullopt;
}

// The body's lines with its float max / min accumulations in the fast form of fast_min_max (and
// the others subscripted by segment); nullopt when none has that form.
std::optional<std::vector<std::string>> fast_min_max_lines(const sdk::PrintedBody& pb,
                                                          const std::vector<Declaration>& accs,
                                                          const std::string& flags) {
  std::vector<std::string> lines;
  bool fast = false;
  for (const std::string& l : pb.lines) {
    std::string line = subscript_accumulators(l, "[stax_seg]");
    if (auto f = fast_min_max(line, accs, flags)) {
      fast = true;
      lines.insert(lines.end(), f->begin(), f->end());
    } else {
      lines.push_back(line);
    }
  }
  if (!fast) return std::nullopt;
  return lines;
}

// One pass of a segmented loop whose segment follows the innermost reduction variable
// (vector_segments()): the outer reduction loops, then the innermost in steps of kSegments over
// a segment loop of `statements`, and a tail loop when the extent is not a multiple.
void emit_vector_segment_pass(SourceWriter& w, const CppPrinter& p, sdk::Span<int64_t> rranges,
                              const std::function<void()>& statements) {
  const std::string ix = p.index_type();
  const std::string k = std::to_string(kSegments);
  const int depth = w.depth();
  const size_t last = rranges.size() - 1;
  open_reduction_loops(w, p, rranges, last);
  std::string v = p.reduce_loop_var(static_cast<int32_t>(last));
  std::string n = extent(rranges[last], p.kernel().index_bits() == 32);
  w.open("{");  // the scope of v (a kernel may have several reduction bodies)
  w.line(ix + " " + v + " = 0;");
  w.open("for (; " + v + " <= " + n + " - " + k + "; " + v + " += " + k + ") {");
  // One vector operation per statement: without the pragma Clang fully unrolls the segment
  // loop first and its SLP vectoriser then packs the chains into 128-bit pairs. (No
  // reordering: every segment keeps its own chain.)
  w.line("#pragma clang loop unroll(disable) vectorize(enable) vectorize_width(" + k + ")");
  w.open(segment_loop(ix, kSegments));
  statements();
  w.close();
  w.close();
  if (rranges[last] % kSegments != 0) {
    w.open("for (" + ix + " stax_seg = 0; stax_seg < " + n + " - " + v + "; ++stax_seg) {");
    statements();
    w.close();
  }
  while (w.depth() > depth) w.close();  // the reduction loops, the scope of v
}

}  // namespace

std::string loop(const std::string& type, const std::string& var, const std::string& begin,
                 const std::string& end) {
  return "for (" + type + " " + var + " = " + begin + "; " + var + " < " + end + "; ++" + var +
         ") {";
}

std::string extent(int64_t n, bool narrow) { return std::to_string(n) + (narrow ? "" : "LL"); }

void open_reduction_loops(SourceWriter& w, const CppPrinter& p, sdk::Span<int64_t> rranges,
                          size_t count) {
  for (size_t r = 0; r < count; ++r)
    w.open(loop(p.index_type(), p.reduce_loop_var(static_cast<int32_t>(r)), "0",
                extent(rranges[r], p.kernel().index_bits() == 32)));
}

bool vector_segments(sdk::Span<int64_t> rranges) {
  return rranges.size() == 1 || (!rranges.empty() && rranges[rranges.size() - 1] % kSegments == 0);
}

void emit_body(SourceWriter& w, const CppPrinter& p, const sdk::PrintedBody& pb,
               sdk::Span<int64_t> rranges, bool reduction) {
  if (reduction && rranges.size() == 1) {
    if (std::optional<RowDivision> d = find_row_division(pb, p.reduce_loop_var(0))) {
      emit_row_division_body(w, pb, *d, [&] { open_reduction_loops(w, p, rranges, 1); },
                             std::stoi(d->quotient.substr(3)));
      return;
    }
  }
  for (const std::string& l : pb.prologue) w.line(l);
  for (const std::string& l : pb.hoisted) w.line(l);
  int outer = w.depth();
  if (reduction) open_reduction_loops(w, p, rranges, rranges.size());
  for (const std::string& l : pb.lines) w.line(l);
  while (w.depth() > outer) w.close();
  for (const std::string& l : pb.epilogue) w.line(l);
}

void emit_stream_loop(SourceWriter& w, const std::string& ix, const std::string& v,
                      const std::string& lo, const std::string& hi, bool rest_needed,
                      const std::vector<CppPrinter::StreamStore>& stores,
                      const std::function<void()>& block, const std::function<void()>& rest) {
  const std::string k = std::to_string(kSegments);
  const int depth = w.depth();
  w.open("{");
  w.line(ix + " " + v + " = " + lo + ";");
  if (!stores.empty() && !stores[0].aligned_rows) {
    w.open("for (; " + v + " < " + hi + " && ((unsigned long long)(" + stores[0].address +
           ") & 63) != 0; ++" + v + ") {  // to a 64-byte boundary: normal stores");
    rest();
    w.close();
    rest_needed = true;
  }
  w.open("for (; " + v + " <= " + hi + " - " + k + "; " + v + " += " + k + ") {");
  for (const CppPrinter::StreamStore& st : stores) w.line("float " + st.array + "[" + k + "];");
  w.line("#pragma clang loop unroll(disable) vectorize(enable) vectorize_width(" + k + ")");
  w.open(segment_loop(ix, kSegments));
  block();
  w.close();
  for (const CppPrinter::StreamStore& st : stores)
    w.line("stax_stream16(" + st.address + ", " + st.array + ");");
  w.close();
  if (rest_needed) {
    w.open("for (; " + v + " < " + hi + "; ++" + v + ") {  // the rest: normal stores");
    rest();
  }
  while (w.depth() > depth) w.close();
}

void emit_segmented_body(SourceWriter& w, const CppPrinter& p, const sdk::PrintedBody& pb,
                         sdk::Span<int64_t> rranges, const sdk::PrintedBody* before,
                         bool no_stores) {
  const std::string ix = p.index_type();
  const std::string k = std::to_string(kSegments);
  std::vector<Declaration> accs;
  for (const std::string& l : pb.prologue) {
    accs.push_back(split_declaration(l));
    w.line(accs.back().declarator + "[" + k + "];");
  }
  auto init = [&] {
    w.open(segment_loop(ix, kSegments));
    for (const Declaration& a : accs) w.line(a.name + "[stax_seg] = " + a.init + ";");
    w.close();
  };
  init();
  for (const std::string& l : pb.hoisted) w.line(l);
  if (before)
    for (const std::string& l : before->hoisted) w.line(l);
  // The fast max / min form (fast_min_max), where it applies.
  const std::string flags = "stax_nan_" + (accs.empty() ? std::string() : accs[0].name);
  std::optional<std::vector<std::string>> fast_lines;
  if (!before && no_stores && vector_segments(rranges))
    fast_lines = fast_min_max_lines(pb, accs, flags);
  auto exact = [&] {
    if (before)
      for (const std::string& l : before->lines) w.line(l);
    for (const std::string& l : pb.lines) w.line(subscript_accumulators(l, "[stax_seg]"));
  };
  const int outer = w.depth();
  if (fast_lines) {
    w.line(std::string(p.kernel().index_bits() == 32 ? "unsigned" : "unsigned long long") + " " +
           flags + "[" + k + "];");
    w.open(segment_loop(ix, kSegments));
    w.line(flags + "[stax_seg] = 0;");
    w.close();
    emit_vector_segment_pass(w, p, rranges, [&] {
      for (const std::string& l : *fast_lines) w.line(l);
    });
    // A NaN was seen: the exact accumulation again, from the identities.
    w.line("int " + flags + "_any = 0;");
    w.open(segment_loop(ix, kSegments));
    w.line(flags + "_any |= " + flags + "[stax_seg];");
    w.close();
    w.open("if (" + flags + "_any) {  // a NaN: the exact loop again (the first NaN wins)");
    init();
    emit_vector_segment_pass(w, p, rranges, exact);
  } else if (vector_segments(rranges)) {
    emit_vector_segment_pass(w, p, rranges, exact);
  } else {
    w.open("{");  // the scope of the counter
    w.line(ix + " stax_seg = 0;");
    open_reduction_loops(w, p, rranges, rranges.size());
    exact();
    w.line("stax_seg = stax_seg == " + std::to_string(kSegments - 1) + " ? 0 : stax_seg + 1;");
  }
  while (w.depth() > outer) w.close();
  emit_segment_tree(w, p, accs, "", 0);
  for (const std::string& l : pb.epilogue) w.line(subscript_accumulators(l, "[0]"));
}

void emit_wide_body(SourceWriter& w, const CppPrinter& p, const sdk::PrintedBody& pb,
                    sdk::Span<int64_t> rranges, bool reduction, int64_t lanes, bool segmented,
                    bool row_chains) {
  const std::string ix = p.index_type();
  if (row_chains && pb.prologue.empty()) {  // nothing accumulates: row by row
    w.open(lane_loop(ix, lanes));
    emit_body(w, p, pb, rranges, reduction);
    w.close();
    return;
  }
  const std::string n = "[" + std::to_string(lanes) + "]";
  const std::string seg = segmented ? "[stax_seg]" : "";
  std::vector<Declaration> accs;
  for (const std::string& l : pb.prologue) {
    accs.push_back(split_declaration(l));
    w.line(accs.back().declarator + (segmented ? "[" + std::to_string(kSegments) + "]" : "") + n +
           ";");
  }
  if (!accs.empty()) {
    if (segmented) w.open(segment_loop(ix, kSegments));
    w.open(lane_loop(ix, lanes));
    for (const Declaration& a : accs) w.line(a.name + seg + "[stax_lane] = " + a.init + ";");
    w.close();
    if (segmented) w.close();
  }
  int outer = w.depth();
  if (segmented) w.open("{");  // the scope of the counter
  if (segmented) w.line(ix + " stax_seg = 0;");
  if (reduction) open_reduction_loops(w, p, rranges, rranges.size());
  if (row_chains) w.line("#pragma clang loop unroll(full) vectorize(disable)");
  w.open(lane_loop(ix, lanes));
  for (const std::string& l : pb.hoisted) w.line(l);  // per lane: they read i<lane>
  for (const std::string& l : pb.lines) w.line(subscript_accumulators(l, seg + "[stax_lane]"));
  if (row_chains) {
    // An empty asm per accumulator (no instruction): the SLP vectoriser would otherwise pack the
    // rows' chains into one vector fed by gathers, several times slower than independent chains.
    for (const Declaration& a : accs) {
      std::string type = a.declarator.substr(0, a.declarator.size() - a.name.size() - 1);
      const char* where = type == "float" || type == "double" ? "+x" : "+r";
      w.line("__asm__(\"\" : \"" + std::string(where) + "\"(" + a.name + "[stax_lane]));");
    }
  }
  w.close();
  if (segmented)
    w.line("stax_seg = stax_seg == " + std::to_string(kSegments - 1) + " ? 0 : stax_seg + 1;");
  while (w.depth() > outer) w.close();
  if (segmented) emit_segment_tree(w, p, accs, "[stax_lane]", lanes);
  if (!pb.epilogue.empty()) {
    w.open(lane_loop(ix, lanes));
    for (const std::string& l : pb.epilogue)
      w.line(subscript_accumulators(l, (segmented ? "[0]" : "") + std::string("[stax_lane]")));
    w.close();
  }
}

}  // namespace stax::cpu
