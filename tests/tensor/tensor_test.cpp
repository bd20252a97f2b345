// Tests of core/tensor/tensor.h (and the Philox generator of core/tensor/random.h).
#include "core/tensor/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/tensor/random.h"

namespace stax {
namespace {

const std::vector<DType> kAllDTypes = {DType::Float32, DType::Float64, DType::Float16,
                                       DType::BFloat16, DType::Int64,   DType::Int32,
                                       DType::Int8,    DType::UInt8,   DType::Bool};

template <class F>
void expect_error(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected a stax::Error containing \"" << fragment << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// ---- factories and metadata ---------------------------------------------------------------------

TEST(TensorTest, EmptyIsContiguousAlignedAndZeroed) {
  for (DType dt : kAllDTypes) {
    Tensor t = Tensor::empty({2, 3, 4}, dt);
    EXPECT_TRUE(t.defined());
    EXPECT_EQ(t.sizes(), (Shape{2, 3, 4}));
    EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
    EXPECT_EQ(t.numel(), 24);
    EXPECT_EQ(t.dim(), 3);
    EXPECT_EQ(t.nbytes(), 24 * static_cast<int64_t>(dtype_size(dt)));
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_EQ(t.storage_offset(), 0);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
    EXPECT_EQ(t.meta(), TensorMeta::contiguous({2, 3, 4}, dt));
    for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.get_double(i), 0.0);
  }
  EXPECT_FALSE(Tensor().defined());
  EXPECT_EQ(Tensor::empty({4, 5}).size(-1), 5);
  EXPECT_EQ(Tensor::empty({4, 5}).stride(0), 5);
  expect_error([] { Tensor::empty({2, -1}); }, "negative size");
}

TEST(TensorTest, FullScalarAndArange) {
  Tensor f = Tensor::full({2, 2}, 2.75, DType::Float32);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(f.get_double(i), 2.75);
  Tensor fi = Tensor::full({3}, -2.75, DType::Int32);  // truncates toward zero
  EXPECT_EQ(fi.to_vector<int32_t>(), (std::vector<int32_t>{-2, -2, -2}));
  Tensor fb = Tensor::full({2}, 0.5, DType::Bool);
  EXPECT_EQ(fb.to_vector<bool>(), (std::vector<bool>{true, true}));
  Tensor s = Tensor::scalar(3.5, DType::Float64);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.sizes(), Shape{});
  EXPECT_EQ(s.item(), 3.5);
  EXPECT_EQ(s.item_as_double({}), 3.5);
  Tensor a = Tensor::arange(5, DType::Float16);
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(Tensor::ones({3}, DType::UInt8).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  expect_error([] { Tensor::zeros({3}).item(); }, "not one");
}

TEST(TensorTest, FromVectorAndFromData) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.item_as_double({1, 2}), 6.0);
  EXPECT_EQ(t.item_as_double({-1, 0}), 4.0);
  EXPECT_EQ(t.data<float>()[4], 5.0f);
  Tensor b = Tensor::from_vector<bool>({3}, {true, false, true});
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_EQ(b.item_as_int({2}), 1);
  Tensor h = Tensor::from_vector<double>({3}, {0.1, 65520.0, -2.5}, DType::Float16);
  EXPECT_EQ(h.data<Half>()[0].bits, 0x2e66);
  EXPECT_TRUE(std::isinf(h.get_double(1)));
  EXPECT_EQ(h.get_double(2), -2.5);
  int64_t raw[3] = {std::numeric_limits<int64_t>::max(), -1, 7};
  Tensor l = Tensor::from_data({3}, DType::Int64, raw);
  EXPECT_EQ(l.item_as_int({0}), std::numeric_limits<int64_t>::max());  // exact beyond 2^53
  EXPECT_EQ(l.get_int(1), -1);
  uint8_t bools[2] = {0, 7};
  Tensor bt = Tensor::from_data({2}, DType::Bool, bools);  // stored normalized to 0 / 1
  EXPECT_EQ(static_cast<int>(bt.data_ptr()[1]), 1);
  EXPECT_EQ(bt.to_vector<bool>(), (std::vector<bool>{false, true}));
  expect_error([] { Tensor::from_vector<float>({2, 2}, {1, 2, 3}); }, "3 values given");
  expect_error([&] { t.data<double>(); }, "requested float64 data from a tensor of dtype float32");
}

