// GPU OpKernels of the element-wise ops (float32; the broadcasting binary
// arithmetic also int32 and int64): unary math, Relu, broadcasting binary
// math, ReluGrad, AddN, BiasAdd, Fill, Cast. The CUDA
// kernels are in elementwise.cu.
#include <bit>
#include <cstring>
#include <optional>
#include <type_traits>

#include "graph/op_def.h"
#include "ops/array_shapes.h"
#include "ops/cuda/kernel_util.h"
#include "ops/cuda/launch.h"

namespace dflow {
namespace {

using cuda::BinaryFn;
using cuda::BroadcastStrides;
using cuda::UnaryFn;

template <UnaryFn kFn>
class GpuUnaryKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.forward_input_or_allocate_output(0, 0, x.shape());
    cuda::LaunchUnary(cuda::Stream(ctx), kFn, x.data<float>(), y.data<float>(), x.NumElements());
    cuda::CheckLaunch(ctx, "Unary");
  }
};

// The element types of the arithmetic kernels (binary ops, AssignAdd).
std::optional<cuda::CastType> GpuNumberType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return cuda::CastType::kF32;
    case DType::kFloat64: return cuda::CastType::kF64;
    case DType::kInt32: return cuda::CastType::kI32;
    case DType::kInt64: return cuda::CastType::kI64;
    default: return std::nullopt;
  }
}

// Those Cast converts between: every dtype.
std::optional<cuda::CastType> GpuCastType(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return cuda::CastType::kF16;
    case DType::kBool: return cuda::CastType::kBool;
    case DType::kUInt8: return cuda::CastType::kU8;
    case DType::kInt8: return cuda::CastType::kI8;
    default: return GpuNumberType(dtype);
  }
}

// float32, int32 or int64 (T). An integer division reads a flag back from
// the device (waiting for the stream) to name a zero divisor as the CPU does.
template <BinaryFn kFn, typename T>
class GpuBinaryKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    Shape out_shape = BroadcastShapes(x.shape(), y.shape());
    if (out_shape.rank() > cuda::kMaxRank)
      Fail(Code::kUnimplemented, node().Describe(), ": the GPU kernel broadcasts up to rank ",
           cuda::kMaxRank, ", got ", out_shape.ToString());
    bool same = x.shape() == y.shape();
    Tensor& z = same ? ctx.forward_input_or_allocate_output(0, 0, out_shape)
                     : ctx.allocate_output(0, out_shape);
    cuda::BroadcastIndex index;
    if (!same) {
      index.rank = out_shape.rank();
      for (int d = 0; d < index.rank; ++d) index.dims[d] = out_shape.dim(d);
      BroadcastStrides(x.shape(), out_shape, index.x_strides);
      BroadcastStrides(y.shape(), out_shape, index.y_strides);
    }
    constexpr bool kDivides = std::is_integral_v<T> && (kFn == BinaryFn::kDiv ||
                                                        kFn == BinaryFn::kFloorDiv ||
                                                        kFn == BinaryFn::kFloorMod);
    CudaDevice& gpu = cuda::Gpu(ctx);
    Tensor zero_divisor;  // -1, read as unsigned by the device: above every offset
    if (kDivides) zero_divisor = gpu.CopyToDevice(Tensor::Scalar<int64_t>(-1), node().Describe());
    cuda::LaunchBinary(cuda::Stream(ctx), kFn, *GpuNumberType(x.dtype()), x.raw_data(), y.raw_data(),
                       z.raw_data(), z.NumElements(), same, index,
                       kDivides ? reinterpret_cast<unsigned long long*>(zero_divisor.raw_data()) : nullptr);
    cuda::CheckLaunch(ctx, "Binary");
    if (!kDivides) return;
    int64_t at = gpu.CopyToHost(zero_divisor, node().Describe()).scalar<int64_t>();
    if (at != -1)
      Fail(Code::kInvalidArgument, node().op(), ": integer division by zero (element ", at,
           " of y, shape ", y.shape().ToString(), ", is 0)");
  }
};

// out = x0, then out += xi for the others (one pass each).
class GpuAddNKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& first = ctx.input(0);
    for (int i = 1; i < ctx.num_inputs(); ++i)
      DFLOW_REQUIRE(ctx.input(i).shape() == first.shape(), node().Describe(), ": input ", i,
                    " has shape ", ctx.input(i).shape().ToString(), ", input 0 has ",
                    first.shape().ToString());
    cudaStream_t stream = cuda::Stream(ctx);
    Tensor& out = ctx.allocate_output(0, first.shape());
    if (out.TotalBytes())
      DFLOW_CUDA(cudaMemcpyAsync(out.raw_data(), first.raw_data(), out.TotalBytes(),
                                 cudaMemcpyDeviceToDevice, stream), node().Describe());
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      cuda::LaunchAccumulate(stream, ctx.input(i).data<float>(), out.data<float>(), out.NumElements());
      cuda::CheckLaunch(ctx, "Accumulate");
    }
  }
};

class GpuBiasAddKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& bias = ctx.input(1);
    DFLOW_REQUIRE(x.rank() >= 1 && bias.rank() == 1 && bias.dim(0) == x.dim(x.rank() - 1),
                  node().Describe(), ": bias ", bias.shape().ToString(),
                  " must match the last dim of ", x.shape().ToString());
    Tensor& y = ctx.forward_input_or_allocate_output(0, 0, x.shape());
    cuda::LaunchBiasAdd(cuda::Stream(ctx), x.data<float>(), bias.data<float>(), y.data<float>(),
                        x.NumElements(), bias.dim(0));
    cuda::CheckLaunch(ctx, "BiasAdd");
  }
};

// Fill(dims, value): dims and value are read on the host; the value's bit
// pattern is then broadcast by a 4- or 8-byte fill.
class GpuFillKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    std::vector<int64_t> dims = cuda::HostInt64s(ctx, 0, "dims");
    for (int64_t d : dims)
      DFLOW_REQUIRE(d >= 0, node().Describe(), ": dims has a negative dimension");
    Tensor value = cuda::HostInput(ctx, 1);
    DFLOW_REQUIRE(value.rank() == 0, node().Describe(), ": value must be a scalar, got shape ",
                  value.shape().ToString());
    Tensor& out = ctx.allocate_output(0, Shape(dims));
    size_t elem = DTypeSize(value.dtype());
    cudaStream_t stream = cuda::Stream(ctx);
    if (elem == 1) {
      uint8_t bits;
      std::memcpy(&bits, value.raw_data(), 1);
      cuda::LaunchFill8(stream, bits, out.raw_data(), out.NumElements());
    } else if (elem == 4) {
      uint32_t bits;
      std::memcpy(&bits, value.raw_data(), 4);
      cuda::LaunchFill32(stream, bits, out.raw_data(), out.NumElements());
    } else if (elem == 8) {
      uint64_t bits;
      std::memcpy(&bits, value.raw_data(), 8);
      cuda::LaunchFill64(stream, bits, out.raw_data(), out.NumElements());
    } else {
      Fail(Code::kUnimplemented, node().Describe(), ": the GPU Fill handles 1-, 4- and 8-byte dtypes, not ",
           DTypeName(value.dtype()));
    }
    cuda::CheckLaunch(ctx, "Fill");
  }
};

class GpuCastKernel : public OpKernel {
 public:
  explicit GpuCastKernel(const Node& node) : OpKernel(node), truncate_(node.attr<bool>("Truncate")) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    DType to = node().output_dtype(0);
    if (x.dtype() == to) return ctx.set_output(0, x);
    auto from_type = GpuCastType(x.dtype()), to_type = GpuCastType(to);
    if (!from_type || !to_type)
      Fail(Code::kUnimplemented, node().Describe(), ": the GPU Cast has no conversion from ",
           DTypeName(x.dtype()), " to ", DTypeName(to));
    Tensor& y = ctx.allocate_output(0, x.shape());
    cuda::LaunchCast(cuda::Stream(ctx), *from_type, x.raw_data(), *to_type, y.raw_data(),
                     x.NumElements(), truncate_);
    cuda::CheckLaunch(ctx, "Cast");
  }

 private:
  bool truncate_;
};

// The output index for `shape`s broadcast to `out` (up to kMaxRank dims).
cuda::BroadcastIndex OutputIndex(const OpKernelContext& ctx, const Shape& out) {
  if (out.rank() > cuda::kMaxRank)
    Fail(Code::kUnimplemented, ctx.node().Describe(), ": the GPU kernel broadcasts up to rank ",
         cuda::kMaxRank, ", got ", out.ToString());
  cuda::BroadcastIndex index;
  index.rank = out.rank();
  for (int d = 0; d < index.rank; ++d) index.dims[d] = out.dim(d);
  return index;
}

int RequireWordSized(const OpKernelContext& ctx, DType dtype) {
  int bytes = static_cast<int>(DTypeSize(dtype));
  if (bytes != 1 && bytes != 4 && bytes != 8)
    Fail(Code::kUnimplemented, ctx.node().Describe(), ": the GPU kernel handles 1-, 4- and 8-byte "
         "dtypes, not ", DTypeName(dtype));
  return bytes;
}

class GpuBroadcastToKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    Shape out = array::BroadcastToShape(input.shape(), Shape(cuda::HostInt64s(ctx, 1, "shape")));
    if (out.NumElements() == input.NumElements()) return ctx.set_output(0, input.Reshaped(out));
    int bytes = RequireWordSized(ctx, input.dtype());
    cuda::BroadcastIndex index = OutputIndex(ctx, out);
    BroadcastStrides(input.shape(), out, index.x_strides);
    Tensor& output = ctx.allocate_output(0, out);
    cuda::LaunchBroadcastCopy(cuda::Stream(ctx), bytes, input.raw_data(), output.raw_data(),
                              output.NumElements(), index);
    cuda::CheckLaunch(ctx, "BroadcastCopy");
  }
};

// numpy.where: condition, t and e broadcast together.
class GpuSelectKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& condition = ctx.input(0);
    const Tensor& t = ctx.input(1);
    const Tensor& e = ctx.input(2);
    Shape out = BroadcastShapes(BroadcastShapes(condition.shape(), t.shape()), e.shape());
    int bytes = RequireWordSized(ctx, t.dtype());
    cuda::BroadcastIndex index = OutputIndex(ctx, out);
    BroadcastStrides(t.shape(), out, index.x_strides);
    BroadcastStrides(e.shape(), out, index.y_strides);
    BroadcastStrides(condition.shape(), out, index.c_strides);
    Tensor& output = ctx.allocate_output(0, out);
    cuda::LaunchSelect(cuda::Stream(ctx), bytes, condition.data<bool>(), t.raw_data(), e.raw_data(),
                       output.raw_data(), output.NumElements(), index);
    cuda::CheckLaunch(ctx, "Select");
  }
};

class GpuOnesLikeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& out = ctx.allocate_output(0, x.shape());
    cudaStream_t stream = cuda::Stream(ctx);
    int64_t n = out.NumElements();
    switch (x.dtype()) {
      case DType::kFloat32: cuda::LaunchFill32(stream, std::bit_cast<uint32_t>(1.0f), out.raw_data(), n); break;
      case DType::kFloat64: cuda::LaunchFill64(stream, std::bit_cast<uint64_t>(1.0), out.raw_data(), n); break;
      case DType::kInt32: cuda::LaunchFill32(stream, 1, out.raw_data(), n); break;
      case DType::kInt64: cuda::LaunchFill64(stream, 1, out.raw_data(), n); break;
      default:
        Fail(Code::kUnimplemented, node().Describe(), ": the GPU OnesLike handles float32, "
             "float64, int32 and int64, not ", DTypeName(x.dtype()));
    }
    cuda::CheckLaunch(ctx, "Fill");
  }
};

// ref += value / ref -= value, in place (copy-on-write like the CPU kernel).
template <bool kSubtract>
class GpuAssignUpdateKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    Variable* var = ctx.input_variable(0);
    const Tensor& delta = ctx.input(1);
    auto type = GpuNumberType(delta.dtype());
    if (!type)
      Fail(Code::kUnimplemented, node().Describe(), ": the GPU kernel updates float32, float64, "
           "int32 and int64 variables, not ", DTypeName(delta.dtype()));
    cudaStream_t stream = cuda::Stream(ctx);
    var->Update([&](Tensor& value) {
      DFLOW_REQUIRE(value.shape() == delta.shape(), node().Describe(), ": variable has shape ",
                    value.shape().ToString(), " but the update has shape ", delta.shape().ToString());
      cuda::LaunchAssignUpdate(stream, *type, value.raw_data(), delta.raw_data(),
                               value.NumElements(), kSubtract);
      cuda::CheckLaunch(ctx, "AssignUpdate");
    });
    ctx.set_output(0, var->Read());
  }
};

#define DFLOW_GPU_UNARY(op, fn) \
  REGISTER_KERNEL_FOR_TYPES(op, "GPU", GpuUnaryTyped<UnaryFn::fn>::Kernel, float)
#define DFLOW_GPU_BINARY(op, fn) \
  REGISTER_KERNEL_FOR_TYPES(op, "GPU", GpuBinaryTyped<BinaryFn::fn>::Kernel, float)
// Integer arithmetic too: shape arithmetic in gradients, step counters.
#define DFLOW_GPU_NUMBER_BINARY(op, fn) \
  REGISTER_KERNEL_FOR_TYPES(op, "GPU", GpuBinaryTyped<BinaryFn::fn>::Kernel, float, int32_t, int64_t)

// REGISTER_KERNEL_FOR_TYPES takes a template over the element type.
template <UnaryFn kFn> struct GpuUnaryTyped {
  template <typename T> using Kernel = GpuUnaryKernel<kFn>;
};
template <BinaryFn kFn> struct GpuBinaryTyped {
  template <typename T> using Kernel = GpuBinaryKernel<kFn, T>;
};
template <typename T> using GpuAddN = GpuAddNKernel;
template <typename T> using GpuBiasAdd = GpuBiasAddKernel;

