// A fixed set of threads behind a bounded queue, one per class of route (http_frontend.h): a
// request that finds the queue full is refused at once (503) rather than waiting behind
// requests it cannot overtake.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

class WorkerPool {
 public:
  // A job is called with true to run, or with false when the pool shuts down before it ran
  // (so that it can release what it holds, e.g. close its connection).
  using Job = std::function<void(bool run)>;

  WorkerPool(int threads, std::size_t max_queued);
  ~WorkerPool();  // Shutdown()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // False (and `job` not kept) when max_queued jobs already wait.
  bool TryPost(Job job);
  // Queued jobs are called with false; running ones finish; the threads are joined.
  void Shutdown();

  int threads() const { return static_cast<int>(threads_.size()); }
  std::size_t max_queued() const { return max_queued_; }

 private:
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;  // under mu_
  bool stopping_ = false;  // under mu_
  std::size_t max_queued_;
  std::vector<std::thread> threads_;
};

}  // namespace tessera
