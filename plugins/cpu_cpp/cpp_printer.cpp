// The scalar C++ printer's kernel function (cpp_printer.h): the layout of a kernel (wide lanes,
// row chains and row tiles, the segmented order per body, the vector printer's plan, streaming
// stores), the body function with its iteration loops and the ABI entry point. The statements of
// a body come from CppPrinter (cpp_op_printer.h), the loops around one body from body_loops.h,
// what the layout asks of the bodies from body_queries.h.
#include "plugins/cpu_cpp/cpp_printer.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "plugins/cpu_cpp/body_loops.h"
#include "plugins/cpu_cpp/body_queries.h"
#include "plugins/cpu_cpp/cpp_op_printer.h"
#include "plugins/cpu_cpp/row_division.h"
#include "plugins/cpu_cpp/streaming_store.h"
#include "plugins/cpu_cpp/vector_printer.h"
#include "stax/sdk/source_writer.hpp"

namespace stax::cpu {

namespace {

using sdk::SourceWriter;

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

std::string print_kernel_function(const sdk::Kernel& k, const PrintOptions& options) {
  return FunctionPrinter(k, options).print();
}

std::string print_kernel_source(const sdk::Kernel& kernel, const PrintOptions& options) {
  return kernel_prelude() + kKernelMarker + "\n" + print_kernel_function(kernel, options);
}

}  // namespace stax::cpu
