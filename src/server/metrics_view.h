// GET /metrics of the controller: the counters of ControllerMetrics and the gauges of the
// state — jobs by queue, kind and phase; each queue's allocated, guaranteed and pending GPUs,
// dominant share and pending jobs; each node's readiness, allocated GPUs and heartbeat age.
//
// The gauges are gathered from the state under the controller's lock in short passes that copy
// only numbers and bounded names (the queue rows and the text are built after the lock is
// released): the jobs kJobsPerHold at a time, the lock released between them, so that a
// gathering over 100,000 jobs never keeps the scheduling cycle waiting for more than one such
// slice (a gauge may then count a job that changed meanwhile in its new phase or its old one,
// never twice), and at most once per `min_gather_interval`: scrapes more frequent than that
// share the last gathering, so no scrape rate can keep the lock from the scheduling cycle.
//
// Thread-safety: Text is thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/metrics_text.h"
#include "server/controller_core.h"
#include "server/queue_view.h"

namespace tessera {

// What a scrape reports of the state, as numbers.
struct ClusterGauges {
  // (queue, kind, phase); transparent, so that counting looks names up without copying them.
  std::map<std::tuple<std::string, std::string, std::string>, int, std::less<>> jobs;
  struct Queue {
    std::string name;
    double allocated_gpus = 0;
    std::optional<double> guaranteed_gpus;  // with a queue tree, once it resolves
    std::optional<double> borrow_limit_gpus;
    double dominant_share = 0;
    double pending_gpus = 0;
    int pending_jobs = 0;
  };
  std::vector<Queue> queues;
  struct Node {
    std::string name;
    std::string status;  // Ready, NotReady, Lost
    bool schedulable = false;
    bool simulated = false;
    std::string gpu_model;
    int gpu_count = 0;
    double gpus_allocated = 0;
    double heartbeat_age_seconds = 0;
  };
  std::vector<Node> nodes;
  std::uint64_t cycles = 0;
  std::int64_t last_event_seq = 0;
  double free_gpus = 0;
  Resources capacity;                // of the registered nodes
  double gather_locked_seconds = 0;  // how long the gathering held the controller's lock
};

// The jobs, nodes and counters of `state`, and what each queue holds now into `usage` (as
// /v1/queues counts it, finished jobs left out). REQUIRES: the core's mutex held.
void GatherStateGaugesLocked(const ControllerState& state, Tick now, ClusterGauges& out,
                             std::map<std::string, QueueUsage>* usage);
// Its two halves: at most `max_jobs` jobs from id `from` on (returns the id to go on from, or
// nullopt when none is left), and the nodes, queues' allocations and counters.
std::optional<std::int64_t> GatherJobGaugesLocked(const ControllerState& state, std::int64_t from,
                                                  std::size_t max_jobs, ClusterGauges& out,
                                                  std::map<std::string, QueueUsage>* usage);
void GatherNodeGaugesLocked(const ControllerState& state, Tick now, ClusterGauges& out,
                            std::map<std::string, QueueUsage>* usage);
// The queues of QueueRows (queue_view.h), as /v1/queues serves them.
void GatherQueueGauges(const nlohmann::json& queue_rows, ClusterGauges& out);
void WriteClusterGauges(const ClusterGauges& gauges, MetricsWriter& out);

class MetricsView {
 public:
  static constexpr std::size_t kJobsPerHold = 1024;
  MetricsView(ControllerCore& core,
              std::chrono::milliseconds min_gather_interval = std::chrono::milliseconds(1000))
      : core_(core), min_gather_interval_(min_gather_interval) {}

  // The whole exposition text.
  std::string Text();

 private:
  ControllerCore& core_;
  std::chrono::milliseconds min_gather_interval_;
  std::mutex mu_;  // one gathering at a time; guards the two below
  ClusterGauges last_;
  std::optional<std::chrono::steady_clock::time_point> gathered_at_;
};

}  // namespace tessera
