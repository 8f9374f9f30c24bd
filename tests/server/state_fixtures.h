// ControllerState built by hand for the pure parts of the cycle (snapshot builder, decision
// applier): nodes, jobs from spec YAML, and live tasks, without a store or threads.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/controller_state.h"
#include "spec/job_spec.h"

namespace tessera {

inline void AddNode(ControllerState& state, const std::string& name, int gpus = 4,
                    NodeStatus status = NodeStatus::kReady) {
  RegisteredNode node;
  node.rec.name = name;
  node.rec.address = "10.0.0." + std::to_string(state.nodes.size() + 1);
  node.rec.gpu_model = "H100";
  node.rec.gpu_count = gpus;
  node.rec.cpu_milli = 64000;
  node.rec.memory_mib = 512 * 1024;
  node.rec.simulated = true;
  node.rec.status = status;
  state.nodes[name] = node;
  ++state.node_generation;
}

inline std::string GangYaml(const std::string& name, int workers, int gpus,
                            const std::string& extra = "") {
  return "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: " + name +
         "}\nspec: {workers: " + std::to_string(workers) +
         ", gpusPerWorker: " + std::to_string(gpus) + extra + ", command: [python3, t.py]}\n";
}

inline std::string BatchYaml(const std::string& name, int tasks) {
  return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name +
         "}\nspec: {tasks: " + std::to_string(tasks) + ", gpusPerTask: 1, command: [true]}\n";
}

// Adds a job from its spec, all units pending; returns its id.
inline std::int64_t AddJob(ControllerState& state, const std::string& yaml, bool held = false) {
  auto spec = ParseJobSpec(yaml);
  EXPECT_TRUE(spec) << (spec ? "" : spec.error().message);
  if (!spec) return -1;
  JobState job;
  job.rec.id = state.next_job_id;
  job.rec.queue = spec->queue;
  job.rec.name = spec->name;
  job.rec.kind = std::string(KindName(spec->kind));
  job.rec.held = held;
  job.spec = *spec;
  job.workload = spec->ToWorkload();
  const int units = spec->IndependentTasks() ? spec->TaskCount() : 1;
  for (int u = 0; u < units; ++u) {
    UnitRecord unit;
    unit.job_id = job.rec.id;
    unit.unit = u;
    job.units.push_back(unit);
  }
  const std::int64_t id = job.rec.id;
  state.AddJob(std::move(job));
  return id;
}

// Marks unit `unit` of a job running (attempt 1) with one live task per entry of `gpus_by_node`
// (node, GPU indices), ranks in order.
inline void RunUnit(ControllerState& state, std::int64_t job_id, int unit,
                    const std::vector<std::pair<std::string, std::vector<int>>>& gpus_by_node,
                    TaskState task_state = TaskState::kRunning) {
  JobState& job = state.jobs.at(job_id);
  UnitRecord& u = job.units[static_cast<std::size_t>(unit)];
  u.phase = UnitPhase::kRunning;
  u.attempt = 1;
  u.started_ms = 1000;
  int rank = 0;
  for (const auto& [node, gpus] : gpus_by_node) {
    TaskRecord t;
    t.id = state.next_task_id++;
    t.job_id = job_id;
    t.unit = unit;
    t.attempt = 1;
    t.rank = rank++;
    t.node = node;
    t.gpus = gpus;
    t.state = task_state;
    state.tasks[t.id] = t;
    state.live_by_node[node].insert(t.id);
    state.CountLiveEndpoint(t, +1);
    job.tasks.push_back(t.id);
  }
}

}  // namespace tessera
