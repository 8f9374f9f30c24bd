#include "store/etcd_store.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "store/record_json.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

std::string Pad(std::int64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(v));
  return buf;
}

Tick NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<Json> ParseValue(const EtcdKeyValue& kv) {
  Json doc = Json::parse(kv.value, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return IoError("etcd store: " + kv.key + " holds a value that is not JSON");
  return doc;
}

// Every record under `prefix`, parsed by `from_json` and handed to `add`.
template <typename FromJson, typename Add>
Status LoadRecords(EtcdClient& client, const std::string& prefix, FromJson from_json, Add add) {
  auto kvs = client.Range(prefix, PrefixEnd(prefix));
  if (!kvs) return std::unexpected(kvs.error());
  for (const auto& kv : *kvs) {
    auto doc = ParseValue(kv);
    if (!doc) return std::unexpected(doc.error());
    auto rec = from_json(*doc);
    if (!rec) return IoError(rec.error().message + " (key " + kv.key + ")");
    add(std::move(*rec));
  }
  return {};
}

}  // namespace

EtcdStore::EtcdStore(Options options)
    : options_(std::move(options)),
      client_(options_.endpoints, options_.timeout_ms, options_.tls) {}

Result<std::unique_ptr<EtcdStore>> EtcdStore::Open(Options options) {
  if (options.endpoints.empty()) return InvalidArgument("--etcd-endpoints: give at least one URL");
  if (options.prefix.empty() || options.prefix.back() != '/')
    return InvalidArgument("etcd prefix: must end with '/'");
  std::unique_ptr<EtcdStore> store(new EtcdStore(std::move(options)));
  // Reachable and answering with a quorum (a linearizable read), or refuse to start.
  if (auto probe = store->client_.Range(store->Key("meta/", "commit"), ""); !probe)
    return IoError("etcd store: " + probe.error().message);
  return store;
}

std::string EtcdStore::Key(std::string_view kind, std::string_view rest) const {
  std::string k = options_.prefix;
  k += kind;
  k += rest;
  return k;
}

std::string EtcdStore::term_ended() const {
  std::lock_guard lock(mu_);
  return term_ended_;
}

Result<StoreContents> EtcdStore::Load() {
  std::lock_guard lock(mu_);
  StoreContents out;
  if (auto s = LoadLocked(out); !s) return std::unexpected(s.error());
  return out;
}

Result<std::vector<NodeCredentialRecord>> EtcdStore::LoadNodeCredentials() {
  std::lock_guard lock(mu_);
  std::vector<NodeCredentialRecord> out;
  auto s = LoadRecords(client_, Key("credentials/", ""), NodeCredentialRecordFromJson,
                       [&](NodeCredentialRecord r) { out.push_back(std::move(r)); });
  if (!s) return std::unexpected(s.error());
  return out;
}

Status EtcdStore::LoadLocked(StoreContents& out) {
  job_ids_.clear();
  job_names_.clear();
  live_tasks_.clear();
  claimed_.clear();
  live_by_job_.clear();
  queues_.clear();
  auto s = LoadRecords(client_, Key("queues/", ""), QueueRecordFromJson, [&](QueueRecord r) {
    queues_.insert(r.name);
    out.queues.push_back(std::move(r));
  });
  if (s) {
    s = LoadRecords(client_, Key("jobs/", ""), JobRecordFromJson, [&](JobRecord r) {
      job_ids_[{r.queue, r.name}] = r.id;
      job_names_[r.id] = {r.queue, r.name};
      out.jobs.push_back(std::move(r));
    });
  }
  if (s) {
    s = LoadRecords(client_, Key("units/", ""), UnitRecordFromJson,
                    [&](UnitRecord r) { out.units.push_back(std::move(r)); });
  }
  if (s) {
    s = LoadRecords(client_, Key("tasks/", ""), TaskRecordFromJson, [&](TaskRecord r) {
      if (IsLive(r.state)) {
        for (int g : r.gpus) claimed_[{r.node, g}] += ClaimedGpuMilli(r);
        live_tasks_[r.id] = {r.node, r.gpus, ClaimedGpuMilli(r)};
        live_by_job_[r.job_id].insert(r.id);
      }
      out.tasks.push_back(std::move(r));
    });
  }
  if (s) {
    s = LoadRecords(client_, Key("nodes/", ""), NodeRecordFromJson,
                    [&](NodeRecord r) { out.nodes.push_back(std::move(r)); });
  }
  if (!s) return s;
  // Keys order tasks by job; the Store contract (and SQLite) orders them by id.
  std::sort(out.tasks.begin(), out.tasks.end(),
            [](const TaskRecord& a, const TaskRecord& b) { return a.id < b.id; });
  // The last event: the greatest key under events/.
  const std::string events = Key("events/", "");
  auto last = client_.Last(events, PrefixEnd(events));
  if (!last) return std::unexpected(last.error());
  last_seq_ = 0;
  if (!last->empty()) {
    auto doc = ParseValue(last->back());
    if (!doc) return std::unexpected(doc.error());
    auto e = EventRecordFromJson(*doc);
    if (!e) return std::unexpected(e.error());
    last_seq_ = e->seq;
  }
  out.last_event_seq = last_seq_;
  return {};
}

