// CPU kernels that create values: Fill, ZerosLike, OnesLike (by element size,
// for every dtype) and Range.
#include "graph/kernel.h"
#include "ops/array_shapes.h"
#include "ops/cpu/array_copy.h"

namespace dflow {
namespace {

void ParallelFill(void* out, const void* value, size_t elem, int64_t n, ThreadPool& pool) {
  pool.ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
    cpu::FillElements(static_cast<char*>(out) + begin * elem, value, elem, end - begin);
  });
}

class FillKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& dims = ctx.input(0);
    const Tensor& value = ctx.input(1);
    DFLOW_REQUIRE(dims.rank() == 1, "dims must be a vector, got shape ", dims.shape().ToString());
    DFLOW_REQUIRE(value.rank() == 0, "value must be a scalar, got shape ", value.shape().ToString());
    std::vector<int64_t> shape = ReadInt64s(dims, "dims");
    for (int64_t d : shape)
      DFLOW_REQUIRE(d >= 0, "dims ", array::IntsString(shape), " has a negative dimension");
    Tensor& output = ctx.allocate_output(0, Shape(shape));
    ParallelFill(output.raw_data(), value.raw_data(), DTypeSize(value.dtype()), output.NumElements(),
                 ctx.pool());
  }
};

class ZerosLikeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    // All-zero bytes are zero in every dtype (0.0, +0 half, false).
    Tensor& output = ctx.forward_input_or_allocate_output(0, 0, ctx.input(0).shape());
    if (output.TotalBytes()) std::memset(output.raw_data(), 0, output.TotalBytes());
  }
};

class OnesLikeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    DType dtype = ctx.input(0).dtype();
    uint64_t one = 0;
    Dispatch<float, double, Half, int8_t, uint8_t, int32_t, int64_t, bool>(
        dtype, "OnesLike", [&]<typename T>() {
          T value = T(1);
          std::memcpy(&one, &value, sizeof(T));
        });
    Tensor& output = ctx.forward_input_or_allocate_output(0, 0, ctx.input(0).shape());
    ParallelFill(output.raw_data(), &one, DTypeSize(dtype), output.NumElements(), ctx.pool());
  }
};

template <typename T>
class RangeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const char* names[] = {"start", "limit", "delta"};
    T v[3];
    for (int i = 0; i < 3; ++i) {
      DFLOW_REQUIRE(ctx.input(i).rank() == 0, names[i], " must be a scalar, got shape ",
                    ctx.input(i).shape().ToString());
      v[i] = ctx.input(i).scalar<T>();
    }
    int64_t n = 0;
    if constexpr (std::is_integral_v<T>) n = array::RangeSize(int64_t{v[0]}, int64_t{v[1]}, int64_t{v[2]});
    else n = array::RangeSize(double{v[0]}, double{v[1]}, double{v[2]});
    T* out = ctx.allocate_output(0, Shape{n}).template data<T>();
    // Integers step in int64: i * delta may not fit in T even though the result does.
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_integral_v<T>) out[i] = static_cast<T>(int64_t{v[0]} + i * int64_t{v[2]});
      else out[i] = v[0] + static_cast<T>(i) * v[2];
    }
  }
};

REGISTER_KERNEL("Fill", "CPU", FillKernel);
REGISTER_KERNEL("ZerosLike", "CPU", ZerosLikeKernel);
REGISTER_KERNEL("OnesLike", "CPU", OnesLikeKernel);
REGISTER_KERNEL_FOR_TYPES("Range", "CPU", RangeKernel, float, double, int32_t, int64_t);

}  // namespace
}  // namespace dflow
