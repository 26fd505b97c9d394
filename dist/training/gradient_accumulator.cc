#include "dist/training/gradient_accumulator.h"

#include <algorithm>

namespace dflow::dist {

SyncGradientAccumulator::SyncGradientAccumulator(std::vector<GradientSpec> variables,
                                                 int replicas_to_aggregate)
    : variables_(std::move(variables)), replicas_to_aggregate_(replicas_to_aggregate) {
  DFLOW_REQUIRE(replicas_to_aggregate_ >= 1,
                "SyncGradientAccumulator: replicas_to_aggregate must be at least 1, got ",
                replicas_to_aggregate_);
  DFLOW_REQUIRE(!variables_.empty(), "SyncGradientAccumulator: no variables given");
  for (const GradientSpec& v : variables_)
    DFLOW_REQUIRE(v.shape.IsFullyDefined() &&
                      (v.dtype == DType::kFloat32 || v.dtype == DType::kFloat64),
                  "SyncGradientAccumulator: variable '", v.name,
                  "' needs a float32/float64 dtype and a fully defined shape, got ",
                  DTypeName(v.dtype), v.shape.ToString());
}

void SyncGradientAccumulator::CheckGradients(int worker,
                                             const std::vector<Tensor>& gradients) const {
  DFLOW_REQUIRE(worker >= 0, "SyncGradientAccumulator: worker index ", worker, " is negative");
  DFLOW_REQUIRE(gradients.size() == variables_.size(), "SyncGradientAccumulator: worker ", worker,
                " pushed ", gradients.size(), " gradients, expected ", variables_.size());
  for (size_t i = 0; i < variables_.size(); ++i) {
    const GradientSpec& v = variables_[i];
    DFLOW_REQUIRE(gradients[i].dtype() == v.dtype && gradients[i].shape() == v.shape,
                  "SyncGradientAccumulator: worker ", worker, "'s gradient for '", v.name,
                  "' should be ", DTypeName(v.dtype), v.shape.ToString(), ", got ",
                  gradients[i].SummaryString());
  }
}

bool SyncGradientAccumulator::Push(int worker, int64_t local_step, std::vector<Tensor> gradients) {
  CheckGradients(worker, gradients);
  std::lock_guard lock(mu_);
  ThrowIfAborted();
  DFLOW_REQUIRE(local_step <= global_step_, "SyncGradientAccumulator: worker ", worker,
                " pushed gradients of step ", local_step, ", but the global step is only ",
                global_step_);
  if (local_step < global_step_ || taken_) {
    ++stats_.dropped_stale;
    return false;
  }
  pending_[worker] = std::move(gradients);
  changed_.notify_all();
  return true;
}

std::vector<Tensor> SyncGradientAccumulator::TakeMean(Deadline deadline) {
  std::unique_lock lock(mu_);
  if (taken_)
    Fail(Code::kFailedPrecondition, "SyncGradientAccumulator: the mean of step ", global_step_,
         " was already taken; call FinishStep after applying it");
  bool enough = changed_.wait_until(lock, deadline, [&] {
    return static_cast<int>(pending_.size()) >= replicas_to_aggregate_ || !aborted_.empty();
  });
  ThrowIfAborted();
  if (!enough) {
    // Workers are numbered 0..N-1 when N are required: name the silent ones.
    std::string heard, missing;
    for (const auto& [worker, grads] : pending_)
      heard += (heard.empty() ? "" : ", ") + std::to_string(worker);
    for (int worker = 0; worker < replicas_to_aggregate_; ++worker)
      if (!pending_.count(worker)) missing += (missing.empty() ? "" : ", ") + std::to_string(worker);
    Fail(Code::kUnavailable, "SyncGradientAccumulator: step ", global_step_, " has ",
         pending_.size(), " of ", replicas_to_aggregate_, " gradient sets (from worker(s) ",
         heard.empty() ? "none" : heard, "; none from worker(s) ", missing, ") at the deadline");
  }
  // pending_ is ordered by worker index: the sum's order is fixed.
  std::vector<Tensor> mean;
  for (size_t v = 0; v < variables_.size(); ++v) {
    Tensor sum = pending_.begin()->second[v].Clone();
    Dispatch<float, double>(sum.dtype(), "SyncGradientAccumulator", [&]<typename T>() {
      T* out = sum.data<T>();
      for (auto it = std::next(pending_.begin()); it != pending_.end(); ++it) {
        const T* in = it->second[v].data<T>();
        for (int64_t i = 0; i < sum.NumElements(); ++i) out[i] += in[i];
      }
      for (int64_t i = 0; i < sum.NumElements(); ++i) out[i] /= static_cast<T>(pending_.size());
    });
    mean.push_back(std::move(sum));
  }
  stats_.accepted += static_cast<int64_t>(pending_.size());
  pending_.clear();
  taken_ = true;
  return mean;
}

void SyncGradientAccumulator::FinishStep() {
  {
    std::lock_guard lock(mu_);
    if (!taken_)
      Fail(Code::kFailedPrecondition, "SyncGradientAccumulator: FinishStep for step ", global_step_,
           " before its mean was taken");
    taken_ = false;
    ++global_step_;
  }
  changed_.notify_all();
}

int64_t SyncGradientAccumulator::WaitForStepAfter(int64_t step, Deadline deadline) const {
  std::unique_lock lock(mu_);
  bool passed = changed_.wait_until(lock, deadline, [&] { return global_step_ > step || !aborted_.empty(); });
  ThrowIfAborted();
  if (!passed)
    Fail(Code::kUnavailable, "SyncGradientAccumulator: the global step is still ", global_step_,
         " at the deadline (waiting for it to pass ", step, ")");
  return global_step_;
}

void SyncGradientAccumulator::SetGlobalStep(int64_t step) {
  {
    std::lock_guard lock(mu_);
    DFLOW_REQUIRE(step >= 0, "SyncGradientAccumulator: global step ", step, " is negative");
    if (taken_ || !pending_.empty())
      Fail(Code::kFailedPrecondition, "SyncGradientAccumulator: cannot set the global step to ", step,
           " in the middle of step ", global_step_, " (", pending_.size(), " push(es) pending)");
    global_step_ = step;
  }
  changed_.notify_all();
}

void SyncGradientAccumulator::Abort(std::string reason) {
  {
    std::lock_guard lock(mu_);
    aborted_ = reason.empty() ? "aborted" : std::move(reason);
  }
  changed_.notify_all();
}

void SyncGradientAccumulator::ThrowIfAborted() const {
  if (!aborted_.empty())
    Fail(Code::kCancelled, "SyncGradientAccumulator: training stopped at global step ", global_step_, ": ",
         aborted_);
}

int64_t SyncGradientAccumulator::global_step() const {
  std::lock_guard lock(mu_);
  return global_step_;
}

AccumulatorStats SyncGradientAccumulator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

int64_t StalenessLog::RecordUpdate(int worker, int64_t local_step) {
  std::lock_guard lock(mu_);
  DFLOW_REQUIRE(local_step >= 0 && local_step <= global_step_, "StalenessLog: worker ", worker,
                " reports step ", local_step, ", outside 0..", global_step_, " (the global step)");
  int64_t staleness = global_step_ - local_step;
  Add(all_, staleness);
  Add(by_worker_[worker], staleness);
  ++global_step_;
  return staleness;
}

void StalenessLog::Add(StalenessStats& stats, int64_t staleness) {
  stats.mean_staleness = (stats.mean_staleness * static_cast<double>(stats.updates) +
                          static_cast<double>(staleness)) / static_cast<double>(stats.updates + 1);
  ++stats.updates;
  stats.max_staleness = std::max(stats.max_staleness, staleness);
  ++stats.histogram[staleness];
}

int64_t StalenessLog::global_step() const {
  std::lock_guard lock(mu_);
  return global_step_;
}

StalenessStats StalenessLog::stats() const {
  std::lock_guard lock(mu_);
  return all_;
}

StalenessStats StalenessLog::stats(int worker) const {
  std::lock_guard lock(mu_);
  auto it = by_worker_.find(worker);
  return it == by_worker_.end() ? StalenessStats{} : it->second;
}

}  // namespace dflow::dist
