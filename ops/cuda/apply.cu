// CUDA kernels of the fused optimizer steps (float32). The hyper-parameters
// stay on the device: every thread reads the same few scalars, so no step
// waits for a copy to the host.
#include <cstdint>

#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"

namespace dflow::cuda {
namespace {

// var -= alpha * delta
__global__ void GradientDescentKernel(float* var, const float* alpha, const float* delta, int64_t n) {
  float a = *alpha;
  DFLOW_GRID_STRIDE(i, n) var[i] -= a * delta[i];
}

// accum = accum * momentum + grad; var -= lr * accum
// (nesterov: var -= lr * grad + lr * momentum * accum)
__global__ void MomentumKernel(float* var, float* accum, const float* lr, const float* grad,
                               const float* momentum, bool nesterov, int64_t n) {
  float l = *lr, mu = *momentum;
  DFLOW_GRID_STRIDE(i, n) {
    float acc = accum[i] * mu + grad[i];
    accum[i] = acc;
    var[i] -= nesterov ? l * grad[i] + l * mu * acc : l * acc;
  }
}

// TensorFlow's Adam (epsilon outside the bias correction):
//   lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   var -= lr_t * m / (sqrt(v) + eps)   (nesterov: beta1 m + (1 - beta1) g in place of m)
__global__ void AdamKernel(float* var, float* m, float* v, const float* grad, AdamHyper hyper,
                           bool nesterov, int64_t n) {
  float beta1 = *hyper.beta1, beta2 = *hyper.beta2, epsilon = *hyper.epsilon;
  float lr_t = *hyper.lr * sqrtf(1.0f - *hyper.beta2_power) / (1.0f - *hyper.beta1_power);
  DFLOW_GRID_STRIDE(i, n) {
    float g = grad[i];
    float m_i = beta1 * m[i] + (1.0f - beta1) * g;
    float v_i = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = m_i;
    v[i] = v_i;
    float direction = nesterov ? beta1 * m_i + (1.0f - beta1) * g : m_i;
    var[i] -= lr_t * direction / (sqrtf(v_i) + epsilon);
  }
}

// ms = rho ms + (1 - rho) g^2;  mom = momentum mom + lr g / sqrt(ms + eps);  var -= mom
__global__ void RMSPropKernel(float* var, float* ms, float* mom, const float* grad,
                              RMSPropHyper hyper, int64_t n) {
  float lr = *hyper.lr, rho = *hyper.rho, momentum = *hyper.momentum, epsilon = *hyper.epsilon;
  DFLOW_GRID_STRIDE(i, n) {
    float g = grad[i];
    float ms_i = rho * ms[i] + (1.0f - rho) * g * g;
    float mom_i = momentum * mom[i] + lr * g / sqrtf(ms_i + epsilon);
    ms[i] = ms_i;
    mom[i] = mom_i;
    var[i] -= mom_i;
  }
}

}  // namespace

void LaunchApplyGradientDescent(cudaStream_t stream, float* var, const float* alpha,
                                const float* delta, int64_t n) {
  if (n > 0) GradientDescentKernel<<<Blocks(n), kThreads, 0, stream>>>(var, alpha, delta, n);
}

void LaunchApplyMomentum(cudaStream_t stream, float* var, float* accum, const float* lr,
                         const float* grad, const float* momentum, bool nesterov, int64_t n) {
  if (n > 0)
    MomentumKernel<<<Blocks(n), kThreads, 0, stream>>>(var, accum, lr, grad, momentum, nesterov, n);
}

void LaunchApplyAdam(cudaStream_t stream, float* var, float* m, float* v, const float* grad,
                     const AdamHyper& hyper, bool nesterov, int64_t n) {
  if (n > 0) AdamKernel<<<Blocks(n), kThreads, 0, stream>>>(var, m, v, grad, hyper, nesterov, n);
}

void LaunchApplyRMSProp(cudaStream_t stream, float* var, float* ms, float* mom, const float* grad,
                        const RMSPropHyper& hyper, int64_t n) {
  if (n > 0) RMSPropKernel<<<Blocks(n), kThreads, 0, stream>>>(var, ms, mom, grad, hyper, n);
}

}  // namespace dflow::cuda
