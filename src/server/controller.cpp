#include "server/controller.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "sched/placement/task_placer.h"
#include "sched/queue/queue_policy.h"
#include "server/job_gates.h"
#include "server/job_object.h"
#include "server/queue_view.h"
#include "sim/queue_file.h"
#include "spec/document.h"
#include "spec/text.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

Tick WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ApiError ApiErr(std::unexpected<Error> e) { return ApiError{std::move(e.error()), {}}; }
ApiError ApiErr(Error e) { return ApiError{std::move(e), {}}; }

std::string JobObject(const JobRecord& j) { return "job/" + j.queue + "/" + j.name; }

std::string GpuList(const std::vector<int>& gpus) {
  std::string s;
  for (int g : gpus) {
    if (!s.empty()) s += ',';
    s += std::to_string(g);
  }
  return s;
}

// A port for the gang's rendezvous (MASTER_PORT), below the Linux ephemeral range, spread by
// job and attempt so that concurrent gangs on one host rarely meet.
// Rendezvous ports are in 20000..31999, below Linux's ephemeral range (32768..60999).
constexpr int kFirstMasterPort = 20000, kMasterPorts = 12000;

// The rendezvous port of one attempt of a job: spread by job and attempt, and by a salt drawn
// per controller start, so that two clusters on one machine (tests, several `tessera up`) do
// not hand their jobs the same ports. A task keeps the port it was given (it is stored).
int MasterPortFor(std::int64_t job_id, int attempt, std::uint64_t salt) {
  const auto h = static_cast<std::uint64_t>(job_id) * 7919u +
                 static_cast<std::uint64_t>(attempt) * 104729u + salt;
  return kFirstMasterPort + static_cast<int>(h % kMasterPorts);
}

std::string GpusText(double gpus) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", gpus);
  return buf;
}

}  // namespace

// A change under construction: copies of every record it touches (read through the accessors
// below so that later steps of one operation see earlier ones), plus what goes to the store as
// is. Nothing reaches memory before the store has committed.
struct Controller::Pending {
  Change change;
  std::map<std::int64_t, JobRecord> jobs;
  std::map<std::pair<std::int64_t, int>, UnitRecord> units;
  std::map<std::int64_t, TaskRecord> tasks;
  std::map<std::string, NodeRecord> nodes;
  std::map<std::int64_t, std::vector<std::int64_t>> added_tasks;  // by job
  std::vector<JobState> new_jobs;
  bool reschedule = false;

  void Event(std::string type, std::string object, std::string message) {
    change.events.push_back({0, 0, std::move(type), std::move(object), std::move(message)});
  }
};

Controller::Controller(Store* store, ControllerOptions options)
    : store_(store), options_(std::move(options)) {
  if (!options_.now) options_.now = WallClockMs;
  port_salt_ = std::random_device{}();
}

Controller::~Controller() { Stop(); }

Result<std::set<std::string>> CheckControllerOptions(const ControllerOptions& options) {
  SchedulerConfig check = options.scheduler;
  std::set<std::string> leaves;
  const bool fair_share = IsFairSharePolicy(options.scheduler.queue_policy);
  if (fair_share && !options.queues) {
    return InvalidArgument("queue policy '" + options.scheduler.queue_policy +
                           "' needs a queue tree (--queues FILE; see docs/quotas.md)");
  }
  if (options.queues) {
    if (!fair_share) {
      return InvalidArgument("--queues: needs queue policy drf or drf-naive, not '" +
                             options.scheduler.queue_policy + "'");
    }
    // Its shape checked now, against a cluster large enough for any absolute guarantee; each
    // cycle builds it against the nodes that have registered.
    constexpr std::int64_t kAny = std::int64_t{1} << 40;
    auto tree = QueueTree::Build(*options.queues, Resources{kAny, kAny, kAny});
    if (!tree) return InvalidArgument(options.queues_source + ": " + tree.error().message);
    for (int leaf : tree->leaves()) leaves.insert(tree->node(leaf).path);
    check.queues = std::make_shared<const QueueTree>(std::move(*tree));
  }
  if (auto s = Scheduler::Create(check); !s) return std::unexpected(s.error());
  return leaves;
}

Result<std::unique_ptr<Controller>> Controller::Create(Store* store, ControllerOptions options) {
  auto leaves = CheckControllerOptions(options);
  if (!leaves) return std::unexpected(leaves.error());
  std::unique_ptr<Controller> c(new Controller(store, std::move(options)));
  c->leaf_queues_ = std::move(*leaves);
  c->started_ms_ = c->Now();
  std::lock_guard lock(c->mu_);
  if (auto s = c->LoadLocked(); !s) return std::unexpected(s.error());
  c->load_ms_ = c->Now() - c->started_ms_;
  return c;
}

Status Controller::LoadLocked() {
  auto contents = store_->Load();
  if (!contents) return std::unexpected(contents.error());
  for (auto& q : contents->queues) queues_[q.name] = q;
  for (auto& j : contents->jobs) {
    auto doc = ParseJson(j.spec_json);
    if (!doc) return Internal("store: job " + std::to_string(j.id) + ": " + doc.error().message);
    auto spec = JobSpecFromJson(*doc);
    if (!spec) return Internal("store: job " + std::to_string(j.id) + ": " + spec.error().message);
    JobState state;
    state.spec = std::move(*spec);
    state.workload = state.spec.ToWorkload();
    state.workload.submit = j.submit_ms;
    job_ids_[{j.queue, j.name}] = j.id;
    next_job_id_ = std::max(next_job_id_, j.id + 1);
    if (j.finished_ms == 0) active_.insert(j.id);
    state.rec = std::move(j);
    jobs_.emplace(state.rec.id, std::move(state));
  }
  for (auto& u : contents->units) {
    auto it = jobs_.find(u.job_id);
    if (it == jobs_.end()) continue;
    auto& units = it->second.units;
    if (static_cast<std::size_t>(u.unit) >= units.size())
      units.resize(static_cast<std::size_t>(u.unit) + 1);
    units[static_cast<std::size_t>(u.unit)] = std::move(u);
  }
  for (auto& t : contents->tasks) {
    next_task_id_ = std::max(next_task_id_, t.id + 1);
    auto it = jobs_.find(t.job_id);
    if (it != jobs_.end()) it->second.tasks.push_back(t.id);
    if (IsLive(t.state)) live_by_node_[t.node].insert(t.id);
    if (t.state == TaskState::kRunning) awaiting_readoption_.insert(t.id);
    tasks_.emplace(t.id, std::move(t));
  }
  const Tick now = Now();
  for (auto& n : contents->nodes) {
    NodeState ns;
    ns.rec = std::move(n);
    ns.last_seen = now;  // every node gets a full timeout to check in after a restart
    nodes_.emplace(ns.rec.name, std::move(ns));
  }
  last_seq_ = contents->last_event_seq;
  const auto keep = static_cast<std::int64_t>(options_.events_in_memory);
  if (auto recent = store_->EventsSince(std::max<std::int64_t>(0, last_seq_ - keep),
                                        static_cast<int>(keep))) {
    events_.assign(recent->begin(), recent->end());
  }
  loaded_jobs_ = jobs_.size();
  return {};
}

void Controller::Start() {
  std::lock_guard lock(mu_);
  if (scheduler_thread_.joinable()) return;
  stopping_ = false;
  scheduler_thread_ = std::thread([this] { SchedulerLoop(); });
  liveness_thread_ = std::thread([this] { LivenessLoop(); });
}

void Controller::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_scheduler_.notify_all();
  wake_liveness_.notify_all();
  changed_.notify_all();
  if (scheduler_thread_.joinable()) scheduler_thread_.join();
  if (liveness_thread_.joinable()) liveness_thread_.join();
}

// --- Commit ---

Status Controller::CommitLocked(Pending& p) {
  for (const auto& [id, j] : p.jobs) p.change.put_jobs.push_back(j);
  for (const auto& [key, u] : p.units) p.change.put_units.push_back(u);
  for (const auto& [id, t] : p.tasks) p.change.put_tasks.push_back(t);
  for (const auto& [name, n] : p.nodes) p.change.put_nodes.push_back(n);
  if (p.change.empty()) return {};
  auto events = store_->Commit(p.change);
  if (!events) return std::unexpected(events.error());

  for (auto& job : p.new_jobs) {
    const auto id = job.rec.id;
    job_ids_[{job.rec.queue, job.rec.name}] = id;
    next_job_id_ = std::max(next_job_id_, id + 1);
    active_.insert(id);
    jobs_.emplace(id, std::move(job));
  }
  for (auto& q : p.change.put_queues) queues_.emplace(q.name, q);
  for (auto& [id, j] : p.jobs) {
    auto it = jobs_.find(id);
    if (it != jobs_.end()) it->second.rec = j;
    if (j.finished_ms != 0) active_.erase(id);
  }
  for (auto& [key, u] : p.units) {
    auto it = jobs_.find(key.first);
    if (it == jobs_.end()) continue;
    auto& units = it->second.units;
    if (static_cast<std::size_t>(key.second) >= units.size())
      units.resize(static_cast<std::size_t>(key.second) + 1);
    units[static_cast<std::size_t>(key.second)] = u;
  }
  for (auto& [id, t] : p.tasks) {
    auto old = tasks_.find(id);
    if (old != tasks_.end()) {
      if (IsLive(old->second.state)) live_by_node_[old->second.node].erase(id);
    } else {
      auto it = jobs_.find(t.job_id);
      if (it != jobs_.end()) it->second.tasks.push_back(id);
      next_task_id_ = std::max(next_task_id_, id + 1);
    }
    if (IsLive(t.state)) live_by_node_[t.node].insert(id);
    if (!IsLive(t.state)) awaiting_readoption_.erase(id);
    tasks_[id] = t;
  }
  for (auto& [name, n] : p.nodes) {
    auto& ns = nodes_[name];
    if (ns.rec.gpu_count != n.gpu_count || ns.rec.gpu_model != n.gpu_model ||
        ns.rec.cpu_milli != n.cpu_milli || ns.rec.memory_mib != n.memory_mib ||
        ns.rec.name.empty()) {
      ++node_generation_;
    }
    ns.rec = n;
  }
  for (auto id : p.change.delete_jobs) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    for (auto tid : it->second.tasks) tasks_.erase(tid);
    job_ids_.erase({it->second.rec.queue, it->second.rec.name});
    active_.erase(id);
    jobs_.erase(it);
  }
  for (auto& e : *events) {
    last_seq_ = std::max(last_seq_, e.seq);
    events_.push_back(std::move(e));
  }
  while (events_.size() > options_.events_in_memory) events_.pop_front();
  changed_.notify_all();
  if (p.reschedule) {
    schedule_requested_ = true;
    wake_scheduler_.notify_one();
  }
  return {};
}

