#include "server/user_api.h"

#include <algorithm>
#include <chrono>

#include "server/job_gates.h"
#include "server/job_object.h"
#include "server/queue_view.h"
#include "server/request_lock_wait.h"
#include "server/run_estimates.h"
#include "server/snapshot_builder.h"
#include "server/unit_lifecycle.h"
#include "spec/document.h"
#include "spec/text.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

ApiError JobNotFound(const std::string& queue, const std::string& name) {
  return ApiErr(NotFound("job " + QualifiedName(queue, name) + " not found"));
}

}  // namespace

ApiResult<JobSpec> ParseSubmission(std::string_view text) {
  std::vector<FieldError> fields;
  auto spec = ParseJobSpec(text, &fields);
  if (!spec) return std::unexpected(ApiError{spec.error(), fields});
  return std::move(*spec);
}

ApiResult<Json> UserApi::Submit(std::string_view text, bool hold, bool queue_anyway) {
  auto spec = ParseSubmission(text);
  if (!spec) return std::unexpected(spec.error());
  return Submit(std::move(*spec), hold, queue_anyway);
}

ApiResult<Json> UserApi::Submit(JobSpec spec, bool hold, bool queue_anyway) {
  if (!leaf_queues_.empty() && !leaf_queues_.contains(spec.queue)) {
    std::string leaves;
    for (const auto& q : leaf_queues_) leaves += (leaves.empty() ? "" : ", ") + q;
    FieldError f{"metadata.queue", "'" + spec.queue + "' is not a leaf queue of the queue tree (" +
                                       core_.options().queues_source + "): one of " + leaves};
    return std::unexpected(ApiError{InvalidArgument(f.ToString()).error(), {f}});
  }
  if (auto f = MissingEstimate(spec, core_.options().scheduler.queue_policy)) {
    return std::unexpected(ApiError{InvalidArgument(f->ToString()).error(), {*f}});
  }
  auto req = std::make_shared<SubmitRequest>();
  req->spec = std::move(spec);
  req->hold = hold;
  req->queue_anyway = queue_anyway;
  bool leads = false;
  {
    std::lock_guard q(submit_mu_);
    submit_queue_.push_back(req);
    leads = !submit_leader_;
    submit_leader_ = true;
  }
  if (!leads) req->wake.Acquire();  // its result, or the lead of the next commit
  if (!req->result) LeadGroupCommit(req);
  return std::move(*req->result);
}

void UserApi::LeadGroupCommit(const std::shared_ptr<SubmitRequest>& req) {
  std::vector<std::shared_ptr<SubmitRequest>> batch;
  {
    std::lock_guard q(submit_mu_);
    batch.swap(submit_queue_);  // this request and everything queued since the last commit
  }
  auto results = CommitSubmissions(batch);
  for (std::size_t i = 0; i < batch.size(); ++i) batch[i]->result = std::move(results[i]);
  std::shared_ptr<SubmitRequest> next;
  {
    std::lock_guard q(submit_mu_);
    if (submit_queue_.empty()) {
      submit_leader_ = false;
    } else {
      next = submit_queue_.front();  // submit_leader_ stays: the lead passes to it
    }
  }
  if (next) next->wake.Release();
  for (const auto& other : batch) {
    if (other != req) other->wake.Release();
  }
}

std::shared_ptr<const Cluster> UserApi::RegisteredClusterLocked() {
  return fit_cluster_.Get(core_.state.node_generation, [&](Cluster& cluster) {
    AddRegisteredNodes(core_.state, core_.options().topology_levels, cluster);
  });
}

void UserApi::AddJobLocked(const JobSpec& spec, bool hold, std::int64_t id, ChangeBuilder& change,
                           std::set<std::string>& new_queues) {
  const Tick now = core_.Now();
  JobState job;
  job.rec.id = id;
  job.rec.queue = spec.queue;
  job.rec.name = spec.name;
  job.rec.kind = std::string(KindName(spec.kind));
  job.rec.spec_json = DumpJson(JobSpecToJson(spec));
  job.rec.submit_ms = now;
  job.rec.held = hold;
  const int units = spec.IndependentTasks() ? spec.TaskCount() : 1;
  for (int u = 0; u < units; ++u) {
    UnitRecord unit;
    unit.job_id = id;
    unit.unit = u;
    unit.phase = UnitPhase::kPending;
    unit.pending_since_ms = now;
    job.units.push_back(unit);
  }
  if (!core_.state.queues.contains(spec.queue) && new_queues.insert(spec.queue).second) {
    change.PutQueue({spec.queue, now});
  }
  job.spec = spec;
  job.workload = spec.ToWorkload();
  job.workload.submit = now;
  change.Event("JobSubmitted", JobObject(job.rec),
               job.rec.kind + " with " + std::to_string(job.workload.TaskCount()) + " task(s), " +
                   GpusText(static_cast<double>(job.workload.TotalGpuMilli()) / kMilliPerGpu) +
                   " GPU(s)" + (hold ? ", held" : ""));
  change.AddNewJob(std::move(job));
  if (!hold) change.RequestSchedule();
}

