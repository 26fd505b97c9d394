// CPU kernel of Cast between any two dtypes. Conversions C++ leaves undefined
// are defined here: floats to integers saturate and NaN becomes 0.
#include <cmath>
#include <limits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "ops/cpu/cwise.h"

namespace dflow {
namespace {

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T> || std::is_same_v<T, Half>;

// Rounds toward zero instead of to nearest when narrowing double to float.
float TruncateToFloat(double v) {
  float f = static_cast<float>(v);
  if (std::abs(f) > std::abs(v)) f = std::nextafter(f, 0.0f);  // rounded away: step back
  return f;
}

// Half's bit pattern is sign-magnitude, so one less in the low 15 bits is
// the next value toward zero.
Half TruncateToHalf(float v) {
  Half h(v);
  if (std::abs(static_cast<float>(h)) > std::abs(v)) h.bits = static_cast<uint16_t>(h.bits - 1);
  return h;
}

// Truncates toward zero and saturates at To's range; NaN becomes 0.
template <typename To>
To FloatToInt(double v) {
  // Both bounds are exact doubles: -2^(bits-1) (or 0) and 2^(bits-1) (or 2^bits).
  constexpr double kLower = static_cast<double>(std::numeric_limits<To>::min());
  constexpr double kUpper = static_cast<double>(std::numeric_limits<To>::max()) + 1.0;
  if (std::isnan(v)) return 0;
  if (v <= kLower) return std::numeric_limits<To>::min();
  if (v >= kUpper) return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

template <typename To, typename From>
To Convert(From v, bool truncate) {
  if constexpr (std::is_same_v<From, Half>) {
    return Convert<To>(static_cast<float>(v), truncate);
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<To, Half>) {
    if constexpr (std::is_same_v<From, double>) {
      return truncate ? TruncateToHalf(TruncateToFloat(v)) : Half(static_cast<float>(v));
    } else {
      float f = static_cast<float>(v);
      return truncate ? TruncateToHalf(f) : Half(f);
    }
  } else if constexpr (std::is_same_v<To, float> && std::is_same_v<From, double>) {
    return truncate ? TruncateToFloat(v) : static_cast<float>(v);
  } else if constexpr (std::is_integral_v<To> && kIsFloat<From>) {
    return FloatToInt<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);
  }
}

#if defined(__F16C__)
// float <-> float16 eight at a time with x86's F16C instructions, which round
// to nearest even like Half; the portable loop handles the tail.
static_assert(sizeof(Half) == 2);
void FloatsToHalves(const float* in, Half* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = Half(in[i]);
}
void HalvesToFloats(const Half* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}
#endif

// Converts in[begin, end) to out[begin, end).
template <typename From, typename To>
void ConvertRange(const From* in, To* out, int64_t begin, int64_t end, bool truncate) {
#if defined(__F16C__)
  if constexpr (std::is_same_v<From, float> && std::is_same_v<To, Half>) {
    if (!truncate) return FloatsToHalves(in + begin, out + begin, end - begin);
  } else if constexpr (std::is_same_v<From, Half> && std::is_same_v<To, float>) {
    return HalvesToFloats(in + begin, out + begin, end - begin);
  }
#endif
  for (int64_t i = begin; i < end; ++i) out[i] = Convert<To>(in[i], truncate);
}

class CastKernel : public OpKernel {
 public:
  explicit CastKernel(const Node& node)
      : OpKernel(node),
        src_(node.attr<DType>("SrcT")),
        dst_(node.attr<DType>("DstT")),
        truncate_(node.attr<bool>("Truncate")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (src_ == dst_) {
      ctx.set_output(0, x);
      return;
    }
    Tensor& y = ctx.allocate_output(0, x.shape());
#define DFLOW_CAST_TYPES float, double, Half, int8_t, uint8_t, int32_t, int64_t, bool
    Dispatch<DFLOW_CAST_TYPES>(src_, "Cast", [&]<typename From>() {
      Dispatch<DFLOW_CAST_TYPES>(dst_, "Cast", [&]<typename To>() {
        const From* in = x.data<From>();
        To* out = y.data<To>();
        const bool truncate = truncate_;
        int64_t cost = std::is_same_v<From, Half> || std::is_same_v<To, Half> ? 8 : 1;
        ctx.pool().ParallelFor(x.NumElements(), cost, [&](int64_t begin, int64_t end) {
          ConvertRange(in, out, begin, end, truncate);
        });
      });
    });
#undef DFLOW_CAST_TYPES
  }

 private:
  DType src_, dst_;
  bool truncate_;
};

REGISTER_KERNEL("Cast", "CPU", CastKernel);

}  // namespace
}  // namespace dflow
