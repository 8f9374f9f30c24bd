// Queue files: the YAML form, errors that name the file, the key and the reason, the example
// file, and the assignment of a trace's jobs to leaf queues.
#include "sim/queue_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tessera {
namespace {

const Resources kCapacity{512 * 1000, 512 * 1024, 64 * 1000};  // 64 GPUs

Result<QueueTree> Load(const std::string& yaml) {
  auto spec = ParseQueueFile(yaml, "q.yaml");
  if (!spec) return std::unexpected(spec.error());
  auto t = QueueTree::Build(*spec, kCapacity);
  if (!t) return InvalidArgument("q.yaml: " + t.error().message);
  return t;
}

std::string ErrorOf(const std::string& yaml) {
  auto t = Load(yaml);
  return t ? std::string("(loaded)") : t.error().message;
}

TEST(QueueFileTest, ParsesAmountsPercentagesAndTheReclaimGrace) {
  auto t = Load(R"(
reclaim: {graceSeconds: 90}
queues:
  - name: org
    guaranteed: {gpu: 50%, cpu: 64, memory: 128}
  - name: team
    parent: org
    guaranteed: {gpu: 8}
    borrowLimit: {gpu: 25%}
    weight: 2
    priority: 3
    users: [alice, "7"]
)");
  ASSERT_TRUE(t) << t.error().message;
  const auto& org = t->node(t->Find("org"));
  EXPECT_EQ(org.guaranteed.gpu_milli, 32'000);
  EXPECT_EQ(org.guaranteed.cpu_milli, 64'000);
  EXPECT_EQ(org.guaranteed.memory_mib, 128 * 1024);
  const auto& team = t->node(t->Find("org/team"));
  EXPECT_EQ(team.guaranteed.gpu_milli, 8'000);
  EXPECT_EQ(team.borrow_limit.gpu_milli, 16'000);
  EXPECT_EQ(team.borrow_limit.cpu_milli, kUnlimited);
  EXPECT_DOUBLE_EQ(team.weight, 2);
  EXPECT_EQ(team.priority, 3);
  EXPECT_EQ(t->reclaim_grace(), 90 * kSecond);
  EXPECT_EQ(t->LeafFor("7", "x"), t->Find("team"));
}

TEST(QueueFileTest, ErrorsNameTheFileTheKeyAndTheReason) {
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n  - name: b\n  - name: c\n    guaranteed: {gpu: -2}\n"),
            "q.yaml: key 'queues[2].guaranteed.gpu': negative");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    parent: b\n  - name: b\n    parent: a\n"),
            "q.yaml: key 'queues[0].parent': the parents form a cycle (a -> b -> a)");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    parent: ghost\n"),
            "q.yaml: key 'queues[0].parent': unknown queue 'ghost'");
  EXPECT_NE(ErrorOf("queues:\n  - name: p\n    guaranteed: {gpu: 4}\n  - name: c\n    parent: p\n"
                    "    guaranteed: {gpu: 6}\n")
                .find("q.yaml: key 'queues[0].guaranteed.gpu': its children are guaranteed more"),
            std::string::npos);
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    guaranteed: {gpus: 4}\n"),
            "q.yaml: key 'queues[0].guaranteed.gpus': unknown key (known: gpu, cpu, memory)");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\n    guaranteed: {gpu: lots}\n"),
            "q.yaml: key 'queues[0].guaranteed.gpu': 'lots' is not a number or a percentage such "
            "as 25%");
  EXPECT_EQ(ErrorOf("queues:\n  - name: a\nunmatched: b\n"),
            "q.yaml: key 'unmatched': unknown queue 'b'");
  EXPECT_EQ(ErrorOf("queues: {}\n"), "q.yaml: key 'queues': expected a list of queues");
  EXPECT_EQ(ErrorOf("reclaim: {graceSeconds: -1}\nqueues:\n  - name: a\n"),
            "q.yaml: key 'reclaim.graceSeconds': negative");
  EXPECT_NE(ErrorOf("queues: [").find("q.yaml:"), std::string::npos);
}

TEST(QueueFileTest, TheExampleFileLoads) {
  auto t = LoadQueueTree("examples/config/queues.yaml", kCapacity);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->leaves().size(), 5U);
  EXPECT_EQ(t->reclaim_grace(), 600 * kSecond);
  EXPECT_EQ(t->node(t->LeafFor("12", "")).path, "research/vision");
}

