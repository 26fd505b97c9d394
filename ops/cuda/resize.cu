// CUDA kernels of ResizeNearestNeighbor, ResizeBilinear and their gradients:
// one thread per element of the resized image. The forward passes gather
// with the CPU's float formula (top and bottom blends, then the vertical
// one); the gradients scatter with atomicAdd into a zeroed dx, since
// several output pixels read the same input pixel.
#include "ops/cuda/grid.cuh"
#include "ops/cuda/resize_launch.h"

namespace dflow::cuda {
namespace {

// Output element o as (image n, row i, column j, channel c).
struct Pixel {
  int64_t n, i, j, c;
};

__device__ Pixel PixelOf(const ResizeShape& s, int64_t o) {
  return {o / (s.out_h * s.out_w * s.channels), (o / (s.out_w * s.channels)) % s.out_h,
          (o / s.channels) % s.out_w, o % s.channels};
}

// The input element at (image n, row y, column x, channel c).
__device__ int64_t InputAt(const ResizeShape& s, int64_t n, int64_t y, int64_t x, int64_t c) {
  return ((n * s.in_h + y) * s.in_w + x) * s.channels + c;
}

__global__ void NearestKernel(ResizeShape s, ResizeTaps t, const float* in, float* out) {
  DFLOW_GRID_STRIDE(o, s.out_count()) {
    Pixel p = PixelOf(s, o);
    out[o] = in[InputAt(s, p.n, t.y_lower[p.i], t.x_lower[p.j], p.c)];
  }
}

__global__ void BilinearKernel(ResizeShape s, ResizeTaps t, const float* in, float* out) {
  DFLOW_GRID_STRIDE(o, s.out_count()) {
    Pixel p = PixelOf(s, o);
    int64_t y0 = t.y_lower[p.i], y1 = t.y_upper[p.i], x0 = t.x_lower[p.j], x1 = t.x_upper[p.j];
    float lx = t.x_lerp[p.j], ly = t.y_lerp[p.i];
    float tl = in[InputAt(s, p.n, y0, x0, p.c)], tr = in[InputAt(s, p.n, y0, x1, p.c)];
    float bl = in[InputAt(s, p.n, y1, x0, p.c)], br = in[InputAt(s, p.n, y1, x1, p.c)];
    float top = tl + (tr - tl) * lx, bottom = bl + (br - bl) * lx;
    out[o] = top + (bottom - top) * ly;
  }
}

__global__ void NearestGradKernel(ResizeShape s, ResizeTaps t, const float* grads, float* dx) {
  DFLOW_GRID_STRIDE(o, s.out_count()) {
    Pixel p = PixelOf(s, o);
    atomicAdd(dx + InputAt(s, p.n, t.y_lower[p.i], t.x_lower[p.j], p.c), grads[o]);
  }
}

// The adjoint of BilinearKernel: each tap gets grads times its weight.
__global__ void BilinearGradKernel(ResizeShape s, ResizeTaps t, const float* grads, float* dx) {
  DFLOW_GRID_STRIDE(o, s.out_count()) {
    Pixel p = PixelOf(s, o);
    int64_t y0 = t.y_lower[p.i], y1 = t.y_upper[p.i], x0 = t.x_lower[p.j], x1 = t.x_upper[p.j];
    float lx = t.x_lerp[p.j], ly = t.y_lerp[p.i], g = grads[o];
    atomicAdd(dx + InputAt(s, p.n, y0, x0, p.c), g * ((1 - ly) * (1 - lx)));
    atomicAdd(dx + InputAt(s, p.n, y0, x1, p.c), g * ((1 - ly) * lx));
    atomicAdd(dx + InputAt(s, p.n, y1, x0, p.c), g * (ly * (1 - lx)));
    atomicAdd(dx + InputAt(s, p.n, y1, x1, p.c), g * (ly * lx));
  }
}

}  // namespace

void LaunchResizeNearest(cudaStream_t stream, const ResizeShape& s, const ResizeTaps& taps,
                         const float* in, float* out) {
  if (s.out_count() > 0) NearestKernel<<<Blocks(s.out_count()), kThreads, 0, stream>>>(s, taps, in, out);
}

void LaunchResizeBilinear(cudaStream_t stream, const ResizeShape& s, const ResizeTaps& taps,
                          const float* in, float* out) {
  if (s.out_count() > 0) BilinearKernel<<<Blocks(s.out_count()), kThreads, 0, stream>>>(s, taps, in, out);
}

void LaunchResizeNearestGrad(cudaStream_t stream, const ResizeShape& s, const ResizeTaps& taps,
                             const float* grads, float* dx) {
  cudaMemsetAsync(dx, 0, sizeof(float) * s.in_count(), stream);
  if (s.out_count() > 0)
    NearestGradKernel<<<Blocks(s.out_count()), kThreads, 0, stream>>>(s, taps, grads, dx);
}

void LaunchResizeBilinearGrad(cudaStream_t stream, const ResizeShape& s, const ResizeTaps& taps,
                              const float* grads, float* dx) {
  cudaMemsetAsync(dx, 0, sizeof(float) * s.in_count(), stream);
  if (s.out_count() > 0)
    BilinearGradKernel<<<Blocks(s.out_count()), kThreads, 0, stream>>>(s, taps, grads, dx);
}

}  // namespace dflow::cuda