TEST(TensorTest, ElementAccessChecksBounds) {
  Tensor t = Tensor::zeros({2, 3}, DType::Int64);
  t.set_from_int({1, 1}, (int64_t{1} << 60) + 1);
  EXPECT_EQ(t.item_as_int({1, 1}), (int64_t{1} << 60) + 1);
  t.set_from_double({0, 2}, -7.9);
  EXPECT_EQ(t.item_as_int({0, 2}), -7);
  t.set_double(0, 3.0);
  EXPECT_EQ(t.get_int(0), 3);
  t.set_int(5, 42);
  EXPECT_EQ(t.item_as_int({1, 2}), 42);
  expect_error([&] { t.item_as_double({2, 0}); },
               "index 2 is out of bounds for dimension 0 with size 2");
  expect_error([&] { t.item_as_double({0}); }, "1 indices given for a tensor of rank 2");
  expect_error([&] { t.get_double(6); }, "linear index 6 is out of bounds for 6 elements");
}

// ---- views --------------------------------------------------------------------------------------

TEST(TensorTest, AsStridedSharesStorage) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor tt = t.as_strided({3, 2}, {1, 3}, 0);  // the transpose
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_EQ(tt.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  std::vector<double> linear;
  for (int64_t i = 0; i < tt.numel(); ++i) linear.push_back(tt.get_double(i));
  EXPECT_EQ(linear, (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(tt.item_as_double({2, 1}), 5.0);
  tt.set_from_double({0, 1}, 30.0);  // writes through to t(1, 0)
  EXPECT_EQ(t.item_as_double({1, 0}), 30.0);
  EXPECT_EQ(tt.storage(), t.storage());

  Tensor row = t.as_strided({3}, {1}, 3);  // second row, offset view
  EXPECT_EQ(row.storage_offset(), 3);
  EXPECT_EQ(row.data_ptr(), t.data_ptr() + 3 * 4);
  EXPECT_EQ(row.to_vector<float>(), (std::vector<float>{30, 4, 5}));
  Tensor bcast = t.as_strided({2, 3}, {0, 1}, 0);  // broadcast of row 0
  EXPECT_EQ(bcast.to_vector<float>(), (std::vector<float>{0, 1, 2, 0, 1, 2}));

  Tensor c = tt.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.storage(), t.storage());
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{0, 30, 1, 4, 2, 5}));
  EXPECT_EQ(t.contiguous().storage(), t.storage());  // no copy when already contiguous
  Tensor k = t.clone();
  k.set_double(0, 99);
  EXPECT_EQ(t.get_double(0), 0.0);

  expect_error([&] { t.as_strided({2, 3}, {3, 1}, 1); }, "reaches element 6 of a storage of 6");
  expect_error([&] { t.as_strided({2}, {-1}, 1); }, "negative stride");
  expect_error([&] { t.as_strided({2}, {1, 1}, 0); }, "differ in rank");
}

TEST(TensorTest, CopyFromAndFillOnViews) {
  Tensor t = Tensor::zeros({3, 4}, DType::Float64);
  Tensor col = t.as_strided({3}, {4}, 1);  // column 1
  col.copy_from(Tensor::from_vector<int32_t>({3}, {7, 8, 9}));
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{0, 7, 0, 0, 0, 8, 0, 0, 0, 9, 0, 0}));
  Tensor last = t.as_strided({3}, {4}, 3);
  last.fill(-1.5);
  EXPECT_EQ(t.item_as_double({2, 3}), -1.5);
  EXPECT_EQ(t.item_as_double({2, 2}), 0.0);
  // Overlapping views of one storage: copies go through a temporary.
  Tensor v = Tensor::arange(6, DType::Int64);
  v.as_strided({5}, {1}, 1).copy_from(v.as_strided({5}, {1}, 0));
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 2, 3, 4}));
  expect_error([&] { col.copy_from(Tensor::zeros({4})); }, "cannot copy a tensor of shape (4,)");
}

TEST(TensorTest, EmptyStridedAndZeroSizedTensors) {
  Tensor t = Tensor::empty_strided({2, 3}, {1, 2}, DType::Int32);  // column-major
  EXPECT_EQ(t.storage()->nbytes(), 24u);
  EXPECT_FALSE(t.is_contiguous());
  Tensor z = Tensor::zeros({0, 3});
  EXPECT_EQ(z.numel(), 0);
  EXPECT_EQ(z.to_string(), "[]");
  EXPECT_EQ(z.summary(), "float32(0, 3) (empty)");
  EXPECT_TRUE(z.clone().equal(z));
  EXPECT_EQ(Tensor::zeros({2, 0}).to_string(), "[[], []]");
}

// ---- conversions --------------------------------------------------------------------------------

