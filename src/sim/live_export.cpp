#include "sim/live_export.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "core/rng.h"
#include "sched/quota/queue_tree.h"
#include "spec/job_spec.h"
#include "spec/queue_file.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

// A field of an object, or the error naming it.
template <typename T>
Result<T> Field(const Json& j, const std::string& where, const char* key) {
  const std::string path = where.empty() ? key : where + "." + key;
  if (!j.is_object() || !j.contains(key)) return InvalidArgument(path + ": missing");
  const Json& v = j[key];
  bool ok = false;
  if constexpr (std::is_same_v<T, bool>) {
    ok = v.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    ok = v.is_number_integer();
  } else if constexpr (std::is_same_v<T, std::string>) {
    ok = v.is_string();
  } else {
    ok = v.is_array() || v.is_object();
  }
  if (!ok) return InvalidArgument(path + ": of the wrong type");
  return v.get<T>();
}

#define TRY_FIELD(var, T, j, where, key)                 \
  auto var##_r = Field<T>(j, where, key);                \
  if (!var##_r) return std::unexpected(var##_r.error()); \
  const T& var = *var##_r

// The nodes in the export's (the controller's name) order, with its levels and domains, as
// the controller builds its scheduler's cluster (server/snapshot_builder.cpp).
Status ReadNodes(const Json& nodes, const std::vector<std::string>& levels, Cluster& cluster) {
  Topology topology;
  topology.levels = levels;
  topology.domain_names.resize(levels.size());
  std::vector<std::map<std::string, std::uint32_t>> index(levels.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = "nodes[" + std::to_string(i) + "]";
    const Json& n = nodes[i];
    TRY_FIELD(name, std::string, n, where, "name");
    TRY_FIELD(model, std::string, n, where, "gpuModel");
    TRY_FIELD(gpus, int, n, where, "gpuCount");
    TRY_FIELD(cpu, std::int64_t, n, where, "cpuMilli");
    TRY_FIELD(memory, std::int64_t, n, where, "memoryMib");
    const Json place = n.value("topology", Json::object());
    std::vector<std::uint32_t> domain;
    for (std::size_t l = 0; l < levels.size(); ++l) {
      std::string d = "none";
      if (place.is_object() && place.contains(levels[l]) && place[levels[l]].is_string())
        d = place[levels[l]].get<std::string>();
      auto [it, added] = index[l].try_emplace(d, topology.domain_names[l].size());
      if (added) topology.domain_names[l].push_back(d);
      domain.push_back(it->second);
    }
    if (auto id = cluster.AddNode(name, model, gpus, cpu, memory, std::move(domain)); !id)
      return InvalidArgument(where + ": " + id.error().message);
  }
  cluster.set_topology(std::move(topology));
  return {};
}

Status ReadController(const Json& c, LiveExport& out) {
  SchedulerConfig& s = out.options.scheduler;
  TRY_FIELD(queue_policy, std::string, c, "controller", "queuePolicy");
  TRY_FIELD(placement, std::string, c, "controller", "placementPolicy");
  TRY_FIELD(preemption, bool, c, "controller", "priorityPreemption");
  TRY_FIELD(seed, std::uint64_t, c, "controller", "seed");
  s.queue_policy = queue_policy;
  s.placement_policy = placement;
  s.priority_preemption = preemption;
  s.gang_placement = c.value("gangPlacement", s.gang_placement);
  s.backfill_reservation = c.value("backfillReservation", s.backfill_reservation);
  s.gpu_model_choice = c.value("gpuModelChoice", s.gpu_model_choice);
  if (c.contains("lasThresholdsGpuSeconds") && c["lasThresholdsGpuSeconds"].is_array())
    s.queue.las_thresholds_gpu_seconds = c["lasThresholdsGpuSeconds"].get<std::vector<double>>();
  if (c.value("colocation", false)) {
    return InvalidArgument(
        "controller.colocation: the controller co-locates online and offline work; replaying "
        "an export of it is not supported (its replicas' GPU use is not exported)");
  }
  s.elastic = true;  // live, every job with spec.elastic is resized
  out.options.seed = seed;
  if (c.value("recovery", std::string("requeue")) != "requeue" || c.value("sparesPerDomain", 0) > 0)
    out.notes.push_back("the controller's recovery policy and spare pool are not replayed");
  return {};
}

// One unit's live attempts from its tasks: (attempt, bind time, end or -1, places by rank).
struct Attempt {
  Tick bound = 0;
  Tick ended = -1;  // -1: still live at the export
  std::vector<std::pair<int, TaskPlace>> ranks;
};
using Attempts = std::map<int, Attempt>;

Status ReadTasks(const Json& tasks, const std::string& where, std::map<int, Attempts>& units) {
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const std::string at = where + ".tasks[" + std::to_string(i) + "]";
    const Json& t = tasks[i];
    TRY_FIELD(unit, int, t, at, "unit");
    TRY_FIELD(attempt, int, t, at, "attempt");
    TRY_FIELD(rank, int, t, at, "rank");
    TRY_FIELD(node, std::string, t, at, "node");
    TRY_FIELD(created, Tick, t, at, "createdMs");
    TRY_FIELD(finished, Tick, t, at, "finishedMs");
    TRY_FIELD(state, std::string, t, at, "state");
    TaskPlace place{node, 0, t.value("gpuMilli", 1000)};
    if (t.contains("gpus") && t["gpus"].is_array()) {
      for (const Json& g : t["gpus"]) {
        if (!g.is_number_integer() || g.get<int>() < 0 || g.get<int>() > 15)
          return InvalidArgument(at + ".gpus: expected GPU indices 0..15");
        place.gpu_mask |= static_cast<std::uint16_t>(1u << g.get<int>());
      }
    }
    if (place.gpu_mask == 0) place.gpu_milli = 0;
    Attempt& a = units[unit][attempt];
    a.bound = a.ranks.empty() ? created : std::min(a.bound, created);
    const bool live = state == "Assigned" || state == "Running" || state == "Stopping";
    if (a.ranks.empty() || a.ended >= 0) a.ended = live ? -1 : std::max(a.ended, finished);
    a.ranks.emplace_back(rank, std::move(place));
  }
  return {};
}

