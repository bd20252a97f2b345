#include "plugins/cpu_cpp/cpp_printer.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <map>
#include <regex>
#include <vector>

#include "plugins/cpu_cpp/body_queries.h"
#include "plugins/cpu_cpp/embedded_text.h"
#include "plugins/cpu_cpp/row_division.h"
#include "plugins/cpu_cpp/streaming_store.h"
#include "plugins/cpu_cpp/vector_printer.h"
#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/reduction_order.hpp"
#include "stax/sdk/source_writer.hpp"

namespace stax::cpu {

namespace {

using sdk::DType;

// What follows scalar_ops.hpp, half_bits.hpp and scalar_ops_f16.hpp (the 16-bit float storage
// types and their conversions) in the prelude: the bounds-check macro of indirect indexing.
constexpr const char kPreludeTail[] = R"(

// A failed check: reported to the host (cpu_backend.cpp's KernelFault has this layout) and the
// kernel stops. An indirect index out of bounds reports the index as loaded and the size.
struct stax_fault {
  const char* message;
  long long index;
  long long size;
  int has_index;
};
struct stax_index_fault {
  long long index, size;
};
static inline void stax_fail(stax_fault* f, const char* message) { f->message = message; }
static inline void stax_fail(stax_fault* f, stax_index_fault i) {
  f->message = "index out of bounds";
  f->index = i.index;
  f->size = i.size;
  f->has_index = 1;
}
#define STAX_CHECK(cond, fault)     \
  do {                              \
    if (!(cond)) {                  \
      stax_fail(stax_error, fault); \
      return;                       \
    }                               \
  } while (0)
)";

sdk::CStyleTables cpp_tables() {
  sdk::CStyleTables t;
  t.storage_types[static_cast<int>(DType::Float16)] = "stax_half";
  t.storage_types[static_cast<int>(DType::BFloat16)] = "stax_bf16";
  t.pointer_qualifier = "__restrict";
  t.hoist_invariants = true;
  return t;
}

// `for (<type> var = begin; var < end; ++var) {`
std::string loop(const std::string& type, const std::string& var, const std::string& begin,
                 const std::string& end) {
  return "for (" + type + " " + var + " = " + begin + "; " + var + " < " + end + "; ++" + var +
         ") {";
}

using sdk::SourceWriter;

// Lane interleaving of reduction kernels whose loads are contiguous (or constant) along the
// innermost iteration variable L (a column reduction, a reduction over an outer dimension): up to
// kMaxWideLanes neighbouring outputs along L per block, their accumulators in an array and the
// lane loop innermost, so that Clang turns each lane loop into vector loads and vector adds. Only
// outputs are interleaved: each output keeps its own accumulation order (sequential, or segmented
// with a segment counter). Row reductions, contiguous along the reduction variable, vectorise
// through the segmented order instead (emit_segmented_body).
constexpr int64_t kMaxWideLanes = 128;
constexpr int64_t kMinWideLanes = 16;
// Row chains (issue 9, the fast strict order): a reduction kernel that is not contiguous along its
// innermost iteration variable (a row reduction) and has no segmented body (strict_order: true, or
// only argmax / argmin) runs kRowChains neighbouring rows side by side: their sequential
// accumulators are independent chains, so the adds overlap instead of waiting on one another's
// latency, and each row keeps exactly the interpreter's sequential order. The lane loop is fully
// unrolled and not vectorised (a vector over rows would need gathers); a body that does not
// accumulate (softmax's exp stored over the row) runs row by row, its own loop vectorised.
// With PrintOptions::row_tiles (AVX-512) blocks of 16 rows come first: the bodies that have a
// vector form run in 16 vector lanes, one row per lane, over 16 x 16 tiles transposed in
// registers (VectorPrinter::row_tile_body, DECISIONS 35), the others as 16 chains; the rows
// left over run in the blocks of kRowChains.
constexpr int64_t kRowChains = 8;

// Whether every load of the kernel moves by 0 or 1 element when iteration variable `dim` grows
// by one (evaluated at the origin; a non-affine index counts as not contiguous).
bool contiguous_along(const sdk::Kernel& k, int32_t dim) {
  std::vector<int64_t> zero_i(k.ranges().size(), 0), one_i = zero_i;
  one_i[static_cast<size_t>(dim)] = 1;
  std::vector<int64_t> zero_r(std::max<size_t>(k.reduction_ranges().size(), 1), 0);
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    sdk::LoopBody body = k.body(b);
    std::vector<int64_t> ind(body.num_ops(), 0);
    for (size_t i = 0; i < body.num_ops(); ++i) {
      sdk::OpNode op = body.op(i);
      if (op.opcode() != STAX_OP_LOAD && op.opcode() != STAX_OP_MASKED_LOAD) continue;
      sdk::Expr e = body.index_of(op);
      int64_t d = sdk::evaluate(e, one_i.data(), zero_r.data(), ind.data()) -
                  sdk::evaluate(e, zero_i.data(), zero_r.data(), ind.data());
      if (d != 0 && d != 1) return false;
    }
  }
  return true;
}

