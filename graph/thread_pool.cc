#include "graph/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>

namespace dflow {

ThreadPool::ThreadPool(int num_threads, std::string name) : name_(std::move(name)) {
  num_threads = std::max(1, num_threads);
  for (int i = 0; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

int ThreadPool::DefaultNumThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 2 : static_cast<int>(n);
}

void ThreadPool::Schedule(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

namespace {

// State shared by the caller and helpers of one ParallelFor. Helpers hold it
// by shared_ptr because a helper may start after the caller has returned; it
// then finds no range left and never touches fn.
struct ParallelForState {
  int64_t n = 0;
  int64_t block = 0;
  int64_t num_blocks = 0;
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  std::atomic<int64_t> next_block{0};
  std::atomic<int64_t> done_blocks{0};
  std::mutex mu;
  std::condition_variable all_done;
  std::exception_ptr error;

  void RunBlocks() {
    for (;;) {
      int64_t b = next_block.fetch_add(1, std::memory_order_relaxed);
      if (b >= num_blocks) return;
      try {
        (*fn)(b * block, std::min(n, (b + 1) * block));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
      if (done_blocks.fetch_add(1, std::memory_order_acq_rel) + 1 == num_blocks) {
        std::lock_guard<std::mutex> lock(mu);
        all_done.notify_all();
      }
    }
  }
};

}  // namespace

void ThreadPool::ParallelFor(int64_t n, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  // Below ~20k cheap operations a hand-off costs more than it saves.
  constexpr int64_t kMinCostPerBlock = 20000;
  int64_t total_cost = n * std::max<int64_t>(1, cost_per_unit);
  int64_t max_blocks = std::min<int64_t>(n, 4 * static_cast<int64_t>(workers_.size()));
  int64_t num_blocks = std::min(max_blocks, std::max<int64_t>(1, total_cost / kMinCostPerBlock));
  if (num_blocks <= 1 || workers_.size() <= 1) {
    fn(0, n);
    return;
  }
  auto state = std::make_shared<ParallelForState>();
  state->n = n;
  state->block = (n + num_blocks - 1) / num_blocks;
  state->num_blocks = (n + state->block - 1) / state->block;
  state->fn = &fn;
  int helpers = static_cast<int>(std::min<int64_t>(state->num_blocks - 1, workers_.size()));
  for (int i = 0; i < helpers; ++i) Schedule([state] { state->RunBlocks(); });
  state->RunBlocks();
  {
    std::unique_lock<std::mutex> lock(state->mu);
    state->all_done.wait(lock, [&] { return state->done_blocks.load() == state->num_blocks; });
  }
  if (state->error) std::rethrow_exception(state->error);
}

}  // namespace dflow
