// The simulator's failure model: how often each kind of component fails (per GPU, node or leaf
// switch, per hour), how long its repair takes, and which nodes are "lemons" that fail far more
// often than the rest. Presets carry published defaults ("llama3": the Llama 3 paper's 419
// unexpected interruptions in 54 days on 16,384 H100s, split by root cause); a YAML file can
// start from a preset and override any of it. GenerateFailures turns a model into a list of
// timed failure events over a run, deterministic for a seed; a failure file (failure_file.h)
// gives the same list from a recorded incident. docs/failures.md lists the sources.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"
#include "core/time.h"
#include "sched/recovery/recovery_topology.h"

namespace tessera {

enum class Component { kGpu, kHost, kNic, kLeafSwitch, kSoftware };
inline constexpr int kComponentCount = 5;
inline constexpr std::array<Component, kComponentCount> kAllComponents = {
    Component::kGpu, Component::kHost, Component::kNic, Component::kLeafSwitch,
    Component::kSoftware};

// "gpu", "host", "nic", "leaf_switch", "software".
std::string_view ComponentName(Component c);
// Also accepts "link" for nic and "switch" or "leaf" for leaf_switch.
std::optional<Component> ParseComponent(std::string_view name);
// "gpu, host, nic, leaf_switch, software", for error messages.
std::string ComponentList();

// What one failure takes out of service: a GPU (and so its node), a node, or a leaf switch
// (every node under it). A software failure stops the job on that node but the node stays up.
enum class FailureUnit { kGpu, kNode, kLeaf };
FailureUnit UnitOf(Component c);

struct ComponentModel {
  double rate_per_hour = 0;  // failures per unit (GPU, node or leaf) per hour
  double repair_hours = 0;   // mean time until the part is back in service
};

struct FailureModel {
  std::string name;  // the preset or file it came from
  std::array<ComponentModel, kComponentCount> components{};
  // Lemons: this share of nodes fails `lemon_multiplier` times as often as the others (GPU,
  // host and NIC failures). The per-node rates above stay the fleet average: the others' rate
  // drops so that the total is unchanged.
  double lemon_fraction = 0;
  double lemon_multiplier = 1;
  // Repair durations: exponential with the mean above, or always exactly the mean.
  bool fixed_repair = false;

  const ComponentModel& operator[](Component c) const {
    return components[static_cast<std::size_t>(c)];
  }
  ComponentModel& operator[](Component c) { return components[static_cast<std::size_t>(c)]; }

  // Expected failures per hour that stop a gang of `nodes` nodes with `gpus_per_node` GPUs each,
  // spread over `leaves` leaf switches.
  double JobFailuresPerHour(int nodes, int gpus_per_node, int leaves) const;
};

// Preset names: "llama3", "llama3-lemons", "none".
std::vector<std::string> FailurePresetNames();
Result<FailureModel> FailurePreset(std::string_view name);

// A model from YAML (shape in docs/failures.md). Errors are "FILE:LINE:COLUMN: FIELD: reason".
Result<FailureModel> ParseFailureModelYaml(std::string_view text, std::string_view source);
Result<FailureModel> LoadFailureModelYaml(const std::string& path);

struct FailureEvent {
  Tick time = 0;
  Component component = Component::kGpu;
  std::uint32_t target = 0;  // node index, or leaf index for a leaf switch
  int gpu = -1;              // for a GPU failure: which GPU of the node (-1 = unknown)
  Tick repair = -1;          // time out of service; -1 = the model's mean for the component
  bool lemon = false;        // drawn from a lemon's excess rate: a rebuilt lemon no longer has it
  std::int64_t line = 0;     // line of the failure file; 0 when generated
};

struct FailureSchedule {
  std::vector<FailureEvent> events;  // by time, then in generation (or file) order
  std::vector<NodeId> lemons;        // ascending
};

// Draws the failures of every GPU, node and leaf of `cluster` over [0, horizon): a Poisson
// process per unit at the model's rate, repair times drawn with each failure. The same model,
// cluster, horizon and seed give the same schedule on every platform.
FailureSchedule GenerateFailures(const FailureModel& model, const Cluster& cluster,
                                 const RecoveryTopology& topology, Tick horizon,
                                 std::uint64_t seed);

}  // namespace tessera