TEST(TensorTest, ToFollowsPyTorchConversionRules) {
  Tensor f = Tensor::from_vector<double>({6}, {-2.7, -0.5, 0.5, 2.7, 300.0, -1.0});
  EXPECT_EQ(f.to(DType::Int64).to_vector<int64_t>(),
            (std::vector<int64_t>{-2, 0, 0, 2, 300, -1}));
  EXPECT_EQ(f.to(DType::UInt8).to_vector<int64_t>(),
            (std::vector<int64_t>{254, 0, 0, 2, 44, 255}));  // wraps modulo 256
  EXPECT_EQ(f.to(DType::Int8).to_vector<int64_t>(), (std::vector<int64_t>{-2, 0, 0, 2, 44, -1}));

  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor g = Tensor::from_vector<double>({5}, {0.0, -0.0, 0.1, nan, -3.0});
  EXPECT_EQ(g.to(DType::Bool).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1, 1}));
  Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  EXPECT_EQ(b.to(DType::Float32).to_vector<float>(), (std::vector<float>{1, 0}));
  EXPECT_EQ(b.to(DType::Int8).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));

  Tensor r = Tensor::from_vector<float>({4}, {1.0f + std::ldexp(1.0f, -11), 65520.0f, 0.1f,
                                              1.0f + 3 * std::ldexp(1.0f, -8)});
  Tensor h = r.to(DType::Float16);
  EXPECT_EQ(h.data<Half>()[0].bits, 0x3c00);  // ties to even
  EXPECT_EQ(h.data<Half>()[1].bits, 0x7c00);
  EXPECT_EQ(h.data<Half>()[2].bits, 0x2e66);
  EXPECT_EQ(r.to(DType::BFloat16).data<BFloat16>()[3].bits, 0x3f82);

  Tensor big = Tensor::from_vector<int64_t>({2}, {(1 << 24) + 1, 300});
  EXPECT_EQ(big.to(DType::Float32).data<float>()[0], 16777216.0f);  // RNE
  EXPECT_EQ(big.to(DType::Int8).to_vector<int64_t>()[1], 44);

  Tensor same = f.to(DType::Float64);
  EXPECT_NE(same.storage(), f.storage());
  EXPECT_TRUE(same.equal(f));
  // Converting a strided view reads it in logical order.
  Tensor m = Tensor::from_vector<float>({2, 2}, {1.5f, 2.5f, 3.5f, 4.5f});
  EXPECT_EQ(m.as_strided({2, 2}, {1, 2}, 0).to(DType::Int32).to_vector<int32_t>(),
            (std::vector<int32_t>{1, 3, 2, 4}));
}

