// Tensors, dtypes, float16 conversion, shapes and the host allocator.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <catch2/catch.hpp>

#include "graph/resource.h"
#include "graph/tensor.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using testing::ExpectError;

namespace {

uint16_t HalfBits(float value) { return Half(value).bits; }
float HalfValue(uint16_t bits) { return static_cast<float>(Half::FromBits(bits)); }

}  // namespace

TEST_CASE("every dtype has a name, a size and a C++ type", "[core]") {
  const std::vector<std::pair<DType, size_t>> expected = {
      {DType::kFloat32, 4}, {DType::kFloat64, 8}, {DType::kFloat16, 2}, {DType::kInt8, 1},
      {DType::kUInt8, 1},   {DType::kInt32, 4},   {DType::kInt64, 8},   {DType::kBool, 1}};
  REQUIRE(AllDTypes().size() == expected.size());
  for (auto [dtype, size] : expected) {
    INFO(DTypeName(dtype));
    CHECK(DTypeFromName(DTypeName(dtype)) == dtype);
    CHECK(DTypeSize(dtype) == size);
    size_t cpp_size = Dispatch<float, double, Half, int8_t, uint8_t, int32_t, int64_t, bool>(
        dtype, "test", [&]<typename T>() {
          CHECK(kDTypeOf<T> == dtype);
          return sizeof(T);
        });
    CHECK(cpp_size == size);
    CHECK(IsFloating(dtype) == (dtype == DType::kFloat16 || dtype == DType::kFloat32 ||
                                dtype == DType::kFloat64));
    CHECK(IsInteger(dtype) == (!IsFloating(dtype) && dtype != DType::kBool));

    Tensor t = Tensor::Zeros(dtype, {2, 3});
    CHECK(t.dtype() == dtype);
    CHECK(t.NumElements() == 6);
    CHECK(t.TotalBytes() == 6 * size);
    CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % Allocator::kAlignment == 0);
    for (int64_t i = 0; i < 6; ++i) CHECK(ReadAsDouble(t, i) == 0);
    CHECK(t.SummaryString() == StrCat(DTypeName(dtype), "[2,3]"));
  }
  CHECK(DTypeFromName("float") == DType::kFloat32);
  CHECK(DTypeFromName("double") == DType::kFloat64);
  CHECK(DTypeFromName("half") == DType::kFloat16);
  ExpectError([] { DTypeFromName("complex64"); }, Code::kInvalidArgument, "unknown dtype 'complex64'");
  ExpectError([] { DTypeSize(DType::kInvalid); }, Code::kInvalidArgument, "invalid dtype");
  ExpectError([] { Dispatch<float>(DType::kInt8, "MyKernel", []<typename T>() {}); },
              Code::kUnimplemented, "MyKernel does not support dtype int8");
}

TEST_CASE("typed access checks the dtype", "[core]") {
  Tensor t = Tensor::FromVector<int32_t>({1, 2, 3});
  CHECK(t.shape() == Shape({3}));
  CHECK(t.ToVector<int32_t>() == std::vector<int32_t>{1, 2, 3});
  ExpectError([&] { t.data<float>(); }, Code::kInternal, "int32 accessed as float32");
  ExpectError([] { Tensor::FromVector<float>({1, 2, 3}, {2, 2}); }, Code::kInvalidArgument,
              "3 values do not fill shape [2,2]");
  ExpectError([] { Tensor(DType::kFloat32, {2, -1}); }, Code::kInvalidArgument, "partially known shape [2,?]");
  ExpectError([] { Tensor(DType::kInvalid, {2}); }, Code::kInvalidArgument, "invalid dtype");
  CHECK(Tensor::Scalar<bool>(true).scalar<bool>());
  CHECK(Tensor::Scalar<int64_t>(-7).scalar<int64_t>() == -7);
  CHECK(Tensor::Scalar(2.5).dtype() == DType::kFloat64);
  ExpectError([&] { t.scalar<int32_t>(); }, Code::kInvalidArgument, "single-element");
  CHECK_FALSE(Tensor().valid());
}

