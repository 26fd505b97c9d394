// CPU kernels of the activation ops (Relu, Relu6, LeakyRelu, Elu, Softplus).
#include <cmath>
#include <type_traits>

#include "ops/cpu/cwise.h"

namespace dflow {
namespace {

using cwise::Binary;
using cwise::Unary;

// Comparisons written so that NaN passes through.
struct Relu {
  template <typename T> T operator()(T x) const { return x < T(0) ? T(0) : x; }
};
struct Relu6 {
  template <typename T> T operator()(T x) const {
    return x < T(0) ? T(0) : x > T(6) ? T(6) : x;
  }
};

// g where the feature is positive; NaN features give 0, like TensorFlow's.
struct ReluGrad {
  template <typename T> T operator()(T g, T x) const { return x > T(0) ? g : T(0); }
};

class LeakyRelu {
 public:
  explicit LeakyRelu(const Node& node) : alpha_(node.attr<double>("alpha")) {}
  template <typename T> T operator()(T x) const {
    return x < T(0) ? static_cast<T>(alpha_) * x : x;
  }

 private:
  double alpha_;
};

// x for x > 0, else e^x - 1 (expm1 keeps precision near 0).
struct Elu {
  static constexpr int64_t kCost = 15;
  auto Vec(const auto& x) const {
    using T = typename std::decay_t<decltype(x)>::Scalar;
    return (x > T(0)).select(x, x.expm1());
  }
};

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): e^-|x| <= 1 never overflows, and
// for very negative x the result is ~e^x rather than log(1 + tiny) = 0.
// Where e^-|x| is subnormal, Eigen's vectorised exp without AVX2 clamps its
// argument (an SSE2 build gave e^-88.7 for e^-100), so there it is taken as
// e^(-|x| + s) * e^-s: a normal exp, and a product rounded into the subnormals.
struct Softplus {
  static constexpr int64_t kCost = 25;
  auto Vec(const auto& x) const {
    using T = typename std::decay_t<decltype(x)>::Scalar;
    constexpr bool kFloat = std::is_same_v<T, float>;
    constexpr T kLow = kFloat ? T(-80) : T(-700);   // e^kLow is still normal
    constexpr T kShift = kFloat ? T(64) : T(512);   // e^-kShift too
    const T scale_less_one = std::exp(-kShift) - T(1);
    auto below = (-x.abs() < kLow).template cast<T>();  // 1 where e^-|x| may be subnormal
    auto e = (-x.abs() + below * kShift).exp() * (T(1) + below * scale_less_one);
    return x.max(T(0)) + e.log1p();
  }
};

REGISTER_KERNEL_FOR_TYPES("Relu", "CPU", Unary<Relu>::Kernel, float, double, int32_t, int64_t);
REGISTER_KERNEL_FOR_TYPES("ReluGrad", "CPU", Binary<ReluGrad>::Kernel, float, double, int32_t,
                          int64_t);
REGISTER_KERNEL_FOR_TYPES("Relu6", "CPU", Unary<Relu6>::Kernel, float, double, int32_t, int64_t);
REGISTER_KERNEL_FOR_TYPES("LeakyRelu", "CPU", Unary<LeakyRelu>::Kernel, float, double);
REGISTER_KERNEL_FOR_TYPES("Elu", "CPU", Unary<Elu>::Kernel, float, double);
REGISTER_KERNEL_FOR_TYPES("Softplus", "CPU", Unary<Softplus>::Kernel, float, double);

}  // namespace
}  // namespace dflow