// How long a unit held its GPUs live over all its attempts (until the export for one still
// live): its run time in the replay.
Tick HeldFor(const Attempts& attempts, Tick exported_at) {
  Tick total = 0;
  for (const auto& [n, a] : attempts)
    total += std::max<Tick>(0, (a.ended < 0 ? exported_at : a.ended) - a.bound);
  return total;
}

Status ReadJobs(const Json& jobs, const Cluster& cluster, LiveExport& out,
                std::map<std::string, std::size_t>& unit_index,
                std::map<std::size_t, Attempts>& attempts) {
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const std::string where = "jobs[" + std::to_string(i) + "]";
    const Json& j = jobs[i];
    TRY_FIELD(queue, std::string, j, where, "queue");
    TRY_FIELD(name, std::string, j, where, "name");
    TRY_FIELD(submit, Tick, j, where, "submitMs");
    TRY_FIELD(finished, Tick, j, where, "finishedMs");
    TRY_FIELD(held, bool, j, where, "held");
    if (!j.contains("spec") || !j["spec"].is_object())
      return InvalidArgument(where + ".spec: missing (an export has every job's full spec)");
    auto spec = JobSpecFromJson(j["spec"]);
    if (!spec) return InvalidArgument(where + ".spec: " + spec.error().message);
    std::map<int, Attempts> units;
    if (j.contains("tasks") && j["tasks"].is_array()) {
      if (auto s = ReadTasks(j["tasks"], where, units); !s) return s;
    }
    const std::string job = queue + "/" + name;
    if (held) {
      out.notes.push_back(job + ": held at the export, left out");
      continue;
    }
    if (!spec->dependencies.empty())
      out.notes.push_back(job +
                          ": its dependencies are not replayed (it arrives at its submit time)");
    Workload w = spec->ToWorkload();
    w.submit = submit;
    ResolveGpuModels(cluster.models(), w);
    const bool tasks = spec->IndependentTasks();
    if (tasks) w.groups[0].count = 1;  // each task is scheduled alone, as live
    const int count =
        tasks ? std::max<int>(1, static_cast<int>(j.value("units", Json::array()).size())) : 1;
    for (int u = 0; u < count; ++u) {
      const auto found = units.find(u);
      if (found == units.end() && finished != 0) {
        out.notes.push_back(job + (tasks ? " task " + std::to_string(u) : "") +
                            ": ended without running live (cancelled), left out");
        continue;
      }
      Workload unit = w;
      unit.id = JobId(static_cast<std::uint32_t>(out.jobs.size()));
      unit.duration = found == units.end() ? 1 : HeldFor(found->second, out.exported_at);
      const std::string key = tasks ? job + "#" + std::to_string(u) : job;
      unit_index[tasks ? key : job + "#0"] = out.jobs.size();
      if (found != units.end()) attempts[out.jobs.size()] = found->second;
      out.names.push_back(key);
      out.jobs.push_back(std::move(unit));
    }
  }
  return {};
}

