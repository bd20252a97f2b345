// The kernel description of the seed's Example 1.1 (Listing 6.2), built by hand with the SDK's
// KernelBuilder, in the listing's op order. Shared by the SDK and plugin-loader tests.
#pragma once

#include "stax/sdk/kernel_builder.hpp"

namespace stax::sdk::test {

// primals_1, primals_2: 64 x 128; buf2[i0] = sum_r relu(p1 + p2) * 2
struct Example11 {
  KernelBuilder kb{"kernel0"};
  const StaxKernelDesc* desc = nullptr;
  Example11() {
    int p1 = kb.add_buffer("primals_1", DType::Float32, {64, 128}, BufferRole::Input);
    int p2 = kb.add_buffer("primals_2", DType::Float32, {64, 128}, BufferRole::Input);
    int out = kb.add_buffer("buf2", DType::Float32, {64}, BufferRole::Output);
    kb.set_ranges({64}, {128});
    BodyBuilder& b = kb.add_body("buf2", true);
    int t0 = b.load(p1, b.linear({{128, b.i(0)}, {1, b.r(0)}}));
    int t1 = b.load(p2, b.linear({{128, b.i(0)}, {1, b.r(0)}}));
    int t2 = b.binary(STAX_OP_add, t0, t1);
    int t3 = b.unary(STAX_OP_relu, t2);
    int t4 = b.constant(2, DType::Float32);
    int t5 = b.binary(STAX_OP_mul, t3, t4);
    int t6 = b.reduction(ReductionType::Sum, DType::Float32, t5);
    b.store_reduction(out, b.i(0), t6);
    desc = kb.desc();
  }
};

}  // namespace stax::sdk::test
