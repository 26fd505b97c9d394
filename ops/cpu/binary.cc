// CPU kernels of the broadcasting binary math ops (Add ... FloorMod). Integer
// arithmetic wraps on overflow; integer division checks for a zero divisor
// first (kDivides) and treats y == -1 apart, since INT_MIN / -1 traps.
#include <cmath>

#include "ops/cpu/cwise.h"

namespace dflow {
namespace {

using cwise::Binary;

struct Add {
  template <typename T> T operator()(T x, T y) const { return cwise::WrapAdd(x, y); }
};
struct Sub {
  template <typename T> T operator()(T x, T y) const { return cwise::WrapSub(x, y); }
};
struct Mul {
  template <typename T> T operator()(T x, T y) const { return cwise::WrapMul(x, y); }
};
// Integers: truncated toward zero, like C and TF's Div.
struct Div {
  static constexpr bool kDivides = true;
  template <typename T> T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) return y == -1 ? cwise::WrapNeg(x) : x / y;
    else return x / y;
  }
};
struct Pow {
  static constexpr int64_t kCost = 30;
  template <typename T> T operator()(T x, T y) const { return std::pow(x, y); }
};
// A NaN on either side gives NaN.
struct Maximum {
  template <typename T> T operator()(T x, T y) const { return x != x || x > y ? x : y; }
};
struct Minimum {
  template <typename T> T operator()(T x, T y) const { return x != x || x < y ? x : y; }
};
struct SquaredDifference {
  template <typename T> T operator()(T x, T y) const {
    T d = cwise::WrapSub(x, y);
    return cwise::WrapMul(d, d);
  }
};
// floor(x / y): an inexact integer quotient of mixed signs is one below C's.
struct FloorDiv {
  static constexpr bool kDivides = true;
  template <typename T> T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      if (y == -1) return cwise::WrapNeg(x);
      T q = x / y;
      return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
    } else {
      return std::floor(x / y);
    }
  }
};
// x - floor(x / y) * y: C's remainder moved to y's sign when they differ.
struct FloorMod {
  static constexpr bool kDivides = true;
  template <typename T> T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      if (y == -1) return 0;
      T r = x % y;
      return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
    } else {
      T r = std::fmod(x, y);
      return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
    }
  }
};

#define DFLOW_NUMBER float, double, int32_t, int64_t

REGISTER_KERNEL_FOR_TYPES("Add", "CPU", Binary<Add>::Kernel, DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("Sub", "CPU", Binary<Sub>::Kernel, DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("Mul", "CPU", Binary<Mul>::Kernel, DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("Div", "CPU", Binary<Div>::Kernel, DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("Pow", "CPU", Binary<Pow>::Kernel, float, double);
REGISTER_KERNEL_FOR_TYPES("Maximum", "CPU", Binary<Maximum>::Kernel, DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("Minimum", "CPU", Binary<Minimum>::Kernel, DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("SquaredDifference", "CPU", Binary<SquaredDifference>::Kernel,
                          DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("FloorDiv", "CPU", Binary<FloorDiv>::Kernel, DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("FloorMod", "CPU", Binary<FloorMod>::Kernel, DFLOW_NUMBER);

}  // namespace
}  // namespace dflow