// --- Accessors over a Pending overlay ---
namespace {

template <typename Map, typename Key, typename Fallback>
auto& Overlay(Map& overlay, const Key& key, Fallback fallback) {
  auto it = overlay.find(key);
  if (it == overlay.end()) it = overlay.emplace(key, fallback()).first;
  return it->second;
}

}  // namespace

#define TASK_OF(p, id) ((p).tasks.contains(id) ? (p).tasks.at(id) : tasks_.at(id))
#define MUT_TASK(p, id) Overlay((p).tasks, (id), [&] { return tasks_.at(id); })
#define UNIT_OF(p, job, u)                                                     \
  ((p).units.contains({(job).rec.id, (u)}) ? (p).units.at({(job).rec.id, (u)}) \
                                           : (job).units[static_cast<std::size_t>(u)])
#define MUT_UNIT(p, job, u)                             \
  Overlay((p).units, std::make_pair((job).rec.id, (u)), \
          [&] { return (job).units[static_cast<std::size_t>(u)]; })
#define MUT_JOB(p, job) Overlay((p).jobs, (job).rec.id, [&] { return (job).rec; })

// --- Submission and user operations ---

ApiResult<Json> Controller::Submit(std::string_view text, bool hold, bool queue_anyway) {
  std::vector<FieldError> fields;
  auto spec = ParseJobSpec(text, &fields);
  if (!spec) return std::unexpected(ApiError{spec.error(), fields});
  if (options_.queues && !leaf_queues_.contains(spec->queue)) {
    std::string leaves;
    for (const auto& q : leaf_queues_) leaves += (leaves.empty() ? "" : ", ") + q;
    FieldError f{"metadata.queue", "'" + spec->queue + "' is not a leaf queue of the queue tree (" +
                                       options_.queues_source + "): one of " + leaves};
    return std::unexpected(ApiError{InvalidArgument(f.ToString()).error(), {f}});
  }
  std::shared_ptr<const Cluster> registered;
  if (!queue_anyway) {
    std::lock_guard lock(mu_);
    registered = RegisteredClusterLocked();
  }
  if (auto f = queue_anyway ? std::nullopt : NeverFitsAtSubmit(*registered, *spec)) {
    f->reason +=
        "; it can never run on the registered nodes (`tessera submit --queue-anyway` "
        "queues it until such nodes register)";
    return std::unexpected(ApiError{FailedPrecondition(f->ToString()).error(), {*f}});
  }
  auto req = std::make_shared<SubmitRequest>();
  req->spec = std::move(*spec);
  req->hold = hold;
  std::unique_lock q(submit_mu_);
  submit_queue_.push_back(req);
  while (!req->result) {
    if (submit_leader_) {
      submit_cv_.wait(q);
      continue;
    }
    // Lead one group commit for everything queued so far, this request included.
    submit_leader_ = true;
    std::vector<std::shared_ptr<SubmitRequest>> batch;
    batch.swap(submit_queue_);
    q.unlock();
    auto results = CommitSubmissions(batch);
    q.lock();
    for (std::size_t i = 0; i < batch.size(); ++i) batch[i]->result = std::move(results[i]);
    submit_leader_ = false;
    submit_cv_.notify_all();
  }
  return std::move(*req->result);
}

std::shared_ptr<const Cluster> Controller::RegisteredClusterLocked() {
  return fit_cluster_.Get(node_generation_, [&](Cluster& cluster) {
    for (const auto& [name, ns] : nodes_) {
      (void)cluster.AddNode(name, ns.rec.gpu_model, ns.rec.gpu_count, ns.rec.cpu_milli,
                            ns.rec.memory_mib);
    }
  });
}

void Controller::AddJobLocked(const JobSpec& spec, bool hold, std::int64_t id, Pending& p,
                              std::set<std::string>& new_queues) {
  const Tick now = Now();
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
    p.change.put_units.push_back(unit);
  }
  p.change.put_jobs.push_back(job.rec);
  if (!queues_.contains(spec.queue) && new_queues.insert(spec.queue).second) {
    p.change.put_queues.push_back({spec.queue, now});
  }
  job.spec = spec;
  job.workload = spec.ToWorkload();
  job.workload.submit = now;
  p.Event("JobSubmitted", JobObject(job.rec),
          job.rec.kind + " with " + std::to_string(job.workload.TaskCount()) + " task(s), " +
              GpusText(static_cast<double>(job.workload.TotalGpuMilli()) / kMilliPerGpu) +
              " GPU(s)" + (hold ? ", held" : ""));
  p.new_jobs.push_back(std::move(job));
  p.reschedule = !hold;
}

std::vector<ApiResult<Json>> Controller::CommitSubmissions(
    const std::vector<std::shared_ptr<SubmitRequest>>& batch) {
  std::lock_guard lock(mu_);
  std::vector<ApiResult<Json>> results(batch.size(),
                                       std::unexpected(ApiErr(Internal("not committed"))));
  auto duplicate = [](const JobSpec& spec) {
    return std::unexpected(ApiErr(AlreadyExists("metadata.name: a job named " + Quote(spec.name) +
                                                " already exists in queue " + Quote(spec.queue) +
                                                " (cancel and purge it, or choose another name)")));
  };
  Pending p;
  std::set<std::string> new_queues;
  std::set<std::pair<std::string, std::string>> names;
  std::vector<std::pair<std::size_t, std::int64_t>> accepted;  // (request, job id)
  std::int64_t id = next_job_id_;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const JobSpec& spec = batch[i]->spec;
    if (FindJobLocked(spec.queue, spec.name) || !names.insert({spec.queue, spec.name}).second) {
      results[i] = duplicate(spec);
      continue;
    }
    if (auto missing = MissingDependency(spec, [&](const JobDependency& d) {
          return FindJobLocked(d.queue, d.name) || names.contains({d.queue, d.name});
        })) {
      results[i] = std::unexpected(ApiErr(InvalidArgument(*missing)));
      names.erase({spec.queue, spec.name});
      continue;
    }
    AddJobLocked(spec, batch[i]->hold, id, p, new_queues);
    accepted.emplace_back(i, id++);
  }
  if (accepted.empty()) return results;
  if (auto s = CommitLocked(p); s) {
    for (const auto& [i, job_id] : accepted) results[i] = JobSummaryLocked(jobs_.at(job_id));
    return results;
  }
  // The batch failed as a whole: try each on its own, so that one cannot fail the others.
  for (const auto& [i, unused] : accepted) {
    Pending one;
    std::set<std::string> queues;
    const std::int64_t job_id = next_job_id_;
    AddJobLocked(batch[i]->spec, batch[i]->hold, job_id, one, queues);
    if (auto s = CommitLocked(one); !s) {
      results[i] = std::unexpected(ApiErr(s.error()));
    } else {
      results[i] = JobSummaryLocked(jobs_.at(job_id));
    }
  }
  return results;
}

std::optional<std::int64_t> Controller::FindJobLocked(const std::string& queue,
                                                      const std::string& name) const {
  auto it = job_ids_.find({queue, name});
  if (it == job_ids_.end()) return std::nullopt;
  return it->second;
}

ApiResult<Json> Controller::GetJob(const std::string& queue, const std::string& name) {
  std::lock_guard lock(mu_);
  auto id = FindJobLocked(queue, name);
  if (!id)
    return std::unexpected(ApiErr(NotFound("job " + QualifiedName(queue, name) + " not found")));
  return JobDetailLocked(jobs_.at(*id));
}

Json Controller::ListJobs(const JobFilter& filter) {
  std::lock_guard lock(mu_);
  Json out = Json::array();
  for (const auto& [id, job] : jobs_) {
    if (!filter.queue.empty() && job.rec.queue != filter.queue) continue;
    if (!filter.name.empty() && job.rec.name != filter.name) continue;
    if (!filter.phase.empty() && JobPhaseOf(job) != filter.phase) continue;
    out.push_back(filter.objects ? ResubmittableJob(job.spec, JobSummaryLocked(job))
                                 : JobSummaryLocked(job));
    if (filter.limit > 0 && out.size() >= filter.limit) break;
  }
  return out;
}

ApiResult<Json> Controller::Cancel(const std::string& queue, const std::string& name) {
  std::lock_guard lock(mu_);
  auto id = FindJobLocked(queue, name);
  if (!id)
    return std::unexpected(ApiErr(NotFound("job " + QualifiedName(queue, name) + " not found")));
  JobState& job = jobs_.at(*id);
  if (job.rec.cancel_requested || job.rec.finished_ms != 0) return JobSummaryLocked(job);
  Pending p;
  MUT_JOB(p, job).cancel_requested = true;
  p.Event("JobCancelling", JobObject(job.rec), "cancel requested");
  for (int u = 0; u < static_cast<int>(job.units.size()); ++u) {
    const UnitRecord& unit = UNIT_OF(p, job, u);
    if (unit.phase == UnitPhase::kPending) {
      auto& m = MUT_UNIT(p, job, u);
      m.phase = UnitPhase::kCancelled;
      m.finished_ms = Now();
      m.message = "cancelled before it started";
    } else if (unit.phase == UnitPhase::kRunning || unit.phase == UnitPhase::kStopping) {
      StopUnitLocked(job, u, UnitPhase::kCancelled, "cancelled", p);
    }
  }
  FinishJobIfDoneLocked(job, p);
  p.reschedule = true;
  if (auto s = CommitLocked(p); !s) return std::unexpected(ApiErr(s.error()));
  return JobSummaryLocked(jobs_.at(*id));
}

