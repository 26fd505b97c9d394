// The thread pool: ParallelFor coverage, nesting without deadlock, exceptions.
#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "graph/thread_pool.h"

using namespace dflow;

namespace {

// Runs ParallelFor over [0, n) and returns how often each index was visited
// (-1 everywhere when a range fell outside [0, n) or was empty). Catch2's
// assertions are not thread-safe, so the workers only count.
std::vector<int> Visits(ThreadPool& pool, int64_t n, int64_t cost) {
  std::vector<std::atomic<int>> counts(n);
  std::atomic<bool> bad_range{false};
  pool.ParallelFor(n, cost, [&](int64_t begin, int64_t end) {
    if (begin < 0 || begin >= end || end > n) bad_range = true;
    for (int64_t i = std::max<int64_t>(begin, 0); i < std::min(end, n); ++i) counts[i].fetch_add(1);
  });
  if (bad_range) return std::vector<int>(n, -1);
  return {counts.begin(), counts.end()};
}

// Waits until `count` reaches `target`, helping nobody: the pool must make
// progress on its own.
void WaitFor(const std::atomic<int>& count, int target) {
  while (count.load() < target) std::this_thread::yield();
}

}  // namespace

TEST_CASE("ParallelFor covers the range exactly once", "[core]") {
  ThreadPool pool(4, "test");
  CHECK(pool.num_threads() == 4);
  for (int64_t n : {1, 2, 3, 7, 16, 17, 1000, 100003}) {
    for (int64_t cost : {1, 100, 100000}) {
      INFO("n=" << n << " cost=" << cost);
      std::vector<int> visits = Visits(pool, n, cost);
      CHECK(std::all_of(visits.begin(), visits.end(), [](int v) { return v == 1; }));
    }
  }
  int calls = 0;
  pool.ParallelFor(0, 1000, [&](int64_t, int64_t) { ++calls; });
  pool.ParallelFor(-5, 1000, [&](int64_t, int64_t) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("ParallelFor splits big work over several threads", "[core]") {
  ThreadPool pool(4, "test");
  std::atomic<int> blocks{0};
  pool.ParallelFor(1 << 20, 1000, [&](int64_t, int64_t) { blocks.fetch_add(1); });
  CHECK(blocks > 1);
  blocks = 0;
  std::atomic<int64_t> first{-1}, last{-1};
  pool.ParallelFor(10, 1, [&](int64_t begin, int64_t end) {
    first = begin;
    last = end;
    blocks.fetch_add(1);
  });
  CHECK(blocks == 1);  // cheap work runs in one piece
  CHECK(first == 0);
  CHECK(last == 10);
}

TEST_CASE("a pool of one thread still runs everything", "[core]") {
  ThreadPool pool(0, "tiny");  // clamped to one worker
  CHECK(pool.num_threads() == 1);
  std::vector<int> visits = Visits(pool, 5000, 100000);
  CHECK(std::all_of(visits.begin(), visits.end(), [](int v) { return v == 1; }));
  CHECK(ThreadPool::DefaultNumThreads() >= 1);
}

TEST_CASE("nested ParallelFor from inside pool tasks does not deadlock", "[core]") {
  ThreadPool pool(2, "nested");
  constexpr int kTasks = 8;
  constexpr int64_t kN = 4096;
  std::atomic<int> finished{0};
  std::atomic<int64_t> total{0};
  // More tasks than workers, each of which fans out again and again: the
  // workers are all busy inside ParallelFor while more blocks are queued.
  for (int t = 0; t < kTasks; ++t)
    pool.Schedule([&] {
      pool.ParallelFor(kN, 100000, [&](int64_t begin, int64_t end) {
        pool.ParallelFor(end - begin, 100000, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
      });
      finished.fetch_add(1);
    });
  WaitFor(finished, kTasks);
  CHECK(total == kTasks * kN);
  // And from the calling thread as well.
  std::atomic<int64_t> outer{0};
  pool.ParallelFor(64, 1000000, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      pool.ParallelFor(64, 1000000, [&](int64_t b, int64_t e) { outer.fetch_add(e - b); });
  });
  CHECK(outer == 64 * 64);
}

TEST_CASE("an exception inside ParallelFor reaches the caller", "[core]") {
  ThreadPool pool(4, "throws");
  std::atomic<int64_t> done{0};
  auto body = [&](int64_t begin, int64_t end) {
    if (begin <= 500 && 500 < end) throw std::runtime_error("bad element 500");
    done.fetch_add(end - begin);
  };
  CHECK_THROWS_WITH(pool.ParallelFor(100000, 100000, body), "bad element 500");
  CHECK(done < 100000);  // the failing block did not count
  // Inline (cheap) work throws the same way.
  CHECK_THROWS_WITH(pool.ParallelFor(1000, 1, body), "bad element 500");
  // The pool still works afterwards.
  std::vector<int> visits = Visits(pool, 10000, 100000);
  CHECK(std::all_of(visits.begin(), visits.end(), [](int v) { return v == 1; }));
}

TEST_CASE("Schedule runs every task, even those queued when the pool is destroyed", "[core]") {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(2, "drain");
    for (int i = 0; i < 1000; ++i) pool.Schedule([&] { ran.fetch_add(1); });
  }
  CHECK(ran == 1000);
}
