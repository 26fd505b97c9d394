// Builders for matrix products: MatMul (rank 2, transpose flags) and
// BatchMatMul (rank >= 2, batch dims broadcast like numpy; TensorFlow's
// BatchMatMulV2 semantics under the name BatchMatMul).
#pragma once

#include "graph/scope.h"

namespace dflow::ops {

struct MatMulAttrs {
  bool transpose_a = false;
  bool transpose_b = false;
};
// product[m, n] = sum_k A[m, k] * B[k, n], where A = a or a^T, B = b or b^T.
Output MatMul(const Scope& scope, const Input& a, const Input& b, MatMulAttrs attrs = {});

struct BatchMatMulAttrs {
  bool adj_x = false;  // use the (conjugate, for reals plain) transpose of x's last two dims
  bool adj_y = false;
};
// output[..., m, n] = x[..., m, k] * y[..., k, n], the leading "batch" dims of
// x and y broadcast against each other (x [2,1,M,K] and y [3,K,N] give [2,3,M,N]).
Output BatchMatMul(const Scope& scope, const Input& x, const Input& y, BatchMatMulAttrs attrs = {});

}  // namespace dflow::ops