std::optional<std::vector<TaskPlace>> Places(const Json& on) {
  std::vector<TaskPlace> out;
  if (!on.is_array()) return std::nullopt;
  for (const Json& p : on) {
    if (!p.is_string()) return std::nullopt;
    auto place = ParseTaskPlace(p.get<std::string>());
    if (!place) return std::nullopt;
    out.push_back(std::move(*place));
  }
  return out;
}

// The cycles of the event log, and the decisions their records list.
Status ReadCycles(const Json& events, const std::map<std::string, std::size_t>& unit_index,
                  LiveExport& out, std::set<std::pair<std::size_t, int>>& recorded_binds) {
  int older = 0;
  std::set<std::uint64_t> seeds;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Json& e = events[i];
    if (e.value("type", "") != "SchedulingCycle") continue;
    const std::string where = "events[" + std::to_string(i) + "].message";
    const Json record = Json::parse(e.value("message", ""), nullptr, false);
    if (!record.is_object()) {
      ++older;  // a controller before the records held decisions: "clock=MS seed=N ..."
      continue;
    }
    TRY_FIELD(clock, Tick, record, where, "clock");
    TRY_FIELD(seed, std::uint64_t, record, where, "seed");
    TRY_FIELD(cycle, std::uint64_t, record, where, "cycle");
    out.options.cycles.push_back({clock, Rng::Mix(seed, cycle)});
    seeds.insert(seed);
    if (record.value("truncated", false)) ++out.truncated_records;
    auto unit_of = [&](const Json& d) -> std::optional<std::size_t> {
      auto it = unit_index.find(d.value("job", "") + "#" + std::to_string(d.value("unit", 0)));
      return it == unit_index.end() ? std::nullopt : std::optional(it->second);
    };
    struct List {
      const char* key;
      Decision::Kind kind;
    };
    for (const List list :
         {List{"preemptions", Decision::Kind::kPreempt}, List{"resizes", Decision::Kind::kResize},
          List{"binds", Decision::Kind::kBind}}) {
      for (const Json& d : record.value(list.key, Json::array())) {
        const auto unit = unit_of(d);
        if (!unit) continue;  // a job left out (held, cancelled before it ran)
        LiveDecision decision{clock, cycle, list.kind, *unit, {}, d.value("by", ""), false};
        if (list.kind != Decision::Kind::kPreempt) {
          auto on = Places(d.value("on", Json()));
          if (!on)
            return InvalidArgument(where + "." + list.key + ": 'on' is not a list of NODE:GPUS");
          decision.on = std::move(*on);
        }
        if (list.kind == Decision::Kind::kBind)
          recorded_binds.insert({*unit, d.value("attempt", 0)});
        out.decisions.push_back(std::move(decision));
      }
    }
  }
  if (older > 0) {
    out.notes.push_back(std::to_string(older) +
                        " cycle events of an older controller (no decisions in them) not replayed");
  }
  if (seeds.size() > 1 || (seeds.size() == 1 && *seeds.begin() != out.options.seed)) {
    std::string list;
    for (auto s : seeds) list += (list.empty() ? "" : ", ") + std::to_string(s);
    out.notes.push_back("cycles were recorded under run seeds " + list +
                        " (the controller restarted with another --seed); the replay draws "
                        "with the export's, " +
                        std::to_string(out.options.seed));
  }
  std::sort(out.options.cycles.begin(), out.options.cycles.end(),
            [](const RecordedCycle& a, const RecordedCycle& b) { return a.time < b.time; });
  return {};
}

