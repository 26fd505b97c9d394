#include "dist/training/data_parallel.h"

#include <cstdlib>

#include "dist/cluster.h"
#include "dist/cluster_environment.h"
#include "dist/training/ring_training.h"

namespace dflow::dist {

void RequireStrategy(const std::string& name) {
  if (name == "ring") return;
  if (name == "ps")
    Fail(Code::kUnimplemented, "the parameter-server strategy is not available in this build as a ",
         "DataParallelStrategy: parameter servers hold the variables and apply the updates, so they run ",
         "through dist::RunPsTask / PsWorker (dist/training/ps_training.h) instead");
  Fail(Code::kInvalidArgument, "unknown data-parallel strategy '", name, "' (expected ring or ps)");
}

std::string StrategyFromEnvironment() {
  const char* from_launcher = std::getenv("DFLOW_STRATEGY");
  if (from_launcher && *from_launcher) return from_launcher;
  std::optional<LauncherCluster> launcher = DetectLauncher(ProcessEnvironment());
  const bool ps = launcher && (launcher->num_ps > 0 || (launcher->spec && launcher->spec->num_tasks("ps") > 0));
  return ps ? "ps" : "ring";
}

std::unique_ptr<DataParallelStrategy> MakeDataParallelStrategy(const std::string& name,
                                                               const ClusterSpec& cluster,
                                                               std::vector<GradientSpec> specs,
                                                               const StrategyOptions& options) {
  RequireStrategy(name);
  RingOptions ring;
  ring.collective.timeout = options.collective_timeout;
  ring.codec = options.codec;
  ring.buckets.bucket_bytes = options.bucket_bytes;
  ring.link.startup_timeout = options.startup_timeout;
  return RingAllReduceStrategy::Connect(cluster, std::move(specs), ring);
}

void DataParallelStrategy::SynchronizeVariables(Session& session, const std::vector<std::string>& variables) {
  for (const std::string& name : variables) {
    Variable* variable = session.resources().FindVariable(name);
    DFLOW_REQUIRE(variable && variable->initialized(), "worker ", worker(),
                  ": cannot synchronise variable '", name, "': the session has no initialised variable of that name");
    Tensor value = variable->Read().Clone();
    BroadcastFromChief(name, value);
    variable->Assign(std::move(value));
  }
}

void DataParallelStrategy::GradientReady(int index, const Tensor& gradient) {
  DFLOW_REQUIRE(index >= 0, "worker ", worker(), ": gradient index ", index, " is negative");
  std::lock_guard lock(ready_mu_);
  if (ready_.size() <= static_cast<size_t>(index)) ready_.resize(static_cast<size_t>(index) + 1);
  DFLOW_REQUIRE(!ready_[index].valid(), "worker ", worker(), ": gradient ", index,
                " was handed over twice in one step");
  ready_[index] = gradient;
}

std::vector<Tensor> DataParallelStrategy::AverageReadyGradients() {
  std::vector<Tensor> gradients;
  {
    std::lock_guard lock(ready_mu_);
    gradients.swap(ready_);
  }
  for (size_t i = 0; i < gradients.size(); ++i)
    DFLOW_REQUIRE(gradients[i].valid(), "worker ", worker(), ": gradient ", i,
                  " was never handed over this step");
  return AverageGradients(gradients);
}

std::vector<Tensor> RunDataParallelStep(Session& session, DataParallelStrategy& strategy,
                                        const ReplicatedStep& step, const FeedList& feeds) {
  DFLOW_REQUIRE(step.gradients.size() == step.gradient_feeds.size(), "RunDataParallelStep: ",
                step.gradients.size(), " gradients but ", step.gradient_feeds.size(), " gradient feeds");
  std::vector<TensorName> fetches = step.gradients;
  fetches.insert(fetches.end(), step.extra_fetches.begin(), step.extra_fetches.end());
  const size_t num_gradients = step.gradients.size();
  RunOptions overlap;
  overlap.on_fetch_ready = [&](size_t index, const Tensor& value) {
    if (index < num_gradients) strategy.GradientReady(static_cast<int>(index), value);
  };
  std::vector<Tensor> fetched = session.Run(feeds, fetches, step.local_targets, overlap);
  std::vector<Tensor> mean = strategy.AverageReadyGradients();
  FeedList apply_feeds;
  for (size_t i = 0; i < num_gradients; ++i) apply_feeds.push_back({step.gradient_feeds[i], std::move(mean[i])});
  session.Run(apply_feeds, {}, step.apply);
  return std::vector<Tensor>(fetched.begin() + static_cast<std::ptrdiff_t>(num_gradients), fetched.end());
}

}  // namespace dflow::dist