// A live export carries the controller's tree as JSON (QueueFileJson); it reads back the same.
TEST(QueueFileTest, TheExampleFileWrittenAsJsonReadsBackTheSame) {
  auto spec = ReadQueueFile("examples/config/queues.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  auto back = ParseQueueFile(QueueFileJson(*spec).dump(), "export");
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->queues.size(), spec->queues.size());
  EXPECT_EQ(back->reclaim_grace, spec->reclaim_grace);
  EXPECT_EQ(back->unmatched, spec->unmatched);
  for (std::size_t i = 0; i < spec->queues.size(); ++i) {
    const QueueSpec &a = spec->queues[i], &b = back->queues[i];
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.parent, a.parent);
    EXPECT_EQ(b.users, a.users);
    EXPECT_EQ(b.weight, a.weight);
    EXPECT_EQ(b.guaranteed.gpu.fraction, a.guaranteed.gpu.fraction);
    EXPECT_DOUBLE_EQ(b.guaranteed.gpu.value, a.guaranteed.gpu.value);
    EXPECT_EQ(b.borrow_limit.gpu.set, a.borrow_limit.gpu.set);
  }
}

TEST(QueueFileTest, JobsGoToTheirUsersLeafOrAreRefusedByName) {
  auto t = Load("queues:\n  - name: a\n    users: [u1]\n  - name: b\n");
  ASSERT_TRUE(t);
  std::vector<Workload> jobs(2);
  jobs[0].name = "j0";
  jobs[0].user = "u1";
  jobs[0].queue = "u1";
  jobs[1].name = "j1";
  jobs[1].user = "u2";
  jobs[1].queue = "b";  // names a leaf: kept
  ASSERT_TRUE(AssignQueues(jobs, *t, "q.yaml"));
  EXPECT_EQ(jobs[0].queue, "a");
  EXPECT_EQ(jobs[1].queue, "b");
  jobs[1].queue = "u2";
  auto bad = AssignQueues(jobs, *t, "q.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("q.yaml: job 'j1' (user 'u2') matches no leaf queue"),
            std::string::npos);
}

TEST(QueueFileTest, WithoutAFileEveryUserIsAQueueWithAnEqualShare) {
  std::vector<Workload> jobs(3);
  jobs[0].queue = "x";
  jobs[1].queue = "y";
  jobs[2].queue = "x";
  const QueueTree t = QueuePerUser(jobs, kCapacity);
  ASSERT_EQ(t.leaves().size(), 2U);
  EXPECT_DOUBLE_EQ(t.node(t.Find("x")).entitlement, 0.5);
  EXPECT_EQ(t.node(t.Find("y")).guaranteed.gpu_milli, 32'000);
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p.string();
}

TEST(QueueFileTest, AMappingFileAssignsUsersOrJobsBeforeTheTreesRules) {
  auto t = Load("unmatched: b\nqueues:\n  - name: a\n  - name: b\n  - name: c\n");
  ASSERT_TRUE(t);
  std::vector<Workload> jobs(3);
  for (int i = 0; i < 3; ++i) {
    jobs[static_cast<std::size_t>(i)].name = "job-" + std::to_string(i);
    jobs[static_cast<std::size_t>(i)].user = i == 0 ? "ann" : "bob";
  }
  const std::string users = WriteTemp("tessera-qmap-users.csv", "user,queue\nann,c\n");
  ASSERT_TRUE(ApplyQueueMap(jobs, *t, users));
  const std::string by_job = WriteTemp("tessera-qmap-jobs.csv", "job,queue\r\njob-2,a\r\n");
  ASSERT_TRUE(ApplyQueueMap(jobs, *t, by_job));
  ASSERT_TRUE(AssignQueues(jobs, *t, "q.yaml"));
  EXPECT_EQ(jobs[0].queue, "c");  // by user
  EXPECT_EQ(jobs[1].queue, "b");  // unmatched rule
  EXPECT_EQ(jobs[2].queue, "a");  // by job id

  const std::string bad = WriteTemp("tessera-qmap-bad.csv", "user,queue\nann,c\nbob,zz\n");
  auto r = ApplyQueueMap(jobs, *t, bad);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, bad + ":3: column 'queue': 'zz' is not a leaf queue of the tree");
  const std::string header = WriteTemp("tessera-qmap-header.csv", "name,team\n");
  r = ApplyQueueMap(jobs, *t, header);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, header + ":1: header 'name,team': expected user,queue or job,queue");
  const std::string twice = WriteTemp("tessera-qmap-twice.csv", "user,queue\nann,a\nann,b\n");
  r = ApplyQueueMap(jobs, *t, twice);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, twice + ":3: 'ann' is mapped twice");
  for (const auto& f : {users, by_job, bad, header, twice}) std::filesystem::remove(f);
}

}  // namespace
}  // namespace tessera
