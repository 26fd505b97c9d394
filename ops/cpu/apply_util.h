// Shared by the fused optimizer kernels (ops/cpu/apply_*.cc): reading the
// scalar hyper-parameters, locking the variable and its slots, the run-time
// checks, and a tiled parallel loop in which each kernel's Eigen array
// expressions run over a few hundred elements at a time (in L1 cache).
//
// Lock order: every apply kernel locks `var` first, then its slots in
// argument order, and holds all of them while it updates. Two apply nodes
// can therefore only deadlock if one variable is `var` of one and a slot of
// the other (or two slots swap roles) while both run, which no optimizer
// builds. A variable given twice to one node is rejected before locking.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/cpu/eigen.h"

#include "graph/kernel.h"

namespace dflow::apply {

// A run of `count` elements seen as an Eigen array (no copy).
template <typename T>
using Vec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Throws naming the node and argument unless input i is a scalar.
void RequireScalar(const OpKernelContext& ctx, int input);

// Hyper-parameter input i, which must be a scalar.
template <typename T>
T ReadScalar(const OpKernelContext& ctx, int input) {
  RequireScalar(ctx, input);
  return *ctx.input(input).data<T>();
}

// The variables behind ref inputs `inputs` (var first), each initialised and
// none given twice; throws naming the node and argument otherwise.
std::vector<Variable*> RefVariables(const OpKernelContext& ctx, const std::vector<int>& inputs);

// Throws naming the node and argument unless `shape` (input i's) is var's.
void RequireVarShape(const OpKernelContext& ctx, int input, const Shape& shape,
                     const Shape& var_shape);

// Calls fn(values) with vars[k]'s value in values[k], every variable locked
// (in order) and unshared (copy-on-write).
template <size_t K = 0, size_t N, typename Fn>
void UpdateAll(const std::array<Variable*, N>& vars, std::array<Tensor*, N>& values, Fn& fn) {
  if constexpr (K == N) {
    fn(values);
  } else {
    vars[K]->Update([&](Tensor& value) {
      values[K] = &value;
      UpdateAll<K + 1>(vars, values, fn);
    });
  }
}

// Tiles of this many elements keep var, slots and grad of a tile in L1.
inline constexpr int64_t kTile = 512;

// Runs an apply op on input 0 (var), the ref inputs `slot_inputs` and input
// `grad_input`: step(var, slots, grad, count) updates `count` elements at the
// given pointers; it is called on tiles split over the thread pool, with all
// the variables locked. Step::kCost is its rough cost per element. Sets
// output 0 to the updated var.
template <typename T, size_t K, typename Step>
void Run(OpKernelContext& ctx, const std::array<int, K>& slot_inputs, int grad_input,
         const Step& step) {
  std::vector<int> refs = {0};
  refs.insert(refs.end(), slot_inputs.begin(), slot_inputs.end());
  std::vector<Variable*> found = RefVariables(ctx, refs);
  std::array<Variable*, K + 1> vars;
  std::copy(found.begin(), found.end(), vars.begin());
  const Tensor& grad = ctx.input(grad_input);
  auto update = [&](const std::array<Tensor*, K + 1>& values) {
    const Shape& var_shape = values[0]->shape();
    for (size_t k = 1; k <= K; ++k) RequireVarShape(ctx, refs[k], values[k]->shape(), var_shape);
    RequireVarShape(ctx, grad_input, grad.shape(), var_shape);
    T* var = values[0]->template data<T>();
    std::array<T*, K> slots;
    for (size_t k = 0; k < K; ++k) slots[k] = values[k + 1]->template data<T>();
    const T* g = grad.data<T>();
    ctx.pool().ParallelFor(values[0]->NumElements(), Step::kCost, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; i += kTile) {
        std::array<T*, K> tile;
        for (size_t k = 0; k < K; ++k) tile[k] = slots[k] + i;
        step(var + i, tile, g + i, std::min(kTile, end - i));
      }
    });
  };
  std::array<Tensor*, K + 1> values{};
  UpdateAll(vars, values, update);
  ctx.set_output(0, vars[0]->Read());
}

// TensorFlow's Adam step (epsilon added outside the bias correction), shared
// by ApplyAdam and ApplyAdamW:
//   lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   var -= lr_t * m / (sqrt(v) + epsilon)
//   nesterov: var -= lr_t * (beta1 * m + (1 - beta1) * g) / (sqrt(v) + epsilon)
template <typename T>
struct AdamStep {
  T lr_t, beta1, beta2, epsilon;
  bool use_nesterov;

  // Reads beta1_power, beta2_power, lr, beta1, beta2, epsilon from inputs 3..8.
  AdamStep(const OpKernelContext& ctx, bool nesterov)
      : beta1(ReadScalar<T>(ctx, 6)), beta2(ReadScalar<T>(ctx, 7)),
        epsilon(ReadScalar<T>(ctx, 8)), use_nesterov(nesterov) {
    T beta1_power = ReadScalar<T>(ctx, 3), beta2_power = ReadScalar<T>(ctx, 4);
    lr_t = ReadScalar<T>(ctx, 5) * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
  }

  void operator()(Vec<T> var, Vec<T> m, Vec<T> v, ConstVec<T> g) const {
    m = beta1 * m + (T(1) - beta1) * g;
    v = beta2 * v + (T(1) - beta2) * g.square();
    if (use_nesterov)
      var -= lr_t * (beta1 * m + (T(1) - beta1) * g) / (v.sqrt() + epsilon);
    else
      var -= lr_t * m / (v.sqrt() + epsilon);
  }
};

}  // namespace dflow::apply
