// SqliteStore: durable round trips, one transaction per change (all or nothing), unique job
// names per queue, and the database-level guarantee that no GPU is claimed by two live tasks.
#include "store/sqlite_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace tessera {
namespace {

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-store-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/state.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<SqliteStore> OpenStore() {
    auto store = SqliteStore::Open(path_);
    EXPECT_TRUE(store.has_value()) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }

  static JobRecord Job(std::int64_t id, std::string name, std::string queue = "default") {
    JobRecord j;
    j.id = id;
    j.queue = std::move(queue);
    j.name = std::move(name);
    j.kind = "TrainingJob";
    j.spec_json = "{}";
    j.submit_ms = 1000 + id;
    return j;
  }

  static TaskRecord Task(std::int64_t id, std::int64_t job, std::string node, std::vector<int> gpus,
                         std::int32_t milli = 1000, TaskState state = TaskState::kAssigned) {
    TaskRecord t;
    t.id = id;
    t.job_id = job;
    t.rank = static_cast<int>(id);
    t.node = std::move(node);
    t.gpus = std::move(gpus);
    t.gpu_milli = milli;
    t.state = state;
    return t;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(SqliteStoreTest, RoundTripsEveryRecordAcrossReopen) {
  {
    auto store = OpenStore();
    Change c;
    c.put_queues.push_back({"nlp/sft", 5});
    c.put_jobs.push_back(Job(1, "a", "nlp/sft"));
    UnitRecord u;
    u.job_id = 1;
    u.phase = UnitPhase::kRunning;
    u.attempt = 2;
    u.restarts = 1;
    u.message = "restarted";
    c.put_units.push_back(u);
    c.put_tasks.push_back(Task(10, 1, "node-0", {0, 1, 2, 3}));
    NodeRecord n;
    n.name = "node-0";
    n.gpu_model = "H100";
    n.gpu_count = 4;
    n.simulated = true;
    n.status = NodeStatus::kReady;
    c.put_nodes.push_back(n);
    c.events.push_back({0, 0, "JobSubmitted", "job/nlp/sft/a", "submitted"});
    auto events = store->Commit(c);
    ASSERT_TRUE(events.has_value()) << events.error().message;
    ASSERT_EQ(events->size(), 1u);
    EXPECT_GT((*events)[0].seq, 0);
  }
  auto store = OpenStore();
  auto contents = store->Load();
  ASSERT_TRUE(contents.has_value()) << contents.error().message;
  ASSERT_EQ(contents->jobs.size(), 1u);
  EXPECT_EQ(contents->jobs[0].queue, "nlp/sft");
  ASSERT_EQ(contents->units.size(), 1u);
  EXPECT_EQ(contents->units[0].phase, UnitPhase::kRunning);
  EXPECT_EQ(contents->units[0].attempt, 2);
  EXPECT_EQ(contents->units[0].message, "restarted");
  ASSERT_EQ(contents->tasks.size(), 1u);
  EXPECT_EQ(contents->tasks[0].gpus, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(contents->nodes.size(), 1u);
  EXPECT_TRUE(contents->nodes[0].simulated);
  EXPECT_EQ(contents->queues.size(), 1u);
  EXPECT_EQ(contents->last_event_seq, 1);
}

TEST_F(SqliteStoreTest, JobNamesAreUniqueWithinAQueue) {
  auto store = OpenStore();
  Change a;
  a.put_jobs.push_back(Job(1, "train"));
  ASSERT_TRUE(store->Commit(a));
  Change dup;
  dup.put_jobs.push_back(Job(2, "train"));
  dup.events.push_back({0, 0, "JobSubmitted", "job/default/train", ""});
  auto r = store->Commit(dup);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Error::Code::kAlreadyExists);
  Change other_queue;
  other_queue.put_jobs.push_back(Job(3, "train", "team-b"));
  EXPECT_TRUE(store->Commit(other_queue));
  auto contents = store->Load();
  EXPECT_EQ(contents->jobs.size(), 2u);
  EXPECT_EQ(contents->last_event_seq, 0);  // the failed change left no event behind
}

TEST_F(SqliteStoreTest, NoGpuIsClaimedByTwoLiveTasks) {
  auto store = OpenStore();
  Change jobs;
  jobs.put_jobs = {Job(1, "a"), Job(2, "b"), Job(3, "c")};
  ASSERT_TRUE(store->Commit(jobs));
  Change first;
  first.put_tasks.push_back(Task(1, 1, "n0", {0, 1}));
  ASSERT_TRUE(store->Commit(first));

  // A whole GPU already held.
  Change clash;
  clash.put_tasks.push_back(Task(2, 2, "n0", {1, 2}));
  auto r = store->Commit(clash);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Error::Code::kFailedPrecondition);
  // A share of a GPU that is held whole.
  Change share_on_whole;
  share_on_whole.put_tasks.push_back(Task(2, 2, "n0", {0}, 500));
  EXPECT_FALSE(store->Commit(share_on_whole).has_value());
  // Two gang members of one change on the same GPU.
  Change self_clash;
  self_clash.put_tasks = {Task(3, 3, "n0", {5}), Task(4, 3, "n0", {5})};
  EXPECT_FALSE(store->Commit(self_clash).has_value());

  // Shares add up to at most one GPU.
  Change shares;
  shares.put_tasks = {Task(5, 2, "n0", {3}, 500), Task(6, 2, "n0", {3}, 500)};
  ASSERT_TRUE(store->Commit(shares)) << "two halves fit";
  Change third;
  third.put_tasks = {Task(7, 3, "n0", {3}, 1)};
  EXPECT_FALSE(store->Commit(third).has_value());
  Change whole_on_shares;
  whole_on_shares.put_tasks = {Task(7, 3, "n0", {3})};
  EXPECT_FALSE(store->Commit(whole_on_shares).has_value());

  // Once a task ends its GPUs are free again; the same GPU on another node was never taken.
  Change end;
  end.put_tasks.push_back(Task(1, 1, "n0", {0, 1}, 1000, TaskState::kSucceeded));
  ASSERT_TRUE(store->Commit(end));
  Change reuse;
  reuse.put_tasks = {Task(8, 2, "n0", {0, 1}), Task(9, 3, "n1", {0, 1})};
  EXPECT_TRUE(store->Commit(reuse));
  auto contents = store->Load();
  EXPECT_EQ(contents->tasks.size(), 5u);  // 1, 5, 6, 8, 9: nothing of the failed changes
}

// An oversold task (co-location) holds a share lent from an online replica's GPU: it claims
// nothing, so it lands on a GPU held whole, round-trips with its flag, and ends like any other.
TEST_F(SqliteStoreTest, OversoldTasksClaimNoGpu) {
  auto store = OpenStore();
  Change jobs;
  jobs.put_jobs = {Job(1, "chat"), Job(2, "eval")};
  ASSERT_TRUE(store->Commit(jobs));
  Change replica;
  replica.put_tasks.push_back(Task(1, 1, "n0", {0}));
  ASSERT_TRUE(store->Commit(replica));
  TaskRecord lent = Task(2, 2, "n0", {0}, 400);
  lent.oversold = true;
  Change oversold;
  oversold.put_tasks = {lent};
  ASSERT_TRUE(store->Commit(oversold)) << "an oversold share is no claim";
  Change regular;
  regular.put_tasks.push_back(Task(3, 2, "n0", {0}, 400));
  EXPECT_FALSE(store->Commit(regular).has_value()) << "the GPU is still held whole";
  store.reset();
  auto contents = OpenStore()->Load();
  ASSERT_TRUE(contents.has_value());
  ASSERT_EQ(contents->tasks.size(), 2u);
  EXPECT_FALSE(contents->tasks[0].oversold);
  EXPECT_TRUE(contents->tasks[1].oversold);
}

// A version 6 store (before tasks.oversold) opens: its tasks are not oversold.
TEST_F(SqliteStoreTest, UpgradesAVersion6StoreWithTheOversoldColumn) {
  {
    auto store = OpenStore();
    Change c;
    c.put_jobs.push_back(Job(1, "old"));
    c.put_tasks.push_back(Task(1, 1, "n0", {0}));
    ASSERT_TRUE(store->Commit(c).has_value());
  }
  const std::string cmd = "sqlite3 " + path_ +
                          " \"ALTER TABLE tasks DROP COLUMN oversold; UPDATE meta SET value='6' "
                          "WHERE key='schema_version'\"";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "sqlite3 shell not available";
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto contents = store->Load();
  ASSERT_TRUE(contents.has_value()) << contents.error().message;
  ASSERT_EQ(contents->tasks.size(), 1u);
  EXPECT_FALSE(contents->tasks[0].oversold);
}

TEST_F(SqliteStoreTest, AFailedChangeAppliesNothing) {
  auto store = OpenStore();
  Change c;
  c.put_jobs = {Job(1, "a")};
  c.put_tasks = {Task(1, 1, "n0", {0}), Task(2, 1, "n0", {0})};  // the second clashes
  c.events.push_back({0, 0, "JobSubmitted", "job/default/a", ""});
  ASSERT_FALSE(store->Commit(c).has_value());
  auto contents = store->Load();
  EXPECT_TRUE(contents->jobs.empty());
  EXPECT_TRUE(contents->tasks.empty());
  EXPECT_EQ(contents->last_event_seq, 0);
}

TEST_F(SqliteStoreTest, EventsHaveIncreasingSequenceNumbers) {
  auto store = OpenStore();
  for (int i = 0; i < 5; ++i) {
    Change c;
    c.events.push_back({0, 0, "E", "x", std::to_string(i)});
    c.events.push_back({0, 0, "E", "y", std::to_string(i)});
    ASSERT_TRUE(store->Commit(c));
  }
  auto all = store->EventsSince(0, 100);
  ASSERT_EQ(all->size(), 10u);
  for (std::size_t i = 1; i < all->size(); ++i) EXPECT_GT((*all)[i].seq, (*all)[i - 1].seq);
  auto tail = store->EventsSince((*all)[6].seq, 2);
  ASSERT_EQ(tail->size(), 2u);
  EXPECT_EQ((*tail)[0].seq, (*all)[7].seq);
}

TEST_F(SqliteStoreTest, DeletingAJobRemovesItsRowsButNotWhileLive) {
  auto store = OpenStore();
  Change c;
  c.put_jobs = {Job(1, "a")};
  c.put_tasks = {Task(1, 1, "n0", {0})};
  ASSERT_TRUE(store->Commit(c));
  Change del;
  del.delete_jobs = {1};
  EXPECT_FALSE(store->Commit(del).has_value());
  Change end;
  end.put_tasks = {Task(1, 1, "n0", {0}, 1000, TaskState::kFailed)};
  ASSERT_TRUE(store->Commit(end));
  ASSERT_TRUE(store->Commit(del));
  auto contents = store->Load();
  EXPECT_TRUE(contents->jobs.empty());
  EXPECT_TRUE(contents->tasks.empty());
  Change again;
  again.put_jobs = {Job(2, "a")};
  EXPECT_TRUE(store->Commit(again)) << "the name is free again";
}

TEST_F(SqliteStoreTest, OneProcessAtATime) {
  auto store = OpenStore();
  auto second = SqliteStore::Open(path_);
  ASSERT_FALSE(second.has_value());
  EXPECT_NE(second.error().message.find("in use by another process"), std::string::npos);
  auto reader = SqliteStore::Open(path_, {.read_only = true});
  ASSERT_TRUE(reader.has_value()) << reader.error().message;
  EXPECT_TRUE((*reader)->Load().has_value());
}

TEST_F(SqliteStoreTest, RefusesANewerSchema) {
  { auto store = OpenStore(); }
  // Pretend a future version wrote this file.
  const std::string cmd =
      "sqlite3 " + path_ + " \"UPDATE meta SET value='99' WHERE key='schema_version'\"";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "sqlite3 shell not available";
  auto store = SqliteStore::Open(path_);
  ASSERT_FALSE(store.has_value());
  EXPECT_NE(store.error().message.find("schema version 99"), std::string::npos);
}

// A version 2 store (before nodes.topology) opens: its nodes have no place, and a node
// registered with one afterwards keeps it.
TEST_F(SqliteStoreTest, UpgradesAVersion2StoreWithTheTopologyColumn) {
  NodeRecord node;
  node.name = "gpu-1";
  node.gpus_json = "[]";
  {
    auto store = OpenStore();
    Change c;
    c.put_nodes.push_back(node);
    ASSERT_TRUE(store->Commit(c).has_value());
  }
  const std::string cmd = "sqlite3 " + path_ +
                          " \"ALTER TABLE nodes DROP COLUMN topology; UPDATE meta SET value='2' "
                          "WHERE key='schema_version'\"";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "sqlite3 shell not available";
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto contents = store->Load();
    ASSERT_TRUE(contents.has_value()) << contents.error().message;
    ASSERT_EQ(contents->nodes.size(), 1u);
    EXPECT_EQ(contents->nodes[0].topology_json, "{}");
    Change c;
    node.topology_json = R"({"leaf":"l3","spine":"s1"})";
    c.put_nodes.push_back(node);
    ASSERT_TRUE(store->Commit(c).has_value());
  }
  auto contents = OpenStore()->Load();
  ASSERT_TRUE(contents.has_value());
  EXPECT_EQ(contents->nodes.at(0).topology_json, R"({"leaf":"l3","spine":"s1"})");
}

