// GET /v1/nodes/changes?since=G: the nodes that changed since generation G, so that the
// dashboard (docs/dashboard.md) reads 1,250 nodes once and then only what an event touched.
// Answers {generation, full, nodes: [row...], removed: [name...]}: with full (since=0, or a G
// this controller cannot answer from: another controller's, or older than the tombstones kept)
// every node, else the rows that differ from what G saw and the names removed since. Rows carry
// what the dashboard draws (dashboard_nodes.h): a heartbeat's age is no change.
//
// Generations start at the controller's start time in microseconds, so a G from before a
// restart is below the floor and answered in full. The rows are read again when the state's
// version (the last event's sequence number) moved since they were read, or else once they are
// `max_age` old (a GPU's use changes without an event); so an answer after an event always has
// it, and any number of pages asking between two events cost one read. Each row's JSON is
// written once, when it changes; an answer is those texts joined. Memory: one row per node and
// at most kRemovedKept names.
//
// Thread-safety: thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/dashboard_nodes.h"

namespace tessera {

class NodeChanges {
 public:
  static constexpr std::size_t kRemovedKept = 4096;

  // `list_nodes`: every node now, in name order; `version`: a number that moves with every
  // change of the state (read without the controller's lock).
  NodeChanges(std::function<std::vector<DashboardNode>()> list_nodes,
              std::function<std::int64_t()> version, std::chrono::milliseconds max_age);

  // The answer's JSON text.
  std::string Since(std::int64_t since);

 private:
  struct Row {
    DashboardNode node;
    std::string json;
    std::int64_t generation = 0;
  };
  void RefreshLocked();

  std::function<std::vector<DashboardNode>()> list_nodes_;
  std::function<std::int64_t()> version_;
  const std::chrono::milliseconds max_age_;
  std::mutex mu_;
  std::optional<std::chrono::steady_clock::time_point> refreshed_;
  std::int64_t refreshed_version_ = 0;
  std::map<std::string, Row> rows_;
  std::deque<std::pair<std::int64_t, std::string>> removed_;  // (generation, name)
  std::int64_t floor_ = 0;  // the oldest generation answerable with changes only
  std::int64_t generation_ = 0;
};

}  // namespace tessera