TEST(TensorTest, ConvertValueEdgeCases) {
  EXPECT_EQ(convert_value<int32_t>(std::numeric_limits<double>::quiet_NaN()), 0);  // INT64_MIN
  EXPECT_EQ(convert_value<int64_t>(std::numeric_limits<double>::infinity()),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(convert_value<int64_t>(-9.5e18), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(convert_value<int64_t>(1e18), 1000000000000000000LL);
  EXPECT_EQ(convert_value<uint8_t>(Half(-1.0f)), 255);
  EXPECT_TRUE(convert_value<bool>(Half::from_bits(0x7e00)));  // NaN -> true
  EXPECT_FALSE(convert_value<bool>(BFloat16::from_bits(0x8000)));  // -0 -> false
  EXPECT_EQ(convert_value<float>(int8_t{-128}), -128.0f);
}

// ---- comparison and printing --------------------------------------------------------------------

TEST(TensorTest, EqualIsBitwise) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = Tensor::from_vector<float>({3}, {1.0f, nan, 0.0f});
  Tensor b = Tensor::from_vector<float>({3}, {1.0f, nan, 0.0f});
  EXPECT_TRUE(a.equal(b));  // NaNs with equal bits
  Tensor c = Tensor::from_vector<float>({3}, {1.0f, nan, -0.0f});
  EXPECT_FALSE(a.equal(c));  // -0 differs from +0 bitwise
  EXPECT_FALSE(a.equal(a.to(DType::Float64)));
  EXPECT_FALSE(a.equal(Tensor::from_vector<float>({1, 3}, {1.0f, nan, 0.0f})));
  Tensor m = Tensor::from_vector<int32_t>({2, 2}, {1, 2, 3, 4});
  Tensor mt = Tensor::from_vector<int32_t>({2, 2}, {1, 3, 2, 4}).as_strided({2, 2}, {1, 2}, 0);
  EXPECT_TRUE(m.equal(mt));  // strides may differ
}

TEST(TensorTest, Allclose) {
  double inf = std::numeric_limits<double>::infinity();
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = Tensor::from_vector<double>({3}, {1.0, 100.0, inf});
  EXPECT_TRUE(a.allclose(Tensor::from_vector<double>({3}, {1.0 + 5e-6, 100.0 + 5e-4, inf})));
  EXPECT_FALSE(a.allclose(Tensor::from_vector<double>({3}, {1.0 + 2e-5, 100.0, inf})));
  EXPECT_TRUE(a.allclose(Tensor::from_vector<double>({3}, {1.1, 90.0, inf}), 0.2));
  EXPECT_FALSE(a.allclose(Tensor::from_vector<double>({3}, {1.0, 100.0, -inf}), 1, 1));
  EXPECT_FALSE(a.allclose(Tensor::from_vector<double>({3}, {1.0, 100.0, 1e300}), 1, 1));
  EXPECT_TRUE(a.allclose(a.to(DType::Float32)));  // dtypes may differ
  Tensor n = Tensor::from_vector<double>({2}, {nan, 1.0});
  EXPECT_FALSE(n.allclose(n));
  EXPECT_TRUE(n.allclose(n, 1e-5, 1e-8, /*equal_nan=*/true));
  EXPECT_FALSE(n.allclose(Tensor::from_vector<double>({2}, {1.0, 1.0}), 1e-5, 1e-8, true));
  EXPECT_FALSE(a.allclose(Tensor::zeros({4}, DType::Float64)));
}

TEST(TensorTest, SummaryAndToString) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, -1});
  EXPECT_EQ(t.summary(), "float32(2, 3) min=-1 max=5 mean=2.33333 [1, 2, 3, 4, 5, -1]");
  EXPECT_EQ(t.to_string(), "[[1, 2, 3], [4, 5, -1]]");
  EXPECT_EQ(t.to_string(4), "[1, 2, 3, 4, ...]");
  Tensor big = Tensor::arange(20, DType::Int32);
  EXPECT_EQ(big.summary(), "int32(20,) min=0 max=19 mean=9.5 [0, 1, 2, 3, 4, 5, 6, 7, ...]");
  Tensor s = Tensor::scalar(0.1, DType::Float64);
  EXPECT_EQ(s.to_string(), "0.1");
  EXPECT_EQ(s.summary(), "float64() min=0.1 max=0.1 mean=0.1 [0.1]");
  Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  EXPECT_EQ(b.to_string(), "[true, false]");
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor n = Tensor::from_vector<float>({3}, {nan, 2.0f, -std::numeric_limits<float>::infinity()});
  EXPECT_EQ(n.summary(), "float32(3,) min=-inf max=2 mean=-inf nan=1 [nan, 2, -inf]");
  Tensor tt = t.as_strided({3, 2}, {1, 3}, 0);
  EXPECT_EQ(tt.to_string(), "[[1, 4], [2, 5], [3, -1]]");
}

// ---- dispatch -----------------------------------------------------------------------------------

TEST(TensorTest, DispatchPassesTheElementType) {
  for (DType dt : kAllDTypes) {
    size_t size = dispatch(dt, [](auto tag) { return sizeof(typename decltype(tag)::type); });
    EXPECT_EQ(size, dtype_size(dt));
    DType back = dispatch(dt, [](auto tag) { return dtype_of<typename decltype(tag)::type>(); });
    EXPECT_EQ(back, dt);
  }
  static_assert(dtype_of<Half>() == DType::Float16);
  static_assert(dtype_of<uint8_t>() == DType::UInt8);
  // A small kernel written once for all dtypes: sum of a tensor as double.
  auto sum = [](const Tensor& t) {
    return dispatch(t.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor c = t.contiguous();
      double s = 0;
      for (int64_t i = 0; i < c.numel(); ++i) s += convert_value<double>(c.data<T>()[i]);
      return s;
    });
  };
  EXPECT_EQ(sum(Tensor::arange(5, DType::BFloat16)), 10.0);
  EXPECT_EQ(sum(Tensor::arange(5, DType::Int8)), 10.0);
}

// ---- random -------------------------------------------------------------------------------------

