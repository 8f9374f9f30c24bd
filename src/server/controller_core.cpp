#include "server/controller_core.h"

#include <algorithm>
#include <chrono>

#include "spec/document.h"
#include "spec/protocol.h"

namespace tessera {

namespace {

Tick WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ControllerCore::ControllerCore(Store* store, ControllerOptions options)
    : event_feed(options.events_in_memory), store_(store), options_(std::move(options)) {
  if (!options_.now) options_.now = WallClockMs;
}

Status ControllerCore::LoadLocked() {
  auto contents = store_->Load();
  if (!contents) return std::unexpected(contents.error());
  for (auto& q : contents->queues) state.queues[q.name] = q;
  std::map<std::int64_t, JobState> jobs;
  for (auto& j : contents->jobs) {
    auto doc = ParseJson(j.spec_json);
    if (!doc) return Internal("store: job " + std::to_string(j.id) + ": " + doc.error().message);
    auto spec = JobSpecFromJson(*doc);
    if (!spec) return Internal("store: job " + std::to_string(j.id) + ": " + spec.error().message);
    JobState job;
    job.spec = std::move(*spec);
    job.workload = job.spec.ToWorkload();
    job.workload.submit = j.submit_ms;
    job.rec = std::move(j);
    const auto id = job.rec.id;
    jobs.emplace(id, std::move(job));
  }
  for (auto& u : contents->units) {
    auto it = jobs.find(u.job_id);
    if (it == jobs.end()) continue;
    auto& units = it->second.units;
    if (static_cast<std::size_t>(u.unit) >= units.size())
      units.resize(static_cast<std::size_t>(u.unit) + 1);
    units[static_cast<std::size_t>(u.unit)] = std::move(u);
  }
  for (auto& t : contents->tasks) {
    state.next_task_id = std::max(state.next_task_id, t.id + 1);
    auto it = jobs.find(t.job_id);
    if (it != jobs.end()) it->second.tasks.push_back(t.id);
    if (IsLive(t.state)) state.live_by_node[t.node].insert(t.id);
    if (t.state == TaskState::kRunning) state.awaiting_readoption.insert(t.id);
    state.tasks.emplace(t.id, std::move(t));
  }
  // A resize in progress resumes where it stood (resize_applier.h decides whether it still
  // applies: its old ranks stopping, ready to restart, or overtaken).
  for (auto& [id, job] : jobs) {
    for (const UnitRecord& u : job.units) {
      if (auto target = ResizeTargetFromJson(u.resize); target && target->unit == u.unit) {
        job.resize = std::move(target);
        state.resizing.insert(id);
      }
    }
  }
  // In job id order, so scheduling ids (ties in the queue order) follow submission.
  for (auto& [id, job] : jobs) state.AddJob(std::move(job));
  const Tick now = Now();
  for (auto& n : contents->nodes) {
    RegisteredNode node;
    node.rec = std::move(n);
    node.last_seen = now;  // every node gets a full timeout to check in after a restart
    state.nodes.emplace(node.rec.name, std::move(node));
  }
  state.last_seq = contents->last_event_seq;
  const auto keep = static_cast<std::int64_t>(options_.events_in_memory);
  if (auto recent = store_->EventsSince(std::max<std::int64_t>(0, state.last_seq - keep),
                                        static_cast<int>(keep))) {
    state.events.assign(recent->begin(), recent->end());
  }
  event_feed.Reset(state.events, state.last_seq);
  return {};
}

Status ControllerCore::CommitLocked(ChangeBuilder& change) {
  const Change& c = change.Finish();
  if (c.empty()) return {};
  const auto start = std::chrono::steady_clock::now();
  auto events = store_->Commit(c);
  metrics.StoreCommit(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      events.has_value());
  if (!events) {
    // Constraint refusals are answers; anything else means the store cannot commit.
    if (events.error().code == Error::Code::kIo) store_error = events.error().message;
    return std::unexpected(events.error());
  }
  store_error.clear();
  state.Apply(change, std::move(*events), options_.events_in_memory);
  event_feed.AppendNew(state.events, state.last_seq);
  PublishLocked();
  changed.notify_all();
  if (on_commit) on_commit();
  if (change.reschedule()) RequestScheduleLocked();
  return {};
}

void ControllerCore::ProbeStoreIfFailing() {
  {
    std::lock_guard lock(mu);
    if (store_error.empty()) return;
  }
  const Status probe = store_->Probe();
  std::lock_guard lock(mu);
  if (probe) {
    store_error.clear();
  } else {
    store_error = probe.error().message;
  }
}

void ControllerCore::RequestScheduleLocked() {
  schedule_requested = true;
  wake_scheduler.notify_one();
}

void ControllerCore::RequestUrgentScheduleLocked() {
  urgent_schedule = true;
  RequestScheduleLocked();
}

}  // namespace tessera
