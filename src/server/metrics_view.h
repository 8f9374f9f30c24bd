// GET /metrics of the controller: the counters of ControllerMetrics and the gauges of the
// state — jobs by queue, kind and phase; each queue's allocated, guaranteed and pending GPUs,
// dominant share and pending jobs; each node's readiness, allocated GPUs and heartbeat age.
//
// A scrape never takes the controller's lock, so it never waits for a scheduling cycle: the
// job and queue counts are those published after every commit and cycle (published_status.h,
// kept as jobs change by job_index.h), and the node, GPU-use and autoscaling gauges are
// gathered by Refresh (the liveness loop calls RefreshIfDue, at most once per
// `min_gather_interval`, and each autoscale tick Refresh) in one short hold of the lock that
// copies numbers and bounded names.
// With a `min_gather_interval` of zero every scrape refreshes first (tests).
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/metrics_text.h"
#include "server/controller_core.h"
#include "server/gpu_usage_feed.h"
#include "server/queue_view.h"
#include "server/service_scaling.h"

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
    Tick last_seen = 0;  // the age is taken when written
    double heartbeat_age_seconds = 0;
  };
  std::vector<Node> nodes;
  std::uint64_t cycles = 0;
  std::int64_t last_event_seq = 0;
  double free_gpus = 0;
  Resources capacity;                // of the registered nodes
  double gather_locked_seconds = 0;  // how long the gathering held the controller's lock
};

// The gauges a refresh gathers under the lock: nodes (with the capacity they add up to), the
// GPU use reported and the autoscaled services.
struct NodeGauges {
  std::vector<ClusterGauges::Node> nodes;
  Resources capacity;
  std::vector<DeviceUse> uses;
  std::vector<ServiceScaleGauge> scales;
  double locked_seconds = 0;
};

// The nodes of `state` (status, GPUs, allocation, last heartbeat) and their capacity.
// REQUIRES: the core's mutex held.
void GatherNodeGaugesLocked(const ControllerState& state, NodeGauges& out);
// The job counts, queues and counters of published figures, and the nodes of a refresh, at
// `now` (heartbeat ages); the queues' rows are built as /v1/queues builds them.
ClusterGauges ClusterGaugesOf(const StatusFigures& figures, const NodeGauges& nodes,
                              const QueueTreeSpec* tree, Tick now);
// The queues of QueueRows (queue_view.h), as /v1/queues serves them.
void GatherQueueGauges(const nlohmann::json& queue_rows, ClusterGauges& out);
void WriteClusterGauges(const ClusterGauges& gauges, MetricsWriter& out);

class MetricsView {
 public:
  MetricsView(ControllerCore& core,
              std::chrono::milliseconds min_gather_interval = std::chrono::milliseconds(1000))
      : core_(core), min_gather_interval_(min_gather_interval) {}

  // The whole exposition text.
  std::string Text();
  // Gathers the node gauges now (one hold of the controller's lock).
  void Refresh();
  // Refresh, unless the last one is younger than the interval.
  void RefreshIfDue();

 private:
  ControllerCore& core_;
  std::chrono::milliseconds min_gather_interval_;
  std::mutex refresh_mu_;  // one refresh at a time; guards refreshed_at_
  std::optional<std::chrono::steady_clock::time_point> refreshed_at_;
  mutable std::mutex mu_;  // guards nodes_
  std::shared_ptr<const NodeGauges> nodes_ = std::make_shared<NodeGauges>();
};

}  // namespace tessera
