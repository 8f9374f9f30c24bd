// The controller's YAML (tesserad --config): the backfill, GPU-model, elastic and recovery keys,
// and errors that name the file and the key.
#include "server/scheduler_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "server/controller.h"
#include "spec/queue_file.h"

namespace tessera {
namespace {

std::string Write(const std::string& text) {
  const std::string path = "/tmp/tessera-scheduler-config-" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(SchedulerConfigTest, BackfillAndGpuModelKeys) {
  const std::string path = Write(
      "queuePolicy: backfill\nbackfillReservation: gpu-count\ngpuModelChoice: blind\n"
      "elastic: true\n");
  auto c = LoadControllerConfig(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->scheduler.backfill_reservation, "gpu-count");
  EXPECT_EQ(c->scheduler.gpu_model_choice, "blind");
  EXPECT_TRUE(c->scheduler.elastic);
  EXPECT_FALSE(c->recovery);  // left to the flag (default requeue)
  EXPECT_FALSE(c->spares_per_domain);
  std::remove(path.c_str());
}

TEST(SchedulerConfigTest, RecoveryAndSparesKeys) {
  const std::string path = Write("recovery: spares\nsparesPerDomain: 2\n");
  auto c = LoadControllerConfig(path);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->recovery);
  EXPECT_EQ(*c->recovery, RecoveryMode::kSpares);
  EXPECT_EQ(c->spares_per_domain, 2);
  std::remove(path.c_str());
}

TEST(SchedulerConfigTest, BadValuesNameTheFileAndTheKey) {
  struct Case {
    const char* text;
    const char* want;
  };
  for (const Case& k : {Case{"backfillReservation: nearest\n", "backfillReservation: 'nearest'"},
                        Case{"gpuModelChoice: gavel\n", "gpuModelChoice: 'gavel'"},
                        Case{"elastic: false\n", "elastic: false is not supported"},
                        Case{"recovery: shrink\n", "recovery: 'shrink' is unknown (known: requeue"},
                        Case{"sparesPerDomain: -1\n", "sparesPerDomain: must be 0..1000, got -1"},
                        Case{"sparesPerDomain: one\n", "sparesPerDomain: unknown key or wrong"},
                        Case{"backfilReservation: domain\n", "backfilReservation: unknown key"}}) {
    const std::string path = Write(k.text);
    auto c = LoadControllerConfig(path);
    ASSERT_FALSE(c) << k.text;
    EXPECT_NE(c.error().message.find(path + ": " + k.want), std::string::npos) << c.error().message;
    std::remove(path.c_str());
  }
}

// tesserad --queue-policy drf --queues FILE: drf and drf-naive need a queue tree and are the
// only policies that take one; its shape is checked at start-up; its leaves are the queues
// jobs may name.
TEST(SchedulerConfigTest, AnAbsurdReclaimGraceIsRefused) {
  auto tree = ParseQueueFile("reclaim: {graceSeconds: 7e117}\nqueues:\n  - {name: a}\n", "q.yaml");
  ASSERT_FALSE(tree);
  EXPECT_NE(tree.error().message.find("key 'reclaim.graceSeconds': at most 604800 (a week)"),
            std::string::npos)
      << tree.error().message;
}

TEST(SchedulerConfigTest, FairSharePoliciesAndQueueTreesComeTogether) {
  auto tree = ParseQueueFile(
      "queues:\n  - {name: org, guaranteed: {gpu: 60%}}\n"
      "  - {name: a, parent: org, guaranteed: {gpu: 30%}}\n"
      "  - {name: b, parent: org, guaranteed: {gpu: 30%}}\n  - {name: c}\n",
      "q.yaml");
  ASSERT_TRUE(tree) << tree.error().message;
  ControllerOptions o;
  o.scheduler.queue_policy = "drf";
  auto missing = CheckControllerOptions(o);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("needs a queue tree (--queues FILE"), std::string::npos)
      << missing.error().message;
  o.queues = *tree;
  o.queues_source = "q.yaml";
  auto leaves = CheckControllerOptions(o);
  ASSERT_TRUE(leaves) << leaves.error().message;
  EXPECT_EQ(*leaves, (std::set<std::string>{"c", "org/a", "org/b"}));
  o.scheduler.queue_policy = "fifo";
  auto unused = CheckControllerOptions(o);
  ASSERT_FALSE(unused);
  EXPECT_NE(unused.error().message.find("--queues: needs queue policy drf or drf-naive"),
            std::string::npos)
      << unused.error().message;
  o.scheduler.queue_policy = "drf-naive";
  o.queues->queues[1].guaranteed.gpu.value = 0.5;  // children 80% under a parent of 60%
  auto over = CheckControllerOptions(o);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().message.rfind("q.yaml: ", 0), 0u) << over.error().message;
}

}  // namespace
}  // namespace tessera
