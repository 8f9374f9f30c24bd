#include "server/live_export.h"

#include "server/job_views.h"
#include "server/request_lock_wait.h"
#include "spec/protocol.h"
#include "spec/queue_file.h"
#include "store/record_json.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

constexpr int kEventPage = 10000;

// A JSON text kept in a record as the object it holds (null when unreadable).
Json Parsed(const std::string& text) {
  auto j = ParseJson(text);
  return j ? std::move(*j) : Json();
}

Json ControllerJson(const ControllerOptions& o, const ControllerState& state) {
  const SchedulerConfig& s = o.scheduler;
  return {{"queuePolicy", s.queue_policy},
          {"placementPolicy", s.placement_policy},
          {"priorityPreemption", s.priority_preemption},
          {"gangPlacement", s.gang_placement},
          {"backfillReservation", s.backfill_reservation},
          {"gpuModelChoice", s.gpu_model_choice},
          {"lasThresholdsGpuSeconds", s.queue.las_thresholds_gpu_seconds},
          {"colocation", s.colocation.enabled},
          {"seed", s.placement.draw_seed},
          {"topologyLevels", o.topology_levels},
          {"recovery", RecoveryModeName(o.recovery)},
          {"sparesPerDomain", o.spares_per_domain},
          {"cycles", state.cycles}};
}

// What the export holds of the state, copied under the lock so that the JSON (every spec
// parsed) is built after it.
struct StateCopy {
  struct Job {
    JobRecord rec;
    std::vector<UnitRecord> units;
    std::vector<TaskRecord> tasks;
  };
  std::vector<NodeRecord> nodes;  // in name order
  std::vector<Job> jobs;          // in id order
};

StateCopy CopyOf(const ControllerState& state) {
  StateCopy out;
  out.nodes.reserve(state.nodes.size());
  for (const auto& [name, node] : state.nodes) out.nodes.push_back(node.rec);
  out.jobs.reserve(state.jobs.size());
  for (const auto& [id, job] : state.jobs) {
    StateCopy::Job& j = out.jobs.emplace_back();
    j.rec = job.rec;
    j.units = job.units;
    for (auto tid : job.tasks) {
      if (auto t = state.tasks.find(tid); t != state.tasks.end()) j.tasks.push_back(t->second);
    }
  }
  return out;
}

Json NodesJson(const std::vector<NodeRecord>& records) {
  Json nodes = Json::array();
  for (const NodeRecord& rec : records) {
    Json j = ToJson(rec);
    j["topology"] = Parsed(rec.topology_json);
    j["gpus"] = Parsed(rec.gpus_json);
    nodes.push_back(std::move(j));
  }
  return nodes;
}

Json JobsJson(const std::vector<StateCopy::Job>& copies) {
  Json jobs = Json::array();
  for (const StateCopy::Job& job : copies) {
    Json j = ToJson(job.rec);
    j["spec"] = Parsed(job.rec.spec_json);
    Json units = Json::array();
    for (const UnitRecord& u : job.units) units.push_back(ToJson(u));
    Json tasks = Json::array();
    for (const TaskRecord& t : job.tasks) tasks.push_back(ToJson(t));
    j["units"] = std::move(units);
    j["tasks"] = std::move(tasks);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

}  // namespace

ApiResult<Json> ExportLiveState(ControllerCore& core) {
  Json out = {{"kind", "TesseraExport"}, {"version", kLiveExportVersion}};
  std::int64_t last_seq = 0;
  StateCopy copy;
  {
    auto lock = LockMeasured(core.mu);
    const ControllerState& state = core.state;
    out["exportedAtMs"] = core.Now();
    out["controller"] = ControllerJson(core.options(), state);
    copy = CopyOf(state);
    last_seq = state.last_seq;
  }
  out["queueTree"] = core.options().queues ? QueueFileJson(*core.options().queues) : Json();
  out["nodes"] = NodesJson(copy.nodes);
  out["jobs"] = JobsJson(copy.jobs);
  copy = {};
  Json events = Json::array();
  for (std::int64_t since = 0; since < last_seq;) {
    auto page = core.store().EventsSince(since, kEventPage);
    if (!page) return std::unexpected(ApiErr(page.error()));
    if (page->empty()) break;
    for (const EventRecord& e : *page) {
      if (e.seq > last_seq) break;
      events.push_back(EventJson(e));
    }
    since = page->back().seq;
  }
  out["events"] = std::move(events);
  return out;
}

}  // namespace tessera
