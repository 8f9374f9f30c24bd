// GET /metrics of tessera-agent: each node it serves (ready as the agent sees it: its last
// heartbeat was answered recently), each GPU's allocation, utilisation and memory, the tasks it
// runs, and its heartbeats (round trip, failures). Labels are node and GPU index only, so a
// node of 8 GPUs has 8 series per GPU metric whatever runs on it.
//
// Simulated GPUs (tessera-agent --simulate-gpus) carry simulated="true" and report the share
// a live task holds as both their utilisation and their memory used (allocated milli-GPU of
// the GPU's memory): there is no device to measure, and saying so is better than zeros that
// look measured. Real GPUs report NVML's figures when the driver has them.
//
// Thread-safety: AgentMetrics is thread-safe; the gauges are gathered by the agent under its
// own lock and formatted here without it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/metrics_text.h"

namespace tessera {

// The gauges of one scrape.
struct AgentGauges {
  struct Gpu {
    std::string node;
    int index = 0;
    std::string model;
    bool simulated = false;
    std::int64_t memory_mib = 0;
    std::int32_t allocated_milli = 0;  // held by live tasks
    std::int32_t busy_milli = 0;       // held by tasks with a live process
  };
  struct Node {
    std::string name;
    bool ready = false;
    int tasks = 0;  // running here
  };
  std::vector<Node> nodes;
  std::vector<Gpu> gpus;
};

class AgentMetrics {
 public:
  AgentMetrics();
  // One heartbeat exchange with the controller: its round trip and whether it was answered
  // with 200 (a long poll's round trip includes its wait).
  void Heartbeat(double seconds, bool ok);
  void Write(MetricsWriter& out) const;

 private:
  mutable std::mutex mu_;
  Histogram heartbeat_seconds_;
  std::int64_t heartbeat_failures_ = 0;
};

void WriteAgentGauges(const AgentGauges& gauges, MetricsWriter& out);

}  // namespace tessera
