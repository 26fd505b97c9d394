#include "dist/collectives/compressed_all_reduce.h"

namespace dflow::dist {

CompressedAllReduce::CompressedAllReduce(Communicator& comm, CodecKind kind, std::vector<GradientSpec> specs)
    : comm_(comm), kind_(kind), specs_(std::move(specs)) {
  for (const GradientSpec& spec : specs_) {
    DFLOW_REQUIRE(spec.dtype == DType::kFloat32, "CompressedAllReduce: gradient '", spec.name,
                  "' is ", DTypeName(spec.dtype), "; the codecs take float32");
    codecs_.push_back(MakeGradientCodec(kind_, spec.shape));
  }
}

std::vector<Tensor> CompressedAllReduce::Mean(const std::vector<Tensor>& grads) {
  DFLOW_REQUIRE(grads.size() == specs_.size(), "CompressedAllReduce: ", grads.size(),
                " gradients for ", specs_.size(), " specs");
  std::vector<Tensor> means;
  const float ranks = static_cast<float>(comm_.num_ranks());
  for (size_t i = 0; i < grads.size(); ++i) {
    std::vector<Bytes> encoded = comm_.AllGather(
        StrCat("codec(", CodecName(kind_), ")/", specs_[i].name), codecs_[i]->Encode(grads[i]));
    // Decoding is stateless: this rank's codec decodes every rank's bytes.
    Tensor sum = codecs_[i]->Decode(encoded[0]);
    float* total = sum.data<float>();
    for (size_t r = 1; r < encoded.size(); ++r) {
      Tensor part = codecs_[i]->Decode(encoded[r]);
      const float* values = part.data<float>();
      for (int64_t e = 0; e < sum.NumElements(); ++e) total[e] += values[e];
    }
    for (int64_t e = 0; e < sum.NumElements(); ++e) total[e] /= ranks;
    means.push_back(std::move(sum));
  }
  return means;
}

}  // namespace dflow::dist