// The binds a truncated record left out, from the tasks: every attempt of a unit whose record
// is missing, except the restarts of a resize (not a bind of the scheduler's).
void BindsFromTasks(const std::map<std::size_t, Attempts>& attempts,
                    const std::set<std::pair<std::size_t, int>>& recorded, LiveExport& out) {
  std::set<std::size_t> resized;
  for (const LiveDecision& d : out.decisions)
    if (d.kind == Decision::Kind::kResize) resized.insert(d.unit);
  for (const auto& [unit, by_attempt] : attempts) {
    if (resized.contains(unit)) continue;
    for (const auto& [attempt, a] : by_attempt) {
      if (recorded.contains({unit, attempt})) continue;
      LiveDecision d{a.bound, 0, Decision::Kind::kBind, unit, {}, "", true};
      auto ranks = a.ranks;
      std::sort(ranks.begin(), ranks.end(),
                [](const auto& x, const auto& y) { return x.first < y.first; });
      for (auto& [rank, place] : ranks) d.on.push_back(place);
      out.decisions.push_back(std::move(d));
    }
  }
}

}  // namespace

Result<LiveExport> ReadLiveExport(const Json& doc) {
  if (!doc.is_object() || doc.value("kind", "") != "TesseraExport")
    return InvalidArgument("kind: expected TesseraExport (written by `tessera export`)");
  if (doc.value("version", 0) != 1)
    return InvalidArgument("version: " + doc.value("version", Json()).dump() + " is not 1");
  LiveExport out;
  TRY_FIELD(exported_at, Tick, doc, "", "exportedAtMs");
  TRY_FIELD(controller, Json, doc, "", "controller");
  TRY_FIELD(nodes, Json, doc, "", "nodes");
  TRY_FIELD(jobs, Json, doc, "", "jobs");
  TRY_FIELD(events, Json, doc, "", "events");
  out.exported_at = exported_at;
  if (auto s = ReadController(controller, out); !s) return std::unexpected(s.error());
  std::vector<std::string> levels;
  if (controller.contains("topologyLevels") && controller["topologyLevels"].is_array())
    levels = controller["topologyLevels"].get<std::vector<std::string>>();
  if (auto s = ReadNodes(nodes, levels, out.cluster); !s) return std::unexpected(s.error());
  if (out.cluster.node_count() == 0) return InvalidArgument("nodes: none (nothing to replay on)");
  if (doc.contains("queueTree") && doc["queueTree"].is_object()) {
    auto spec = ParseQueueFile(doc["queueTree"].dump(), "queueTree");
    if (!spec) return std::unexpected(spec.error());
    auto tree = QueueTree::Build(*spec, ClusterCapacity(out.cluster));
    if (!tree) return InvalidArgument("queueTree: " + tree.error().message);
    out.options.scheduler.queues = std::make_shared<const QueueTree>(std::move(*tree));
  }
  std::map<std::string, std::size_t> unit_index;
  std::map<std::size_t, Attempts> attempts;
  if (auto s = ReadJobs(jobs, out.cluster, out, unit_index, attempts); !s)
    return std::unexpected(s.error());
  std::set<std::pair<std::size_t, int>> recorded;
  if (auto s = ReadCycles(events, unit_index, out, recorded); !s) return std::unexpected(s.error());
  if (out.truncated_records > 0) BindsFromTasks(attempts, recorded, out);
  std::stable_sort(out.decisions.begin(), out.decisions.end(),
                   [](const LiveDecision& a, const LiveDecision& b) { return a.time < b.time; });
  out.options.measured_run_times = true;
  out.options.record_decisions = true;
  return out;
}

Result<LiveExport> LoadLiveExport(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  const Json doc = Json::parse(text.str(), nullptr, false);
  if (doc.is_discarded()) return InvalidArgument(path + ": not JSON");
  auto out = ReadLiveExport(doc);
  if (!out) return InvalidArgument(path + ": " + out.error().message);
  return out;
}

}  // namespace tessera