// Node credentials (their digests) round-trip, the last of a node wins, and a version 5 store
// (before the table) gets it on opening.
TEST_F(SqliteStoreTest, NodeCredentialsRoundTripAndAVersion5StoreGetsTheTable) {
  {
    auto store = OpenStore();
    Change c;
    c.put_node_credentials.push_back({"node-0", std::string(64, 'a')});
    c.put_node_credentials.push_back({"node-1", std::string(64, 'b')});
    ASSERT_TRUE(store->Commit(c).has_value());
    Change again;
    again.put_node_credentials.push_back({"node-0", std::string(64, 'c')});
    ASSERT_TRUE(store->Commit(again).has_value());
  }
  auto creds = OpenStore()->LoadNodeCredentials();
  ASSERT_TRUE(creds.has_value()) << creds.error().message;
  ASSERT_EQ(creds->size(), 2u);
  EXPECT_EQ((*creds)[0].node, "node-0");
  EXPECT_EQ((*creds)[0].digest, std::string(64, 'c'));
  EXPECT_EQ((*creds)[1].digest, std::string(64, 'b'));
  const std::string cmd = "sqlite3 " + path_ +
                          " \"DROP TABLE node_credentials; UPDATE meta SET value='5' WHERE "
                          "key='schema_version'\"";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "sqlite3 shell not available";
  auto upgraded = OpenStore();
  ASSERT_NE(upgraded, nullptr);
  auto none = upgraded->LoadNodeCredentials();
  ASSERT_TRUE(none.has_value()) << none.error().message;
  EXPECT_TRUE(none->empty());
}