std::vector<ApiResult<Json>> UserApi::CommitSubmissions(
    const std::vector<std::shared_ptr<SubmitRequest>>& batch) {
  auto lock = LockMeasured(core_.mu);
  auto& state = core_.state;
  std::vector<ApiResult<Json>> results(batch.size(),
                                       std::unexpected(ApiErr(Internal("not committed"))));
  auto duplicate = [](const JobSpec& spec) {
    return std::unexpected(ApiErr(AlreadyExists("metadata.name: a job named " + Quote(spec.name) +
                                                " already exists in queue " + Quote(spec.queue) +
                                                " (cancel and purge it, or choose another name)")));
  };
  ChangeBuilder change(state);
  std::set<std::string> new_queues;
  std::set<std::pair<std::string, std::string>> names;
  std::vector<std::pair<std::size_t, std::int64_t>> accepted;  // (request, job id)
  std::int64_t id = state.next_job_id;
  std::shared_ptr<const Cluster> registered;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const JobSpec& spec = batch[i]->spec;
    // Checked here, under the lock the commit holds anyway, so that a submitter never waits
    // for the lock while a commit is in flight: it joins the queue for the next group at once.
    if (!batch[i]->queue_anyway) {
      if (!registered) registered = RegisteredClusterLocked();
      if (auto f = NeverFitsAtSubmit(*registered, spec)) {
        f->reason +=
            "; it can never run on the registered nodes (`tessera submit --queue-anyway` "
            "queues it until such nodes register)";
        results[i] = std::unexpected(ApiError{FailedPrecondition(f->ToString()).error(), {*f}});
        continue;
      }
    }
    if (state.FindJob(spec.queue, spec.name) || !names.insert({spec.queue, spec.name}).second) {
      results[i] = duplicate(spec);
      continue;
    }
    if (auto missing = MissingDependency(spec, [&](const JobDependency& d) {
          return state.FindJob(d.queue, d.name) || names.contains({d.queue, d.name});
        })) {
      results[i] = std::unexpected(ApiErr(InvalidArgument(*missing)));
      names.erase({spec.queue, spec.name});
      continue;
    }
    AddJobLocked(spec, batch[i]->hold, id, change, new_queues);
    accepted.emplace_back(i, id++);
  }
  if (accepted.empty()) return results;
  // A job that outranks every pending one (held ones aside) binds in the next cycle, not after
  // the pause the scheduling loop leaves between cycles.
  const std::optional<int> highest = state.index.max_pending_priority();
  const bool urgent = std::any_of(accepted.begin(), accepted.end(), [&](const auto& a) {
    return !batch[a.first]->hold && (!highest || batch[a.first]->spec.priority > *highest);
  });
  if (auto s = core_.CommitLocked(change); s) {
    for (const auto& [i, job_id] : accepted) results[i] = JobSummary(state, state.jobs.at(job_id));
    if (urgent) core_.RequestUrgentScheduleLocked();
    return results;
  }
  // The batch failed as a whole: try each on its own, so that one cannot fail the others.
  for (const auto& [i, unused] : accepted) {
    ChangeBuilder one(state);
    std::set<std::string> queues;
    const std::int64_t job_id = state.next_job_id;
    AddJobLocked(batch[i]->spec, batch[i]->hold, job_id, one, queues);
    if (auto s = core_.CommitLocked(one); !s) {
      results[i] = std::unexpected(ApiErr(s.error()));
    } else {
      results[i] = JobSummary(state, state.jobs.at(job_id));
    }
  }
  return results;
}

