// ctest-labels: unit ha
// EtcdStore and LeaderElection on a real one-member etcd: round trips of every record, the
// constraints the SQLite store enforces (a job name once per queue, no GPU claimed twice, no
// deleting a job with live tasks), and fencing: a deposed leader's commit is refused whole and
// ends its term, while the new leader's commits go through.
#include "store/etcd_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include "store/etcd_election.h"
#include "store/etcd_harness.h"
#include "store/etcd_watch.h"

namespace tessera {
namespace {

using testing::EtcdCluster;
using testing::TempDir;
using testing::WaitFor;

JobRecord Job(std::int64_t id, const std::string& name) {
  JobRecord j;
  j.id = id;
  j.queue = "default";
  j.name = name;
  j.kind = "TrainingJob";
  j.spec_json = R"({"kind":"TrainingJob"})";
  j.submit_ms = 1000 + id;
  return j;
}

TaskRecord Task(std::int64_t id, std::int64_t job, std::vector<int> gpus,
                TaskState state = TaskState::kRunning) {
  TaskRecord t;
  t.id = id;
  t.job_id = job;
  t.node = "node-0";
  t.gpus = std::move(gpus);
  t.state = state;
  return t;
}

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HaveEtcd()) GTEST_SKIP() << "etcd is not installed (scripts/install-deps.sh)";
    etcd_ = std::make_unique<EtcdCluster>(dir_.path(), 1);
    ASSERT_TRUE(etcd_->WaitHealthy()) << "etcd did not start; see " << dir_.path();
  }
  std::unique_ptr<EtcdStore> Open(EtcdStore::Fence fence = {},
                                  std::function<void(const std::string&)> on_end = nullptr) {
    EtcdStore::Options o;
    o.endpoints = etcd_->Endpoints();
    o.fence = std::move(fence);
    o.on_term_end = std::move(on_end);
    auto store = EtcdStore::Open(std::move(o));
    EXPECT_TRUE(store.has_value()) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }
  std::unique_ptr<LeaderElection> Elect(const std::string& url) {
    LeaderElection::Options o;
    o.endpoints = etcd_->Endpoints();
    o.url = url;
    o.pid = 1;
    auto e = LeaderElection::Start(std::move(o));
    EXPECT_TRUE(e.has_value()) << e.error().message;
    return e ? std::move(*e) : nullptr;
  }

  TempDir dir_{"tessera-etcd-store"};
  std::unique_ptr<EtcdCluster> etcd_;
};

TEST_F(EtcdStoreTest, EveryRecordRoundTrips) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Change c;
  c.put_queues.push_back({"default", 5});
  c.put_jobs.push_back(Job(1, "a"));
  UnitRecord u;
  u.job_id = 1;
  u.phase = UnitPhase::kRunning;
  u.attempt = 2;
  u.message = "bound";
  c.put_units.push_back(u);
  c.put_tasks.push_back(Task(7, 1, {0, 1}));
  NodeRecord n;
  n.name = "node-0";
  n.gpu_count = 2;
  n.status = NodeStatus::kReady;
  n.topology_json = R"({"leaf":"l1"})";
  c.put_nodes.push_back(n);
  c.put_node_credentials.push_back({"node-0", std::string(64, 'd')});
  c.events.push_back({0, 0, "JobSubmitted", "job/default/a", "hello \xff"});
  auto events = store->Commit(c);
  ASSERT_TRUE(events.has_value()) << events.error().message;
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].seq, 1);

  auto again = Open();
  auto contents = again->Load();
  ASSERT_TRUE(contents.has_value()) << contents.error().message;
  ASSERT_EQ(contents->jobs.size(), 1u);
  EXPECT_EQ(contents->jobs[0].name, "a");
  EXPECT_EQ(contents->jobs[0].spec_json, R"({"kind":"TrainingJob"})");
  ASSERT_EQ(contents->units.size(), 1u);
  EXPECT_EQ(contents->units[0].phase, UnitPhase::kRunning);
  EXPECT_EQ(contents->units[0].attempt, 2);
  ASSERT_EQ(contents->tasks.size(), 1u);
  EXPECT_EQ(contents->tasks[0].gpus, (std::vector<int>{0, 1}));
  ASSERT_EQ(contents->nodes.size(), 1u);
  EXPECT_EQ(contents->nodes[0].topology_json, R"({"leaf":"l1"})");
  EXPECT_EQ(contents->nodes[0].status, NodeStatus::kReady);
  EXPECT_EQ(contents->last_event_seq, 1);
  auto creds = again->LoadNodeCredentials();
  ASSERT_TRUE(creds.has_value()) << creds.error().message;
  ASSERT_EQ(creds->size(), 1u);
  EXPECT_EQ((*creds)[0].node, "node-0");
  EXPECT_EQ((*creds)[0].digest, std::string(64, 'd'));
  auto since = again->EventsSince(0, 10);
  ASSERT_TRUE(since.has_value());
  ASSERT_EQ(since->size(), 1u);
  EXPECT_EQ((*since)[0].type, "JobSubmitted");
}