class CppPrinter : public sdk::CStylePrinter {
 public:
  explicit CppPrinter(const sdk::Kernel& k) : sdk::CStylePrinter(k, cpp_tables()) {}
  // Iteration variable `dim` reads as (i<dim> + offset) from now on ("" = plain).
  void set_lane(int32_t dim, std::string offset) {
    lane_dim_ = dim;
    lane_offset_ = std::move(offset);
  }
  // Reduction variable `dim` reads as (r0_<dim> + offset) from now on ("" = plain).
  void set_segment(int32_t dim, std::string offset) {
    segment_dim_ = dim;
    segment_offset_ = std::move(offset);
  }
  std::string iter_var(int32_t k) const override {
    std::string v = loop_var(k);
    return k == lane_dim_ && !lane_offset_.empty() ? "(" + v + " + " + lane_offset_ + ")" : v;
  }
  std::string reduce_var(int32_t k) const override {
    std::string v = reduce_loop_var(k);
    return k == segment_dim_ && !segment_offset_.empty() ? "(" + v + " + " + segment_offset_ + ")"
                                                         : v;
  }
  // STAX_CHECK(0 <= tmp1 && tmp1 < 5, stax_index_fault{tmp0, 5}): the host's message names the
  // loaded index and the size.
  std::string check_index(const std::string& cond, const std::string& index, const std::string&,
                          int64_t size) const override {
    return tables().check_macro + "(" + cond + ", (stax_index_fault{(long long)(" + index +
           "), " + std::to_string(size) + "LL}));";
  }
  std::string loop_var(int32_t k) const { return sdk::CStylePrinter::iter_var(k); }
  std::string reduce_loop_var(int32_t k) const { return sdk::CStylePrinter::reduce_var(k); }

  // Records each accumulator's combining op (the segmented order's tree needs it).
  std::string reduction(sdk::ReductionType type, DType dtype, std::string value) override {
    std::string acc = sdk::CStylePrinter::reduction(type, dtype, value);
    switch (type) {
      case sdk::ReductionType::Sum: combine_[acc] = STAX_OP_add; break;
      case sdk::ReductionType::Prod: combine_[acc] = STAX_OP_mul; break;
      case sdk::ReductionType::Max: combine_[acc] = STAX_OP_maximum; break;
      case sdk::ReductionType::Min: combine_[acc] = STAX_OP_minimum; break;
      case sdk::ReductionType::Any: combine_[acc] = STAX_OP_logical_or; break;
      case sdk::ReductionType::All: combine_[acc] = STAX_OP_logical_and; break;
      default: break;  // argmax / argmin: sequential only
    }
    return acc;
  }
  // `a = op(a, b);` for accumulator `acc` (a, b: its segment elements).
  std::string combine(const std::string& acc, const std::string& a, const std::string& b) const {
    return a + " = " + op_call(combine_.at(acc), {a, b}) + ";";
  }

  // Streaming stores (streaming_store.h), while a block of 16 is printed (the blocked variable
  // reads as (v + stax_seg) through set_lane / set_segment): a store into a buffer of `streamed`
  // writes element stax_seg of a block array `stax_st<n>` instead; after the block loop,
  // stax_stream16(<its address at stax_seg = 0>, stax_st<n>) stores the 16 elements. null: off.
  struct StreamStore {
    std::string array, address;
    // Every block of this store starts 64 bytes from the last (the index's constant, the buffer
    // offset and every other variable's coefficient are multiples of 16 elements): aligned
    // throughout when the buffer is. Else the printer peels elements to its 64-byte boundary.
    bool aligned_rows = false;
  };
  void set_streaming(const std::vector<bool>* streamed) {
    streamed_ = streamed;
    stream_stores_.clear();
  }
  const std::vector<StreamStore>& stream_stores() const { return stream_stores_; }
  void store(const sdk::Buffer& b, const sdk::Expr& index, std::string value) override {
    if (!streamed_ || !(*streamed_)[static_cast<size_t>(b.index())]) {
      sdk::CStylePrinter::store(b, index, value);
      return;
    }
    std::string lane = lane_offset_, segment = segment_offset_;  // the address of element 0
    lane_offset_.clear();
    segment_offset_.clear();
    std::string idx = format_index(index);
    lane_offset_ = lane;
    segment_offset_ = segment;
    if (b.offset() != 0) idx = std::to_string(b.offset()) + " + " + idx;
    StreamStore st{"stax_st" + std::to_string(stream_count_++),
                   buffer_name(b) + " + (" + idx + ")"};
    st.aligned_rows = aligned_rows(b, index);
    out().lines.push_back(st.array + "[stax_seg] = " + value + ";");
    stream_stores_.push_back(st);
  }

 private:
  // StreamStore::aligned_rows for a store at `index` (affine: streaming_store_buffers).
  bool aligned_rows(const sdk::Buffer& b, const sdk::Expr& index) const {
    sdk::Span<int64_t> ranges = kernel().ranges(), rranges = kernel().reduction_ranges();
    std::vector<int64_t> iv(ranges.size() + 1, 0), rv(rranges.size() + 1, 0);
    const int64_t at0 = sdk::evaluate(index, iv.data(), rv.data());
    if ((at0 + b.offset()) % kVectorLanes != 0) return false;
    auto coefficient_ok = [&](std::vector<int64_t>& vars, size_t k) {
      vars[k] = 1;
      const int64_t c = sdk::evaluate(index, iv.data(), rv.data()) - at0;
      vars[k] = 0;
      return c % kVectorLanes == 0;
    };
    for (size_t k = 0; k < ranges.size(); ++k)
      if (static_cast<int32_t>(k) != lane_dim_ && !coefficient_ok(iv, k)) return false;
    for (size_t k = 0; k < rranges.size(); ++k)
      if (static_cast<int32_t>(k) != segment_dim_ && !coefficient_ok(rv, k)) return false;
    return true;
  }

