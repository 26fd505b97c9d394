// Shared by the GPU kernels' host code (ops/cuda/*.cc): the device and
// stream of a kernel's context, launch checks, and reading small tensors
// (shapes, axes, scalars) on the host wherever they live.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "graph/cuda/cuda_check.h"
#include "graph/cuda/cuda_device.h"
#include "graph/kernel.h"
#include "ops/conv.h"
#include "ops/cuda/conv_shape.h"

namespace dflow::cuda {

inline CudaDevice& Gpu(const OpKernelContext& ctx) { return AsCudaDevice(ctx.device()); }
// The device's stream, with its GPU made current on this thread.
inline cudaStream_t Stream(const OpKernelContext& ctx) {
  return Gpu(ctx).Activate(ctx.node().Describe());
}
// Throws naming the node when the launch that just happened failed.
void CheckLaunch(const OpKernelContext& ctx, const char* kernel);

// Input i as a host tensor: itself when in host memory, its value when the
// graph knows it (graph/graph.h's KnownValue: no wait), else a copy (waits
// for the stream; meant for shapes, axes and other small inputs).
Tensor HostInput(const OpKernelContext& ctx, int input);
std::vector<int64_t> HostInt64s(const OpKernelContext& ctx, int input, std::string_view what);

// Registers Kernel for (op, "GPU", dtype); kInvalid: any dtype.
//   const KernelRegistrar kConvKernels[] = {Float32Kernel<K>("Conv2D"), ...};
template <typename Kernel>
KernelRegistrar GpuKernel(const char* op, DType dtype) {
  return KernelRegistrar(op, "GPU", dtype,
                         [](const Node& node) { return std::unique_ptr<OpKernel>(new Kernel(node)); });
}
template <typename Kernel>
KernelRegistrar Float32Kernel(const char* op) {
  return GpuKernel<Kernel>(op, DType::kFloat32);
}

// A convolution's geometry flattened for the kernels.
ConvShape ConvShapeOf(const ConvGeometry& g);

// Row-major strides of `shape`.
std::vector<int64_t> Strides(const Shape& shape);
// Strides of `shape` seen from the broadcast output `out`: 0 on the dims it
// lacks (leading) or has as 1; out.rank() entries.
void BroadcastStrides(const Shape& shape, const Shape& out, int64_t* strides);

}  // namespace dflow::cuda
