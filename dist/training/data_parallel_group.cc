#include "dist/training/data_parallel_group.h"

#include <map>

namespace dflow::dist {
namespace {

// The live groups by name. Weak: a group lives as long as its owner (a
// DistributedOptimizer); an op that runs after that gets a clear error.
struct Registry {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<DataParallelGroup>> groups;
  uint64_t created = 0;
};

Registry& Groups() {
  static Registry* registry = new Registry;  // never destroyed: groups may outlive static destruction
  return *registry;
}

}  // namespace

DataParallelGroup::DataParallelGroup(std::string name, int worker, int num_workers, StrategyFactory factory,
                                     std::chrono::milliseconds step_timeout)
    : name_(std::move(name)), worker_(worker), num_workers_(num_workers), factory_(std::move(factory)),
      step_timeout_(step_timeout) {}

std::shared_ptr<DataParallelGroup> DataParallelGroup::Create(int worker, int num_workers, StrategyFactory factory,
                                                             std::chrono::milliseconds step_timeout) {
  DFLOW_REQUIRE(num_workers >= 1 && worker >= 0 && worker < num_workers, "a data-parallel group needs a worker in 0..",
                num_workers - 1, ", got worker ", worker, " of ", num_workers);
  Registry& registry = Groups();
  std::lock_guard lock(registry.mu);
  std::string name = StrCat("data_parallel_", registry.created++);
  std::shared_ptr<DataParallelGroup> group(
      new DataParallelGroup(name, worker, num_workers, std::move(factory), step_timeout));
  registry.groups[name] = group;
  return group;
}

std::shared_ptr<DataParallelGroup> DataParallelGroup::Find(const std::string& name) {
  Registry& registry = Groups();
  std::lock_guard lock(registry.mu);
  auto it = registry.groups.find(name);
  std::shared_ptr<DataParallelGroup> group = it == registry.groups.end() ? nullptr : it->second.lock();
  if (!group)
    Fail(Code::kFailedPrecondition, "data-parallel group '", name, "' does not exist in this process: ",
         "the DistributedOptimizer that built this graph must live as long as its session runs (a graph ",
         "loaded from a file has no group: build it with a DistributedOptimizer in this process)");
  return group;
}

DataParallelGroup::~DataParallelGroup() {
  {
    std::unique_lock lock(mu_);
    stopping_ = true;
    // Ops still waiting (a session running while its optimizer goes) hear why.
    if (num_pending_ > 0)
      FailStep(lock, Error(Code::kCancelled, StrCat("data-parallel group '", name_, "' was destroyed mid-step")));
  }
  step_done_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  Registry& registry = Groups();
  std::lock_guard lock(registry.mu);
  registry.groups.erase(name_);
}

int DataParallelGroup::AddGradient(GradientSpec spec) {
  std::lock_guard lock(mu_);
  DFLOW_REQUIRE(!strategy_, "data-parallel group '", name_, "': gradient '", spec.name,
                "' added after the workers joined (build every Minimize before running any step or broadcast)");
  DFLOW_REQUIRE(spec.shape.IsFullyDefined(), "data-parallel training needs gradients of known shape; '",
                spec.name, "' has ", spec.shape.ToString());
  specs_.push_back(std::move(spec));
  return static_cast<int>(specs_.size()) - 1;
}

DataParallelStrategy& DataParallelGroup::strategy() {
  std::lock_guard lock(mu_);
  return StrategyLocked();
}

DataParallelStrategy& DataParallelGroup::StrategyLocked() {
  CheckUsable();
  if (!strategy_) {
    try {
      strategy_ = factory_(specs_);
    } catch (const Error& e) {
      failed_ = e;  // every later op fails at once instead of connecting again
      throw;
    }
    DFLOW_REQUIRE(strategy_->worker() == worker_ && strategy_->num_workers() == num_workers_,
                  "data-parallel group '", name_, "' expected worker ", worker_, " of ", num_workers_,
                  " but its strategy is worker ", strategy_->worker(), " of ", strategy_->num_workers());
    watcher_ = std::thread([this] { WatchSteps(); });
  }
  return *strategy_;
}

void DataParallelGroup::CheckUsable() const {
  if (failed_)
    Fail(failed_->code(), "data-parallel group '", name_, "' stopped after an earlier step failed: ",
         failed_->message());
}

void DataParallelGroup::Ready(int index, const Tensor& gradient, Deliver deliver) {
  std::unique_lock lock(mu_);
  DataParallelStrategy& strategy = StrategyLocked();
  DFLOW_REQUIRE(index >= 0 && static_cast<size_t>(index) < specs_.size(), "data-parallel group '", name_,
                "' has ", specs_.size(), " gradients, not index ", index);
  if (num_pending_ == 0) {
    pending_.assign(specs_.size(), nullptr);
    ++step_;
    step_started_ = std::chrono::steady_clock::now();
    step_done_.notify_all();  // the watcher starts its clock
  }
  DFLOW_REQUIRE(!pending_[index], "worker ", worker_, ": gradient '", specs_[index].name,
                "' was handed to the all-reduce twice in one step (are two steps running at once?)");
  pending_[index] = std::move(deliver);
  ++num_pending_;
  std::vector<Tensor> means;
  try {
    strategy.GradientReady(index, gradient);
    if (static_cast<size_t>(num_pending_) < specs_.size()) return;
    means = strategy.AverageReadyGradients();
  } catch (const Error& e) {
    return FailStep(lock, e);
  } catch (const std::exception& e) {
    return FailStep(lock, Error(Code::kInternal, e.what()));
  }
  std::vector<Deliver> delivers = TakePending();
  lock.unlock();
  for (size_t i = 0; i < delivers.size(); ++i) delivers[i](std::move(means[i]), std::nullopt);
}

std::vector<DataParallelGroup::Deliver> DataParallelGroup::TakePending() {
  std::vector<Deliver> delivers;
  delivers.swap(pending_);
  num_pending_ = 0;
  step_done_.notify_all();
  return delivers;
}

// The step's ops that handed over a gradient get the error; the group
// refuses every later step.
void DataParallelGroup::FailStep(std::unique_lock<std::mutex>& lock, const Error& error) {
  failed_ = error;
  std::vector<Deliver> delivers = TakePending();
  lock.unlock();
  for (Deliver& deliver : delivers)
    if (deliver) deliver(Tensor(), error);
}

// Names the gradients of the current step not handed over yet.
std::string DataParallelGroup::MissingGradients() const {
  std::string missing;
  int count = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i]) continue;
    if (++count <= 5) missing += StrCat(count > 1 ? ", " : "", "'", specs_[i].name, "'");
  }
  if (count > 5) missing += StrCat(" and ", count - 5, " more");
  return missing;
}

