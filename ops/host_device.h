// DFLOW_HOST_DEVICE marks a function that is compiled for the host and, by
// nvcc, for CUDA devices too: arithmetic and index math that the CPU and GPU
// kernels share, or that the CPU-only tests check on the host.
#pragma once

#if defined(__CUDACC__)
#define DFLOW_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define DFLOW_HOST_DEVICE inline
#endif