ApiResult<Json> Controller::Release(const std::string& queue, const std::vector<std::string>& names,
                                    bool all) {
  std::lock_guard lock(mu_);
  std::vector<std::int64_t> ids;  // in job id order with `all`, else in the order named
  if (all) {
    if (!names.empty()) {
      return std::unexpected(ApiErr(InvalidArgument("give job names or all, not both")));
    }
    for (auto id : active_) {
      const JobState& job = jobs_.at(id);
      if (job.rec.held && (queue.empty() || job.rec.queue == queue)) ids.push_back(id);
    }
  } else {
    if (names.empty()) {
      return std::unexpected(ApiErr(InvalidArgument("names: give at least one job, or all")));
    }
    std::set<std::int64_t> seen;
    for (const auto& name : names) {
      std::optional<std::int64_t> id;
      if (!queue.empty()) {
        id = FindJobLocked(queue, name);
      } else {
        for (const auto& [key, jid] : job_ids_) {
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
  }
  Pending p;
  Json released = Json::array(), not_held = Json::array();
  for (auto id : ids) {
    JobState& job = jobs_.at(id);
    const std::string qualified = job.rec.queue + "/" + job.rec.name;
    if (!job.rec.held || job.rec.finished_ms != 0) {
      not_held.push_back(qualified);
      continue;
    }
    MUT_JOB(p, job).held = false;
    p.Event("JobReleased", JobObject(job.rec), "released from hold");
    released.push_back(qualified);
  }
  p.reschedule = !released.empty();
  if (auto s = CommitLocked(p); !s) return std::unexpected(ApiErr(s.error()));
  return Json{{"released", std::move(released)}, {"notHeld", std::move(not_held)}};
}

ApiResult<Json> Controller::Purge(const std::string& queue, const std::string& name) {
  std::lock_guard lock(mu_);
  auto id = FindJobLocked(queue, name);
  if (!id)
    return std::unexpected(ApiErr(NotFound("job " + QualifiedName(queue, name) + " not found")));
  JobState& job = jobs_.at(*id);
  if (job.rec.finished_ms == 0) {
    return std::unexpected(ApiErr(FailedPrecondition("job " + QualifiedName(queue, name) +
                                                     " has not finished; cancel it first")));
  }
  Json summary = JobSummaryLocked(job);
  Pending p;
  p.change.delete_jobs.push_back(*id);
  p.Event("JobPurged", JobObject(job.rec), "records deleted");
  if (auto s = CommitLocked(p); !s) return std::unexpected(ApiErr(s.error()));
  return summary;
}

// --- The unit and task state machine ---

void Controller::StopUnitLocked(JobState& job, int u, UnitPhase target, const std::string& why,
                                Pending& p) {
  auto& unit = MUT_UNIT(p, job, u);
  // A cancel overrides a pending restart; a restart never overrides a cancel.
  if (unit.phase == UnitPhase::kStopping && unit.stop_target == UnitPhase::kCancelled) return;
  unit.phase = UnitPhase::kStopping;
  unit.stop_target = target;
  unit.message = why;
  const int attempt = unit.attempt;
  auto visit = [&](std::int64_t tid) {
    const TaskRecord& t = TASK_OF(p, tid);
    if (t.unit != u || t.attempt != attempt || !IsLive(t.state) || t.state == TaskState::kStopping)
      return;
    auto& m = MUT_TASK(p, tid);
    m.state = TaskState::kStopping;
    m.message = why;
  };
  for (auto tid : job.tasks) visit(tid);
  for (auto tid : p.added_tasks[job.rec.id]) visit(tid);
  EvaluateUnitLocked(job, u, p);
}

void Controller::EvaluateUnitLocked(JobState& job, int u, Pending& p) {
  const UnitRecord& unit = UNIT_OF(p, job, u);
  int live = 0, total = 0, succeeded = 0;
  bool rank0_succeeded = false;
  const TaskRecord* failed = nullptr;
  auto visit = [&](std::int64_t tid) {
    const TaskRecord& t = TASK_OF(p, tid);
    if (t.unit != u || t.attempt != unit.attempt) return;
    ++total;
    if (IsLive(t.state)) ++live;
    if (t.state == TaskState::kSucceeded) ++succeeded;
    rank0_succeeded |= t.rank == 0 && t.state == TaskState::kSucceeded;
    if ((t.state == TaskState::kFailed || t.state == TaskState::kLost) && failed == nullptr)
      failed = &t;
  };
  for (auto tid : job.tasks) visit(tid);
  for (auto tid : p.added_tasks[job.rec.id]) visit(tid);
  const std::string object = JobObject(job.rec);
  const Tick now = Now();

  if (unit.phase == UnitPhase::kRunning) {
    if (failed != nullptr) {
      const bool lost = failed->state == TaskState::kLost;
      std::string why = "task rank " + std::to_string(failed->rank) +
                        (lost ? " was lost with node " + failed->node
                              : " exited with code " + std::to_string(failed->exit_code));
      if (!lost && !failed->message.empty()) why += " (" + failed->message + ")";
      const bool restart = unit.restarts < job.spec.max_restarts;
      {
        auto& m = MUT_UNIT(p, job, u);
        m.exit_code = failed->exit_code;
        if (restart) ++m.restarts;
      }
      const UnitRecord& now_unit = UNIT_OF(p, job, u);
      if (restart) {
        p.Event("JobRestarting", object,
                why + "; restart " + std::to_string(now_unit.restarts) + " of " +
                    std::to_string(job.spec.max_restarts));
      } else {
        p.Event("JobFailing", object,
                why + (job.spec.max_restarts > 0 ? "; no restarts left" : "; maxRestarts is 0"));
      }
      StopUnitLocked(job, u, restart ? UnitPhase::kPending : UnitPhase::kFailed, why, p);
      return;
    }
    if (job.spec.success_policy == SuccessPolicy::kRank0 && rank0_succeeded && succeeded < total) {
      p.Event("JobCompleting", object, "rank 0 exited with code 0 (successPolicy Rank0)");
      StopUnitLocked(job, u, UnitPhase::kSucceeded,
                     "rank 0 exited with code 0; stopping the other ranks", p);
      return;
    }
    if (total > 0 && succeeded == total) {
      auto& m = MUT_UNIT(p, job, u);
      m.phase = UnitPhase::kSucceeded;
      m.finished_ms = now;
      m.exit_code = 0;
      m.message = "";
      if (job.units.size() > 1) {
        p.Event("TaskSucceeded", object, "task " + std::to_string(u) + " succeeded");
      }
      FinishJobIfDoneLocked(job, p);
    }
    return;
  }
  if (unit.phase == UnitPhase::kStopping && live == 0) {
    auto& m = MUT_UNIT(p, job, u);
    m.phase = m.stop_target;
    if (m.phase == UnitPhase::kPending) {
      m.pending_since_ms = now;
      p.reschedule = true;
      p.Event("JobRequeued", object, "requeued: " + m.message);
    } else {
      m.finished_ms = now;
    }
    FinishJobIfDoneLocked(job, p);
  }
}

void Controller::FinishJobIfDoneLocked(JobState& job, Pending& p) {
  const JobRecord& rec = p.jobs.contains(job.rec.id) ? p.jobs.at(job.rec.id) : job.rec;
  if (rec.finished_ms != 0) return;
  bool any_failed = false, any_cancelled = false;
  std::string message;
  for (int u = 0; u < static_cast<int>(job.units.size()); ++u) {
    const UnitRecord& unit = UNIT_OF(p, job, u);
    if (!IsFinal(unit.phase)) return;
    if (unit.phase == UnitPhase::kFailed) {
      any_failed = true;
      if (message.empty()) message = unit.message;
    }
    if (unit.phase == UnitPhase::kCancelled) any_cancelled = true;
  }
  auto& m = MUT_JOB(p, job);
  m.finished_ms = Now();
  const std::string object = JobObject(job.rec);
  if (any_cancelled && rec.cancel_requested) {
    m.message = "cancelled";
    p.Event("JobCancelled", object, "cancelled; every task has stopped");
  } else if (any_failed) {
    m.message = message;
    p.Event("JobFailed", object, message);
  } else {
    m.message = "";
    p.Event("JobSucceeded", object, "every task exited with code 0");
  }
}

void Controller::OnReportLocked(NodeState& node, const TaskReport& r, Pending& p) {
  auto it = tasks_.find(r.task_id);
  if (it == tasks_.end() && !p.tasks.contains(r.task_id)) return;  // unknown: a stray
  const TaskRecord& t = TASK_OF(p, r.task_id);
  if (t.node != node.rec.name || !IsLive(t.state)) return;  // stray or already recorded
  auto jit = jobs_.find(t.job_id);
  if (jit == jobs_.end()) return;
  JobState& job = jit->second;
  const std::string object = JobObject(job.rec);
  const std::string who = "task " + std::to_string(t.id) + " (rank " + std::to_string(t.rank) +
                          ", attempt " + std::to_string(t.attempt) + ") on " + t.node;
  if (r.state == ReportedState::kRunning) {
    if (t.state == TaskState::kAssigned) {
      auto& m = MUT_TASK(p, r.task_id);
      m.state = TaskState::kRunning;
      m.pid = r.pid;
      m.started_ms = r.started_ms > 0 ? r.started_ms : Now();
      p.Event("TaskStarted", object,
              who + " started, pid " + std::to_string(r.pid) + ", GPUs [" + GpuList(m.gpus) + "]");
    } else if (awaiting_readoption_.contains(r.task_id)) {
      awaiting_readoption_.erase(r.task_id);
      p.Event("TaskReadopted", object,
              who + " still running (pid " + std::to_string(r.pid) +
                  ") after a controller restart; re-adopted");
    }
    return;
  }
  auto& m = MUT_TASK(p, r.task_id);
  const bool was_stopping = m.state == TaskState::kStopping;
  m.exit_code = r.exit_code;
  m.signal = r.signal;
  if (r.pid != 0) m.pid = r.pid;
  if (m.started_ms == 0) m.started_ms = r.started_ms;
  m.finished_ms = r.finished_ms > 0 ? r.finished_ms : Now();
  if (!r.message.empty()) m.message = r.message;
  std::string what;
  if (r.state == ReportedState::kLost) {
    m.state = TaskState::kLost;
    what = "lost: " + r.message;
  } else if (r.state == ReportedState::kStopped && !was_stopping) {
    // Stopped by its agent (shutting down), not by us: the node is going away.
    m.state = TaskState::kLost;
    m.message = "stopped by its agent: " + r.message;
    what = m.message;
  } else if (was_stopping) {
    m.state = TaskState::kStopped;
    what = "stopped (exit code " + std::to_string(r.exit_code) + ")";
  } else if (r.state == ReportedState::kFailedToStart) {
    m.state = TaskState::kFailed;
    what = "failed to start: " + r.message;
  } else if (r.exit_code == 0 && r.state == ReportedState::kExited) {
    m.state = TaskState::kSucceeded;
    what = "exited with code 0";
  } else {
    m.state = TaskState::kFailed;
    what = r.signal != 0 ? "killed by signal " + std::to_string(r.signal) + " (exit code " +
                               std::to_string(r.exit_code) + ")"
                         : "exited with code " + std::to_string(r.exit_code);
  }
  p.Event(std::string("Task") + std::string(TaskStateName(m.state)), object, who + " " + what);
  p.reschedule = true;
  EvaluateUnitLocked(job, m.unit, p);
}

// --- Agents ---

ApiResult<RegistrationReply> Controller::Register(const NodeRegistration& reg) {
  if (!ValidJobName(reg.node)) {
    return std::unexpected(ApiErr(InvalidArgument(
        "node: must be 1-63 lower-case letters, digits and '-', got " + Quote(reg.node))));
  }
  if (reg.gpus.size() > static_cast<std::size_t>(kMaxGpusPerNode)) {
    return std::unexpected(
        ApiErr(InvalidArgument("gpus: at most " + std::to_string(kMaxGpusPerNode) +
                               " GPUs per node, got " + std::to_string(reg.gpus.size()))));
  }
  std::string model;
  for (std::size_t i = 0; i < reg.gpus.size(); ++i) {
    if (reg.gpus[i].index != static_cast<int>(i)) {
      return std::unexpected(ApiErr(InvalidArgument("gpus: indices must be 0..N-1 in order")));
    }
    if (i == 0) model = reg.gpus[i].model;
    if (reg.gpus[i].model != model) {
      return std::unexpected(ApiErr(InvalidArgument("gpus: one GPU model per node (" + model +
                                                    " and " + reg.gpus[i].model + ")")));
    }
  }
  if (reg.cpu_milli < 0 || reg.memory_mib < 0) {
    return std::unexpected(ApiErr(InvalidArgument("cpu and memory must not be negative")));
  }
  if (FirstInvalidUtf8(reg.address) || FirstInvalidUtf8(reg.agent_url) || FirstInvalidUtf8(model) ||
      reg.address.size() > 255 || reg.agent_url.size() > 1024) {
    return std::unexpected(
        ApiErr(InvalidArgument("address, agentUrl and models must be short UTF-8")));
  }
  std::lock_guard lock(mu_);
  Pending p;
  NodeRecord rec;
  auto existing = nodes_.find(reg.node);
  if (existing != nodes_.end()) rec = existing->second.rec;
  rec.name = reg.node;
  rec.address = reg.address.empty() ? "127.0.0.1" : reg.address;
  rec.agent_url = reg.agent_url;
  rec.gpu_model = model;
  rec.gpu_count = static_cast<int>(reg.gpus.size());
  rec.simulated = reg.simulated;
  rec.cpu_milli = reg.cpu_milli;
  rec.memory_mib = reg.memory_mib;
  Json gpus = Json::array();
  for (const auto& g : reg.gpus) gpus.push_back(ToJson(g));
  rec.gpus_json = DumpJson(gpus);
  rec.status = NodeStatus::kReady;
  rec.registered_ms = Now();
  rec.version = reg.version;
  rec.message = "";
  p.nodes[rec.name] = rec;
  p.Event("NodeRegistered", "node/" + rec.name,
          std::to_string(rec.gpu_count) + " x " + (model.empty() ? "no GPU" : model) +
              (reg.simulated ? " (simulated)" : "") + " at " + rec.address);
  p.reschedule = true;
  if (auto s = CommitLocked(p); !s) return std::unexpected(ApiErr(s.error()));
  nodes_[rec.name].last_seen = Now();
  RegistrationReply reply;
  reply.heartbeat_interval_ms = options_.heartbeat_interval_ms;
  reply.heartbeat_timeout_ms = options_.heartbeat_timeout_ms;
  return reply;
}

HeartbeatReply Controller::ReplyForLocked(const std::string& node, const HeartbeatRequest& req,
                                          bool* news) {
  HeartbeatReply reply;
  *news = false;
  std::map<std::int64_t, ReportedState> reported;
  for (const auto& r : req.tasks) reported[r.task_id] = r.state;
  auto live = live_by_node_.find(node);
  if (live != live_by_node_.end()) {
    for (auto id : live->second) {
      const TaskRecord& t = tasks_.at(id);
      auto rep = reported.find(id);
      if (t.state == TaskState::kAssigned) {
        reply.run.push_back(LaunchOfLocked(t));
        if (rep == reported.end()) *news = true;
      } else if (t.state == TaskState::kStopping && rep != reported.end() &&
                 rep->second == ReportedState::kRunning) {
        auto jit = jobs_.find(t.job_id);
        const int grace = jit == jobs_.end() ? 30 : jit->second.spec.grace_period_seconds;
        reply.stop.push_back({id, grace});
        *news = true;
      }
    }
  }
  for (const auto& r : req.tasks) {
    auto it = tasks_.find(r.task_id);
    const bool live_here =
        it != tasks_.end() && IsLive(it->second.state) && it->second.node == node;
    if (r.state == ReportedState::kRunning && !live_here) {
      reply.stop.push_back({r.task_id, 10});  // a stray: not (or no longer) this node's task
      *news = true;
    } else if (r.state != ReportedState::kRunning && !live_here) {
      reply.forget.push_back(r.task_id);
      *news = true;
    }
  }
  return reply;
}

// Records one node's heartbeat into `p`; returns whether its agent runs tasks it should not.
bool Controller::RecordHeartbeatLocked(NodeState& ns, const HeartbeatRequest& req, Pending& p) {
  const std::string& node = ns.rec.name;
  ns.last_seen = Now();
  std::set<std::int64_t> reported;
  bool strays = false;
  for (const auto& r : req.tasks) {
    reported.insert(r.task_id);
    OnReportLocked(ns, r, p);
    if (r.state == ReportedState::kRunning) {
      auto it = tasks_.find(r.task_id);
      const TaskRecord* t = p.tasks.contains(r.task_id) ? &p.tasks.at(r.task_id)
                            : it != tasks_.end()        ? &it->second
                                                        : nullptr;
      if (t == nullptr || !IsLive(t->state) || t->node != node) strays = true;
    }
  }
  // Live tasks the agent does not report: never launched, or gone.
  if (auto live = live_by_node_.find(node); live != live_by_node_.end()) {
    const std::vector<std::int64_t> ids(live->second.begin(), live->second.end());
    for (auto id : ids) {
      if (reported.contains(id)) continue;
      const TaskRecord& t = TASK_OF(p, id);
      if (t.state == TaskState::kAssigned) continue;  // in this reply's run list
      auto jit = jobs_.find(t.job_id);
      if (jit == jobs_.end()) continue;
      auto& m = MUT_TASK(p, id);
      m.finished_ms = Now();
      if (m.state == TaskState::kStopping) {
        m.state = TaskState::kStopped;
        p.Event("TaskStopped", JobObject(jit->second.rec),
                "task " + std::to_string(id) + " (rank " + std::to_string(m.rank) +
                    ") stopped before it ran");
      } else if (m.state == TaskState::kRunning) {
        m.state = TaskState::kLost;
        m.message = "the agent on " + node + " no longer has this task";
        p.Event("TaskLost", JobObject(jit->second.rec),
                "task " + std::to_string(id) + ": " + m.message);
      } else {
        continue;
      }
      p.reschedule = true;
      EvaluateUnitLocked(jit->second, m.unit, p);
    }
  }
  if (ns.rec.status != NodeStatus::kReady || strays != ns.has_strays) {
    NodeRecord rec = ns.rec;
    if (rec.status != NodeStatus::kReady) {
      p.Event("NodeReady", "node/" + node,
              std::string("heartbeats resumed") + (strays ? "; stopping stray tasks first" : ""));
    }
    rec.status = NodeStatus::kReady;
    rec.message = strays ? "stopping tasks it should not run; not schedulable until they end" : "";
    p.nodes[node] = rec;
    p.reschedule = true;
  }
  return strays;
}

ApiResult<HeartbeatReply> Controller::Heartbeat(const std::string& node,
                                                const HeartbeatRequest& req, Tick wait_ms) {
  std::unique_lock lock(mu_);
  auto nit = nodes_.find(node);
  if (nit == nodes_.end()) {
    return std::unexpected(ApiErr(NotFound("node " + node + " is not registered")));
  }
  NodeState& ns = nit->second;
  Pending p;
  const bool strays = RecordHeartbeatLocked(ns, req, p);
  if (auto s = CommitLocked(p); !s) return std::unexpected(ApiErr(s.error()));
  ns.has_strays = strays;

  bool news = false;
  HeartbeatReply reply = ReplyForLocked(node, req, &news);
  if (!news && wait_ms > 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (!news && !stopping_) {
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) break;
      reply = ReplyForLocked(node, req, &news);
    }
    if (!news) reply = ReplyForLocked(node, req, &news);
  }
  if (auto again = nodes_.find(node); again != nodes_.end()) again->second.last_seen = Now();
  return reply;
}

ApiResult<NodesHeartbeatReply> Controller::HeartbeatNodes(const NodesHeartbeatRequest& req,
                                                          Tick wait_ms) {
  std::unique_lock lock(mu_);
  NodesHeartbeatReply out;
  Pending p;
  std::vector<std::pair<NodeState*, bool>> strays;
  for (const auto& [node, hb] : req.nodes) {
    auto nit = nodes_.find(node);
    if (nit == nodes_.end()) {
      out.unknown.push_back(node);
      continue;
    }
    strays.emplace_back(&nit->second, RecordHeartbeatLocked(nit->second, hb, p));
  }
  // One commit for all the nodes: a thousand emulated nodes cost one transaction, not 1,000.
  if (auto s = CommitLocked(p); !s) return std::unexpected(ApiErr(s.error()));
  for (auto& [ns, has] : strays) ns->has_strays = has;

  auto replies = [&] {
    bool any = false;
    out.nodes.clear();
    for (const auto& [node, hb] : req.nodes) {
      if (!nodes_.contains(node)) continue;
      bool news = false;
      HeartbeatReply r = ReplyForLocked(node, hb, &news);
      if (news || !r.run.empty() || !r.stop.empty() || !r.forget.empty()) {
        out.nodes.emplace(node, std::move(r));
      }
      any |= news;
    }
    return any;
  };
  bool news = replies() || !out.unknown.empty();
  if (!news && wait_ms > 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (!news && !stopping_) {
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) break;
      news = replies();
    }
    if (!news) replies();
  }
  const Tick now = Now();
  for (auto& [ns, has] : strays) ns->last_seen = now;
  return out;
}

ApiResult<Json> Controller::ReportTask(const std::string& node, const TaskReport& report) {
  std::lock_guard lock(mu_);
  auto nit = nodes_.find(node);
  if (nit == nodes_.end())
    return std::unexpected(ApiErr(NotFound("node " + node + " is not registered")));
  auto it = tasks_.find(report.task_id);
  if (it == tasks_.end()) {
    return std::unexpected(
        ApiErr(NotFound("task " + std::to_string(report.task_id) + " not found")));
  }
  if (it->second.node != node) {
    return std::unexpected(ApiErr(FailedPrecondition("task " + std::to_string(report.task_id) +
                                                     " is assigned to " + it->second.node)));
  }
  nit->second.last_seen = Now();
  Pending p;
  OnReportLocked(nit->second, report, p);
  if (auto s = CommitLocked(p); !s) return std::unexpected(ApiErr(s.error()));
  return TaskJsonLocked(tasks_.at(report.task_id));
}

ApiResult<Json> Controller::ReportTasks(const NodesHeartbeatRequest& reports) {
  std::lock_guard lock(mu_);
  Pending p;
  std::size_t recorded = 0;
  for (const auto& [node, req] : reports.nodes) {
    auto nit = nodes_.find(node);
    if (nit == nodes_.end()) continue;
    nit->second.last_seen = Now();
    for (const auto& r : req.tasks) {
      OnReportLocked(nit->second, r, p);  // ignores tasks that are not this node's
      ++recorded;
    }
  }
  // One commit for every exit of the batch.
  if (auto s = CommitLocked(p); !s) return std::unexpected(ApiErr(s.error()));
  return Json{{"reports", recorded}};
}

TaskLaunch Controller::LaunchOfLocked(const TaskRecord& t) const {
  const JobState& job = jobs_.at(t.job_id);
  const JobSpec& spec = job.spec;
  TaskLaunch l;
  l.task_id = t.id;
  l.job = job.rec.name;
  l.queue = job.rec.queue;
  l.kind = job.rec.kind;
  l.attempt = t.attempt;
  l.rank = t.rank;
  l.task_count = spec.TaskCount();
  auto [role, role_rank] = spec.RoleOfRank(t.rank);
  l.role = role->name;
  l.role_rank = role_rank;
  l.role_size = role->count;
  l.processes = role->processes_per_worker;
  int base = 0, world = 0;
  int remaining = t.rank;
  for (const auto& r : spec.roles) {
    const int before = std::clamp(remaining, 0, r.count);
    base += before * r.processes_per_worker;
    remaining -= r.count;
    world += r.count * r.processes_per_worker;
  }
  l.process_rank_base = base;
  l.world_size = world;
  l.gpus = t.gpus;
  l.gpu_milli = t.gpu_milli;
  l.command = role->command;
  l.shell = spec.shell;
  l.env = spec.env;
  l.env["TESSERA_NODES"] = GangNodesLocked(job, t);
  l.master_addr = t.master_addr;
  l.master_port = t.master_port;
  l.grace_period_seconds = spec.grace_period_seconds;
  l.working_dir = spec.working_dir;
  l.checkpoint_dir = spec.checkpoint_dir;
  l.checkpoint_interval_seconds = spec.checkpoint_interval_seconds;
  return l;
}

// --- Dependencies and time limits (server/job_gates.h) ---

void Controller::ApplyDependenciesLocked() {
  auto phase_of = [&](const JobDependency& d) -> std::optional<std::string> {
    auto id = FindJobLocked(d.queue, d.name);
    if (!id) return std::nullopt;
    return JobPhaseOf(jobs_.at(*id));
  };
  Pending p;
  for (auto id : active_) {
    JobState& job = jobs_.at(id);
    job.blocked_by.clear();
    if (job.spec.dependencies.empty() || job.rec.finished_ms != 0) continue;
    // Dependencies gate the first start only: a restart does not wait for them again.
    if (std::any_of(job.units.begin(), job.units.end(),
                    [](const UnitRecord& u) { return u.first_started_ms > 0; })) {
      continue;
    }
    const auto gate = CheckDependencies(job.spec.dependencies, phase_of);
    if (gate.state == DependencyGate::State::kMet) continue;
    job.blocked_by = gate.message;
    if (gate.state == DependencyGate::State::kWaiting) continue;
    p.Event("JobDependencyNeverSatisfied", JobObject(job.rec), gate.message);
    for (int u = 0; u < static_cast<int>(job.units.size()); ++u) {
      if (job.units[static_cast<std::size_t>(u)].phase != UnitPhase::kPending) continue;
      auto& m = MUT_UNIT(p, job, u);
      m.phase = UnitPhase::kFailed;
      m.finished_ms = Now();
      m.message = gate.message;
    }
    FinishJobIfDoneLocked(job, p);
  }
  if (p.change.events.empty()) return;
  if (auto s = CommitLocked(p); !s) {  // still held back by blocked_by; retried next cycle
    std::fprintf(stderr, "tesserad: failing jobs with unmet dependencies not committed: %s\n",
                 s.error().message.c_str());
  }
}

void Controller::EnforceTimeLimits() {
  std::lock_guard lock(mu_);
  const Tick now = Now();
  Pending p;
  for (auto id : active_) {
    JobState& job = jobs_.at(id);
    if (job.spec.time_limit_seconds <= 0) continue;
    for (int u = 0; u < static_cast<int>(job.units.size()); ++u) {
      const UnitRecord& unit = job.units[static_cast<std::size_t>(u)];
      if (unit.phase != UnitPhase::kRunning) continue;
      auto why = TimeLimitExceeded(job.spec.time_limit_seconds, unit.started_ms, now);
      if (!why) continue;
      p.Event("JobTimeLimit", JobObject(job.rec), *why);
      StopUnitLocked(job, u, UnitPhase::kFailed, *why, p);
    }
  }
  if (p.change.events.empty()) return;
  if (auto s = CommitLocked(p); !s) {  // retried on the next tick
    std::fprintf(stderr, "tesserad: stopping jobs at their time limit not committed: %s\n",
                 s.error().message.c_str());
  }
}

std::string Controller::GangNodesLocked(const JobState& job, const TaskRecord& t) const {
  // A BatchJob's tasks are jobs of their own: the node list is the task's node.
  if (job.spec.IndependentTasks()) return t.node;
  std::map<int, std::string> by_rank;
  for (auto tid : job.tasks) {
    const TaskRecord& o = tasks_.at(tid);
    if (o.unit == t.unit && o.attempt == t.attempt) by_rank[o.rank] = o.node;
  }
  std::string nodes;
  std::set<std::string> seen;
  for (const auto& [rank, node] : by_rank) {
    if (seen.insert(node).second) nodes += (nodes.empty() ? "" : ",") + node;
  }
  return nodes;
}

// --- Liveness ---

void Controller::CheckLiveness() {
  std::lock_guard lock(mu_);
  const Tick now = Now();
  for (auto& [name, ns] : nodes_) {
    if (ns.rec.status != NodeStatus::kReady ||
        now - ns.last_seen <= options_.heartbeat_timeout_ms) {
      continue;
    }
    Pending p;
    NodeRecord rec = ns.rec;
    rec.status = NodeStatus::kLost;
    rec.message = "no heartbeat for " + std::to_string((now - ns.last_seen) / 1000) + "s";
    p.nodes[name] = rec;
    p.Event("NodeLost", "node/" + name, rec.message);
    std::set<std::pair<std::int64_t, int>> units;
    if (auto live = live_by_node_.find(name); live != live_by_node_.end()) {
      for (auto id : live->second) {
        auto& t = MUT_TASK(p, id);
        t.state = TaskState::kLost;
        t.finished_ms = now;
        t.message = "node " + name + " lost (no heartbeat)";
        units.insert({t.job_id, t.unit});
        auto jit = jobs_.find(t.job_id);
        if (jit != jobs_.end()) {
          p.Event("TaskLost", JobObject(jit->second.rec),
                  "task " + std::to_string(id) + " (rank " + std::to_string(t.rank) +
                      ") lost with node " + name);
        }
      }
    }
    for (const auto& [job_id, u] : units) {
      auto jit = jobs_.find(job_id);
      if (jit != jobs_.end()) EvaluateUnitLocked(jit->second, u, p);
    }
    p.reschedule = true;
    if (auto s = CommitLocked(p); !s) {  // the node is retried on the next check
      std::fprintf(stderr, "tesserad: marking node %s lost not committed: %s\n", name.c_str(),
                   s.error().message.c_str());
    }
  }
}

// --- Scheduling ---

int Controller::RunSchedulingCycle() {
  std::lock_guard lock(mu_);
  ++cycles_;
  ApplyDependenciesLocked();
  Cluster cluster;
  std::vector<const NodeState*> node_of;  // by NodeId
  std::map<std::string, NodeId> node_ids;
  for (const auto& [name, ns] : nodes_) {
    auto id = cluster.AddNode(name, ns.rec.gpu_model, ns.rec.gpu_count, ns.rec.cpu_milli,
                              ns.rec.memory_mib);
    if (!id) continue;
    node_of.push_back(&ns);
    node_ids[name] = *id;
  }
  ClusterState state(cluster);
  // Running units' placements, in rank order, by unit.
  std::map<std::pair<std::int64_t, int>, Placement> placements;
  // Rendezvous endpoints of live gangs: a new gang whose rank 0 shares a node with one of
  // them gets another port.
  std::set<std::pair<std::string, int>> ports_in_use;
  for (const auto& [name, ids] : live_by_node_) {
    auto nid = node_ids.find(name);
    for (auto id : ids) {
      const TaskRecord& t = tasks_.at(id);
      ports_in_use.insert({t.master_addr, t.master_port});
      if (nid == node_ids.end()) continue;
      TaskPlacement tp;
      tp.node = nid->second;
      for (int g : t.gpus) tp.gpu_mask |= static_cast<std::uint16_t>(1U << g);
      tp.gpu_milli = t.gpus.empty() ? 0 : t.gpu_milli;
      tp.cpu_milli = t.cpu_milli;
      tp.memory_mib = t.memory_mib;
      if (!state.Apply({tp})) {
        std::fprintf(stderr, "tesserad: task %lld does not fit its node %s in the rebuilt state\n",
                     static_cast<long long>(id), name.c_str());
      }
      placements[{t.job_id, t.unit}].push_back(tp);
    }
  }
  for (const auto& [name, ns] : nodes_) {
    auto nid = node_ids.find(name);
    if (nid == node_ids.end()) continue;
    if (ns.rec.status != NodeStatus::kReady || ns.has_strays) state.SetHealthy(nid->second, false);
  }

  // The snapshot: one JobView per pending or running unit.
  std::size_t count = 0;
  for (auto id : active_) {
    for (const auto& unit : jobs_.at(id).units) {
      count += unit.phase == UnitPhase::kPending || unit.phase == UnitPhase::kRunning;
    }
  }
  std::vector<Workload> workloads;
  workloads.reserve(count);
  std::vector<std::pair<std::int64_t, int>> keys;
  keys.reserve(count);
  Snapshot snap;
  snap.now = Now();
  snap.seed = cycles_;
  snap.jobs.reserve(count);
  const bool have_nodes = cluster.node_count() > 0;
  for (auto id : active_) {
    JobState& job = jobs_.at(id);
    job.waiting = false;
    if (job.rec.held) continue;             // only ever pending: submitted held, not released yet
    if (!job.blocked_by.empty()) continue;  // its dependencies are not met yet
    bool prepared = false;
    int free_slots = FreeParallelismSlots(job.spec, job.units);
    for (auto& unit : job.units) {
      if (unit.phase != UnitPhase::kPending && unit.phase != UnitPhase::kRunning) continue;
      if (unit.phase == UnitPhase::kPending && free_slots-- <= 0) continue;
      if (!prepared) {
        ResolveGpuModels(cluster.models(), job.workload);
        if (job.never_fits_generation != node_generation_) {
          Workload one = job.workload;
          if (job.spec.IndependentTasks()) one.groups[0].count = 1;
          job.never_fits = have_nodes ? NeverFitsReason(cluster, one) : std::nullopt;
          job.never_fits_generation = node_generation_;
        }
        prepared = true;
      }
      const Workload* wp = &job.workload;
      if (job.spec.IndependentTasks()) {
        // Each task of a BatchJob is scheduled on its own.
        Workload w = job.workload;
        w.groups[0].count = 1;
        w.id = JobId(static_cast<std::uint32_t>(keys.size()));
        workloads.push_back(std::move(w));
        wp = &workloads.back();
      } else {
        job.workload.id = JobId(static_cast<std::uint32_t>(keys.size()));
      }
      if (unit.phase == UnitPhase::kPending) {
        if (job.never_fits) {
          if (job.spec.IndependentTasks()) workloads.pop_back();
          continue;
        }
        keys.push_back({id, unit.unit});
        snap.jobs.push_back(JobView{wp, JobPhase::kPending, {}, 0, 0, 0, 0});
      } else {
        auto pit = placements.find({id, unit.unit});
        if (pit == placements.end()) {
          if (job.spec.IndependentTasks()) workloads.pop_back();
          continue;
        }
        keys.push_back({id, unit.unit});
        // Its last checkpoint, estimated from the spec's checkpoint.intervalSeconds (the program
        // gets it as TESSERA_CHECKPOINT_INTERVAL_SECONDS); unknown: everything since the start.
        const Tick interval = wp->checkpoint_interval;
        const Tick saved =
            interval > 0 ? LastCheckpointAt(unit.started_ms, snap.now, interval) : unit.started_ms;
        snap.jobs.push_back(
            JobView{wp, JobPhase::kRunning, pit->second, unit.started_ms, 0, 0, saved});
      }
    }
  }
  if (snap.jobs.empty()) return 0;
  // Gangs being stopped still hold their GPUs in `state`; the scheduler may count them as
  // soon free (priority preemption does, so a preemptor waiting for its victims preempts no one
  // else).
  for (auto id : active_) {
    for (const auto& unit : jobs_.at(id).units) {
      if (unit.phase != UnitPhase::kStopping) continue;
      if (auto pit = placements.find({id, unit.unit}); pit != placements.end())
        snap.releasing.push_back(pit->second);
    }
  }
  SchedulerConfig config = options_.scheduler;
  if (options_.queues) {
    // Fractions of the cluster resolve against what has registered; absolute guarantees that
    // exceed it wait for more nodes (with the last tree that fitted, if any).
    const Resources capacity = ClusterCapacity(cluster);
    if (!queue_tree_ || !(capacity == queue_tree_->capacity())) {
      auto tree = QueueTree::Build(*options_.queues, capacity);
      std::string problem = tree ? "" : tree.error().message;
      if (tree) queue_tree_ = std::make_shared<const QueueTree>(std::move(*tree));
      if (problem != queue_tree_problem_ && !problem.empty()) {
        std::fprintf(stderr, "tesserad: queue tree %s does not fit the %lld registered GPUs: %s\n",
                     options_.queues_source.c_str(),
                     static_cast<long long>(capacity.gpu_milli / 1000), problem.c_str());
      }
      queue_tree_problem_ = problem;
    }
    if (!queue_tree_) return 0;
    config.queues = queue_tree_;
  }
  auto scheduler = Scheduler::Create(config);
  if (!scheduler) return 0;
  const Decisions decisions = scheduler->Schedule(snap, state);
  // A preempted gang keeps its GPUs until its processes are gone (SIGTERM, the grace period):
  // a bind onto any of them waits for a later cycle, where the preemptor is placed on what has
  // been freed by then.
  std::map<NodeId, std::uint16_t> preempted_gpus;
  for (const auto& d : decisions) {
    if (d.kind != Decision::Kind::kPreempt) continue;
    for (const TaskPlacement& tp : snap.jobs[d.job.value].placement)
      preempted_gpus[tp.node] |= tp.gpu_mask;
  }
  auto overlaps_preempted = [&](const Placement& placement) {
    for (const TaskPlacement& tp : placement) {
      auto it = preempted_gpus.find(tp.node);
      if (it != preempted_gpus.end() && (it->second & tp.gpu_mask) != 0) return true;
    }
    return false;
  };
  std::vector<bool> deferred(snap.jobs.size(), false);

  Pending p;
  int bound = 0;
  std::int64_t next_task = next_task_id_;
  const Tick now = Now();
  for (const auto& d : decisions) {
    const auto [job_id, u] = keys.at(d.job.value);
    JobState& job = jobs_.at(job_id);
    const std::string object = JobObject(job.rec);
    if (d.kind == Decision::Kind::kBind && overlaps_preempted(d.placement)) {
      deferred[d.job.value] = true;
    } else if (d.kind == Decision::Kind::kBind) {
      auto& unit = MUT_UNIT(p, job, u);
      unit.phase = UnitPhase::kRunning;
      ++unit.attempt;
      unit.started_ms = now;
      if (unit.first_started_ms == 0) unit.first_started_ms = now;
      unit.message = "";
      const std::string master = node_of[d.placement[0].node.value]->rec.address;
      int port = MasterPortFor(job_id, unit.attempt, port_salt_);
      for (int tries = 0; ports_in_use.contains({master, port}) && tries < kMasterPorts; ++tries)
        port = kFirstMasterPort + (port - kFirstMasterPort + 1) % kMasterPorts;
      ports_in_use.insert({master, port});
      std::string where;
      for (std::size_t i = 0; i < d.placement.size(); ++i) {
        const TaskPlacement& tp = d.placement[i];
        TaskRecord t;
        t.id = next_task++;
        t.job_id = job_id;
        t.unit = u;
        t.attempt = unit.attempt;
        t.rank = job.spec.IndependentTasks() ? u : static_cast<int>(i);
        t.node = node_of[tp.node.value]->rec.name;
        for (int g = 0; g < kMaxGpusPerNode; ++g) {
          if (tp.gpu_mask >> g & 1) t.gpus.push_back(g);
        }
        t.gpu_milli = tp.gpu_milli > 0 ? tp.gpu_milli : static_cast<std::int32_t>(kMilliPerGpu);
        t.cpu_milli = tp.cpu_milli;
        t.memory_mib = tp.memory_mib;
        t.state = TaskState::kAssigned;
        t.created_ms = now;
        t.master_addr = master;
        t.master_port = port;
        if (!where.empty()) where += ", ";
        where += t.node + " [" + GpuList(t.gpus) + "]";
        p.added_tasks[job_id].push_back(t.id);
        p.tasks[t.id] = std::move(t);
      }
      p.Event("JobScheduled", object,
              (job.spec.IndependentTasks() ? "task " + std::to_string(u) + " " : std::string()) +
                  "attempt " + std::to_string(unit.attempt) + " bound to " + where);
      ++bound;
    } else if (d.kind == Decision::Kind::kResize) {
      // The controller does not resize running jobs yet; its SchedulerConfig leaves `elastic`
      // off, so this is not expected, and the job keeps the placement it has.
      continue;
    } else if (d.kind == Decision::Kind::kPreempt) {
      p.Event("JobPreempted", object, d.reason);
      StopUnitLocked(job, u, UnitPhase::kPending, "preempted: " + d.reason, p);
    } else {
      job.never_fits = d.reason;
      job.never_fits_generation = node_generation_;
    }
  }
  // Pending units that stay pending say why (rendered by the views).
  {
    std::vector<bool> decided(snap.jobs.size(), false);
    for (const auto& d : decisions) decided[d.job.value] = !deferred[d.job.value];
    for (std::size_t i = 0; i < snap.jobs.size(); ++i) {
      if (snap.jobs[i].phase == JobPhase::kPending && !decided[i])
        jobs_.at(keys[i].first).waiting = true;
    }
    last_free_gpu_milli_ = state.free_gpu_milli();
  }
  if (auto s = CommitLocked(p); !s) {
    std::fprintf(stderr, "tesserad: scheduling cycle not committed: %s\n",
                 s.error().message.c_str());
    return 0;
  }
  if (bound > 0 && first_decision_ms_ < 0) first_decision_ms_ = Now() - started_ms_;
  return bound;
}

void Controller::SchedulerLoop() {
  while (true) {
    {
      std::unique_lock lock(mu_);
      wake_scheduler_.wait_for(lock, std::chrono::milliseconds(options_.schedule_interval_ms),
                               [this] { return stopping_ || schedule_requested_; });
      if (stopping_) return;
      schedule_requested_ = false;
    }
    const auto start = std::chrono::steady_clock::now();
    RunSchedulingCycle();
    // Leave the lock to submissions and agents at least as long as the cycle held it.
    const auto took = std::chrono::steady_clock::now() - start;
    std::this_thread::sleep_for(std::max<std::chrono::steady_clock::duration>(
        took, std::chrono::milliseconds(options_.min_cycle_gap_ms)));
  }
}

void Controller::LivenessLoop() {
  const auto period =
      std::chrono::milliseconds(std::clamp<Tick>(options_.heartbeat_timeout_ms / 10, 50, 1000));
  while (true) {
    {
      std::unique_lock lock(mu_);
      wake_liveness_.wait_for(lock, period, [this] { return stopping_; });
      if (stopping_) return;
    }
    CheckLiveness();
    EnforceTimeLimits();
  }
}

// --- Views ---

std::string Controller::JobPhaseOf(const JobState& job) const {
  bool any_running = false, any_stopping = false, restarting = false, all_final = true;
  bool any_failed = false, any_cancelled = false;
  for (const auto& u : job.units) {
    switch (u.phase) {
      case UnitPhase::kRunning:
        any_running = true;
        all_final = false;
        break;
      case UnitPhase::kStopping:
        any_stopping = true;
        restarting |= u.stop_target == UnitPhase::kPending;
        all_final = false;
        break;
      case UnitPhase::kPending:
        all_final = false;
        break;
      case UnitPhase::kFailed:
        any_failed = true;
        break;
      case UnitPhase::kCancelled:
        any_cancelled = true;
        break;
      case UnitPhase::kSucceeded:
        break;
    }
  }
  if (all_final) {
    if (any_cancelled && job.rec.cancel_requested) return "Cancelled";
    return any_failed ? "Failed" : "Succeeded";
  }
  if (job.rec.cancel_requested) return "Cancelling";
  if (any_stopping) return restarting && !any_running ? "Restarting" : "Stopping";
  if (any_running) return "Running";
  return "Pending";
}

Json Controller::TaskJsonLocked(const TaskRecord& t) const {
  Json j = {{"id", t.id},
            {"rank", t.rank},
            {"attempt", t.attempt},
            {"node", t.node},
            {"gpus", t.gpus},
            {"state", std::string(TaskStateName(t.state))},
            {"exitCode", t.exit_code},
            {"signal", t.signal},
            {"pid", t.pid},
            {"createdMs", t.created_ms},
            {"startedMs", t.started_ms},
            {"finishedMs", t.finished_ms},
            {"masterAddr", t.master_addr},
            {"masterPort", t.master_port}};
  if (t.gpu_milli < kMilliPerGpu && !t.gpus.empty()) j["gpuMilli"] = t.gpu_milli;
  if (!t.message.empty()) j["message"] = t.message;
  auto n = nodes_.find(t.node);
  if (n != nodes_.end() && n->second.rec.simulated) j["simulatedGpus"] = true;
  return j;
}

Json Controller::JobSummaryLocked(const JobState& job) const {
  const Workload& w = job.workload;
  int attempt = 0, restarts = 0, running = 0;
  Tick started = 0;
  std::string message = job.rec.message;
  for (const auto& u : job.units) {
    attempt = std::max(attempt, u.attempt);
    restarts += u.restarts;
    if (u.first_started_ms > 0 && (started == 0 || u.first_started_ms < started))
      started = u.first_started_ms;
    if (message.empty() && !u.message.empty() && !IsFinal(u.phase)) message = u.message;
  }
  for (auto tid : job.tasks) {
    const TaskRecord& t = tasks_.at(tid);
    running += t.state == TaskState::kRunning;
  }
  const std::string phase = JobPhaseOf(job);
  const bool held = job.rec.held && job.rec.finished_ms == 0 && phase == "Pending";
  if (held) {
    message = "held: `tessera release " + job.rec.name + "` lets it be scheduled";
  } else if (phase == "Pending" && !job.blocked_by.empty()) {
    message = job.blocked_by;
  } else if (job.rec.finished_ms == 0 &&
             (phase == "Pending" || (phase == "Running" && job.units.size() > 1))) {
    if (job.never_fits) {
      message = "unschedulable: " + *job.never_fits;
    } else if (job.waiting) {
      message = "waiting for capacity: needs " +
                GpusText(static_cast<double>(job.spec.IndependentTasks()
                                                 ? job.workload.groups[0].shape.Total().gpu_milli
                                                 : w.TotalGpuMilli()) /
                         kMilliPerGpu) +
                " GPU(s)" + (job.spec.IndependentTasks() ? " per task" : " in one gang") + "; " +
                GpusText(static_cast<double>(last_free_gpu_milli_) / kMilliPerGpu) +
                " free on schedulable nodes (or jobs ahead in the queue)";
    }
  }
  Json j = {{"id", job.rec.id},
            {"name", job.rec.name},
            {"queue", job.rec.queue},
            {"kind", job.rec.kind},
            {"phase", phase},
            {"priority", job.spec.priority},
            {"tasks", w.TaskCount()},
            {"runningTasks", running},
            {"gpus", static_cast<double>(w.TotalGpuMilli()) / kMilliPerGpu},
            {"attempt", attempt},
            {"restarts", restarts},
            {"maxRestarts", job.spec.max_restarts},
            {"submitTimeMs", job.rec.submit_ms},
            {"startTimeMs", started},
            {"finishTimeMs", job.rec.finished_ms}};
  if (held) j["reason"] = "Held";
  if (!held && phase == "Pending" && !job.blocked_by.empty()) j["reason"] = "Dependency";
  if (phase == "Failed") {
    if (auto reason = FailureReasonOf(job.rec.message)) j["reason"] = *reason;
  }
  if (!message.empty()) j["message"] = message;
  if (!job.spec.user.empty()) j["user"] = job.spec.user;
  return j;
}

Json Controller::JobDetailLocked(const JobState& job) const {
  Json j = JobSummaryLocked(job);
  j["spec"] = JobSpecToJson(job.spec);
  Json units = Json::array();
  for (const auto& u : job.units) {
    Json uj = {{"unit", u.unit},
               {"phase", std::string(UnitPhaseName(u.phase))},
               {"attempt", u.attempt},
               {"restarts", u.restarts},
               {"pendingSinceMs", u.pending_since_ms},
               {"startedMs", u.started_ms},
               {"finishedMs", u.finished_ms},
               {"exitCode", u.exit_code}};
    if (u.phase == UnitPhase::kStopping)
      uj["stopTarget"] = std::string(UnitPhaseName(u.stop_target));
    if (!u.message.empty()) uj["message"] = u.message;
    units.push_back(std::move(uj));
  }
  j["units"] = std::move(units);
  Json tasks = Json::array();
  for (auto tid : job.tasks) tasks.push_back(TaskJsonLocked(tasks_.at(tid)));
  j["taskList"] = std::move(tasks);
  Json events = Json::array();
  const std::string object = JobObject(job.rec);
  for (const auto& e : events_) {
    if (e.object == object) {
      events.push_back(
          {{"seq", e.seq}, {"timeMs", e.time_ms}, {"type", e.type}, {"message", e.message}});
    }
  }
  j["events"] = std::move(events);
  return j;
}

Json Controller::ListNodes() {
  std::lock_guard lock(mu_);
  const Tick now = Now();
  Json out = Json::array();
  for (const auto& [name, ns] : nodes_) {
    std::int64_t used_milli = 0;
    int tasks = 0;
    if (auto live = live_by_node_.find(name); live != live_by_node_.end()) {
      for (auto id : live->second) {
        const TaskRecord& t = tasks_.at(id);
        used_milli += static_cast<std::int64_t>(t.gpus.size()) * t.gpu_milli;
        ++tasks;
      }
    }
    Json gpus = Json::array();
    if (auto parsed = ParseJson(ns.rec.gpus_json)) gpus = *parsed;
    Json j = {{"name", name},
              {"status", std::string(NodeStatusName(ns.rec.status))},
              {"schedulable", ns.rec.status == NodeStatus::kReady && !ns.has_strays},
              {"address", ns.rec.address},
              {"agentUrl", ns.rec.agent_url},
              {"gpuModel", ns.rec.gpu_model},
              {"gpuCount", ns.rec.gpu_count},
              {"gpusAllocated", static_cast<double>(used_milli) / kMilliPerGpu},
              {"simulated", ns.rec.simulated},
              {"cpuMilli", ns.rec.cpu_milli},
              {"memoryMiB", ns.rec.memory_mib},
              {"liveTasks", tasks},
              {"lastHeartbeatAgoMs", now - ns.last_seen},
              {"registeredMs", ns.rec.registered_ms},
              {"version", ns.rec.version},
              {"gpus", gpus}};
    if (!ns.rec.message.empty()) j["message"] = ns.rec.message;
    out.push_back(std::move(j));
  }
  return out;
}

Json Controller::ListQueues() {
  std::lock_guard lock(mu_);
  std::map<std::string, QueueUsage> usage;
  for (const auto& [name, q] : queues_) usage[name];
  for (const auto& [id, job] : jobs_) {
    QueueUsage& u = usage[job.rec.queue];
    if (job.rec.finished_ms != 0) {
      ++u.finished_jobs;
    } else if (JobPhaseOf(job) == "Pending") {
      ++u.pending_jobs;
      u.pending_gpu_milli += job.workload.TotalGpuMilli();
    } else {
      ++u.active_jobs;
    }
    for (auto tid : job.tasks) {
      const TaskRecord& t = tasks_.at(tid);
      if (IsLive(t.state))
        u.allocated += {t.cpu_milli, t.memory_mib, std::ssize(t.gpus) * t.gpu_milli};
    }
  }
  return QueueRows(options_.queues ? &*options_.queues : nullptr, queue_tree_.get(),
                   ClusterCapacity(*RegisteredClusterLocked()), usage);
}

Json Controller::ServerStatus() {
  std::lock_guard lock(mu_);
  std::map<std::string, int> phases;
  for (const auto& [id, job] : jobs_) ++phases[JobPhaseOf(job)];
  int ready = 0;
  for (const auto& [name, ns] : nodes_) ready += ns.rec.status == NodeStatus::kReady;
  return {{"startedAtMs", started_ms_},
          {"loadMs", load_ms_},
          {"loadedJobs", loaded_jobs_},
          {"firstDecisionMs", first_decision_ms_},
          {"jobs", phases},
          {"nodes", nodes_.size()},
          {"readyNodes", ready},
          {"cycles", cycles_},
          {"lastEventSeq", last_seq_},
          {"queuePolicy", options_.scheduler.queue_policy},
          {"placementPolicy", options_.scheduler.placement_policy}};
}

ApiResult<Json> Controller::Events(std::int64_t since, Tick wait_ms, int limit) {
  limit = std::clamp(limit, 1, 10000);
  std::unique_lock lock(mu_);
  if (last_seq_ <= since && wait_ms > 0) {
    changed_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                      [&] { return stopping_ || last_seq_ > since; });
  }
  Json events = Json::array();
  if (!events_.empty() && events_.front().seq > since + 1) {
    // Older than memory holds: read them from the store.
    auto older = store_->EventsSince(since, limit);
    if (!older) return std::unexpected(ApiErr(older.error()));
    for (const auto& e : *older) {
      events.push_back({{"seq", e.seq},
                        {"timeMs", e.time_ms},
                        {"type", e.type},
                        {"object", e.object},
                        {"message", e.message}});
    }
  } else {
    for (const auto& e : events_) {
      if (e.seq <= since) continue;
      events.push_back({{"seq", e.seq},
                        {"timeMs", e.time_ms},
                        {"type", e.type},
                        {"object", e.object},
                        {"message", e.message}});
      if (static_cast<int>(events.size()) >= limit) break;
    }
  }
  std::int64_t next = since;
  if (!events.empty()) next = events.back()["seq"].get<std::int64_t>();
  return Json{{"events", std::move(events)}, {"next", next}, {"lastSeq", last_seq_}};
}

ApiResult<Controller::LogLocation> Controller::FindLog(const std::string& queue,
                                                       const std::string& name, int rank,
                                                       int attempt) {
  std::lock_guard lock(mu_);
  auto id = FindJobLocked(queue, name);
  if (!id)
    return std::unexpected(ApiErr(NotFound("job " + QualifiedName(queue, name) + " not found")));
  const JobState& job = jobs_.at(*id);
  const TaskRecord* best = nullptr;
  for (auto tid : job.tasks) {
    const TaskRecord& t = tasks_.at(tid);
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
  auto n = nodes_.find(best->node);
  if (n != nodes_.end()) loc.agent_url = n->second.rec.agent_url;
  return loc;
}

}  // namespace tessera
