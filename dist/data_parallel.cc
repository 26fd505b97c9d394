#include "dist/data_parallel.h"

#include "dist/cluster.h"
#include "dist/ring_training.h"

namespace dflow::dist {

void RequireStrategy(const std::string& name) {
  if (name == "ring") return;
  if (name == "ps")
    Fail(Code::kUnimplemented, "the parameter-server strategy across processes is not available in this ",
         "build yet; use --strategy ring");
  Fail(Code::kInvalidArgument, "unknown data-parallel strategy '", name, "' (expected ring or ps)");
}

std::unique_ptr<DataParallelStrategy> MakeDataParallelStrategy(const std::string& name,
                                                               const ClusterSpec& cluster,
                                                               std::vector<GradientSpec> specs,
                                                               const StrategyOptions& options) {
  RequireStrategy(name);
  RingOptions ring;
  ring.collective.timeout = options.collective_timeout;
  ring.buckets.fp16_on_wire = options.fp16_on_wire;
  ring.buckets.bucket_bytes = options.bucket_bytes;
  ring.link.startup_timeout = options.startup_timeout;
  return RingAllReduceStrategy::Connect(cluster, std::move(specs), ring);
}

std::vector<Tensor> RunDataParallelStep(Session& session, DataParallelStrategy& strategy,
                                        const ReplicatedStep& step, const FeedList& feeds) {
  DFLOW_REQUIRE(step.gradients.size() == step.gradient_feeds.size(), "RunDataParallelStep: ",
                step.gradients.size(), " gradients but ", step.gradient_feeds.size(), " gradient feeds");
  std::vector<TensorName> fetches = step.gradients;
  fetches.insert(fetches.end(), step.extra_fetches.begin(), step.extra_fetches.end());
  std::vector<Tensor> fetched = session.Run(feeds, fetches);
  const size_t num_gradients = step.gradients.size();
  std::vector<Tensor> mean = strategy.AverageGradients(
      std::vector<Tensor>(fetched.begin(), fetched.begin() + static_cast<std::ptrdiff_t>(num_gradients)));
  FeedList apply_feeds;
  for (size_t i = 0; i < num_gradients; ++i) apply_feeds.push_back({step.gradient_feeds[i], std::move(mean[i])});
  session.Run(apply_feeds, {}, step.apply);
  return std::vector<Tensor>(fetched.begin() + static_cast<std::ptrdiff_t>(num_gradients), fetched.end());
}

}  // namespace dflow::dist
