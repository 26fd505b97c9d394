// CPU kernels of the unary math ops (Neg ... Round). Transcendental
// functions go through Eigen's vectorised array functions (Vec); the rest
// are scalar functors that gcc vectorises.
#include <cmath>

#include "ops/cpu/cwise.h"

namespace dflow {
namespace {

using cwise::Unary;

struct Neg {
  template <typename T> T operator()(T x) const { return cwise::WrapNeg(x); }
};
struct Abs {
  template <typename T> T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return x < 0 ? cwise::WrapNeg(x) : x;
    else return std::abs(x);
  }
};
// Zeros (of either sign) and NaN map to themselves.
struct Sign {
  template <typename T> T operator()(T x) const {
    return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;
  }
};
struct Square {
  template <typename T> T operator()(T x) const { return cwise::WrapMul(x, x); }
};
struct Exp {
  static constexpr int64_t kCost = 10;
  auto Vec(const auto& x) const { return x.exp(); }
};
struct Log {
  static constexpr int64_t kCost = 10;
  auto Vec(const auto& x) const { return x.log(); }
};
struct Log1p {
  static constexpr int64_t kCost = 15;
  auto Vec(const auto& x) const { return x.log1p(); }
};
struct Sqrt {
  static constexpr int64_t kCost = 4;
  auto Vec(const auto& x) const { return x.sqrt(); }
};
struct Rsqrt {
  static constexpr int64_t kCost = 5;
  auto Vec(const auto& x) const { return x.rsqrt(); }
};
struct Reciprocal {
  static constexpr int64_t kCost = 4;
  auto Vec(const auto& x) const { return x.inverse(); }
};
struct Sin {
  static constexpr int64_t kCost = 15;
  auto Vec(const auto& x) const { return x.sin(); }
};
struct Cos {
  static constexpr int64_t kCost = 15;
  auto Vec(const auto& x) const { return x.cos(); }
};
struct Tanh {
  static constexpr int64_t kCost = 15;
  auto Vec(const auto& x) const { return x.tanh(); }
};
// 1 / (1 + e^-x); Eigen's logistic neither overflows nor loses the tails.
struct Sigmoid {
  static constexpr int64_t kCost = 15;
  auto Vec(const auto& x) const { return x.logistic(); }
};
struct Floor {
  auto Vec(const auto& x) const { return x.floor(); }
};
struct Ceil {
  auto Vec(const auto& x) const { return x.ceil(); }
};
// rint rounds in the default mode, round-half-to-even: TF's Round, unlike
// std::round (half away from zero).
struct Round {
  auto Vec(const auto& x) const { return x.rint(); }
};

#define DFLOW_FLOAT float, double
#define DFLOW_SIGNED float, double, int32_t, int64_t

REGISTER_KERNEL_FOR_TYPES("Neg", "CPU", Unary<Neg>::Kernel, DFLOW_SIGNED);
REGISTER_KERNEL_FOR_TYPES("Abs", "CPU", Unary<Abs>::Kernel, DFLOW_SIGNED);
REGISTER_KERNEL_FOR_TYPES("Sign", "CPU", Unary<Sign>::Kernel, DFLOW_SIGNED);
REGISTER_KERNEL_FOR_TYPES("Square", "CPU", Unary<Square>::Kernel, DFLOW_SIGNED);
REGISTER_KERNEL_FOR_TYPES("Exp", "CPU", Unary<Exp>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Log", "CPU", Unary<Log>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Log1p", "CPU", Unary<Log1p>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Sqrt", "CPU", Unary<Sqrt>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Rsqrt", "CPU", Unary<Rsqrt>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Reciprocal", "CPU", Unary<Reciprocal>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Sin", "CPU", Unary<Sin>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Cos", "CPU", Unary<Cos>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Tanh", "CPU", Unary<Tanh>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Sigmoid", "CPU", Unary<Sigmoid>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Floor", "CPU", Unary<Floor>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Ceil", "CPU", Unary<Ceil>::Kernel, DFLOW_FLOAT);
REGISTER_KERNEL_FOR_TYPES("Round", "CPU", Unary<Round>::Kernel, DFLOW_FLOAT);

}  // namespace
}  // namespace dflow
