#include "dist/training/ring_training.h"

#include "dist/cluster.h"

namespace dflow::dist {

RingAllReduceStrategy::RingAllReduceStrategy(PointToPoint& link, std::vector<GradientSpec> specs,
                                             RingOptions options)
    : link_(link),
      comm_(link, options.collective),
      buckets_(comm_, specs, Resolved(options).buckets),
      timeout_(options.collective.timeout) {
  MakeCompressed(specs, options.codec);
}

RingAllReduceStrategy::RingAllReduceStrategy(std::unique_ptr<ZmqLink> link, std::vector<GradientSpec> specs,
                                             RingOptions options)
    : owned_link_(std::move(link)),
      link_(*owned_link_),
      comm_(link_, options.collective),
      buckets_(comm_, specs, Resolved(options).buckets),
      timeout_(options.collective.timeout) {
  MakeCompressed(specs, options.codec);
}

// The fp16 codec is the buckets' fp16 wire format.
RingOptions RingAllReduceStrategy::Resolved(RingOptions options) {
  if (options.codec == CodecKind::kFloat16) options.buckets.fp16_on_wire = true;
  return options;
}

void RingAllReduceStrategy::MakeCompressed(const std::vector<GradientSpec>& specs, CodecKind codec) {
  if (codec == CodecKind::kOneBit) compressed_ = std::make_unique<CompressedAllReduce>(comm_, codec, specs);
}

std::unique_ptr<RingAllReduceStrategy> RingAllReduceStrategy::Connect(const ClusterSpec& cluster,
                                                                      std::vector<GradientSpec> specs,
                                                                      RingOptions options) {
  return Own(ZmqLink::ForCluster(cluster, options.link), std::move(specs), std::move(options));
}

std::unique_ptr<RingAllReduceStrategy> RingAllReduceStrategy::Own(std::unique_ptr<ZmqLink> link,
                                                                  std::vector<GradientSpec> specs,
                                                                  RingOptions options) {
  return std::unique_ptr<RingAllReduceStrategy>(
      new RingAllReduceStrategy(std::move(link), std::move(specs), std::move(options)));
}

void RingAllReduceStrategy::BroadcastFromChief(const std::string& name, Tensor& value) {
  comm_.Broadcast("variables/" + name, value);
}

std::vector<Tensor> RingAllReduceStrategy::AverageGradients(const std::vector<Tensor>& gradients) {
  DFLOW_REQUIRE(static_cast<int>(gradients.size()) == buckets_.num_gradients(), "worker ", worker(),
                ": AverageGradients got ", gradients.size(), " gradients for ", buckets_.num_gradients(), " specs");
  if (num_workers() == 1) return gradients;  // the mean of one: no copies into buckets
  if (compressed_) return compressed_->Mean(gradients);
  for (size_t i = 0; i < gradients.size(); ++i) buckets_.Ready(static_cast<int>(i), gradients[i]);
  return buckets_.Finish();
}

void RingAllReduceStrategy::GradientReady(int index, const Tensor& gradient) {
  if (num_workers() == 1 || compressed_) return DataParallelStrategy::GradientReady(index, gradient);
  buckets_.Ready(index, gradient);
}

std::vector<Tensor> RingAllReduceStrategy::AverageReadyGradients() {
  if (num_workers() == 1 || compressed_) return DataParallelStrategy::AverageReadyGradients();
  return buckets_.Finish();
}

bool RingAllReduceStrategy::AnyWorker(bool flag) {
  Tensor votes = Tensor::Scalar<int32_t>(flag ? 1 : 0);
  comm_.AllReduce("any_worker", votes, ReduceOp::kSum);
  return votes.scalar<int32_t>() > 0;
}

void RingAllReduceStrategy::Finish() {
  // Agreed first, so a worker that stopped early is an error, not a hang;
  // then nothing any worker sent is still on its way when one exits.
  Tensor arrived = Tensor::Scalar<int32_t>(1);
  comm_.AllReduce("finish", arrived, ReduceOp::kSum);
  link_.Shutdown(std::chrono::steady_clock::now() + timeout_);
}

}  // namespace dflow::dist