// A version 1 store (before jobs.held) opens: the column is added, its jobs are not held, and
// a hold written afterwards round-trips.
TEST_F(SqliteStoreTest, UpgradesAVersion1StoreWithTheHeldColumn) {
  {
    auto store = OpenStore();
    Change c;
    c.put_jobs.push_back(Job(1, "old"));
    ASSERT_TRUE(store->Commit(c).has_value());
  }
  const std::string cmd = "sqlite3 " + path_ +
                          " \"ALTER TABLE jobs DROP COLUMN held; ALTER TABLE nodes DROP COLUMN "
                          "topology; UPDATE meta SET value='1' WHERE key='schema_version'\"";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "sqlite3 shell not available";
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto contents = store->Load();
    ASSERT_TRUE(contents.has_value()) << contents.error().message;
    ASSERT_EQ(contents->jobs.size(), 1u);
    EXPECT_FALSE(contents->jobs[0].held);
    Change c;
    JobRecord held = Job(2, "held");
    held.held = true;
    c.put_jobs.push_back(held);
    ASSERT_TRUE(store->Commit(c).has_value());
  }
  auto store = OpenStore();
  auto contents = store->Load();
  ASSERT_TRUE(contents.has_value());
  ASSERT_EQ(contents->jobs.size(), 2u);
  EXPECT_TRUE(contents->jobs[1].held);
  // Releasing is an update of the same row.
  Change c;
  JobRecord released = contents->jobs[1];
  released.held = false;
  c.put_jobs.push_back(released);
  ASSERT_TRUE(store->Commit(c).has_value());
  EXPECT_FALSE(store->Load()->jobs[1].held);
}