// One thread per group: a step whose gradients are not all handed over
// within the step timeout of the first fails, naming those missing.
void DataParallelGroup::WatchSteps() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (num_pending_ == 0 || failed_) {
      step_done_.wait(lock);
      continue;
    }
    const uint64_t step = step_;
    auto deadline = step_started_ + step_timeout_;
    bool ended = step_done_.wait_until(lock, deadline, [&] {
      return stopping_ || step_ != step || num_pending_ == 0 || failed_.has_value();
    });
    if (ended) continue;
    Error error(Code::kFailedPrecondition,
                StrCat("worker ", worker_, ": only ", num_pending_, " of ", specs_.size(),
                       " gradients reached the all-reduce within ", step_timeout_.count(),
                       " ms of the first; never computed: ", MissingGradients(),
                       " (run the optimizer's train op, which needs every gradient, not a part of it)"));
    FailStep(lock, error);
    lock.lock();
  }
}

Tensor DataParallelGroup::Broadcast(const std::string& name, Tensor value) {
  std::lock_guard lock(mu_);
  DataParallelStrategy& strategy = StrategyLocked();
  DFLOW_REQUIRE(num_pending_ == 0, "worker ", worker_, ": broadcast of '", name,
                "' during a training step of the same group");
  strategy.BroadcastFromChief(name, value);
  return value;
}

bool DataParallelGroup::AnyWorker(bool flag) {
  std::lock_guard lock(mu_);
  return StrategyLocked().AnyWorker(flag);
}

void DataParallelGroup::Finish() {
  std::lock_guard lock(mu_);
  StrategyLocked().Finish();
}

}  // namespace dflow::dist
