// Checks on CUDA runtime and cuBLAS return codes: a failure throws an Error
// that names the call and what it was doing ("MatMul 'dense/matmul'"), so a
// GPU problem reads like any other dflow error instead of a crash.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string_view>

namespace dflow::cuda {

void Check(cudaError_t status, const char* call, std::string_view context);
void Check(cublasStatus_t status, const char* call, std::string_view context);

}  // namespace dflow::cuda

// DFLOW_CUDA(cudaMemcpyAsync(...), node.Describe());
#define DFLOW_CUDA(call, context) ::dflow::cuda::Check((call), #call, (context))