ApiResult<Json> UserApi::GetJob(const std::string& queue, const std::string& name) {
  auto lock = LockMeasured(core_.mu);
  auto id = core_.state.FindJob(queue, name);
  if (!id) return std::unexpected(JobNotFound(queue, name));
  const JobState& job = core_.state.jobs.at(*id);
  Json j = JobDetail(core_.state, job);
  // Where its requests go in (`tesserad --gateway URL`): `tessera describe` asks it for readiness.
  if (job.spec.kind == WorkloadKind::kInference && !core_.options().gateway_url.empty())
    j["gateway"] = core_.options().gateway_url;
  return j;
}

JobPage UserApi::ListJobs(const JobFilter& filter) {
  auto lock = LockMeasured(core_.mu);
  JobPage page;
  Json& out = page.jobs;
  // Adds `job` when it matches; false once the limit is reached.
  auto add = [&](const JobState& job) {
    if (!filter.queue.empty() && job.rec.queue != filter.queue) return true;
    if (!filter.name.empty() && job.rec.name != filter.name) return true;
    if (filter.phase && JobPhaseOf(job) != *filter.phase) return true;
    if (!filter.user.empty() && job.spec.user != filter.user) return true;
    if (!filter.selector.Matches(job.spec.labels)) return true;
    out.push_back(filter.objects ? ResubmittableJob(job.spec, JobSummary(core_.state, job))
                                 : JobSummary(core_.state, job));
    if (filter.limit == 0 || out.size() < filter.limit) return true;
    page.next_continue = job.rec.id;
    return false;
  };
  // Jobs are keyed by id, which grows with each submission; a page starts past the last id of
  // the previous one, found without visiting the jobs before it. With a phase, only the jobs
  // filed under it are visited (job_index.h).
  auto walk = [&](const auto& ids, auto&& job_of) {
    const std::int64_t after = filter.continue_after;
    if (filter.newest_first) {
      auto it = after > 0 ? std::make_reverse_iterator(ids.lower_bound(after)) : ids.rbegin();
      for (; it != ids.rend(); ++it)
        if (!add(job_of(*it))) break;
    } else {
      for (auto it = ids.upper_bound(after); it != ids.end(); ++it)
        if (!add(job_of(*it))) break;
    }
  };
  const auto& jobs = core_.state.jobs;
  if (filter.phase) {
    walk(core_.state.index.ids(*filter.phase),
         [&](std::int64_t id) -> const JobState& { return jobs.at(id); });
  } else {
    walk(jobs, [](const auto& entry) -> const JobState& { return entry.second; });
  }
  return page;
}

ApiResult<Json> UserApi::Cancel(const std::string& queue, const std::string& name) {
  auto lock = LockMeasured(core_.mu);
  auto& state = core_.state;
  auto id = state.FindJob(queue, name);
  if (!id) return std::unexpected(JobNotFound(queue, name));
  const JobState& job = state.jobs.at(*id);
  if (job.rec.cancel_requested || job.rec.finished_ms != 0) return JobSummary(state, job);
  const Tick now = core_.Now();
  ChangeBuilder change(state);
  change.MutableJob(job).cancel_requested = true;
  change.Event("JobCancelling", JobObject(job.rec), "cancel requested");
  for (int u = 0; u < static_cast<int>(job.units.size()); ++u) {
    const UnitPhase phase = change.Unit(job, u).phase;
    if (phase == UnitPhase::kPending) {
      auto& m = change.MutableUnit(job, u);
      m.phase = UnitPhase::kCancelled;
      m.finished_ms = now;
      m.message = "cancelled before it started";
    } else if (phase == UnitPhase::kRunning || phase == UnitPhase::kStopping) {
      StopUnit(change, job, u, UnitPhase::kCancelled, "cancelled", now);
    }
  }
  FinishJobIfDone(change, job, now);
  change.RequestSchedule();
  if (auto s = core_.CommitLocked(change); !s) return std::unexpected(ApiErr(s.error()));
  return JobSummary(state, state.jobs.at(*id));
}

