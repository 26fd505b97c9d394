// RunOnPool; the queue itself is a template in prefetch_queue.h.
#include "models/data/prefetch_queue.h"

namespace dflow::models {

void RunOnPool(ThreadPool& pool, size_t n, const std::function<void(size_t)>& fn) {
  std::mutex mu;
  std::condition_variable done;
  size_t remaining = n;
  std::exception_ptr error;
  for (size_t i = 0; i < n; ++i)
    pool.Schedule([&, i] {
      std::exception_ptr failure;
      try {
        fn(i);
      } catch (...) {
        failure = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      if (failure && !error) error = failure;
      if (--remaining == 0) done.notify_all();
    });
  std::unique_lock<std::mutex> lock(mu);
  done.wait(lock, [&] { return remaining == 0; });
  if (error) std::rethrow_exception(error);
}

}  // namespace dflow::models
