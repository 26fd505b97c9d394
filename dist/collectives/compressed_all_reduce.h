// The mean of the ranks' gradients sent through a gradient codec (the
// AdaLearner thesis): each rank encodes its own gradient — 1-bit with its own
// error-feedback residual, or fp16 — the encoded gradients are all-gathered,
// and every rank decodes all N and adds them in rank order. Every rank thus
// computes the same bits, and a rank sends (N-1) encoded gradients: for
// 1-bit about 1/32 of a float32 gradient each, where a float32 ring
// all-reduce sends 2(N-1)/N whole gradients. (1-bit values cannot be summed
// hop by hop as a ring all-reduce does, hence the all-gather.)
//
//   CompressedAllReduce reduce(comm, CodecKind::kOneBit, specs);
//   std::vector<Tensor> mean = reduce.Mean(grads);  // same order as specs
#pragma once

#include <memory>
#include <vector>

#include "dist/collectives/communicator.h"
#include "dist/collectives/gradient_buckets.h"
#include "dist/training/gradient_codec.h"

namespace dflow::dist {

class CompressedAllReduce {
 public:
  // float32 gradients only (the codecs' input).
  CompressedAllReduce(Communicator& comm, CodecKind kind, std::vector<GradientSpec> specs);

  // The mean over ranks of grads[i] as the codec lets it through, for each i.
  std::vector<Tensor> Mean(const std::vector<Tensor>& grads);

  CodecKind kind() const { return kind_; }

 private:
  Communicator& comm_;
  CodecKind kind_;
  std::vector<GradientSpec> specs_;
  std::vector<std::unique_ptr<GradientCodec>> codecs_;  // this rank's, with its residuals
};

}  // namespace dflow::dist
