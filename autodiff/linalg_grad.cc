// Gradient rules of MatMul and BatchMatMul (ops/linalg.cc). For C = A B,
// dL/dA = G B^T and dL/dB = A^T G; with transposed operands the same
// identities are rearranged so that no explicit transpose is materialised:
//   C = A B^T:   dA = G B,        dB = G^T A
//   C = A^T B:   dA = B G^T,      dB = A G
//   C = A^T B^T: dA = B^T G^T,    dB = G^T A^T
// BatchMatMul applies the same per matrix; its broadcast batch dims are
// summed back by the builder.
#include "autodiff/gradients.h"
#include "ops/linalg.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;

// The product of p and q with their transpose flags, in MatMul or BatchMatMul.
using Product = Output (*)(const Scope&, const Output&, const Output&, bool, bool);

Output MatMulOf(const Scope& s, const Output& p, const Output& q, bool tp, bool tq) {
  return ops::MatMul(s, p, q, {.transpose_a = tp, .transpose_b = tq});
}
Output BatchMatMulOf(const Scope& s, const Output& p, const Output& q, bool tp, bool tq) {
  return ops::BatchMatMul(s, p, q, {.adj_x = tp, .adj_y = tq});
}

Grads ProductGrad(const Scope& s, Node* op, const Output& g, bool ta, bool tb, Product product) {
  Output a = Input0(op), b = InputOf(op, 1);
  if (!ta && !tb) return {product(s, g, b, false, true), product(s, a, g, true, false)};
  if (!ta && tb) return {product(s, g, b, false, false), product(s, g, a, true, false)};
  if (ta && !tb) return {product(s, b, g, false, true), product(s, a, g, false, false)};
  return {product(s, b, g, true, true), product(s, g, a, true, true)};
}

Grads MatMulGrad(const Scope& s, Node* op, const Grads& g) {
  return ProductGrad(s, op, g[0], op->attr<bool>("transpose_a"), op->attr<bool>("transpose_b"),
                     MatMulOf);
}
Grads BatchMatMulGrad(const Scope& s, Node* op, const Grads& g) {
  return ProductGrad(s, op, g[0], op->attr<bool>("adj_x"), op->attr<bool>("adj_y"),
                     BatchMatMulOf);
}

REGISTER_GRADIENT("MatMul", MatMulGrad);
REGISTER_GRADIENT("BatchMatMul", BatchMatMulGrad);

}  // namespace
}  // namespace dflow::autodiff