Status EtcdStore::Plan(const Change& change, Json& ops, std::vector<EventRecord>& events) const {
  for (const auto& q : change.put_queues) {
    if (!queues_.contains(q.name))
      ops.push_back(EtcdPut(Key("queues/", q.name), RecordText(ToJson(q))));
  }
  std::map<std::pair<std::string, std::string>, std::int64_t> names;  // taken by this change
  for (const auto& j : change.put_jobs) {
    const std::pair<std::string, std::string> name{j.queue, j.name};
    auto held = job_ids_.find(name);
    const bool taken_by_other = (held != job_ids_.end() && held->second != j.id) ||
                                (names.contains(name) && names[name] != j.id);
    if (taken_by_other)
      return AlreadyExists("job " + j.queue + "/" + j.name +
                           ": a job of that name already exists in its queue");
    names[name] = j.id;
    ops.push_back(EtcdPut(Key("jobs/", Pad(j.id)), RecordText(ToJson(j))));
  }
  for (const auto& u : change.put_units) {
    ops.push_back(EtcdPut(Key("units/", Pad(u.job_id) + "/" + Pad(u.unit)), RecordText(ToJson(u))));
  }
  // GPU claims after this change: the mirror's, less the tasks this change ends or moves.
  std::map<std::pair<std::string, int>, std::int32_t> claimed = claimed_;
  for (const auto& t : change.put_tasks) {
    if (auto it = live_tasks_.find(t.id); it != live_tasks_.end()) {
      for (int g : it->second.gpus) claimed[{it->second.node, g}] -= it->second.milli;
    }
  }
  for (const auto& t : change.put_tasks) {
    if (IsLive(t.state)) {
      for (int g : t.gpus) {
        auto& milli = claimed[{t.node, g}];
        if (milli + ClaimedGpuMilli(t) > 1000)
          return FailedPrecondition("task " + std::to_string(t.id) + " on GPU " +
                                    std::to_string(g) + " of " + t.node +
                                    ": GPU claimed by two live tasks");
        milli += ClaimedGpuMilli(t);
      }
    }
    ops.push_back(EtcdPut(Key("tasks/", Pad(t.job_id) + "/" + Pad(t.id)), RecordText(ToJson(t))));
  }
  for (const auto id : change.delete_jobs) {
    bool live = false;
    if (auto it = live_by_job_.find(id); it != live_by_job_.end()) {
      for (auto task : it->second) {
        // Unless this change ends it.
        auto put = std::find_if(change.put_tasks.begin(), change.put_tasks.end(),
                                [&](const TaskRecord& t) { return t.id == task; });
        live |= put == change.put_tasks.end() || IsLive(put->state);
      }
    }
    if (live) return FailedPrecondition("job " + std::to_string(id) + " still has live tasks");
    ops.push_back(EtcdDeleteRange(Key("jobs/", Pad(id))));
    const std::string units = Key("units/", Pad(id) + "/");
    const std::string tasks = Key("tasks/", Pad(id) + "/");
    ops.push_back(EtcdDeleteRange(units, PrefixEnd(units)));
    ops.push_back(EtcdDeleteRange(tasks, PrefixEnd(tasks)));
  }
  for (const auto& n : change.put_nodes)
    ops.push_back(EtcdPut(Key("nodes/", n.name), RecordText(ToJson(n))));
  for (const auto& c : change.put_node_credentials)
    ops.push_back(EtcdPut(Key("credentials/", c.node), RecordText(ToJson(c))));
  const Tick now = NowMs();
  std::int64_t seq = last_seq_;
  for (const auto& e : change.events) {
    EventRecord rec = e;
    if (rec.time_ms == 0) rec.time_ms = now;
    rec.seq = ++seq;
    ops.push_back(EtcdPut(Key("events/", Pad(rec.seq)), RecordText(ToJson(rec))));
    events.push_back(std::move(rec));
  }
  return {};
}

void EtcdStore::Mirror(const Change& change, const std::vector<EventRecord>& events) {
  for (const auto& q : change.put_queues) queues_.insert(q.name);
  for (const auto& j : change.put_jobs) {
    job_ids_[{j.queue, j.name}] = j.id;
    job_names_[j.id] = {j.queue, j.name};
  }
  for (const auto& t : change.put_tasks) {
    if (auto it = live_tasks_.find(t.id); it != live_tasks_.end()) {
      for (int g : it->second.gpus) {
        auto c = claimed_.find({it->second.node, g});
        if (c != claimed_.end() && (c->second -= it->second.milli) <= 0) claimed_.erase(c);
      }
      live_tasks_.erase(it);
      live_by_job_[t.job_id].erase(t.id);
    }
    if (IsLive(t.state)) {
      for (int g : t.gpus) claimed_[{t.node, g}] += ClaimedGpuMilli(t);
      live_tasks_[t.id] = {t.node, t.gpus, ClaimedGpuMilli(t)};
      live_by_job_[t.job_id].insert(t.id);
    }
  }
  for (const auto id : change.delete_jobs) {
    if (auto it = job_names_.find(id); it != job_names_.end()) {
      job_ids_.erase(it->second);
      job_names_.erase(it);
    }
    live_by_job_.erase(id);
  }
  if (!events.empty()) last_seq_ = events.back().seq;
}