  const std::vector<bool>* streamed_ = nullptr;
  std::vector<StreamStore> stream_stores_;
  int stream_count_ = 0;
  int32_t lane_dim_ = -1;
  std::string lane_offset_;
  int32_t segment_dim_ = -1;
  std::string segment_offset_;
  std::map<std::string, int32_t> combine_;
};

// Whether a reduction-loop body accumulates in the segmented order: it has a reduction, and no
// argmax / argmin (a body without one, e.g. softmax's exp stored over the reduction loop, runs
// as a plain loop that Clang vectorises).
bool segmentable(const sdk::LoopBody& body) {
  if (!body.is_reduction_loop()) return false;
  bool any = false;
  for (size_t i = 0; i < body.num_ops(); ++i) {
    sdk::OpNode op = body.op(i);
    if (op.opcode() != STAX_OP_REDUCTION) continue;
    if (op.reduction_type() == sdk::ReductionType::ArgMax ||
        op.reduction_type() == sdk::ReductionType::ArgMin)
      return false;
    any = true;
  }
  return any;
}

bool is_load(const sdk::OpNode& op) {
  return op.opcode() == STAX_OP_LOAD || op.opcode() == STAX_OP_MASKED_LOAD;
}

bool stores_in_loop(const sdk::LoopBody& body) {
  for (size_t i = 0; i < body.num_ops(); ++i)
    if (body.op(i).opcode() == STAX_OP_STORE) return true;
  return false;
}

// Whether body b of k (a reduction-loop body that only stores, e.g. softmax's exp(x - max)
// written over the row) can run inside the loop of the next body, a segmented reduction (the
// sum of that row): iteration r then runs b's statements for r and then the next body's, instead
// of all of b's iterations first. Every value is computed as before and every accumulator keeps
// its order, so the bits are the same; the row is read once where it was read twice. Required:
// one reduction loop; b accumulates nothing; the next body reads what b stores only at the index
// b stores it at, an affine index that moves with the reduction variable (so each element is
// stored once, at the iteration that reads it), and stores nothing inside its loop into a buffer
// b reads or writes; neither has an indirect index (whose bounds checks would fail in another
// order).
bool fusable_into_next(const sdk::Kernel& k, size_t b, sdk::Span<int64_t> rranges) {
  if (b + 1 >= k.num_bodies() || rranges.size() != 1) return false;
  sdk::LoopBody body = k.body(b), next = k.body(b + 1);
  if (!body.is_reduction_loop() || has_indirect(body) || has_indirect(next)) return false;
  std::map<int32_t, std::string> stored;  // buffer -> its store's index
  std::vector<int32_t> touched;           // buffers b loads or stores
  std::vector<int64_t> zero_i(k.ranges().size() + 1, 0), r0 = {0}, r1 = {1};
  for (size_t i = 0; i < body.num_ops(); ++i) {
    sdk::OpNode op = body.op(i);
    if (op.opcode() == STAX_OP_REDUCTION || op.opcode() == STAX_OP_STORE_REDUCTION) return false;
    if (is_load(op)) touched.push_back(op.buffer());
    if (op.opcode() != STAX_OP_STORE) continue;
    touched.push_back(op.buffer());
    sdk::Expr e = body.index_of(op);
    if (!affine(e) || stored.count(op.buffer()) ||
        sdk::evaluate(e, zero_i.data(), r0.data(), nullptr) ==
            sdk::evaluate(e, zero_i.data(), r1.data(), nullptr))
      return false;
    stored[op.buffer()] = sdk::format_expr(e);
  }
  if (stored.empty()) return false;
  for (size_t i = 0; i < next.num_ops(); ++i) {
    sdk::OpNode op = next.op(i);
    if (is_load(op)) {
      auto it = stored.find(op.buffer());
      if (it != stored.end() && sdk::format_expr(next.index_of(op)) != it->second) return false;
    } else if (op.opcode() == STAX_OP_STORE &&
               std::find(touched.begin(), touched.end(), op.buffer()) != touched.end()) {
      return false;
    }
  }
  return true;
}

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

// A loop bound: `128LL` for 64-bit indices, `128` for 32-bit ones (`narrow`).
std::string extent(int64_t n, bool narrow) { return std::to_string(n) + (narrow ? "" : "LL"); }

std::string lane_loop(const std::string& index_type, int64_t lanes) {
  return loop(index_type, "stax_lane", "0", std::to_string(lanes));
}

std::string segment_loop(const std::string& index_type, int64_t segments) {
  return loop(index_type, "stax_seg", "0", std::to_string(segments));
}

constexpr int64_t kSegments = sdk::kReductionSegments;

void open_reduction_loops(SourceWriter& w, const CppPrinter& p, sdk::Span<int64_t> rranges,
                          size_t count) {
  for (size_t r = 0; r < count; ++r)
    w.open(loop(p.index_type(), p.reduce_loop_var(static_cast<int32_t>(r)), "0",
                extent(rranges[r], p.kernel().index_bits() == 32)));
}

// Whether the segment of the flat reduction index (its value mod kSegments) equals the innermost
// reduction variable's plus an offset that steps by kSegments: one reduction loop, or an innermost
// extent divisible by kSegments. Then the innermost loop steps by kSegments over a segment loop
// that Clang turns into vector code; otherwise a running segment counter is kept.
bool vector_segments(sdk::Span<int64_t> rranges) {
  return rranges.size() == 1 || (!rranges.empty() && rranges[rranges.size() - 1] % kSegments == 0);
}

