// Matrix products: MatMul and BatchMatMul declarations, shape functions and
// builders. Kernels: ops/cpu/matmul.cc, ops/cpu/batch_matmul.cc.
#include "ops/linalg.h"

namespace dflow {
namespace {

// " (transpose_a, transpose_b)" naming the flags that are set, for messages.
std::string FlagNote(bool first, const char* first_name, bool second, const char* second_name) {
  if (!first && !second) return "";
  if (first && second) return StrCat(" (", first_name, ", ", second_name, ")");
  return StrCat(" (", first ? first_name : second_name, ")");
}

// Contraction dims of a matrix product of (..., r, c) operands; -1 unknown.
struct ProductDims {
  int64_t m, k_left, k_right, n;
};

ProductDims Dims(const Shape& left, bool transpose_left, const Shape& right, bool transpose_right) {
  int lr = left.rank(), rr = right.rank();
  int64_t l0 = left.dim(lr - 2), l1 = left.dim(lr - 1);
  int64_t r0 = right.dim(rr - 2), r1 = right.dim(rr - 1);
  return {transpose_left ? l1 : l0, transpose_left ? l0 : l1, transpose_right ? r1 : r0,
          transpose_right ? r0 : r1};
}

void MatMulShape(InferenceContext& ctx) {
  const Shape& a = ctx.input_shape(0);
  const Shape& b = ctx.input_shape(1);
  bool ta = ctx.attr<bool>("transpose_a"), tb = ctx.attr<bool>("transpose_b");
  if (!a.unknown_rank() && a.rank() != 2) ctx.Fail("a must be a matrix (rank 2), got ", a.ToString());
  if (!b.unknown_rank() && b.rank() != 2) ctx.Fail("b must be a matrix (rank 2), got ", b.ToString());
  Shape a2 = a.unknown_rank() ? Shape{-1, -1} : a;
  Shape b2 = b.unknown_rank() ? Shape{-1, -1} : b;
  ProductDims d = Dims(a2, ta, b2, tb);
  if (d.k_left >= 0 && d.k_right >= 0 && d.k_left != d.k_right)
    ctx.Fail("inner dimensions differ: a is ", a.ToString(), ", b is ", b.ToString(),
             FlagNote(ta, "transpose_a", tb, "transpose_b"));
  ctx.set_output(0, Shape{d.m, d.n});
}

void BatchMatMulShape(InferenceContext& ctx) {
  const Shape& x = ctx.input_shape(0);
  const Shape& y = ctx.input_shape(1);
  bool ax = ctx.attr<bool>("adj_x"), ay = ctx.attr<bool>("adj_y");
  if (!x.unknown_rank() && x.rank() < 2) ctx.Fail("x must have rank >= 2, got ", x.ToString());
  if (!y.unknown_rank() && y.rank() < 2) ctx.Fail("y must have rank >= 2, got ", y.ToString());
  if (x.unknown_rank() || y.unknown_rank()) return;  // output rank unknown
  ProductDims d = Dims(x, ax, y, ay);
  if (d.k_left >= 0 && d.k_right >= 0 && d.k_left != d.k_right)
    ctx.Fail("inner dimensions differ: x is ", x.ToString(), ", y is ", y.ToString(),
             FlagNote(ax, "adj_x", ay, "adj_y"));
  // Batch dims broadcast from the right; a known non-1 pair must agree.
  std::vector<int64_t> bx(x.dims().begin(), x.dims().end() - 2);
  std::vector<int64_t> by(y.dims().begin(), y.dims().end() - 2);
  size_t rank = std::max(bx.size(), by.size());
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t dx = i + bx.size() >= rank ? bx[i + bx.size() - rank] : 1;
    int64_t dy = i + by.size() >= rank ? by[i + by.size() - rank] : 1;
    if (dx == 1) dims[i] = dy;
    else if (dy == 1) dims[i] = dx;
    else if (dx < 0) dims[i] = dy;  // x's dim must be 1 or dy; either way the result is dy
    else if (dy < 0) dims[i] = dx;
    else if (dx != dy)
      ctx.Fail("batch dimensions do not broadcast: x is ", x.ToString(), ", y is ", y.ToString());
    else dims[i] = dx;
  }
  dims.push_back(d.m);
  dims.push_back(d.n);
  ctx.set_output(0, Shape(std::move(dims)));
}

}  // namespace

REGISTER_OP("MatMul")
    .input("a", "T")
    .input("b", "T")
    .output("product", "T")
    .attr<bool>("transpose_a", false)
    .attr<bool>("transpose_b", false)
    .type_attr("T", kNumberTypes)
    .shape_fn(MatMulShape)
    .doc("Matrix product of two rank-2 tensors: product = op(a) * op(b), where op(a) is a^T "
         "when transpose_a is set (likewise b). The inner dimensions must agree.");

REGISTER_OP("BatchMatMul")
    .input("x", "T")
    .input("y", "T")
    .output("output", "T")
    .attr<bool>("adj_x", false)
    .attr<bool>("adj_y", false)
    .type_attr("T", kNumberTypes)
    .shape_fn(BatchMatMulShape)
    .broadcasting()
    .doc("Batched matrix product over the last two dims: output[..., :, :] = op(x[..., :, :]) * "
         "op(y[..., :, :]), where op transposes when adj_x / adj_y is set. The leading batch "
         "dims broadcast like numpy (TensorFlow's BatchMatMulV2 semantics; dflow has no "
         "separate V1 op).");

namespace ops {

Output MatMul(const Scope& scope, const Input& a, const Input& b, MatMulAttrs attrs) {
  return scope.AddOp("MatMul", {a, b},
                     {{"transpose_a", attrs.transpose_a}, {"transpose_b", attrs.transpose_b}});
}

Output BatchMatMul(const Scope& scope, const Input& x, const Input& y, BatchMatMulAttrs attrs) {
  return scope.AddOp("BatchMatMul", {x, y}, {{"adj_x", attrs.adj_x}, {"adj_y", attrs.adj_y}});
}

}  // namespace ops
}  // namespace dflow
