// EtcdStore: the Store on an etcd cluster (3.4, through its JSON gateway), for several
// controllers of which one leads (etcd_election.h). Keys under a prefix (default /tessera/):
//
//   queues/<name>   jobs/<id>   units/<job>/<unit>   tasks/<job>/<task>   nodes/<name>
//   events/<seq>    meta/commit (the token of the last commit)
//
// (ids and sequence numbers zero-padded to 20 digits, so key order is numeric order), each a
// whole record as JSON (record_json.h). A Commit is one etcd txn, applied by a quorum of
// members (each fsyncs its log) before etcd answers: durable before acknowledged.
//
// Fencing: with a `fence` (the leader key and this controller's lease), every txn compares the
// leader key's lease with ours; a deposed leader's commit fails whole, nothing applied, and the
// store ends the term (below). Constraints (a job name unique in its queue, a GPU never claimed
// past 1000 milli by live tasks, no deleting a job with live tasks) are checked against a mirror
// of what the store holds: sound because, fenced, no one else writes while we lead, and the
// mirror is loaded after leadership was won.
//
// An ambiguous failure (a txn sent, no answer: the member died, etcd lost quorum) is resolved
// by reading meta/commit back: our token there means it was applied. Unresolvable, the store
// refuses every later commit and ends the term: the controller's memory might no longer match
// the store, so it must reload as a new term (tesserad re-executes itself as a standby).
//
// Thread-safety: calls are serialised by a mutex.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "store/etcd_client.h"
#include "store/store.h"

namespace tessera {

class EtcdStore final : public Store {
 public:
  struct Fence {
    std::string leader_key;  // empty: no fencing (one controller, tests)
    std::int64_t lease = 0;
  };
  struct Options {
    std::vector<std::string> endpoints;
    EtcdTls tls;
    std::string prefix = "/tessera/";
    Fence fence;
    std::int64_t keep_events = 200'000;  // older events are pruned
    int timeout_ms = 1500;               // one request to one member
    // Called once, from the failing Commit (with no lock of ours held), when the term must end:
    // deposed, or a commit's outcome unknown. Must not block.
    std::function<void(const std::string& why)> on_term_end;
  };

  static Result<std::unique_ptr<EtcdStore>> Open(Options options);

  Result<StoreContents> Load() override;
  Result<std::vector<EventRecord>> Commit(const Change& change) override;
  Result<std::vector<NodeCredentialRecord>> LoadNodeCredentials() override;
  Result<std::vector<EventRecord>> EventsSince(std::int64_t after, int limit) override;
  // A fenced txn that changes nothing but the commit token: whether commits go through again
  // (after a failure the controller is unready until one does).
  Status Probe() override;

  // Why commits are refused for good ("" while they are not).
  std::string term_ended() const;

 private:
  explicit EtcdStore(Options options);

  std::string Key(std::string_view kind, std::string_view rest) const;
  Status LoadLocked(StoreContents& out);
  // Checks `change` against the mirror; fills the txn's operations and the events.
  Status Plan(const Change& change, nlohmann::json& ops, std::vector<EventRecord>& events) const;
  void Mirror(const Change& change, const std::vector<EventRecord>& events);
  // Sends the txn; resolves an ambiguous outcome by reading the commit token back.
  enum class Outcome { kApplied, kDeposed, kNotApplied, kUnknown };
  struct Sent {
    Outcome outcome;
    std::string why;
  };
  Sent Send(const nlohmann::json& ops, const std::string& token);
  void PruneEvents();

  Options options_;
  EtcdClient client_;
  mutable std::mutex mu_;
  std::string term_ended_;  // under mu_
  // The mirror (under mu_): job names, live tasks' GPU claims, tasks by job.
  std::map<std::pair<std::string, std::string>, std::int64_t> job_ids_;  // (queue, name)
  std::map<std::int64_t, std::pair<std::string, std::string>> job_names_;
  struct Claim {
    std::string node;
    std::vector<int> gpus;
    std::int32_t milli = 0;
  };
  std::map<std::int64_t, Claim> live_tasks_;                     // task id -> its claim
  std::map<std::pair<std::string, int>, std::int32_t> claimed_;  // (node, gpu) -> milli
  std::map<std::int64_t, std::set<std::int64_t>> live_by_job_;
  std::set<std::string> queues_;
  std::int64_t last_seq_ = 0;
  std::int64_t commits_ = 0;
  std::int64_t commits_since_prune_ = 0;
};

}  // namespace tessera
