// Each queue's dominant share over time, kept by the controller so that the dashboard's chart
// (docs/dashboard.md) starts with the last hour and not when the page opened.
// GET /v1/queues/history?sinceMs=T answers
//   {intervalMs, capacity, timesMs: [...], queues: [{name, leaf, shares: [share | null, ...]}]}
// with `shares` aligned with `timesMs` (null: the queue had no row then), samples after T only.
//
// Memory is bounded: a ring of `capacity` samples (720: an hour at one per 5 s), each a time
// and one float per queue, for at most kMaxQueues queues (the first seen; later ones are not
// kept, and the answer says how many were left out): 720 x 256 x 4 B, under 1 MB.
//
// QueueShareHistory is the ring (thread-safe, no clock of its own); QueueHistorySampler is the
// thread that feeds it from /v1/queues's rows every interval, until destroyed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace tessera {

class QueueShareHistory {
 public:
  static constexpr std::size_t kMaxQueues = 256;

  explicit QueueShareHistory(std::size_t capacity = 720) : capacity_(capacity) {}

  // One sample at `time_ms` from the rows of GET /v1/queues (name, leaf, dominantShare).
  void Record(std::int64_t time_ms, const nlohmann::json& queue_rows);
  // The samples after `since_ms`, in the shape above.
  nlohmann::json Since(std::int64_t since_ms, std::chrono::milliseconds interval) const;

 private:
  struct Sample {
    std::int64_t time_ms = 0;
    std::vector<float> shares;  // by queue index; NaN: no row
  };
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::map<std::string, std::size_t> index_;  // queue -> position in names_
  std::vector<std::string> names_;
  std::vector<bool> leaf_;
  std::size_t left_out_ = 0;  // queues beyond kMaxQueues
  std::deque<Sample> samples_;
};

class QueueHistorySampler {
 public:
  // Calls `rows` (the queue rows) now and every `interval`, into `history`.
  QueueHistorySampler(QueueShareHistory& history, std::function<nlohmann::json()> rows,
                      std::chrono::milliseconds interval);
  ~QueueHistorySampler();
  std::chrono::milliseconds interval() const { return interval_; }

 private:
  void Run();
  QueueShareHistory& history_;
  std::function<nlohmann::json()> rows_;
  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tessera