// A commit that returned is durable: a child process commits and is killed with SIGKILL
// right after; everything it acknowledged is there.
TEST_F(SqliteStoreTest, AcknowledgedCommitsSurviveSigkill) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipefd[0]);
    auto store = SqliteStore::Open(path_);
    if (!store) _exit(2);
    for (int i = 1;; ++i) {
      Change c;
      c.put_jobs.push_back(Job(i, "job-" + std::to_string(i)));
      if (!(*store)->Commit(c)) _exit(3);
      if (write(pipefd[1], &i, sizeof i) != sizeof i) _exit(4);  // acknowledge
    }
  }
  close(pipefd[1]);
  int acked = 0, v = 0;
  while (acked < 200 && read(pipefd[0], &v, sizeof v) == sizeof v) acked = v;
  kill(pid, SIGKILL);
  while (read(pipefd[0], &v, sizeof v) == sizeof v) acked = v;
  close(pipefd[0]);
  waitpid(pid, nullptr, 0);
  auto store = OpenStore();
  auto contents = store->Load();
  ASSERT_TRUE(contents.has_value());
  EXPECT_GE(static_cast<int>(contents->jobs.size()), acked);
  for (int i = 0; i < acked; ++i) EXPECT_EQ(contents->jobs[static_cast<std::size_t>(i)].id, i + 1);
}

}  // namespace
}  // namespace tessera
