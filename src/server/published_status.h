// What GET /v1/status and /metrics read without the controller's lock: figures of the state
// copied under it after every commit and every scheduling cycle (ControllerCore::PublishLocked),
// counts only (job_index.h), never a pass over the jobs. A reader takes the last published
// copy under a small lock of its own, so it never waits for a scheduling cycle; a client that
// got an answer to a change and then reads the figures sees the change counted.
//
// Thread-safety: PublishedStatus is thread-safe; StatusFigures is immutable once published.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "server/controller_state.h"
#include "server/job_index.h"

namespace tessera {

struct StatusFigures {
  Tick started_ms = 0;
  Tick load_ms = 0;
  std::size_t loaded_jobs = 0;
  Tick first_decision_ms = -1;
  std::array<int, api::kJobPhaseCount> jobs_by_phase{};
  std::map<JobIndex::CountKey, int> job_counts;  // (queue, kind, phase), counts above zero
  // By queue: each registered queue and each queue that holds a job (finished ones counted).
  std::map<std::string, QueueUsage> queues;
  std::shared_ptr<const QueueTree> queue_tree;  // the last cycle's (ControllerState::queue_tree)
  std::size_t nodes = 0;
  std::uint64_t node_generation = 0;  // ControllerState::node_generation
  int ready_nodes = 0;
  std::uint64_t cycles = 0;
  std::int64_t last_event_seq = 0;
  std::int64_t free_gpu_milli = 0;  // after the last cycle
  std::string scheduler_problem;
};

// The figures of `state` now. REQUIRES: the controller's lock held.
std::shared_ptr<const StatusFigures> StatusFiguresOfLocked(const ControllerState& state);

class PublishedStatus {
 public:
  void Publish(std::shared_ptr<const StatusFigures> figures);
  // The last published (empty figures before the first).
  std::shared_ptr<const StatusFigures> Get() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const StatusFigures> figures_ = std::make_shared<StatusFigures>();
};

}  // namespace tessera
