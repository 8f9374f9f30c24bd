// Who may do what: a pure function of the caller (already authenticated) and the request.
// No I/O, no clock; the HTTP layer (http_auth.h) builds both and renders a denial as 403 with
// its reason.
//
// Roles come from a user's groups (the token file's last field):
//   tessera:admins     admin: everything users may do, on every queue; the export
//   tessera:viewers    viewer: reads jobs of every queue (never their env), nodes, queues, events
//   team:<queue path>  team member of that queue subtree (team:nlp covers nlp and nlp/sft):
//                      submits to it, sees, cancels, purges and releases its jobs, reads their
//                      env and logs
//   tessera:gateway    the gateway's service identity: reads jobs (services, replicas), nodes
//                      and events, never env
//   tessera:metrics    a metrics scraper (a Prometheus bearer_token_file): status and metrics
// Nodes are callers of their own kind: an agent acts only for the nodes its credential covers,
// and users may not call the agent API at all.
//
// Thread-safety: stateless; every function is thread-safe.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace tessera {

struct Caller {
  enum class Kind { kAnonymous, kUser, kNode };
  Kind kind = Kind::kAnonymous;
  std::string name;                 // the user, or the agent's first node
  std::vector<std::string> groups;  // kUser
  std::set<std::string> nodes;      // kNode: the nodes its credential covers
};

enum class Action {
  kHealth,   // liveness: open to anyone
  kStatus,   // counters
  kMetrics,  // the metrics endpoint
  kListNodes,
  kListQueues,
  kListJobs,     // filtered to the queues the caller may see (MaySeeQueue)
  kReadJob,      // one job of `queue`; its env only with MaySeeEnv
  kReadLogs,     // a task's output may hold what its env held: team and admin only
  kExec,         // `tessera exec` into a task: what its env and files hold; team and admin only
  kWatchEvents,  // filtered like kListJobs
  kExport,       // GET /v1/export: every job's spec (env included) and task; admins only
  kSubmit,
  kRelease,
  kCancel,
  kPurge,
  kAgent,  // the agent protocol for `nodes`
};

struct AccessRequest {
  Action action = Action::kHealth;
  std::string queue;               // for the job actions; empty: not known yet (any queue)
  std::vector<std::string> nodes;  // for kAgent
};

struct AccessDecision {
  bool allowed = false;
  std::string reason;  // why not, for the 403
};

struct Roles {
  bool admin = false;
  bool viewer = false;
  bool gateway = false;
  bool metrics = false;
  std::vector<std::string> teams;  // queue subtrees
};

Roles RolesOf(const std::vector<std::string>& groups);

// True when `queue` is `root` or inside it ("nlp/sft" is inside "nlp"; "nlpx" is not).
bool InQueueSubtree(const std::string& queue, const std::string& root);

AccessDecision Authorize(const Caller& caller, const AccessRequest& request);
// Whether the caller may see the jobs (and job events) of `queue` at all.
bool MaySeeQueue(const Caller& caller, const std::string& queue);
// Whether the caller may read the env of `queue`'s jobs.
bool MaySeeEnv(const Caller& caller, const std::string& queue);

}  // namespace tessera