// One body inside the iteration loops, sequential order: accumulators, the reduction loop(s), the
// statements, the stores. A store-only body that divides a row by a divisor it hoists
// (softmax's last pass) divides in fused multiply-adds where that is exact (row_division.h).
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

// The loop over `v` (declared here) from lo to hi in blocks of 16 for streaming stores
// (streaming_store.h): a block runs `block` (its statements printed with v reading as
// (v + stax_seg), each streamed store writing element stax_seg of a block array) in a segment
// loop that Clang turns into one vector operation per statement (the arrays stay in registers),
// then stores each array with stax_stream16; the elements left over run `rest` (the same
// statements printed plainly, normal stores) one at a time (`rest_needed`: false when the
// bounds are constants 16 apart). When the first streamed store's blocks are not known to be
// 64-byte aligned (StreamStore::aligned_rows: a row of 4099 floats, an offset view), elements
// run one at a time first until its address is (at most 15): peeling changes no value, since a
// streamed body accumulates nothing (streaming_store.h). Every element is computed by the same
// statements as in the plain loop: the same bits.
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

// One reduction-loop body in the segmented order: accumulators `T acc[kSegments]`; with
// vector_segments() the innermost reduction loop steps by kSegments over `stax_seg` (the body was
// printed with that variable reading as (r + stax_seg)) and a tail loop finishes it, else a running
// counter `stax_seg` follows the flat reduction index; then the tree, and the stores read segment 0.
// `before` (optional): a store-only body fused into this loop (fusable_into_next): its hoisted
// statements go before the loop, its statements before this body's in every iteration.
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

