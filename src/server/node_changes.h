// GET /v1/nodes/changes?since=G: the nodes that changed since generation G, so that the
// dashboard (docs/dashboard.md) reads 1,250 nodes once and then only what an event touched.
// Answers {generation, full, nodes: [row...], removed: [name...]}: with full (since=0, or a G
// this controller cannot answer from: another controller's, or older than the tombstones kept)
// every node, else the rows that differ from what G saw and the names removed since. Rows carry
// what the dashboard draws (name, status, schedulable, cordoned, gpuModel, gpuCount,
// gpusAllocated, gpuAllocatedMilli, simulated, gpuUsage, message): a heartbeat's age is no
// change.
//
// Generations start at the controller's start time in microseconds, so a G from before a
// restart is below the floor and answered in full. The listing is rebuilt at most every
// `max_age` (however many pages ask); memory: one row per node and at most kRemovedKept names.
//
// Thread-safety: thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tessera {

class NodeChanges {
 public:
  static constexpr std::size_t kRemovedKept = 4096;

  // `list_nodes`: the rows of GET /v1/nodes.
  NodeChanges(std::function<nlohmann::json()> list_nodes, std::chrono::milliseconds max_age);

  nlohmann::json Since(std::int64_t since);

 private:
  struct Row {
    nlohmann::json view;
    std::int64_t generation = 0;
  };
  void RefreshLocked();

  std::function<nlohmann::json()> list_nodes_;
  const std::chrono::milliseconds max_age_;
  std::mutex mu_;
  std::optional<std::chrono::steady_clock::time_point> refreshed_;
  std::map<std::string, Row> rows_;
  std::deque<std::pair<std::int64_t, std::string>> removed_;  // (generation, name)
  std::int64_t floor_ = 0;  // the oldest generation answerable with changes only
  std::int64_t generation_ = 0;
};

}  // namespace tessera