EtcdStore::Sent EtcdStore::Send(const Json& ops, const std::string& token) {
  Json compare = Json::array();
  if (!options_.fence.leader_key.empty())
    compare.push_back(EtcdLeaseIs(options_.fence.leader_key, options_.fence.lease));
  // A member that died with our txn unanswered: ask another whether it was applied, at most
  // once per member, then send it again (its puts and deletes are idempotent).
  std::string why;
  for (std::size_t attempt = 0; attempt <= options_.endpoints.size(); ++attempt) {
    auto r = client_.Txn(compare, ops);
    if (r) return {r->succeeded ? Outcome::kApplied : Outcome::kDeposed, ""};
    why = r.error().message;
    if (!client_.last_failure_ambiguous()) {
      // Never sent, or refused before it was proposed; unless an earlier try was ambiguous.
      return {attempt == 0 ? Outcome::kNotApplied : Outcome::kUnknown, why};
    }
    auto read = client_.Range(Key("meta/", "commit"), "");
    if (!read) return {Outcome::kUnknown, why + "; then " + read.error().message};
    if (!read->empty() && read->front().value == token) return {Outcome::kApplied, ""};
  }
  return {Outcome::kUnknown, why};
}

Result<std::vector<EventRecord>> EtcdStore::Commit(const Change& change) {
  std::string end_term;
  Result<std::vector<EventRecord>> result = std::vector<EventRecord>{};
  {
    std::lock_guard lock(mu_);
    if (!term_ended_.empty()) return IoError(term_ended_);
    Json ops = Json::array();
    std::vector<EventRecord> events;
    if (auto s = Plan(change, ops, events); !s) return std::unexpected(s.error());
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    const std::string token = std::to_string(options_.fence.lease) + ":" +
                              std::to_string(++commits_) + ":" + std::to_string(rng());
    ops.push_back(EtcdPut(Key("meta/", "commit"), token));
    const Sent sent = Send(ops, token);
    switch (sent.outcome) {
      case Outcome::kApplied:
        Mirror(change, events);
        result = std::move(events);
        break;
      case Outcome::kNotApplied:
        return IoError("etcd store: nothing committed: " + sent.why);
      case Outcome::kUnknown:
        // Our memory may no longer match the store: only a reload can tell.
        term_ended_ = "etcd store: a commit's outcome is unknown (" + sent.why +
                      "); this controller's term ends";
        break;
      case Outcome::kDeposed:
        term_ended_ = "etcd store: this controller is no longer the leader (the leader key " +
                      options_.fence.leader_key + " is not held by lease " +
                      std::to_string(options_.fence.lease) + "); nothing was committed";
        break;
    }
    if (!term_ended_.empty()) {
      end_term = term_ended_;
      result = IoError(term_ended_);
    }
  }
  if (!end_term.empty()) {
    if (options_.on_term_end) options_.on_term_end(end_term);
    return result;
  }
  if (++commits_since_prune_ >= 1000) PruneEvents();
  return result;
}

Status EtcdStore::Probe() {
  auto r = Commit(Change{});
  if (!r) return std::unexpected(r.error());
  return {};
}

void EtcdStore::PruneEvents() {
  std::lock_guard lock(mu_);
  commits_since_prune_ = 0;
  if (last_seq_ <= options_.keep_events || !term_ended_.empty()) return;
  Json compare = Json::array();
  if (!options_.fence.leader_key.empty())
    compare.push_back(EtcdLeaseIs(options_.fence.leader_key, options_.fence.lease));
  // Best effort: pruning is not part of any change.
  (void)client_.Txn(
      compare,
      Json::array({EtcdDeleteRange(Key("events/", ""),
                                   Key("events/", Pad(last_seq_ - options_.keep_events + 1)))}));
}

Result<std::vector<EventRecord>> EtcdStore::EventsSince(std::int64_t after, int limit) {
  std::lock_guard lock(mu_);
  std::vector<EventRecord> out;
  const std::string events = Key("events/", "");
  auto kvs = client_.Range(Key("events/", Pad(after + 1)), PrefixEnd(events), limit);
  if (!kvs) return std::unexpected(kvs.error());
  for (const auto& kv : *kvs) {
    auto doc = ParseValue(kv);
    if (!doc) return std::unexpected(doc.error());
    auto e = EventRecordFromJson(*doc);
    if (!e) return std::unexpected(e.error());
    out.push_back(std::move(*e));
  }
  return out;
}

}  // namespace tessera
