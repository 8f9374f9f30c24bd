// The controller's one long-lived Scheduler: built once and kept across cycles; under drf
// rebuilt only when the registered capacity (and with it the queue tree) changes; a tree that
// does not fit is reported, not silently skipped, and the last tree that fitted stays in use.
#include "server/live_scheduler.h"

#include <gtest/gtest.h>

#include "spec/queue_file.h"

namespace tessera {
namespace {

Resources Gpus(int n) { return Resources{64000LL * n, 512LL * 1024 * n, n * kMilliPerGpu}; }

TEST(LiveSchedulerTest, BuiltOnceAndKeptAcrossCycles) {
  ControllerOptions options;
  options.scheduler.queue_policy = "backfill";
  LiveScheduler live(options);
  auto first = live.For(Gpus(8));
  ASSERT_TRUE(first) << first.error().message;
  for (int cycle = 0; cycle < 5; ++cycle) {
    auto again = live.For(Gpus(8 + cycle));  // capacity changes do not matter without a tree
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *first) << "the same Scheduler, with its caches";
  }
  EXPECT_EQ(live.builds(), 1);
  EXPECT_TRUE(live.problem().empty());
  EXPECT_EQ(live.queue_tree(), nullptr);
}

TEST(LiveSchedulerTest, UnderDrfTheTreeFollowsTheCapacityAndAMisfitIsReported) {
  // team-a is guaranteed 4 GPUs outright: it fits 8 registered GPUs, not 2.
  auto tree = ParseQueueFile(
      "queues:\n  - {name: team-a, guaranteed: {gpu: 4}}\n  - {name: team-b}\n", "q.yaml");
  ASSERT_TRUE(tree) << tree.error().message;
  ControllerOptions options;
  options.scheduler.queue_policy = "drf";
  options.queues = *tree;
  options.queues_source = "q.yaml";
  LiveScheduler live(options);

  auto none = live.For(Gpus(2));
  ASSERT_FALSE(none) << "no tree has fitted yet: nothing to schedule with";
  EXPECT_NE(live.problem().find("queue tree q.yaml does not fit the 2 registered GPUs"),
            std::string::npos)
      << live.problem();
  EXPECT_EQ(none.error().message, live.problem());

  auto eight = live.For(Gpus(8));
  ASSERT_TRUE(eight) << eight.error().message;
  EXPECT_TRUE(live.problem().empty());
  ASSERT_NE(live.queue_tree(), nullptr);
  EXPECT_EQ(live.queue_tree()->capacity(), Gpus(8));
  EXPECT_EQ(live.builds(), 1);
  ASSERT_TRUE(live.For(Gpus(8)));
  EXPECT_EQ(live.builds(), 1) << "same capacity, same tree, same Scheduler";

  auto sixteen = live.For(Gpus(16));
  ASSERT_TRUE(sixteen);
  EXPECT_EQ(live.builds(), 2) << "a new tree, so a new Scheduler";
  EXPECT_EQ(live.queue_tree()->capacity(), Gpus(16));

  // Nodes lost: the tree no longer fits; the last one that did stays in use, and says so.
  auto shrunk = live.For(Gpus(2));
  ASSERT_TRUE(shrunk);
  EXPECT_EQ(live.queue_tree()->capacity(), Gpus(16));
  EXPECT_FALSE(live.problem().empty());
  EXPECT_EQ(live.builds(), 2);
}

}  // namespace
}  // namespace tessera
