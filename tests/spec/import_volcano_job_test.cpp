// Volcano Job (batch.volcano.sh/v1alpha1): tasks, minAvailable, queue, priorityClassName,
// policies and plugins.
#include <gtest/gtest.h>

#include "import_test_util.h"

namespace tessera {
namespace {

using testing::Imported;
using testing::NoteFor;
using testing::Refusal;

std::string Task(const std::string& name, int replicas, const std::string& command, int gpus) {
  return "    - name: " + name + "\n      replicas: " + std::to_string(replicas) +
         "\n      template:\n        spec:\n          restartPolicy: OnFailure\n"
         "          containers:\n            - name: c\n              image: img\n"
         "              command: " +
         command + "\n              resources: {limits: {nvidia.com/gpu: " + std::to_string(gpus) +
         "}}\n";
}

std::string Job(const std::string& spec_lines, const std::string& tasks) {
  return "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: vc, namespace: "
         "ns}\nspec:\n  schedulerName: volcano\n" +
         spec_lines + "  tasks:\n" + tasks;
}

ImportOptions WithClass() {
  ImportOptions o;
  o.priority_classes["normal"] = 50;
  return o;
}

TEST(ImportVolcanoJobTest, AGangOfIdenticalTasksIsATrainingJob) {
  const auto job = Imported(
      Job("  minAvailable: 3\n  queue: research\n  priorityClassName: normal\n  maxRetry: 5\n"
          "  plugins: {pytorch: [--master=master, --worker=worker], env: [], svc: []}\n"
          "  policies: [{event: PodEvicted, action: RestartJob}]\n",
          Task("master", 1, "[python3, train.py]", 2) +
              Task("worker", 2, "[python3, train.py]", 2)),
      WithClass());
  EXPECT_EQ(job.spec.kind, WorkloadKind::kTraining);
  EXPECT_EQ(job.spec.queue, "research");  // spec.queue, not the namespace
  EXPECT_EQ(job.spec.priority, 50);
  EXPECT_EQ(job.spec.max_restarts, 5);
  EXPECT_EQ(job.spec.roles[0].count, 3);
  EXPECT_EQ(job.spec.roles[0].shape.gpus, 2);
  // The env plugin's task index is the index within the Volcano task: the master's 0, the
  // workers' 0 and 1 at ranks 1 and 2.
  const std::string& wrapper = job.spec.roles[0].command[2];
  EXPECT_NE(wrapper.find("if [ \"$NODE_RANK\" -lt 1 ]; then i=$((NODE_RANK - 0)); elif [ "
                         "\"$NODE_RANK\" -lt 3 ]; then i=$((NODE_RANK - 1)); fi; export "
                         "VC_TASK_INDEX=\"$i\""),
            std::string::npos)
      << wrapper;
  EXPECT_NE(NoteFor(job, "spec.plugins.svc").find("ignored"), std::string::npos);
  EXPECT_NE(NoteFor(job, "spec.schedulerName").find("ignored"), std::string::npos);
  EXPECT_NE(NoteFor(job, "spec.policies[0]").find("restarts the whole gang"), std::string::npos);
}

TEST(ImportVolcanoJobTest, DifferentTasksBecomeRolesOfOneGang) {
  const auto job = Imported(
      Job("", Task("ps", 1, "[python3, ps.py]", 0) + Task("worker", 4, "[python3, worker.py]", 1)));
  EXPECT_EQ(job.spec.kind, WorkloadKind::kRL);
  ASSERT_EQ(job.spec.roles.size(), 2u);
  EXPECT_EQ(job.spec.roles[0].name, "ps");
  EXPECT_EQ(job.spec.roles[0].count, 1);
  EXPECT_EQ(job.spec.roles[0].shape.gpus, 0);
  EXPECT_EQ(job.spec.roles[1].name, "worker");
  EXPECT_EQ(job.spec.roles[1].count, 4);
  EXPECT_EQ(job.spec.roles[1].command, (std::vector<std::string>{"python3", "worker.py"}));
}

TEST(ImportVolcanoJobTest, MinAvailableOneOverOneTaskIsABatchJob) {
  const auto job =
      Imported(Job("  minAvailable: 1\n", Task("shard", 10, "[python3, infer.py]", 1)));
  EXPECT_EQ(job.spec.kind, WorkloadKind::kBatch);
  EXPECT_EQ(job.spec.roles[0].count, 10);
}

TEST(ImportVolcanoJobTest, TaskCompletedCompleteJobOnTheMasterIsSuccessPolicyRank0) {
  std::string master = Task("master", 1, "[python3, train.py]", 1);
  master += "      policies: [{event: TaskCompleted, action: CompleteJob}]\n";
  const auto job = Imported(Job("", master + Task("worker", 1, "[python3, train.py]", 1)));
  EXPECT_EQ(job.spec.success_policy, SuccessPolicy::kRank0);
}

TEST(ImportVolcanoJobTest, WhatCannotBeHonouredIsRefused) {
  const std::string tasks = Task("w", 4, "[x]", 1);
  EXPECT_NE(Refusal(Job("  minAvailable: 2\n", tasks))
                .find("spec.minAvailable: must be every "
                      "replica (4"),
            std::string::npos);
  EXPECT_NE(Refusal(Job("  plugins: {ssh: []}\n", tasks))
                .find("spec.plugins.ssh: Tessera does not set up ssh"),
            std::string::npos);
  EXPECT_NE(Refusal(Job("  priorityClassName: gold\n", tasks))
                .find("spec.priorityClassName: priority class \"gold\" is unknown"),
            std::string::npos);
  EXPECT_NE(Refusal(Job("  policies: [{event: PodFailed, action: CompleteJob}]\n", tasks))
                .find("spec.policies[0]: event \"PodFailed\" with action \"CompleteJob\" is not "
                      "supported"),
            std::string::npos);
  std::string depends = Task("a", 1, "[x]", 1) + "      dependsOn: {name: [b]}\n";
  EXPECT_NE(Refusal(Job("", depends)).find("spec.tasks[0].dependsOn: not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera
