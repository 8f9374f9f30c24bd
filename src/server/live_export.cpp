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

Json NodesJson(const ControllerState& state) {
  Json nodes = Json::array();
  for (const auto& [name, node] : state.nodes) {
    Json j = ToJson(node.rec);
    j["topology"] = Parsed(node.rec.topology_json);
    j["gpus"] = Parsed(node.rec.gpus_json);
    nodes.push_back(std::move(j));
  }
  return nodes;
}

Json JobsJson(const ControllerState& state) {
  Json jobs = Json::array();
  for (const auto& [id, job] : state.jobs) {
    Json j = ToJson(job.rec);
    j["spec"] = Parsed(job.rec.spec_json);
    Json units = Json::array();
    for (const UnitRecord& u : job.units) units.push_back(ToJson(u));
    Json tasks = Json::array();
    for (auto tid : job.tasks) {
      if (auto t = state.tasks.find(tid); t != state.tasks.end())
        tasks.push_back(ToJson(t->second));
    }
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
  {
    auto lock = LockMeasured(core.mu);
    const ControllerState& state = core.state;
    out["exportedAtMs"] = core.Now();
    out["controller"] = ControllerJson(core.options(), state);
    out["queueTree"] = core.options().queues ? QueueFileJson(*core.options().queues) : Json();
    out["nodes"] = NodesJson(state);
    out["jobs"] = JobsJson(state);
    last_seq = state.last_seq;
  }
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
