#include "server/queue_history.h"

#include <cmath>
#include <limits>

namespace tessera {

using Json = nlohmann::json;

void QueueShareHistory::Record(std::int64_t time_ms, const Json& queue_rows) {
  std::lock_guard lock(mu_);
  Sample sample{time_ms, std::vector<float>(names_.size(), std::nanf(""))};
  for (const auto& row : queue_rows) {
    const std::string name = row.value("name", "");
    auto it = index_.find(name);
    if (it == index_.end()) {
      if (names_.size() >= kMaxQueues) {
        ++left_out_;
        continue;
      }
      it = index_.emplace(name, names_.size()).first;
      names_.push_back(name);
      leaf_.push_back(true);
      sample.shares.push_back(std::nanf(""));
    }
    leaf_[it->second] = row.value("leaf", true);
    sample.shares[it->second] = static_cast<float>(row.value("dominantShare", 0.0));
  }
  samples_.push_back(std::move(sample));
  while (samples_.size() > capacity_) samples_.pop_front();
}

Json QueueShareHistory::Since(std::int64_t since_ms, std::chrono::milliseconds interval) const {
  std::lock_guard lock(mu_);
  Json times = Json::array();
  std::vector<Json> shares(names_.size(), Json::array());
  for (const Sample& s : samples_) {
    if (s.time_ms <= since_ms) continue;
    times.push_back(s.time_ms);
    for (std::size_t q = 0; q < names_.size(); ++q) {
      // A queue first seen after this sample has no entry in it.
      const float v = q < s.shares.size() ? s.shares[q] : std::nanf("");
      if (std::isnan(v)) {
        shares[q].push_back(nullptr);
      } else {
        shares[q].push_back(std::round(static_cast<double>(v) * 1e6) / 1e6);
      }
    }
  }
  Json queues = Json::array();
  for (std::size_t q = 0; q < names_.size(); ++q) {
    queues.push_back({{"name", names_[q]},
                      {"leaf", static_cast<bool>(leaf_[q])},
                      {"shares", std::move(shares[q])}});
  }
  return {{"intervalMs", interval.count()},
          {"capacity", capacity_},
          {"timesMs", std::move(times)},
          {"queues", std::move(queues)},
          {"queuesLeftOut", left_out_}};
}

QueueHistorySampler::QueueHistorySampler(QueueShareHistory& history, std::function<Json()> rows,
                                         std::chrono::milliseconds interval)
    : history_(history), rows_(std::move(rows)), interval_(interval) {
  thread_ = std::thread([this] { Run(); });
}

QueueHistorySampler::~QueueHistorySampler() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void QueueHistorySampler::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    const auto now = std::chrono::system_clock::now();
    history_.Record(
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count(),
        rows_());
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

}  // namespace tessera
