// The co-location experiment's workload: its services, each one's load per step, and the
// offline tasks. Drawn once per seed (colocation_experiment.cpp) or read back from a plan file a
// run wrote (colocation_plan.*), so that the live bench and the simulator run the same one.
#pragma once

#include <string>
#include <vector>

#include "core/time.h"
#include "core/workload.h"

namespace tessera {

struct ColocationService {
  TaskShape shape;  // one replica
  std::vector<std::string> models;
  int max_replicas = 1;  // at the peak (load 1)
  double phase_hours = 0;
  std::string queue;
};

struct ColocationOfflineTask {
  TaskShape shape;
  std::vector<std::string> models;
  Tick submit = 0;  // from the start of the measured time; negative: during the warm-up
  Tick duration = 0;
};

struct ColocationWorkload {
  std::vector<ColocationService> services;
  std::vector<ColocationOfflineTask> offline;  // by submit time
  // loads[s][k]: service s's load in step k counted from the start of the warm-up, a share of
  // its peak in [0, 1]; its demand is max_replicas × load replicas at the target utilisation.
  std::vector<std::vector<double>> loads;
  double online_peak_milli = 0;  // all replicas of all services
  double offline_mean_gpu_seconds = 0;
};

}  // namespace tessera