TEST_F(EtcdStoreTest, ConstraintsRefuseTheWholeChange) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Change first;
  first.put_jobs.push_back(Job(1, "a"));
  first.put_tasks.push_back(Task(1, 1, {0}));
  ASSERT_TRUE(store->Commit(first).has_value());

  Change same_name;
  same_name.put_jobs.push_back(Job(2, "a"));
  auto r = store->Commit(same_name);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Error::Code::kAlreadyExists);

  Change twice;
  twice.put_jobs.push_back(Job(3, "b"));
  twice.put_tasks.push_back(Task(2, 3, {1}));
  twice.put_tasks.push_back(Task(3, 3, {0}));  // GPU 0 is task 1's
  twice.events.push_back({0, 0, "Bound", "job/default/b", ""});
  r = store->Commit(twice);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Error::Code::kFailedPrecondition);

  Change live;
  live.delete_jobs.push_back(1);
  r = store->Commit(live);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Error::Code::kFailedPrecondition);

  // Nothing of the refused changes is there; ending task 1 frees GPU 0 and allows the delete.
  auto contents = Open()->Load();
  ASSERT_TRUE(contents.has_value());
  EXPECT_EQ(contents->jobs.size(), 1u);
  EXPECT_EQ(contents->tasks.size(), 1u);
  EXPECT_EQ(contents->last_event_seq, 0);
  Change end;
  end.put_tasks.push_back(Task(1, 1, {0}, TaskState::kSucceeded));
  end.put_jobs.push_back(Job(4, "c"));
  end.put_tasks.push_back(Task(4, 4, {0}));
  ASSERT_TRUE(store->Commit(end).has_value());
  Change purge;
  purge.delete_jobs.push_back(1);
  ASSERT_TRUE(store->Commit(purge).has_value());
  contents = Open()->Load();
  ASSERT_TRUE(contents.has_value());
  ASSERT_EQ(contents->jobs.size(), 1u);
  EXPECT_EQ(contents->jobs[0].name, "c");
  EXPECT_EQ(contents->tasks.size(), 1u);
}