TEST_CASE("float16: exact values and round to nearest even", "[core]") {
  CHECK(HalfBits(0.0f) == 0x0000);
  CHECK(HalfBits(-0.0f) == 0x8000);
  CHECK(HalfBits(1.0f) == 0x3c00);
  CHECK(HalfBits(-2.0f) == 0xc000);
  CHECK(HalfBits(0.5f) == 0x3800);
  CHECK(HalfBits(0.1f) == 0x2e66);  // 0.0999755859375
  CHECK(HalfValue(0x2e66) == 0.0999755859375f);
  // Halfway between two halves: the even mantissa wins.
  CHECK(HalfBits(1.0f + 0x1p-11f) == 0x3c00);              // 1 + half an ulp -> 1
  CHECK(HalfBits(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);   // just above halfway -> up
  CHECK(HalfBits(1.0f + 3 * 0x1p-11f) == 0x3c02);          // 1.5 ulp -> 2 ulp (even)
  CHECK(HalfBits(1.0f + 0x1p-11f - 0x1p-20f) == 0x3c00);   // just below halfway -> down
  CHECK(HalfBits(2047.5f) == 0x6800);  // 2047.5 is halfway between 2047 and 2048 -> 2048
  // Rounding that carries into the exponent.
  CHECK(HalfBits(2.0f - 0x1p-12f) == 0x4000);
}

TEST_CASE("float16: largest value 65504 and overflow", "[core]") {
  CHECK(HalfBits(65504.0f) == 0x7bff);
  CHECK(HalfValue(0x7bff) == 65504.0f);
  CHECK(HalfBits(65519.99f) == 0x7bff);  // below the halfway point to 65536
  CHECK(HalfBits(65520.0f) == 0x7c00);   // halfway: rounds to even, which is 2^16 = inf
  CHECK(HalfBits(1e6f) == 0x7c00);
  CHECK(HalfBits(-1e6f) == 0xfc00);
  CHECK(HalfBits(std::numeric_limits<float>::max()) == 0x7c00);
}

TEST_CASE("float16: subnormals", "[core]") {
  CHECK(HalfBits(0x1p-24f) == 0x0001);          // smallest subnormal
  CHECK(HalfValue(0x0001) == 0x1p-24f);
  CHECK(HalfBits(1023 * 0x1p-24f) == 0x03ff);   // largest subnormal
  CHECK(HalfValue(0x03ff) == 1023 * 0x1p-24f);
  CHECK(HalfBits(0x1p-14f) == 0x0400);          // smallest normal
  CHECK(HalfBits(0x1p-25f) == 0x0000);          // half a unit: ties to even (0)
  CHECK(HalfBits(0x1p-25f + 0x1p-35f) == 0x0001);
  CHECK(HalfBits(3 * 0x1p-25f) == 0x0002);      // 1.5 units -> 2
  CHECK(HalfBits(5 * 0x1p-25f) == 0x0002);      // 2.5 units -> 2
  CHECK(HalfBits(-3 * 0x1p-25f) == 0x8002);
  CHECK(HalfBits(0x1p-14f - 0x1p-25f) == 0x0400);  // 1023.5 units -> rounds up into the normals
  CHECK(HalfBits(1e-10f) == 0x0000);
  CHECK(HalfBits(-1e-10f) == 0x8000);
}

TEST_CASE("float16: infinities and NaN", "[core]") {
  float inf = std::numeric_limits<float>::infinity();
  CHECK(HalfBits(inf) == 0x7c00);
  CHECK(HalfBits(-inf) == 0xfc00);
  CHECK(HalfValue(0x7c00) == inf);
  CHECK(HalfValue(0xfc00) == -inf);
  uint16_t nan = HalfBits(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7c00) == 0x7c00);
  CHECK((nan & 0x03ff) != 0);
  CHECK(std::isnan(HalfValue(nan)));
  // A signalling NaN whose payload sits only in the low bits stays a NaN.
  CHECK(std::isnan(HalfValue(HalfBits(std::bit_cast<float>(0x7f800001u)))));
}

