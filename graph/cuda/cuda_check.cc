#include "graph/cuda/cuda_check.h"

#include "graph/status.h"

namespace dflow::cuda {

void Check(cudaError_t status, const char* call, std::string_view context) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  Fail(status == cudaErrorMemoryAllocation ? Code::kUnavailable : Code::kInternal, context,
       ": CUDA call ", call, " failed: ", cudaGetErrorName(status), " (",
       cudaGetErrorString(status), ")");
}

void Check(cublasStatus_t status, const char* call, std::string_view context) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  Fail(Code::kInternal, context, ": cuBLAS call ", call, " failed: ",
       cublasGetStatusName(status), " (", cublasGetStatusString(status), ")");
}

}  // namespace dflow::cuda