ApiResult<std::vector<std::int64_t>> UserApi::ReleasedIdsLocked(
    const std::string& queue, const std::vector<std::string>& names, bool all) const {
  const auto& state = core_.state;
  std::vector<std::int64_t> ids;  // in job id order with `all`, else in the order named
  if (all) {
    if (!names.empty()) {
      return std::unexpected(ApiErr(InvalidArgument("give job names or all, not both")));
    }
    for (auto id : state.active) {
      const JobState& job = state.jobs.at(id);
      if (job.rec.held && (queue.empty() || job.rec.queue == queue)) ids.push_back(id);
    }
    return ids;
  }
  if (names.empty()) {
    return std::unexpected(ApiErr(InvalidArgument("names: give at least one job, or all")));
  }
  std::set<std::int64_t> seen;
  for (const auto& name : names) {
    std::optional<std::int64_t> id;
    if (!queue.empty()) {
      id = state.FindJob(queue, name);
    } else {
      for (const auto& [key, jid] : state.job_ids) {
        if (key.second != name) continue;
        if (id) {
          return std::unexpected(ApiErr(
              InvalidArgument("job " + Quote(name) + " is in several queues; give the queue")));
        }
        id = jid;
      }
    }
    if (!id) {
      return std::unexpected(ApiErr(NotFound(
          "job " + (queue.empty() ? Quote(name) : QualifiedName(queue, name)) + " not found")));
    }
    if (seen.insert(*id).second) ids.push_back(*id);
  }
  return ids;
}

ApiResult<Json> UserApi::Release(const std::string& queue, const std::vector<std::string>& names,
                                 bool all) {
  auto lock = LockMeasured(core_.mu);
  auto ids = ReleasedIdsLocked(queue, names, all);
  if (!ids) return std::unexpected(ids.error());
  ChangeBuilder change(core_.state);
  Json released = Json::array(), not_held = Json::array();
  for (auto id : *ids) {
    const JobState& job = core_.state.jobs.at(id);
    const std::string qualified = job.rec.queue + "/" + job.rec.name;
    if (!job.rec.held || job.rec.finished_ms != 0) {
      not_held.push_back(qualified);
      continue;
    }
    change.MutableJob(job).held = false;
    change.Event("JobReleased", JobObject(job.rec), "released from hold");
    released.push_back(qualified);
  }
  if (!released.empty()) change.RequestSchedule();
  if (auto s = core_.CommitLocked(change); !s) return std::unexpected(ApiErr(s.error()));
  return Json{{"released", std::move(released)}, {"notHeld", std::move(not_held)}};
}

ApiResult<Json> UserApi::Purge(const std::string& queue, const std::string& name) {
  auto lock = LockMeasured(core_.mu);
  auto id = core_.state.FindJob(queue, name);
  if (!id) return std::unexpected(JobNotFound(queue, name));
  const JobState& job = core_.state.jobs.at(*id);
  if (job.rec.finished_ms == 0) {
    return std::unexpected(ApiErr(FailedPrecondition("job " + QualifiedName(queue, name) +
                                                     " has not finished; cancel it first")));
  }
  Json summary = JobSummary(core_.state, job);
  ChangeBuilder change(core_.state);
  change.DeleteJob(*id);
  change.Event("JobPurged", JobObject(job.rec), "records deleted");
  if (auto s = core_.CommitLocked(change); !s) return std::unexpected(ApiErr(s.error()));
  return summary;
}

Json UserApi::ListNodes() {
  auto lock = LockMeasured(core_.mu);
  return NodesView(core_.state, core_.Now());
}

std::vector<DashboardNode> UserApi::DashboardNodes() {
  auto lock = LockMeasured(core_.mu);
  return DashboardNodesLocked(core_.state);
}

std::int64_t UserApi::PublishedEventSeq() const { return core_.published.Get()->last_event_seq; }

Resources UserApi::CapacityAt(std::uint64_t node_generation) {
  {
    std::lock_guard cached(capacity_mu_);
    if (capacity_generation_ == node_generation) return capacity_;
  }
  auto lock = LockMeasured(core_.mu);
  const Resources capacity = ClusterCapacity(*RegisteredClusterLocked());
  std::lock_guard cached(capacity_mu_);  // always after core_.mu, never before it
  capacity_generation_ = core_.state.node_generation;
  capacity_ = capacity;
  return capacity;
}

Json UserApi::ListQueues() {
  // Counts kept as jobs change (job_index.h), as published after the last commit or cycle.
  const auto f = core_.published.Get();
  const Resources capacity = CapacityAt(f->node_generation);
  // The rows: the tree resolved against the capacity.
  const auto& tree = core_.options().queues;
  return QueueRows(tree ? &*tree : nullptr, f->queue_tree.get(), capacity, f->queues);
}

