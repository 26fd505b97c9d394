// Gradient codecs for data-parallel training (AdaLearner): what a
// worker sends instead of its float32 gradient. fp16 halves the bytes; 1-bit
// quantization sends one sign bit per element plus, per column (the last
// dimension: a dense layer's output unit, a conv filter), the mean of the
// positive and of the negative values, and keeps the quantization error as a
// residual that is added to the next step's gradient (error feedback), so
// over steps nothing is lost.
//
//   auto codec = MakeGradientCodec(ParseCodecKind("1bit"), w.shape());  // per worker, per gradient
//   Bytes wire = codec->Encode(grad);          // on the worker
//   Tensor approx = codec->Decode(wire);       // on whoever aggregates
#pragma once

#include <memory>
#include <string_view>

#include "dist/collectives/point_to_point.h"
#include "graph/tensor.h"

namespace dflow::dist {

enum class CodecKind { kNone, kFloat16, kOneBit };

// "none", "fp16" or "1bit"; throws naming the accepted names.
CodecKind ParseCodecKind(std::string_view name);
std::string_view CodecName(CodecKind kind);

// Encodes the float32 gradients of one variable. An encoder may carry state
// between steps (the 1-bit residual), so each worker keeps one per variable.
class GradientCodec {
 public:
  virtual ~GradientCodec() = default;
  const Shape& shape() const { return shape_; }
  // Throws naming the expected dtype and shape when `gradient` differs.
  virtual Bytes Encode(const Tensor& gradient) = 0;
  // Throws kInvalidArgument when `bytes` has the wrong length for the shape.
  virtual Tensor Decode(const Bytes& bytes) const = 0;

 protected:
  explicit GradientCodec(Shape shape);
  void CheckGradient(const Tensor& gradient) const;
  void CheckLength(const Bytes& bytes, size_t expected) const;

 private:
  Shape shape_;
};

std::unique_ptr<GradientCodec> MakeGradientCodec(CodecKind kind, Shape shape);

// float32 -> IEEE binary16, round to nearest even; values beyond the binary16
// range saturate at +-65504 (an infinite gradient would poison the update).
Bytes EncodeFloat16(const Tensor& gradient);
Tensor DecodeFloat16(const Bytes& bytes, const Shape& shape);

// 1-bit quantization with error feedback; see the file comment.
class OneBitCodec final : public GradientCodec {
 public:
  explicit OneBitCodec(Shape shape);
  // c = gradient + residual; bit = c >= 0; scale per column = the mean of
  // c's non-negative (resp. negative) values in that column; the residual
  // becomes c - decode(bits). Each column's decoded sum equals its sum of c.
  Bytes Encode(const Tensor& gradient) override;
  Tensor Decode(const Bytes& bytes) const override;

  // The error carried into the next step (float32, the gradient's shape).
  const Tensor& residual() const { return residual_; }
  int64_t columns() const { return columns_; }
  // Bytes on the wire: 2 floats per column, then one bit per element.
  size_t EncodedBytes() const;

 private:
  int64_t columns_;
  Tensor residual_;
};

}  // namespace dflow::dist
