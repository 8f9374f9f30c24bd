// `tessera bench live --nodes N --gpus-per-node G --pending P --out FILE`: the controller at
// scale. One tesserad and one tessera-agent emulating N nodes of G simulated GPUs that run
// simulated tasks (--simulate-tasks: no processes); P single-GPU BatchJobs of priority 0
// committed to the store before tesserad starts. Once the cluster is full and jobs end and
// start, for a window of --seconds:
//   - probe jobs of priority 100 are submitted one at a time; submit-to-bind is the probe's
//     task creation (the bind's commit) minus its submission, both the controller's clock;
//   - GET /v1/jobs?phase=Running&limit=500 pages through the running jobs with `continue`,
//     again and again; each request's latency is measured by the client;
//   - GET /metrics every 500 ms, each answer timed by the client;
//   - tesserad's cycles that had pending work are timed by tesserad itself
//     (tessera_scheduling_cycle_recent_seconds in /metrics, the last 4096 such cycles).
// Reports cycle_ms, submit_to_bind_ms, get_jobs_ms, metrics_ms ({p50, p99} each) and
// controller_rss_mib in its JSON, with the agent's cost beside them, and server_times: per
// route, tesserad's mean answer and mean wait for its lock over the window (and the cycle's
// mean duration and lock hold), which says whether a slow answer waited or worked.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace tessera::cli {

struct LiveScaleOptions {
  int nodes = 0;
  int gpus_per_node = 8;
  int pending = 100000;
  int probes = 300;  // at most this many probe jobs in the window
  int seconds = 30;  // the measurement window
  std::string dir;   // working directory (created)
  std::string bin;   // where tesserad and tessera-agent are
  std::uint64_t seed = 1;
};

// Runs the benchmark; the JSON described above.
Result<nlohmann::json> RunLiveScale(const LiveScaleOptions& options);

// The rows `tessera bench live` prints for it.
void PrintLiveScale(const nlohmann::json& result);

class ApiClient;

// Submits `spec` (job QUEUE/NAME) and polls it every `poll_ms` until its first task has
// `task_stamp` (createdMs: bound; startedMs: started), for at most 30 s; returns that stamp minus
// the submission, both on the controller's clock, in ms.
Result<double> SubmitAndTimeMs(ApiClient& api, const std::string& queue, const std::string& name,
                               const std::string& spec, const std::string& task_stamp, int poll_ms);

}  // namespace tessera::cli