Json UserApi::ServerStatus() {
  // The published figures (published_status.h): no wait for a scheduling cycle's lock.
  const auto f = core_.published.Get();
  std::map<std::string, int> phases;
  for (int p = 0; p < api::kJobPhaseCount; ++p) {
    if (const int n = f->jobs_by_phase[static_cast<std::size_t>(p)]; n > 0)
      phases[std::string(api::JobPhaseName(static_cast<api::JobPhase>(p)))] = n;
  }
  Json status = {{"startedAtMs", f->started_ms},
                 {"loadMs", f->load_ms},
                 {"loadedJobs", f->loaded_jobs},
                 {"firstDecisionMs", f->first_decision_ms},
                 {"jobs", phases},
                 {"nodes", f->nodes},
                 {"readyNodes", f->ready_nodes},
                 {"cycles", f->cycles},
                 {"lastEventSeq", f->last_event_seq},
                 {"queuePolicy", core_.options().scheduler.queue_policy},
                 {"placementPolicy", core_.options().scheduler.placement_policy},
                 {"seed", core_.options().scheduler.placement.draw_seed}};
  if (!f->scheduler_problem.empty()) status["schedulerError"] = f->scheduler_problem;
  return status;
}

namespace {

Json EventsAnswer(const std::vector<EventRecord>& page, std::int64_t since, std::int64_t last_seq) {
  Json events = Json::array();
  for (const auto& e : page) events.push_back(EventJson(e));
  const std::int64_t next = page.empty() ? since : page.back().seq;
  return Json{{"events", std::move(events)}, {"next", next}, {"lastSeq", last_seq}};
}

}  // namespace

ApiResult<Json> UserApi::Events(std::int64_t since, Tick wait_ms, int limit) {
  limit = std::clamp(limit, 1, 10000);
  // Without the controller's lock when there is no need to wait (event_feed.h).
  if (wait_ms <= 0 || core_.event_feed.last_seq() > since) {
    if (auto page = core_.event_feed.Since(since, limit))
      return EventsAnswer(page->events, since, page->last_seq);
  }
  auto lock = LockMeasured(core_.mu);
  const auto& state = core_.state;
  if (state.last_seq <= since && wait_ms > 0) {
    core_.changed.wait_for(lock, std::chrono::milliseconds(wait_ms),
                           [&] { return core_.stopping || state.last_seq > since; });
  }
  if (!state.events.empty() && state.events.front().seq > since + 1) {
    // Older than memory holds: read them from the store.
    auto older = core_.store().EventsSince(since, limit);
    if (!older) return std::unexpected(ApiErr(older.error()));
    return EventsAnswer(*older, since, state.last_seq);
  }
  std::vector<EventRecord> page;
  for (const auto& e : state.events) {
    if (e.seq <= since) continue;
    page.push_back(e);
    if (static_cast<int>(page.size()) >= limit) break;
  }
  return EventsAnswer(page, since, state.last_seq);
}

ApiResult<LogLocation> UserApi::FindLog(const std::string& queue, const std::string& name, int rank,
                                        int attempt) {
  auto lock = LockMeasured(core_.mu);
  const auto& state = core_.state;
  auto id = state.FindJob(queue, name);
  if (!id) return std::unexpected(JobNotFound(queue, name));
  const JobState& job = state.jobs.at(*id);
  const TaskRecord* best = nullptr;
  for (auto tid : job.tasks) {
    const TaskRecord& t = state.tasks.at(tid);
    if (t.rank != rank) continue;
    if (attempt > 0 && t.attempt != attempt) continue;
    if (best == nullptr || t.attempt > best->attempt) best = &t;
  }
  if (best == nullptr) {
    return std::unexpected(ApiErr(NotFound(
        "job " + QualifiedName(queue, name) + " has no task of rank " + std::to_string(rank) +
        (attempt > 0 ? " in attempt " + std::to_string(attempt) : std::string(" yet")))));
  }
  LogLocation loc;
  loc.task_id = best->id;
  loc.state = std::string(TaskStateName(best->state));
  loc.live = IsLive(best->state);
  if (auto n = state.nodes.find(best->node); n != state.nodes.end())
    loc.agent_url = n->second.rec.agent_url;
  return loc;
}

}  // namespace tessera
