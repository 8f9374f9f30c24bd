// The API for users: submit (group-committed), release, get and list, cancel, purge, where a
// task's log is served, the event watch, and the node, queue and status views. Every answer is
// JSON ready to serve, or an ApiError naming the field and the reason.
//
// Thread-safety: every method is thread-safe (it takes the core's mutex).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/controller_core.h"
#include "server/dashboard_nodes.h"
#include "server/job_views.h"
#include "server/submit_fit.h"
#include "spec/label_selector.h"

namespace tessera {

struct JobFilter {
  std::string queue;                   // exact queue, or empty for all
  std::string name;                    // exact name, or empty
  std::optional<api::JobPhase> phase;  // or any
  std::size_t limit = 0;               // 0 = no limit
  // Paging (`continue`, as kube-apiserver's): only jobs after this id in the listing's order
  // (0 = from the start); the previous page's JobPage::next_continue.
  std::int64_t continue_after = 0;
  bool objects = false;       // resubmittable objects (job_object.h) instead of summaries
  bool newest_first = false;  // the newest jobs first, so a limit keeps the newest
  LabelSelector selector;     // on metadata.labels; empty selects all
  std::string user;           // exact metadata.user, or empty
};

// One page of a job listing.
struct JobPage {
  nlohmann::json jobs = nlohmann::json::array();
  // When the limit cut the listing: the id of its last job, for the next page's `continue`
  // (that page may be empty); 0 when the listing is complete.
  std::int64_t next_continue = 0;
};

// Where the log of one task is served.
struct LogLocation {
  std::string agent_url;
  std::int64_t task_id = 0;
  std::string state;
  bool live = false;
};

// A submission's text as a JobSpec, or the ApiError naming each field at fault.
ApiResult<JobSpec> ParseSubmission(std::string_view text);

class UserApi {
 public:
  // `leaf_queues`: with a queue tree, the queues jobs may name (empty: any).
  UserApi(ControllerCore& core, std::set<std::string> leaf_queues)
      : core_(core), leaf_queues_(std::move(leaf_queues)) {}

  // Validates and durably stores a job from YAML or JSON text; returns the job. A job
  // submitted with `hold` stays Pending (reason Held), skipped by the scheduler, until released.
  // A job that can never fit the registered nodes is refused (FailedPrecondition, with the
  // field: submit_fit.h) unless `queue_anyway`.
  ApiResult<nlohmann::json> Submit(std::string_view text, bool hold, bool queue_anyway);
  // The same for a spec already parsed (ParseSubmission), e.g. to authorise its queue first.
  ApiResult<nlohmann::json> Submit(JobSpec spec, bool hold, bool queue_anyway);
  // Releases held jobs in one commit: each of `names` (in `queue`, or in the only queue that
  // has that name when `queue` is empty), or with `all` every held job (of `queue` if given).
  // All or nothing: an unknown or ambiguous name fails the request and releases none.
  // Returns {"released": [...], "notHeld": [...]} as "queue/name" strings.
  ApiResult<nlohmann::json> Release(const std::string& queue, const std::vector<std::string>& names,
                                    bool all);
  ApiResult<nlohmann::json> GetJob(const std::string& queue, const std::string& name);
  JobPage ListJobs(const JobFilter& filter);
  // Cancels a job: pending units end at once, running ones are stopped (SIGTERM, then SIGKILL
  // after the grace period).
  ApiResult<nlohmann::json> Cancel(const std::string& queue, const std::string& name);
  // Deletes a finished job's records.
  ApiResult<nlohmann::json> Purge(const std::string& queue, const std::string& name);
  nlohmann::json ListNodes();
  // What the dashboard draws of every node (dashboard_nodes.h): copied under the lock, no JSON.
  std::vector<DashboardNode> DashboardNodes();
  // The last event's sequence number as last published (published_status.h): no lock waited.
  std::int64_t PublishedEventSeq() const;
  // The queue rows from the figures published after the last commit (no wait for a scheduling
  // cycle's lock), and the cluster's capacity, read under the lock only when nodes changed shape.
  nlohmann::json ListQueues();
  nlohmann::json ServerStatus();
  // Events with seq > `since`; waits up to `wait_ms` for one when there are none.
  ApiResult<nlohmann::json> Events(std::int64_t since, Tick wait_ms, int limit);
  // The task of `rank` in the latest attempt (or in `attempt` when > 0).
  ApiResult<LogLocation> FindLog(const std::string& queue, const std::string& name, int rank,
                                 int attempt);

 private:
  // A one-time wake-up of one sleeping thread. (Not std::binary_semaphore: libstdc++'s spins
  // and calls sched_yield before it sleeps, which on a loaded machine gives the core away.)
  class Wake {
   public:
    void Release() {
      {
        std::lock_guard lock(mu_);
        set_ = true;
      }
      cv_.notify_one();
    }
    void Acquire() {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return set_; });
    }

   private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool set_ = false;
  };
  // A submission waiting for the next group commit. Its submitter sleeps on `wake`, released
  // once: when its result is in, or when it is to lead the next commit.
  struct SubmitRequest {
    JobSpec spec;
    bool hold = false;
    bool queue_anyway = false;
    std::optional<ApiResult<nlohmann::json>> result;  // set before `wake` is released
    Wake wake;
  };
  // Commits `req` and everything queued with it, then passes the lead on and wakes the batch.
  void LeadGroupCommit(const std::shared_ptr<SubmitRequest>& req);
  // Commits a batch of submissions in one transaction (one fsync), falling back to one at a
  // time when the batch fails; returns a result per request, in order.
  std::vector<ApiResult<nlohmann::json>> CommitSubmissions(
      const std::vector<std::shared_ptr<SubmitRequest>>& batch);
  // Adds one new job with id `id` to `change`. REQUIRES: mu held.
  void AddJobLocked(const JobSpec& spec, bool hold, std::int64_t id, ChangeBuilder& change,
                    std::set<std::string>& new_queues);
  // The registered nodes as a Cluster (cached until a node is added or changes shape).
  // REQUIRES: mu held.
  std::shared_ptr<const Cluster> RegisteredClusterLocked();
  // The ids of the jobs a release names. REQUIRES: mu held.
  ApiResult<std::vector<std::int64_t>> ReleasedIdsLocked(const std::string& queue,
                                                         const std::vector<std::string>& names,
                                                         bool all) const;

  ControllerCore& core_;
  std::set<std::string> leaf_queues_;
  SubmitFitCluster fit_cluster_;  // the registered nodes, for the fit check at submit
  // The registered nodes' capacity at `node_generation` or later (read again under the lock
  // only when the generation moved).
  Resources CapacityAt(std::uint64_t node_generation);
  // The registered nodes' capacity for /v1/queues, as of a node generation.
  std::mutex capacity_mu_;
  std::uint64_t capacity_generation_ = 0;
  Resources capacity_;

  // Group commit of submissions. A submitter that finds no commit in flight leads one for
  // everything queued; the others queue and sleep. The leader, its commit done, hands the lead
  // to the first submitter queued meanwhile (so the next commit starts at once, as large as the
  // load made it) and then wakes each submitter of its batch: one wake-up per submission, none
  // for a submitter whose commit is still to come.
  std::mutex submit_mu_;
  std::vector<std::shared_ptr<SubmitRequest>> submit_queue_;  // under submit_mu_
  bool submit_leader_ = false;                                // under submit_mu_
};

}  // namespace tessera
