// The rows of `tessera get queues` (server/queue_view.h): the whole tree from the start, the
// amounts once the registered capacity holds them, subtree sums, dominant shares.
#include "server/queue_view.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

using Json = nlohmann::json;

QuotaAmount Gpus(double n) { return {true, false, n}; }
QuotaAmount Share(double f) { return {true, true, f}; }

// research (50%) -> vision (4 GPUs, may borrow 2), speech; ops (2 GPUs).
QueueTreeSpec Tree() {
  QueueTreeSpec spec;
  QueueSpec research{.name = "research"};
  research.guaranteed.gpu = Share(0.5);
  QueueSpec vision{.name = "vision", .parent = "research"};
  vision.guaranteed.gpu = Gpus(4);
  vision.borrow_limit.gpu = Gpus(2);
  QueueSpec speech{.name = "speech", .parent = "research"};
  QueueSpec ops{.name = "ops"};
  ops.guaranteed.gpu = Gpus(2);
  ops.weight = 2;
  spec.queues = {research, vision, speech, ops};
  return spec;
}

// 16 GPUs, 128 cores, 1 TiB.
const Resources kCapacity{128'000, 1024 * 1024, 16'000};

TEST(QueueViewTest, EveryQueueOfTheTreeIsShownBeforeAnyJob) {
  const QueueTreeSpec tree = Tree();
  const Json rows = QueueRows(&tree, nullptr, kCapacity, {});
  ASSERT_EQ(rows.size(), 4u) << rows.dump();
  // Parents right before their subtrees, siblings in path order (as the tree keeps them).
  EXPECT_EQ(rows[0]["name"], "ops");
  EXPECT_EQ(rows[1]["name"], "research");
  EXPECT_EQ(rows[2]["name"], "research/speech");
  EXPECT_EQ(rows[3]["name"], "research/vision");
  EXPECT_EQ(rows[3]["parent"], "research");
  EXPECT_EQ(rows[3]["depth"], 1);
  EXPECT_FALSE(rows[1]["leaf"].get<bool>());
  EXPECT_TRUE(rows[3]["leaf"].get<bool>());
  // research: 50% of 16 = 8 GPUs; vision 4, borrowing at most 2 more; speech 0; ops 2.
  EXPECT_EQ(rows[1]["guaranteedGpus"], 8.0);
  EXPECT_EQ(rows[3]["guaranteedGpus"], 4.0);
  EXPECT_EQ(rows[3]["borrowLimitGpus"], 2.0);
  EXPECT_FALSE(rows[2].contains("borrowLimitGpus")) << "unlimited";
  EXPECT_EQ(rows[0]["guaranteedGpus"], 2.0);
  EXPECT_EQ(rows[0]["weight"], 2.0);
  for (const auto& r : rows) {
    EXPECT_EQ(r["pendingJobs"], 0);
    EXPECT_EQ(r["gpusAllocated"], 0.0);
    EXPECT_EQ(r["dominantShare"], 0.0);
  }
}

TEST(QueueViewTest, AnInnerQueueSumsItsSubtreeAndSharesAreDominant) {
  const QueueTreeSpec tree = Tree();
  std::map<std::string, QueueUsage> usage;
  // vision: 4 GPUs (4/16 = 25%) and 64 cores (64/128 = 50%): its dominant share is CPU, 0.5.
  usage["research/vision"] = {1, 2, 3, {64'000, 0, 4'000}, 8'000};
  usage["research/speech"] = {2, 0, 1, {0, 0, 2'000}, 1'000};
  const Json rows = QueueRows(&tree, nullptr, kCapacity, usage);
  const Json& research = rows[1];
  const Json& speech = rows[2];
  const Json& vision = rows[3];
  EXPECT_EQ(vision["dominantShare"], 0.5);
  EXPECT_EQ(vision["pendingGpus"], 8.0);
  // research = vision + speech: 3 pending, 2 active, 4 finished, 6 GPUs and 64 cores.
  EXPECT_EQ(research["pendingJobs"], 3);
  EXPECT_EQ(research["activeJobs"], 2);
  EXPECT_EQ(research["finishedJobs"], 4);
  EXPECT_EQ(research["gpusAllocated"], 6.0);
  EXPECT_EQ(research["pendingGpus"], 9.0);
  EXPECT_EQ(research["dominantShare"], 0.5);
  EXPECT_EQ(speech["dominantShare"], 2.0 / 16);
}

TEST(QueueViewTest, AmountsWaitForCapacityThatHoldsThem) {
  // No node yet: ops' 2 absolute GPUs exceed 0, so the tree does not resolve; its shape shows.
  const QueueTreeSpec tree = Tree();
  const Json rows = QueueRows(&tree, nullptr, Resources{}, {});
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& r : rows) EXPECT_FALSE(r.contains("guaranteedGpus")) << r.dump();
  EXPECT_EQ(rows[0]["name"], "ops");
}

TEST(QueueViewTest, QueuesOutsideTheTreeAndWithoutOneAreFlatRows) {
  std::map<std::string, QueueUsage> usage;
  usage["default"] = {1, 0, 0, {}, 4'000};
  usage["nlp/sft"] = {0, 1, 0, {0, 0, 8'000}, 0};
  const Json flat = QueueRows(nullptr, nullptr, kCapacity, usage);
  ASSERT_EQ(flat.size(), 2u);
  EXPECT_EQ(flat[0]["name"], "default");
  EXPECT_EQ(flat[1]["name"], "nlp/sft");
  EXPECT_EQ(flat[1]["dominantShare"], 0.5);
  EXPECT_FALSE(flat[1].contains("depth"));

  const QueueTreeSpec tree = Tree();
  const Json mixed = QueueRows(&tree, nullptr, kCapacity, usage);
  ASSERT_EQ(mixed.size(), 6u);
  EXPECT_EQ(mixed[4]["name"], "default");
}

TEST(QueueViewTest, NoQueuesWithoutATreeOrJobs) {
  EXPECT_TRUE(QueueRows(nullptr, nullptr, kCapacity, {}).empty());
}

}  // namespace
}  // namespace tessera
