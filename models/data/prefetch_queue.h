// The producer side of the input pipelines: one background thread turns
// steps into batches and keeps up to `capacity` finished ones in a queue
// that Pop() takes from; the first error ends production and is rethrown by
// Pop(). RunOnPool spreads one batch's decoding over a thread pool.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "graph/thread_pool.h"

namespace dflow::models {

// Runs fn(0) .. fn(n - 1) on the pool and waits for all of them; the first
// exception is rethrown here.
void RunOnPool(ThreadPool& pool, size_t n, const std::function<void(size_t)>& fn);

template <typename Batch>
class PrefetchQueue {
 public:
  explicit PrefetchQueue(int capacity) : capacity_(static_cast<size_t>(capacity)) {}
  // Stops and joins the producer; never blocks on a full queue. Declare the
  // queue after everything `make` uses, so that it is destroyed first.
  ~PrefetchQueue() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (producer_.joinable()) producer_.join();
  }
  PrefetchQueue(const PrefetchQueue&) = delete;
  PrefetchQueue& operator=(const PrefetchQueue&) = delete;

  // Starts the producer: make(step) for step = first, first + 1, ... while
  // step < end (no end: until destroyed).
  void Start(std::function<Batch(int64_t)> make, int64_t first, std::optional<int64_t> end) {
    producer_ = std::thread([this, make = std::move(make), first, end] {
      Produce(make, first, end);
    });
  }

  // True once the queue is being destroyed: work for a batch that will be
  // thrown away may stop early.
  bool stopping() const { return stopping_; }

  // The next batch; std::nullopt at the end; rethrows the producer's error
  // (then, and on every later call).
  std::optional<Batch> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return !ready_.empty() || finished_; });
    if (!ready_.empty()) {
      Batch batch = std::move(ready_.front());
      ready_.pop_front();
      changed_.notify_all();
      return batch;
    }
    if (error_) std::rethrow_exception(error_);
    return std::nullopt;
  }

 private:
  void Produce(const std::function<Batch(int64_t)>& make, int64_t first,
               std::optional<int64_t> end) {
    try {
      for (int64_t step = first; !stopping_ && (!end || step < *end); ++step)
        if (!Push(make(step))) break;
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    changed_.notify_all();
  }

  // Waits for room in the queue; false when the queue is being destroyed.
  bool Push(Batch batch) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return stopping_ || ready_.size() < capacity_; });
    if (stopping_) return false;
    ready_.push_back(std::move(batch));
    changed_.notify_all();
    return true;
  }

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable changed_;  // a batch was pushed or popped, or production ended
  std::deque<Batch> ready_;
  bool finished_ = false;            // the producer has returned
  std::exception_ptr error_;         // why it returned early
  std::atomic<bool> stopping_{false};
  std::thread producer_;
};

}  // namespace dflow::models