TEST(RandomTest, PhiloxMatchesKnownAnswers) {
  // Random123 known-answer vectors for philox4x32_10.
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                          {0xffffffffu, 0xffffffffu}),
            (PhiloxCounter{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                          {0xa4093822u, 0x299f31d0u}),
            (PhiloxCounter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(RandomTest, RandIsSeededUniformAndOffsetAddressable) {
  Tensor a = Tensor::rand({1000, 100}, DType::Float32, 42);
  Tensor b = Tensor::rand({1000, 100}, DType::Float32, 42);
  Tensor c = Tensor::rand({1000, 100}, DType::Float32, 43);
  EXPECT_TRUE(a.equal(b));
  EXPECT_FALSE(a.equal(c));
  double sum = 0, lo = 1, hi = 0;
  for (float v : a.to_vector<float>()) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
    sum += v;
    lo = std::min<double>(lo, v);
    hi = std::max<double>(hi, v);
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);
  EXPECT_LT(lo, 1e-3);
  EXPECT_GT(hi, 1 - 1e-3);
  // Element i depends only on (seed, offset + i): a later slice equals a draw at that offset.
  Tensor whole = Tensor::rand({10}, DType::Float64, 7);
  Tensor tail = Tensor::rand({4}, DType::Float64, 7, /*offset=*/6);
  EXPECT_TRUE(whole.as_strided({4}, {1}, 6).equal(tail));
  // The documented recipe, by hand.
  PhiloxCounter w = philox_words(7, 3);
  double expect = static_cast<double>(((uint64_t(w[0]) << 32 | w[1]) >> 11)) * 0x1.0p-53;
  EXPECT_EQ(whole.get_double(3), expect);
  EXPECT_EQ(Tensor::rand({1}, DType::Float32, 7, 3).get_double(0),
            static_cast<double>(w[0] >> 8) * 0x1.0p-24);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    Tensor h = Tensor::rand({5000}, dt, 1);
    for (int64_t i = 0; i < h.numel(); ++i) {
      ASSERT_GE(h.get_double(i), 0.0);
      ASSERT_LT(h.get_double(i), 1.0);
    }
  }
  expect_error([] { Tensor::rand({2}, DType::Int32, 0); }, "need a floating dtype");
}

TEST(RandomTest, RandnHasStandardMoments) {
  Tensor n = Tensor::randn({200000}, DType::Float64, 123);
  double sum = 0, sq = 0;
  int64_t beyond3 = 0;
  for (double v : n.to_vector<double>()) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sq += v * v;
    if (std::fabs(v) > 3) ++beyond3;
  }
  double mean = sum / 200000, var = sq / 200000 - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
  EXPECT_NEAR(static_cast<double>(beyond3) / 200000, 0.0027, 0.0008);
  // Lower precisions are the float64 draw rounded.
  Tensor f = Tensor::randn({100}, DType::Float32, 123);
  EXPECT_TRUE(f.equal(n.as_strided({100}, {1}, 0).to(DType::Float32)));
  Tensor h = Tensor::randn({100}, DType::BFloat16, 123);
  EXPECT_TRUE(h.equal(n.as_strided({100}, {1}, 0).to(DType::BFloat16)));
  expect_error([] { Tensor::randn({2}, DType::Bool); }, "need a floating dtype");
}

TEST(RandomTest, RandintCoversTheRange) {
  Tensor r = Tensor::randint({10000}, -3, 4, DType::Int64, 5);
  std::set<int64_t> seen;
  for (int64_t v : r.to_vector<int64_t>()) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 4);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
  Tensor big = Tensor::randint({100}, std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max(), DType::Int64, 1);
  EXPECT_FALSE(big.equal(Tensor::zeros({100}, DType::Int64)));
  Tensor u8 = Tensor::randint({1000}, 0, 256, DType::UInt8, 9);
  EXPECT_TRUE(u8.equal(Tensor::randint({1000}, 0, 256, DType::Int64, 9).to(DType::UInt8)));
  Tensor fl = Tensor::randint({50}, 0, 10, DType::Float32, 2);
  for (float v : fl.to_vector<float>()) EXPECT_EQ(v, std::floor(v));
  expect_error([] { Tensor::randint({2}, 5, 5); }, "empty range [5, 5)");
}


// A large owned Storage carries MADV_HUGEPAGE on its 2 MB-aligned part (smaps' VmFlags "hg"), so
// kernels streaming it get transparent huge pages where the system allows them; a small one not.
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

TEST(Storage, LargeBuffersAskForHugePages) {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes((std::istreambuf_iterator<char>(mode)), std::istreambuf_iterator<char>());
  if (modes.empty() || modes.find("[never]") != std::string::npos)
    GTEST_SKIP() << "transparent huge pages are off on this system";
  Tensor big = Tensor::empty({int64_t{16} << 20}, DType::UInt8);
  const std::byte* mid = big.storage()->data() + (int64_t{8} << 20);
  const std::string flags = vm_flags_of(mid);
  ASSERT_FALSE(flags.empty()) << "no smaps entry for the buffer";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  EXPECT_EQ(big.data<uint8_t>()[int64_t{8} << 20], 0);  // still zero-filled
}

}  // namespace
}  // namespace stax