DFLOW_GPU_UNARY("Neg", kNeg);
DFLOW_GPU_UNARY("Abs", kAbs);
DFLOW_GPU_UNARY("Square", kSquare);
DFLOW_GPU_UNARY("Sqrt", kSqrt);
DFLOW_GPU_UNARY("Rsqrt", kRsqrt);
DFLOW_GPU_UNARY("Exp", kExp);
DFLOW_GPU_UNARY("Log", kLog);
DFLOW_GPU_UNARY("Tanh", kTanh);
DFLOW_GPU_UNARY("Sigmoid", kSigmoid);
DFLOW_GPU_UNARY("Relu", kRelu);
DFLOW_GPU_UNARY("Relu6", kRelu6);
DFLOW_GPU_UNARY("Reciprocal", kReciprocal);
DFLOW_GPU_UNARY("Sign", kSign);
DFLOW_GPU_UNARY("Log1p", kLog1p);
DFLOW_GPU_UNARY("Sin", kSin);
DFLOW_GPU_UNARY("Cos", kCos);
DFLOW_GPU_UNARY("Floor", kFloor);
DFLOW_GPU_UNARY("Ceil", kCeil);
DFLOW_GPU_UNARY("Round", kRound);
DFLOW_GPU_UNARY("Elu", kElu);
DFLOW_GPU_UNARY("Softplus", kSoftplus);
DFLOW_GPU_NUMBER_BINARY("Add", kAdd);
DFLOW_GPU_NUMBER_BINARY("Sub", kSub);
DFLOW_GPU_NUMBER_BINARY("Mul", kMul);
DFLOW_GPU_NUMBER_BINARY("Div", kDiv);
DFLOW_GPU_NUMBER_BINARY("Maximum", kMaximum);
DFLOW_GPU_NUMBER_BINARY("Minimum", kMinimum);
DFLOW_GPU_NUMBER_BINARY("SquaredDifference", kSquaredDifference);
DFLOW_GPU_NUMBER_BINARY("FloorDiv", kFloorDiv);
DFLOW_GPU_NUMBER_BINARY("FloorMod", kFloorMod);
DFLOW_GPU_BINARY("Pow", kPow);
DFLOW_GPU_BINARY("ReluGrad", kReluGrad);
REGISTER_KERNEL_FOR_TYPES("AddN", "GPU", GpuAddN, float);
REGISTER_KERNEL_FOR_TYPES("BiasAdd", "GPU", GpuBiasAdd, float);
// Registered for exactly the dtypes they run, so that placement (soft
// placement's fallback included) sees the others as having no GPU kernel.
template <typename T> using GpuFill = GpuFillKernel;
template <typename T> using GpuCast = GpuCastKernel;  // by SrcT, to any DstT
template <typename T> using GpuBroadcastTo = GpuBroadcastToKernel;
template <typename T> using GpuSelect = GpuSelectKernel;
template <typename T> using GpuOnesLike = GpuOnesLikeKernel;
template <typename T> using GpuAssignAdd = GpuAssignUpdateKernel<false>;
template <typename T> using GpuAssignSub = GpuAssignUpdateKernel<true>;
#define DFLOW_GPU_BYTE_AND_WORD_TYPES float, double, int32_t, int64_t, bool, uint8_t, int8_t
REGISTER_KERNEL_FOR_TYPES("Fill", "GPU", GpuFill, DFLOW_GPU_BYTE_AND_WORD_TYPES);
REGISTER_KERNEL_FOR_TYPES("Cast", "GPU", GpuCast, DFLOW_GPU_BYTE_AND_WORD_TYPES, Half);
REGISTER_KERNEL_FOR_TYPES("BroadcastTo", "GPU", GpuBroadcastTo, DFLOW_GPU_BYTE_AND_WORD_TYPES);
REGISTER_KERNEL_FOR_TYPES("Select", "GPU", GpuSelect, DFLOW_GPU_BYTE_AND_WORD_TYPES);
#undef DFLOW_GPU_BYTE_AND_WORD_TYPES
REGISTER_KERNEL_FOR_TYPES("OnesLike", "GPU", GpuOnesLike, float, double, int32_t, int64_t);
REGISTER_KERNEL_FOR_TYPES("AssignAdd", "GPU", GpuAssignAdd, float, double, int32_t, int64_t);
REGISTER_KERNEL_FOR_TYPES("AssignSub", "GPU", GpuAssignSub, float, double, int32_t, int64_t);

}  // namespace
}  // namespace dflow
