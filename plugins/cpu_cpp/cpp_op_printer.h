// CppPrinter: the statements of one loop body in cpu_cpp's C++ (an sdk::CStylePrinter with the
// prelude's storage types, __restrict buffers and STAX_CHECK bounds checks; the prelude is
// kernel_prelude(), cpp_op_printer.cpp). Internal to the scalar printer (cpp_printer.cpp,
// body_loops.cpp): what cpp_printer.h shows is the kernel function it frames these bodies in.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "stax/sdk/cstyle_printer.hpp"

namespace stax::cpu {

class CppPrinter : public sdk::CStylePrinter {
 public:
  explicit CppPrinter(const sdk::Kernel& k);
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
                          int64_t size) const override;
  std::string loop_var(int32_t k) const { return sdk::CStylePrinter::iter_var(k); }
  std::string reduce_loop_var(int32_t k) const { return sdk::CStylePrinter::reduce_var(k); }

  // Records each accumulator's combining op (the segmented order's tree needs it).
  std::string reduction(sdk::ReductionType type, sdk::DType dtype, std::string value) override;
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
  void store(const sdk::Buffer& b, const sdk::Expr& index, std::string value) override;

 private:
  // StreamStore::aligned_rows for a store at `index` (affine: streaming_store_buffers).
  bool aligned_rows(const sdk::Buffer& b, const sdk::Expr& index) const;

  const std::vector<bool>* streamed_ = nullptr;
  std::vector<StreamStore> stream_stores_;
  int stream_count_ = 0;
  int32_t lane_dim_ = -1;
  std::string lane_offset_;
  int32_t segment_dim_ = -1;
  std::string segment_offset_;
  std::map<std::string, int32_t> combine_;
};

}  // namespace stax::cpu