TEST_F(EtcdStoreTest, ADeposedLeaderCommitsNothing) {
  auto first = Elect("http://127.0.0.1:1");
  auto second = Elect("http://127.0.0.1:2");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  auto won = first->TryLead();
  ASSERT_TRUE(won.has_value() && *won);
  won = second->TryLead();
  ASSERT_TRUE(won.has_value());
  EXPECT_FALSE(*won) << "two leaders at once";

  std::atomic<int> ended{0};
  auto old_leader =
      Open({first->leader_key(), first->lease()}, [&](const std::string&) { ++ended; });
  Change before;
  before.put_jobs.push_back(Job(1, "before"));
  ASSERT_TRUE(old_leader->Commit(before).has_value());

  // The first leader's lease ends (as when it stalls past its TTL); the second takes over.
  EtcdClient admin(etcd_->Endpoints());
  ASSERT_TRUE(admin.LeaseRevoke(first->lease()).has_value());
  ASSERT_TRUE(testing::WaitFor([&] { return second->TryLead().value_or(false); }, 5));
  auto leaders = second->Controllers();
  ASSERT_TRUE(leaders.has_value());
  ASSERT_EQ(leaders->size(), 1u) << leaders->dump();  // the first one's lease, and key, are gone
  EXPECT_TRUE((*leaders)[0]["leader"].get<bool>());
  EXPECT_EQ((*leaders)[0]["url"], "http://127.0.0.1:2");

  Change stale;
  stale.put_jobs.push_back(Job(2, "stale"));
  stale.events.push_back({0, 0, "JobSubmitted", "job/default/stale", ""});
  auto r = old_leader->Commit(stale);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("no longer the leader"), std::string::npos) << r.error().message;
  EXPECT_EQ(ended.load(), 1);
  EXPECT_FALSE(old_leader->term_ended().empty());
  // Every later commit is refused too, even one that would not conflict.
  Change later;
  later.put_queues.push_back({"other", 1});
  EXPECT_FALSE(old_leader->Commit(later).has_value());
  EXPECT_FALSE(old_leader->Probe().has_value());

  auto new_leader = Open({second->leader_key(), second->lease()});
  auto contents = new_leader->Load();
  ASSERT_TRUE(contents.has_value());
  ASSERT_EQ(contents->jobs.size(), 1u);
  EXPECT_EQ(contents->jobs[0].name, "before");
  EXPECT_EQ(contents->last_event_seq, 0);
  EXPECT_TRUE(contents->queues.empty());
  Change next;
  next.put_jobs.push_back(Job(2, "after"));
  EXPECT_TRUE(new_leader->Commit(next).has_value());
  EXPECT_TRUE(new_leader->Probe().has_value());
}

TEST_F(EtcdStoreTest, ALeaderThatStopsLetsAStandbyLeadAtOnce) {
  auto first = Elect("http://127.0.0.1:1");
  ASSERT_TRUE(first->TryLead().value_or(false));
  auto second = Elect("http://127.0.0.1:2");
  EXPECT_FALSE(second->TryLead().value_or(true));
  first.reset();  // revokes its lease
  EXPECT_TRUE(second->TryLead().value_or(false));
  auto leader = second->Leader();
  ASSERT_TRUE(leader.has_value());
  EXPECT_EQ((*leader)["url"], "http://127.0.0.1:2");
}

TEST(EtcdWatchMessages, CountEventsAndSeeCancellations) {
  EXPECT_EQ(WatchEventCount(R"({"result":{"header":{},"created":true}})"), 0);
  EXPECT_EQ(WatchEventCount(R"({"result":{"events":[{"type":"DELETE","kv":{}},{"kv":{}}]}})"), 2);
  EXPECT_EQ(WatchEventCount(R"({"result":{"canceled":true}})"), -1);
  EXPECT_EQ(WatchEventCount(R"({"error":{"message":"no"}})"), -1);
  EXPECT_EQ(WatchEventCount("not json"), -1);
}

// A standby learns from its watch, not a poll, that the leader key went: within the time of a
// round trip, not of a poll period.
TEST_F(EtcdStoreTest, AWatchOfTheLeaderKeySeesTheLeaderGo) {
  auto first = Elect("http://127.0.0.1:1");
  ASSERT_TRUE(first->TryLead().value_or(false));
  std::atomic<int> changes{0};
  EtcdKeyWatch watch(etcd_->Endpoints(), {}, first->leader_key(), [&] { ++changes; });
  ASSERT_TRUE(WaitFor([&] { return watch.streams_opened() >= 1 && changes >= 1; }, 5));
  const int before = changes.load();
  const auto gone = std::chrono::steady_clock::now();
  first.reset();  // revokes its lease: etcd deletes the leader key
  ASSERT_TRUE(WaitFor([&] { return changes.load() > before; }, 5));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - gone).count();
  std::printf("leader key deleted -> watch event after %.1f ms\n", ms);
  EXPECT_LT(ms, 1000);
  auto second = Elect("http://127.0.0.1:2");
  EXPECT_TRUE(second->TryLead().value_or(false));
}

}  // namespace
}  // namespace tessera
