// A fixed pool of worker threads. The executor schedules ready nodes on it
// (inter-op parallelism) and kernels split big loops with ParallelFor
// (intra-op parallelism).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dflow {

class ThreadPool {
 public:
  ThreadPool(int num_threads, std::string name);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()); }
  void Schedule(std::function<void()> task);

  // Calls fn(begin, end) over disjoint ranges covering [0, n). cost_per_unit
  // is a rough count of cheap operations per element: small totals run inline.
  // The calling thread takes ranges too, so calling this from inside a pool
  // task cannot deadlock. The first exception thrown by fn is rethrown here.
  void ParallelFor(int64_t n, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn);

  // Default size: the machine's hardware threads.
  static int DefaultNumThreads();

 private:
  void WorkerLoop();

  std::string name_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
};

}  // namespace dflow