TEST_CASE("float16: every half survives a round trip through float", "[core]") {
  int mismatches = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float f = HalfValue(static_cast<uint16_t>(bits));
    if (std::isnan(f)) {
      mismatches += !std::isnan(HalfValue(HalfBits(f)));
      continue;
    }
    mismatches += HalfBits(f) != bits;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("Reshaped shares the buffer; Clone copies it", "[core]") {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor r = t.Reshaped({3, 2});
  CHECK(r.shape() == Shape({3, 2}));
  CHECK(r.SharesBufferWith(t));
  r.data<float>()[0] = 10;
  CHECK(t.data<float>()[0] == 10);
  CHECK(t.buffer_use_count() == 2);
  ExpectError([&] { t.Reshaped({4, 2}); }, Code::kInvalidArgument, "cannot reshape a tensor of shape [2,3]");
  ExpectError([&] { t.Reshaped({-1, 2}); }, Code::kInvalidArgument, "to [?,2]");

  Tensor c = t.Clone();
  CHECK_FALSE(c.SharesBufferWith(t));
  CHECK(c.Equals(t));
  c.data<float>()[1] = -1;
  CHECK(t.data<float>()[1] == 2);
  CHECK_FALSE(c.Equals(t));
  CHECK_FALSE(t.Equals(t.Reshaped({6})));  // same values, other shape
  Tensor nan = Tensor::FromVector<float>({NAN});
  CHECK_FALSE(nan.Equals(nan));
  CHECK(t.DebugString(4) == "float32[2,3] [10 2 3 4 ...]");
}

TEST_CASE("CastTo converts element-wise between all dtypes", "[core]") {
  Tensor f = Tensor::FromVector<float>({-2.75f, -1.0f, 0.0f, 0.5f, 3.25f, 100.0f});
  CHECK(f.CastTo(DType::kInt32).ToVector<int32_t>() == std::vector<int32_t>{-2, -1, 0, 0, 3, 100});
  CHECK(f.CastTo(DType::kBool).ToVector<bool>() == std::vector<bool>{true, true, false, true, true, true});
  CHECK(f.CastTo(DType::kFloat64).ToVector<double>() ==
        std::vector<double>{-2.75, -1.0, 0.0, 0.5, 3.25, 100.0});
  Tensor h = f.CastTo(DType::kFloat16);
  CHECK(h.dtype() == DType::kFloat16);
  CHECK(h.data<Half>()[4].bits == HalfBits(3.25f));
  CHECK(h.CastTo(DType::kFloat32).Equals(f));  // all exactly representable in float16
  CHECK(Tensor::FromVector<int32_t>({300, -1}).CastTo(DType::kUInt8).ToVector<uint8_t>() ==
        std::vector<uint8_t>{44, 255});  // modulo 256, as C++ converts integers
  CHECK(Tensor::FromVector<bool>({true, false}).CastTo(DType::kInt64).ToVector<int64_t>() ==
        std::vector<int64_t>{1, 0});
  CHECK(Tensor::FromVector<int8_t>({-5}).CastTo(DType::kFloat16).CastTo(DType::kFloat32)
            .scalar<float>() == -5.0f);
  // Same dtype: an independent copy.
  Tensor same = f.CastTo(DType::kFloat32);
  CHECK(same.Equals(f));
  CHECK_FALSE(same.SharesBufferWith(f));
  // Every pair of dtypes converts a small integer exactly.
  for (DType from : AllDTypes())
    for (DType to : AllDTypes()) {
      INFO(DTypeName(from) << " -> " << DTypeName(to));
      Tensor one = Tensor::FromVector<int32_t>({1, 0}).CastTo(from).CastTo(to);
      CHECK(ReadAsDouble(one, 0) == 1);
      CHECK(ReadAsDouble(one, 1) == 0);
    }
}

TEST_CASE("zero-size tensors", "[core]") {
  for (DType dtype : AllDTypes()) {
    Tensor t(dtype, {0, 3});
    INFO(DTypeName(dtype));
    CHECK(t.valid());
    CHECK(t.NumElements() == 0);
    CHECK(t.TotalBytes() == 0);
    CHECK(t.Clone().shape() == Shape({0, 3}));
    CHECK(t.Reshaped({3, 0, 5}).NumElements() == 0);
    CHECK(t.CastTo(DType::kFloat32).shape() == Shape({0, 3}));
    CHECK(t.Equals(Tensor::Zeros(dtype, {0, 3})));
    CHECK_FALSE(t.Equals(Tensor::Zeros(dtype, {3, 0})));
  }
  CHECK(Tensor(DType::kInt32, {0}).DebugString() == "int32[0] []");
  CHECK(Tensor::FromVector<float>({}).shape() == Shape({0}));
  ExpectError([] { Tensor(DType::kFloat32, {0, 3}).Reshaped({1}); }, Code::kInvalidArgument,
              "cannot reshape");
}

TEST_CASE("ReadInt64s and ReadAsDouble", "[core]") {
  CHECK(ReadInt64s(Tensor::FromVector<int32_t>({3, -1}), "dims") == std::vector<int64_t>{3, -1});
  CHECK(ReadInt64s(Tensor::Scalar<int64_t>(1LL << 40), "axis") == std::vector<int64_t>{1LL << 40});
  ExpectError([] { ReadInt64s(Tensor::FromVector<float>({1}), "axis"); }, Code::kInvalidArgument,
              "axis must be int32 or int64, got float32");
  ExpectError([] { ReadInt64s(Tensor::Zeros(DType::kInt32, {2, 2}), "shape"); },
              Code::kInvalidArgument, "shape must be a scalar or vector, got shape [2,2]");
  CHECK(ReadAsDouble(Tensor::FromVector<uint8_t>({7, 255}), 1) == 255);
  CHECK(ReadAsDouble(Tensor::Scalar(true), 0) == 1);
}

TEST_CASE("shapes: partial dims, compatibility, merge, strides", "[core]") {
  Shape s{2, -1, 3};
  CHECK(s.ToString() == "[2,?,3]");
  CHECK_FALSE(s.IsFullyDefined());
  CHECK(s.NumElements() == -1);
  CHECK(Shape{}.NumElements() == 1);
  CHECK(Shape{}.ToString() == "[]");
  CHECK(Shape{4, 0}.NumElements() == 0);
  CHECK(Shape::Unknown().unknown_rank());
  CHECK(Shape::Unknown().ToString() == "<unknown>");
  CHECK(s.IsCompatibleWith(Shape{2, 5, 3}));
  CHECK_FALSE(s.IsCompatibleWith(Shape{2, 5, 4}));
  CHECK_FALSE(s.IsCompatibleWith(Shape{2, 5}));
  CHECK(Shape::Unknown().IsCompatibleWith(Shape{1, 2, 3, 4}));
  CHECK(s.Merge(Shape{-1, 7, 3}) == Shape({2, 7, 3}));
  CHECK(s.Merge(Shape::Unknown()) == s);
  CHECK_THROWS_AS(s.Merge(Shape{3, 7, 3}), Error);
  CHECK(Strides(Shape{2, 3, 4}) == std::vector<int64_t>{12, 4, 1});
  CHECK(Strides(Shape{}).empty());
}

TEST_CASE("shape arithmetic that does not fit in 64 bits fails naming the shape", "[core][overflow]") {
  const int64_t k2to32 = int64_t{1} << 32;
  ExpectError([&] { Shape({k2to32, k2to32}).NumElements(); }, Code::kInvalidArgument,
              "shape [4294967296,4294967296] has too many elements");
  // No elements, but a kernel's count over the last two dims would still wrap.
  ExpectError([&] { Tensor(DType::kFloat32, Shape{0, k2to32, k2to32}); }, Code::kInvalidArgument,
              "[0,4294967296,4294967296]");
  // 2^61 elements fit; their 2^64 bytes do not.
  ExpectError([&] { Tensor(DType::kInt64, Shape{int64_t{1} << 61}); }, Code::kInvalidArgument,
              "size in bytes does not fit");
  ExpectError([&] { Strides(Shape{k2to32, k2to32, 1}); }, Code::kInvalidArgument, "too many elements");
  CHECK(CheckedMul(k2to32, int64_t{1} << 30, "x") == int64_t{1} << 62);
  ExpectError([&] { CheckedMul(k2to32, k2to32, "the product"); }, Code::kInvalidArgument,
              "the product is too large: 4294967296 * 4294967296");
  ExpectError([&] { CheckedAdd(std::numeric_limits<int64_t>::max(), 1, "the sum"); },
              Code::kInvalidArgument, "the sum is too large");
  CHECK(Shape({k2to32, 0, int64_t{1} << 30}).NumElements() == 0);  // 2^62 fits
}

TEST_CASE("allocations above the limit are refused before they are attempted", "[core][overflow]") {
  SetMaxAllocationBytes(int64_t{1} << 20);
  CHECK(MaxAllocationBytes() == int64_t{1} << 20);
  Tensor fits(DType::kFloat32, Shape{1 << 18});
  ExpectError([] { Tensor(DType::kFloat32, Shape{(1 << 18) + 1}); }, Code::kInvalidArgument,
              "cannot allocate 1.0 MiB (1048580 bytes) for float32[262145]: above the allocation "
              "limit of 1.0 MiB (1048576 bytes)");
  SetMaxAllocationBytes(0);
  CHECK(MaxAllocationBytes() > int64_t{1} << 20);  // the machine's memory
  ExpectError([] { SetMaxAllocationBytes(-1); }, Code::kInvalidArgument, "allocation limit");
}

TEST_CASE("the host allocator reuses a large freed block for the same size", "[core]") {
  Allocator* allocator = CpuAllocator();
  AllocatorStats before = allocator->stats();
  const size_t bytes = (size_t{3} << 20) + 100;  // large, not a whole number of pages
  void* first = allocator->Allocate(bytes);
  std::memset(first, 1, bytes);
  allocator->Deallocate(first, bytes);
  void* again = allocator->Allocate(bytes - 50);  // same pages: the cached block
  CHECK(again == first);
  CHECK(reinterpret_cast<uintptr_t>(again) % Allocator::kAlignment == 0);
  void* other = allocator->Allocate(bytes);  // the cached block is taken: a new one
  CHECK(other != again);
  CHECK(allocator->stats().bytes_in_use == before.bytes_in_use + 2 * static_cast<int64_t>(bytes) - 50);
  allocator->Deallocate(again, bytes - 50);
  allocator->Deallocate(other, bytes);
  CHECK(allocator->stats().bytes_in_use == before.bytes_in_use);
}

TEST_CASE("the host allocator counts bytes, allocations and the peak", "[core]") {
  Allocator* allocator = CpuAllocator();
  CHECK(allocator->name() == "cpu");
  AllocatorStats before = allocator->stats();
  {
    Tensor t(DType::kFloat32, {1000});
    AllocatorStats during = allocator->stats();
    CHECK(during.bytes_in_use == before.bytes_in_use + 4000);
    CHECK(during.num_allocations == before.num_allocations + 1);
    CHECK(during.peak_bytes_in_use >= during.bytes_in_use);
    Tensor copy = t;  // shares: no new allocation
    CHECK(allocator->stats().num_allocations == during.num_allocations);
    CHECK(copy.allocator() == allocator);
  }
  CHECK(allocator->stats().bytes_in_use == before.bytes_in_use);

  allocator->ResetPeak();
  int64_t base = allocator->stats().bytes_in_use;
  CHECK(allocator->stats().peak_bytes_in_use == base);
  { Tensor big(DType::kFloat64, {1 << 16}); }
  { Tensor small(DType::kInt8, {10}); }
  AllocatorStats after = allocator->stats();
  CHECK(after.bytes_in_use == base);
  CHECK(after.peak_bytes_in_use == base + 8 * (1 << 16));
  // Odd sizes are still aligned.
  Tensor odd(DType::kUInt8, {3});
  CHECK(reinterpret_cast<uintptr_t>(odd.raw_data()) % Allocator::kAlignment == 0);
}

TEST_CASE("Adopt wraps foreign bytes and releases them once, with the last handle", "[core]") {
  alignas(64) static float storage[6] = {1, 2, 3, 4, 5, 6};
  int released = 0;
  int64_t in_use = CpuAllocator()->stats().bytes_in_use;
  {
    Tensor t = Tensor::Adopt(DType::kFloat32, Shape({2, 3}), storage, [&] { ++released; });
    CHECK(t.raw_data() == storage);
    CHECK(t.TotalBytes() == sizeof(storage));
    CHECK(t.adopted());
    CHECK(t.allocator() == CpuAllocator());  // host memory, as kernels and Clone see it
    CHECK(CpuAllocator()->stats().bytes_in_use == in_use);  // never counted as allocated
    Tensor shared = t.Reshaped(Shape({6}));
    t = Tensor();
    CHECK(released == 0);
    CHECK(shared.flat<float>()[5] == 6);
    Tensor copy = shared.Clone();
    CHECK_FALSE(copy.adopted());
    CHECK(copy.Equals(shared));
  }
  CHECK(released == 1);
}

TEST_CASE("Adopt refuses misaligned bytes, invalid dtypes and unknown shapes", "[core]") {
  alignas(64) static char storage[64] = {};
  bool released = false;
  auto release = [&] { released = true; };
  CHECK_THROWS_WITH(Tensor::Adopt(DType::kFloat32, Shape({2}), storage + 4, release),
                    Catch::Matchers::Contains("not aligned to 8"));
  CHECK_THROWS_WITH(Tensor::Adopt(DType::kInvalid, Shape({2}), storage, release),
                    Catch::Matchers::Contains("invalid dtype"));
  CHECK_THROWS_WITH(Tensor::Adopt(DType::kFloat32, Shape({-1}), storage, release),
                    Catch::Matchers::Contains("partially known shape"));
  CHECK_FALSE(released);  // a refused adoption leaves the bytes to their owner
  // 8-byte alignment is enough (libzmq's frames sit at 8 mod 16).
  Tensor t = Tensor::Adopt(DType::kFloat64, Shape({2}), storage + 8, release);
  CHECK(t.raw_data() == storage + 8);
}

TEST_CASE("a variable assigned adopted bytes keeps its own aligned copy", "[core]") {
  alignas(64) static float storage[4] = {1, 2, 3, 4};
  Tensor received = Tensor::Adopt(DType::kFloat32, Shape({4}), storage, [] {});
  ResourceStore store;
  Variable* v = store.LookupOrCreateVariable("v", DType::kFloat32, Shape({4}));
  v->Assign(received);
  Tensor held = v->Read();
  CHECK_FALSE(held.adopted());
  CHECK_FALSE(held.SharesBufferWith(received));
  CHECK(held.Equals(received));
}