// `before` (optional): a store-only body fused into this loop (fusable_into_next): its hoisted
// statements go before the loop, its statements before this body's in every iteration.
// `no_stores`: the body stores nothing inside its loop (then its max / min accumulations may take
// the fast form of fast_min_max, the loop running again exactly when a NaN was seen).
void emit_segmented_body(SourceWriter& w, const CppPrinter& p, const sdk::PrintedBody& pb,
                         sdk::Span<int64_t> rranges, const sdk::PrintedBody* before = nullptr,
                         bool no_stores = false) {
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

// A wide-lane body: accumulators become arrays of `lanes` (`segmented`: of kSegments × `lanes`,
// the segment a running counter over the flat reduction index); the statements run in a lane loop
// inside the reduction loop(s), the stores in one after them.
void emit_wide_body(SourceWriter& w, const CppPrinter& p, const sdk::PrintedBody& pb,
                    sdk::Span<int64_t> rranges, bool reduction, int64_t lanes, bool segmented,
                    bool row_chains = false) {
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

// The wide lanes of a kernel (0: none): kernels with a reduction loop (a fused kernel may add
// pointwise bodies, e.g. a mean's division), contiguous along the innermost iteration variable
// with an extent of at least kMinWideLanes.
int64_t wide_lanes(const sdk::Kernel& k) {
  sdk::Span<int64_t> ranges = k.ranges();
  const int32_t lane_dim = static_cast<int32_t>(ranges.size()) - 1;
  bool any_reduction = false;
  for (size_t b = 0; b < k.num_bodies(); ++b)
    any_reduction = any_reduction || k.body(b).is_reduction_loop();
  if (!any_reduction || lane_dim < 0 || !contiguous_along(k, lane_dim)) return 0;
  int64_t extent = ranges[static_cast<size_t>(lane_dim)];
  int64_t lanes = kMaxWideLanes;
  while (lanes > extent && lanes > kMinWideLanes) lanes /= 2;
  return lanes > extent ? 0 : lanes;
}

// Whether the vector printer prints body b.
bool fused_vector(const VectorPlan& plan, size_t b) { return b < plan.body.size() && plan.body[b]; }

// The buffers whose stores stream (streaming_store.h): none in lane-interleaved kernels (wide
// lanes, row chains: their stores are per output).
std::vector<bool> streamed_buffers(const sdk::Kernel& k, const PrintOptions& options) {
  if (options.streaming_store_bytes <= 0 || wide_lanes(k) > 0)
    return std::vector<bool>(k.num_buffers(), false);
  return streaming_store_buffers(k, options.streaming_store_bytes);
}

bool any_streamed(const std::vector<bool>& v) {
  return std::find(v.begin(), v.end(), true) != v.end();
}

// Whether the scalar printer prints pointwise kernel k's innermost loop in blocks of 16 for its
// streaming stores (emit_stream_loop): a kernel without reduction loops and without indirect
// indices (a bounds check's return would keep the block from vectorising), not printed by the
// vector printer, with a streamed store.
bool scalar_stream_pointwise(const sdk::Kernel& k, const PrintOptions& options,
                             const std::vector<bool>& streamed) {
  if (k.ranges().empty() || !any_streamed(streamed)) return false;
  for (size_t b = 0; b < k.num_bodies(); ++b)
    if (k.body(b).is_reduction_loop() || has_indirect(k.body(b))) return false;
  return !(options.vector_printer && vector_plan(k, options.strict_order).pointwise);
}

}  // namespace

int32_t chunked_dim(const sdk::Kernel& k) {
  sdk::Span<int64_t> ranges = k.ranges();
  for (size_t d = 0; d < ranges.size(); ++d)
    if (ranges[d] > 1) return static_cast<int32_t>(d);
  return 0;
}

int64_t outer_chunk_alignment(const sdk::Kernel& k, const PrintOptions& options) {
  int64_t lanes = wide_lanes(k);
  // The vector printer's pointwise loop: chunks of whole vectors (only the last one masked).
  // And the scalar printer's blocks of streaming stores: whole blocks, 64-byte aligned when the
  // rows are.
  if (lanes == 0 && !k.ranges().empty() &&
      chunked_dim(k) == static_cast<int32_t>(k.ranges().size()) - 1 &&
      ((options.vector_printer && vector_plan(k, options.strict_order).pointwise) ||
       scalar_stream_pointwise(k, options, streamed_buffers(k, options))))
    return kVectorLanes;
  return lanes > 0 && chunked_dim(k) == static_cast<int32_t>(k.ranges().size()) - 1 ? lanes : 1;
}

const std::string& kernel_prelude() {
  static const std::string prelude = std::string("// Prelude: stax/sdk/scalar_ops.hpp\n") +
                                     embedded::kScalarOps + "\n// Prelude: half_bits.hpp\n" +
                                     embedded::kHalfBits + "\n// Prelude: scalar_ops_f16.hpp\n" +
                                     embedded::kScalarOpsF16 + kPreludeTail +
                                     kRowDivisionPrelude;
  return prelude;
}

namespace {

// How print_kernel_function lays a kernel out: wide lanes or row chains (and row tiles) for
// reductions along the iteration space, the segmented order per body, the vector printer's plan.
struct Layout {
  int64_t lanes = 0;        // wide lanes (wide_lanes()) or kRowChains; 0: neither
  int32_t lane_dim = -1;    // the innermost iteration dimension
  bool row_chains = false;  // lanes are row chains (sequential rows side by side)
  std::vector<bool> segmented;  // per body: accumulates in the segmented order
  std::vector<bool> tiled;      // per body: runs in row tiles (VectorPrinter::row_tile_body)
  bool any_tiled = false;
  VectorPlan vplan;  // the vector printer's bodies (kernels without lanes)
};

Layout plan_layout(const sdk::Kernel& k, const PrintOptions& options) {
  Layout l;
  sdk::Span<int64_t> ranges = k.ranges();
  l.lanes = wide_lanes(k);
  l.lane_dim = static_cast<int32_t>(ranges.size()) - 1;
  l.segmented.assign(k.num_bodies(), false);
  for (size_t b = 0; b < k.num_bodies(); ++b)
    l.segmented[b] = !options.strict_order && segmentable(k.body(b));
  bool any_reduction = false;
  for (size_t b = 0; b < k.num_bodies(); ++b)
    any_reduction = any_reduction || k.body(b).is_reduction_loop();
  if (l.lanes == 0 && any_reduction && l.lane_dim >= 0 && !contiguous_along(k, l.lane_dim) &&
      std::none_of(l.segmented.begin(), l.segmented.end(), [](bool b) { return b; }) &&
      ranges[static_cast<size_t>(l.lane_dim)] >= kRowChains) {
    l.lanes = kRowChains;
    l.row_chains = true;
  }
  // Row tiles (VectorPrinter::row_tile_body): the row chains' accumulating bodies that have a
  // vector form run 16 rows at a time in vector lanes, before the blocks of 8 chains.
  l.tiled.assign(k.num_bodies(), false);
  if (l.row_chains && options.row_tiles &&
      ranges[static_cast<size_t>(l.lane_dim)] >= kVectorLanes) {
    for (size_t b = 0; b < k.num_bodies(); ++b) {
      l.tiled[b] = row_tile_reason(k, b).empty();
      l.any_tiled = l.any_tiled || l.tiled[b];
    }
  }
  // The vector printer (vector_printer.h): kernels that are not lane-interleaved.
  if (options.vector_printer && l.lanes == 0) l.vplan = vector_plan(k, options.strict_order);
  return l;
}

// The kernel function of print_kernel_function: the body function (`<kernel>_body`, the buffers
// as __restrict parameters) with its loops and bodies, then the ABI entry point.
class FunctionPrinter {
 public:
  FunctionPrinter(const sdk::Kernel& k, const PrintOptions& options)
      : k_(k), options_(options), layout_(plan_layout(k, options)), p_(k),
        streamed_(streamed_buffers(k, options)) {
    if (layout_.any_tiled) tp_ = std::make_unique<VectorPrinter>(k);
    if (layout_.vplan.any()) vp_ = std::make_unique<VectorPrinter>(k, streamed_);
    stream_pointwise_ = layout_.lanes == 0 && !layout_.vplan.pointwise &&
                        scalar_stream_pointwise(k, options, streamed_);
    const bool narrow = k.index_bits() == 32;
    ix_ = p_.index_type();
    begin_ = narrow ? "(" + ix_ + ")stax_begin" : "stax_begin";
    end_ = narrow ? "(" + ix_ + ")stax_end" : "stax_end";
  }

  std::string print() {
    print_bodies();
    open_body_function();
    const Layout& l = layout_;
    if (l.vplan.pointwise)
      emit_vector_pointwise();
    else if (stream_pointwise_)
      emit_stream_pointwise();
    else if (l.lanes == 0)
      emit_scalar_bodies();
    else
      emit_lane_blocks();
    while (w_.depth() > 0) w_.close();
    streams_ = streams_ || (vp_ && vp_->streamed());
    emit_entry_point();
    std::string out;
    if (streams_) out += streaming_prelude();
    if (l.vplan.any() || l.any_tiled) out += vector_prelude();
    if (streams_) out += stream_note();
    return out + w_.take();
  }

 private:
  // Prints the bodies first (lane versions first, so that they get the low temporary numbers):
  // whether a bounds check appears decides the (void) casts of open_body_function. Segmented
  // bodies outside the wide lanes read the innermost reduction variable as (r + stax_seg) when
  // vector_segments().
  void print_bodies() {
    const Layout& l = layout_;
    sdk::Span<int64_t> rranges = k_.reduction_ranges();
    if (l.lanes > 0) {
      p_.set_lane(l.lane_dim, "stax_lane");
      for (size_t b = 0; b < k_.num_bodies(); ++b) lane_bodies_.push_back(p_.print(k_.body(b)));
      p_.set_lane(-1, "");
    }
    // Store-only bodies that run in the next body's segmented loop (fusable_into_next).
    fused_.assign(k_.num_bodies(), false);
    for (size_t b = 0; options_.fuse_bodies && b + 1 < k_.num_bodies(); ++b)
      fused_[b] = !l.segmented[b] && l.segmented[b + 1] && !fused_vector(l.vplan, b) &&
                  !fused_vector(l.vplan, b + 1) && fusable_into_next(k_, b, rranges);
    for (size_t b = 0; b < k_.num_bodies(); ++b) {
      if ((l.segmented[b] || fused_[b]) && vector_segments(rranges))
        p_.set_segment(static_cast<int32_t>(rranges.size()) - 1, "stax_seg");
      bodies_.push_back(p_.print(k_.body(b)));
      p_.set_segment(-1, "");
      for (const std::string& line : bodies_.back().lines)
        if (line.rfind(p_.tables().check_macro + "(", 0) == 0) checks_ = true;
    }
    print_stream_bodies();
  }

  // Streaming stores (streaming_store.h) in the scalar printer: the block variants (the blocked
  // variable reading as (v + stax_seg), the streamed stores into block arrays) of a streaming
  // pointwise kernel's bodies, and of each reduction-loop body that only stores, prints as a
  // plain loop (emit_body, not row division) and stores a streamed buffer.
  void print_stream_bodies() {
    const Layout& l = layout_;
    sdk::Span<int64_t> rranges = k_.reduction_ranges();
    stream_bodies_.resize(k_.num_bodies());
    stream_stores_.resize(k_.num_bodies());
    stream_body_.assign(k_.num_bodies(), false);
    if (!any_streamed(streamed_) || l.lanes > 0) return;
    for (size_t b = 0; b < k_.num_bodies(); ++b) {
      sdk::LoopBody body = k_.body(b);
      if (stream_pointwise_) {
        p_.set_lane(static_cast<int32_t>(k_.ranges().size()) - 1, "stax_seg");
      } else {
        if (!body.is_reduction_loop() || fused_vector(l.vplan, b) || fused_[b] ||
            l.segmented[b] || rranges.empty())
          continue;
        if (rranges.size() == 1 && find_row_division(bodies_[b], p_.reduce_loop_var(0))) continue;
        p_.set_segment(static_cast<int32_t>(rranges.size()) - 1, "stax_seg");
      }
      p_.set_streaming(&streamed_);
      sdk::PrintedBody pb = p_.print(body);
      stream_stores_[b] = p_.stream_stores();
      p_.set_streaming(nullptr);
      p_.set_lane(-1, "");
      p_.set_segment(-1, "");
      if (!stream_pointwise_ && stream_stores_[b].empty()) continue;  // nothing streams here
      stream_bodies_[b] = std::move(pb);
      stream_body_[b] = true;
    }
  }

  // "// streaming stores (above N bytes): out_ptr2 (M bytes), ...": what the dump shows.
  std::string stream_note() const {
    std::string note = "// streaming stores (non-temporal where 64-byte aligned; buffers above " +
                       std::to_string(options_.streaming_store_bytes) + " bytes):";
    for (size_t i = 0; i < k_.num_buffers(); ++i)
      if (streamed_[i])
        note += " " + p_.buffer_name(k_.buffer(i)) + " (" +
                std::to_string(k_.buffer(i).numel() * 4) + " bytes)";
    return note + "\n";
  }

  // The body function's head and the iteration loops around the bodies. The body takes the
  // buffers as __restrict parameters: Clang ignores restrict on a local variable, and without it
  // every vectorised loop that stores was versioned on a run-time overlap check, whose scalar
  // fallback also kept a segmented reduction's accumulators in memory (a store and a reload per
  // vector, and a stalled narrow reload at the end of each row: softmax 8% slower; DECISIONS
  // item 37). No two buffers of a kernel overlap (memory_plan.h: in place, kernel temporaries),
  // so the promise holds. The ABI entry point casts and forwards; the body is inlined into it.
  void open_body_function() {
    std::vector<std::string> params;
    for (size_t i = 0; i < k_.num_buffers(); ++i) {
      sdk::Buffer b = k_.buffer(i);
      std::string type = (b.is_input() ? "const " : "") + p_.storage_type(b.dtype()) + "*";
      params.push_back(type + " __restrict " + p_.buffer_name(b));
      args_.push_back("(" + type + ")stax_buffers[" + std::to_string(i) + "]");
    }
    params.push_back("long long stax_begin, long long stax_end, stax_fault* stax_error");
    args_.push_back("stax_begin, stax_end, stax_error");
    w_.line("static inline __attribute__((always_inline)) void " + k_.name() + "_body(");
    for (size_t i = 0; i < params.size(); ++i)
      w_.line("    " + params[i] + (i + 1 < params.size() ? "," : ") {"));
    w_.indent();
    sdk::Span<int64_t> ranges = k_.ranges();
    if (ranges.empty()) w_.line("(void)stax_begin;");
    if (ranges.empty()) w_.line("(void)stax_end;");
    if (!checks_) w_.line("(void)stax_error;");
    // 32-bit indices (the host proved they fit): loop variables are int; the chunk bounds stay
    // long long at the ABI and are narrowed here.
    const Layout& l = layout_;
    const size_t loops = l.lanes == 0 && !l.vplan.pointwise && !stream_pointwise_
                             ? ranges.size()
                             : ranges.size() - 1;
    const size_t chunk = static_cast<size_t>(chunked_dim(k_));  // [stax_begin, stax_end)
    for (size_t d = 0; d < loops; ++d) {
      std::string v = p_.loop_var(static_cast<int32_t>(d));
      if (d == chunk)
        w_.open(loop(ix_, v, begin_, end_));
      else
        w_.open(loop(ix_, v, "0", extent(ranges[d], k_.index_bits() == 32)));
    }
  }

  // Every body at one iteration point, in order (scalar, vector-printed, segmented, or fused
  // into the next body's segmented loop).
  void emit_scalar_bodies() {
    sdk::Span<int64_t> rranges = k_.reduction_ranges();
    for (size_t b = 0; b < k_.num_bodies(); ++b) {
      sdk::LoopBody body = k_.body(b);
      if (!body.name().empty()) w_.line("// " + body.name());
      if (fused_vector(layout_.vplan, b)) {
        for (const std::string& l : vp_->reduction_body(b)) w_.line(l);
      } else if (fused_[b]) {
        w_.line("// (runs in the next body's loop)");
      } else if (stream_body_[b]) {
        emit_stream_body(b);
      } else if (layout_.segmented[b]) {
        emit_segmented_body(w_, p_, bodies_[b], rranges,
                            b > 0 && fused_[b - 1] ? &bodies_[b - 1] : nullptr,
                            !stores_in_loop(body));
      } else {
        emit_body(w_, p_, bodies_[b], rranges, body.is_reduction_loop());
      }
    }
  }

  // A reduction-loop body that only stores, its innermost reduction loop in blocks of 16 with
  // streaming stores (emit_stream_loop): the hoisted statements of both printings, the outer
  // reduction loops, the blocked loop, the rest one element at a time.
  void emit_stream_body(size_t b) {
    sdk::Span<int64_t> rranges = k_.reduction_ranges();
    const sdk::PrintedBody &blocked = stream_bodies_[b], &plain = bodies_[b];
    for (const std::string& l : blocked.prologue) w_.line(l);
    for (const std::string& l : blocked.hoisted) w_.line(l);
    for (const std::string& l : plain.hoisted) w_.line(l);
    const int outer = w_.depth();
    const size_t last = rranges.size() - 1;
    open_reduction_loops(w_, p_, rranges, last);
    emit_stream_loop(
        w_, ix_, p_.reduce_loop_var(static_cast<int32_t>(last)), "0",
        extent(rranges[last], k_.index_bits() == 32), rranges[last] % kSegments != 0,
        stream_stores_[b],
        [&] { for (const std::string& l : blocked.lines) w_.line(l); },
        [&] { for (const std::string& l : plain.lines) w_.line(l); });
    while (w_.depth() > outer) w_.close();
    for (const std::string& l : blocked.epilogue) w_.line(l);
    streams_ = true;
  }

  // A pointwise kernel's innermost loop in blocks of 16 with streaming stores (emit_stream_loop),
  // all bodies in it.
  void emit_stream_pointwise() {
    sdk::Span<int64_t> ranges = k_.ranges();
    const size_t d = ranges.size() - 1;
    const bool chunked = d == static_cast<size_t>(chunked_dim(k_));
    std::vector<CppPrinter::StreamStore> stores;
    for (const auto& s : stream_stores_) stores.insert(stores.end(), s.begin(), s.end());
    auto all = [&](const std::vector<sdk::PrintedBody>& bodies) {
      for (size_t b = 0; b < k_.num_bodies(); ++b) {
        if (!k_.body(b).name().empty()) w_.line("// " + k_.body(b).name());
        const sdk::PrintedBody& pb = bodies[b];
        for (const auto* part : {&pb.prologue, &pb.hoisted, &pb.lines, &pb.epilogue})
          for (const std::string& l : *part) w_.line(l);
      }
    };
    emit_stream_loop(w_, ix_, p_.loop_var(static_cast<int32_t>(d)), chunked ? begin_ : "0",
                     chunked ? end_ : extent(ranges[d], k_.index_bits() == 32),
                     chunked || ranges[d] % kSegments != 0, stores,
                     [&] { all(stream_bodies_); }, [&] { all(bodies_); });
    streams_ = !stores.empty();
  }

  // The vector printer's pointwise loop over the innermost iteration dimension.
  void emit_vector_pointwise() {
    sdk::Span<int64_t> ranges = k_.ranges();
    const size_t d = ranges.size() - 1;
    const bool chunked = d == static_cast<size_t>(chunked_dim(k_));
    const std::vector<std::string> lines =
        chunked ? vp_->pointwise_loop(begin_, end_, true)
                : vp_->pointwise_loop("0", extent(ranges[d], k_.index_bits() == 32),
                                      ranges[d] % kVectorLanes != 0);
    for (const std::string& l : lines) w_.line(l);
  }

  // The innermost iteration loop in blocks of lanes (wide lanes or row chains; row tiles of 16
  // first when any body has them), then the rest one point at a time.
  void emit_lane_blocks() {
    const Layout& l = layout_;
    sdk::Span<int64_t> rranges = k_.reduction_ranges();
    const std::string v = p_.loop_var(l.lane_dim);
    // the innermost loop is also the one split across threads
    const bool chunked = l.lane_dim == chunked_dim(k_);
    const std::string lo = chunked ? begin_ : "0";
    const std::string hi =
        chunked ? end_ : extent(k_.ranges()[static_cast<size_t>(l.lane_dim)],
                                k_.index_bits() == 32);
    const std::string n = std::to_string(l.lanes);
    const std::string what = "// " + n +
                             (l.row_chains ? " rows' sequential chains side by side along "
                                           : " outputs along ") +
                             v + " at a time";
    if (!l.any_tiled) w_.line(what);
    w_.line(ix_ + " " + v + " = " + lo + ";");
    if (l.any_tiled) {
      emit_row_tiles(v, hi);
      w_.line(what);
    }
    // `v <= hi - n`, not `v + n <= hi`: no overflow near the top of the index type
    w_.open("for (; " + v + " <= " + hi + " - " + n + "; " + v + " += " + n + ") {");
    for (size_t b = 0; b < k_.num_bodies(); ++b) {
      if (!k_.body(b).name().empty()) w_.line("// " + k_.body(b).name());
      emit_wide_body(w_, p_, lane_bodies_[b], rranges, k_.body(b).is_reduction_loop(), l.lanes,
                     l.segmented[b], l.row_chains);
    }
    w_.close();
    w_.open("for (; " + v + " < " + hi + "; ++" + v + ") {");
    emit_scalar_bodies();
    w_.close();
  }

  // Blocks of 16 rows in vector lanes (row tiles) over [v, hi).
  void emit_row_tiles(const std::string& v, const std::string& hi) {
    const std::string t = std::to_string(kVectorLanes);
    w_.line("// 16 rows at a time in vector lanes (row tiles)");
    w_.open("for (; " + v + " <= " + hi + " - " + t + "; " + v + " += " + t + ") {");
    for (size_t b = 0; b < k_.num_bodies(); ++b) {
      if (!k_.body(b).name().empty()) w_.line("// " + k_.body(b).name());
      if (layout_.tiled[b]) {
        for (const std::string& l : tp_->row_tile_body(b)) w_.line(l);
      } else {
        emit_wide_body(w_, p_, lane_bodies_[b], k_.reduction_ranges(),
                       k_.body(b).is_reduction_loop(), kVectorLanes, false, true);
      }
    }
    w_.close();
  }

  // extern "C" void <kernel>(void* const* stax_buffers, ...) { <kernel>_body(...); }
  void emit_entry_point() {
    w_.open("extern \"C\" void " + k_.name() +
            "(void* const* stax_buffers, long long stax_begin, long long stax_end, "
            "stax_fault* stax_error) {");
    std::string call = k_.name() + "_body(";
    for (size_t i = 0; i < args_.size(); ++i) call += (i ? ", " : "") + args_[i];
    w_.line(call + ");");
    // Streaming stores are weakly ordered: this thread's are made globally visible before the
    // chunk returns to whoever signals its completion (streaming_store.h).
    if (streams_) w_.line("stax_stream_fence();");
    w_.close();
  }

  const sdk::Kernel& k_;
  const PrintOptions& options_;
  const Layout layout_;
  CppPrinter p_;
  std::unique_ptr<VectorPrinter> tp_;  // row tiles
  std::unique_ptr<VectorPrinter> vp_;  // the vector printer's bodies
  std::string ix_, begin_, end_;       // index type, the chunk's bounds in it
  std::vector<sdk::PrintedBody> bodies_, lane_bodies_;
  std::vector<bool> fused_;  // per body: runs in the next body's segmented loop
  std::vector<bool> streamed_;  // per buffer: its store streams (streamed_buffers)
  bool stream_pointwise_ = false;  // the scalar pointwise loop in blocks of streaming stores
  std::vector<sdk::PrintedBody> stream_bodies_;  // per body: its block variant (or empty)
  std::vector<std::vector<CppPrinter::StreamStore>> stream_stores_;  // per body
  std::vector<bool> stream_body_;  // per body: printed by emit_stream_body
  bool streams_ = false;           // a streaming store was printed
  bool checks_ = false;      // some body has a bounds check
  std::vector<std::string> args_;  // the entry point's arguments to the body function
  SourceWriter w_;
};

}  // namespace

std::string print_kernel_function(const sdk::Kernel& k, const PrintOptions& options) {
  return FunctionPrinter(k, options).print();
}

std::string print_kernel_source(const sdk::Kernel& kernel, const PrintOptions& options) {
  return kernel_prelude() + kKernelMarker + "\n" + print_kernel_function(kernel, options);
}

}  // namespace stax::cpu
