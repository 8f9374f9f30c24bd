// Kubernetes Job (batch/v1) -> BatchJob: completions tasks, parallelism as a cap, the
// completion index, backoffLimit, activeDeadlineSeconds and suspend.
#include <gtest/gtest.h>

#include "import_test_util.h"

namespace tessera {
namespace {

using testing::Imported;
using testing::NoteFor;
using testing::Refusal;

std::string Job(const std::string& spec_lines) {
  return R"(apiVersion: batch/v1
kind: Job
metadata: {name: pi, namespace: batch}
spec:
)" + spec_lines +
         R"Y(  template:
    spec:
      restartPolicy: Never
      containers:
        - name: pi
          image: perl:5.34.0
          command: [perl, -Mbignum=bpi, -wle, "print bpi(2000)"]
          resources: {limits: {nvidia.com/gpu: "1"}, requests: {cpu: 500m, memory: 1Gi}}
)Y";
}

TEST(ImportKubernetesJobTest, CompletionsParallelismAndTheIndex) {
  const auto job = Imported(
      Job("  completions: 8\n  parallelism: 2\n  completionMode: Indexed\n  backoffLimit: 4\n"
          "  activeDeadlineSeconds: 120\n  ttlSecondsAfterFinished: 100\n"));
  EXPECT_EQ(job.spec.kind, WorkloadKind::kBatch);
  EXPECT_EQ(job.spec.queue, "batch");
  EXPECT_EQ(job.spec.roles[0].count, 8);
  EXPECT_EQ(job.spec.parallelism, 2);
  EXPECT_EQ(job.spec.roles[0].shape.gpus, 1);
  EXPECT_EQ(job.spec.roles[0].shape.cpu_milli, 500);
  EXPECT_EQ(job.spec.roles[0].shape.memory_mib, 1024);
  EXPECT_EQ(job.spec.max_restarts, 4);
  EXPECT_EQ(job.spec.time_limit_seconds, 120);
  const auto& argv = job.spec.roles[0].command;
  EXPECT_NE(argv[2].find("JOB_COMPLETION_INDEX=\"$TASK_INDEX\""), std::string::npos);
  EXPECT_EQ(argv[4], "perl");
  EXPECT_EQ(argv.back(), "print bpi(2000)");
  EXPECT_NE(NoteFor(job, "spec.ttlSecondsAfterFinished").find("ignored"), std::string::npos);
  EXPECT_NE(NoteFor(job, "spec.template.spec.containers[0].image").find("ignored"),
            std::string::npos);
}

TEST(ImportKubernetesJobTest, DefaultsAndSuspend) {
  const auto job = Imported(Job("  suspend: true\n"));
  EXPECT_EQ(job.spec.roles[0].count, 1);
  EXPECT_EQ(job.spec.parallelism, 0);
  EXPECT_TRUE(job.hold);
  // parallelism at or above completions is no cap.
  EXPECT_EQ(Imported(Job("  completions: 2\n  parallelism: 5\n")).spec.parallelism, 0);
}

TEST(ImportKubernetesJobTest, TheWorkQueuePatternAndFailurePoliciesAreRefused) {
  EXPECT_NE(Refusal(Job("  parallelism: 4\n")).find("spec.completions: required with parallelism"),
            std::string::npos);
  EXPECT_NE(Refusal(Job("  podFailurePolicy: {rules: []}\n"))
                .find("spec.podFailurePolicy: not "
                      "supported"),
            std::string::npos);
  EXPECT_NE(Refusal(Job("  completions: 2\n  parallelism: 0\n")).find("spec.parallelism: 0"),
            std::string::npos);
  EXPECT_NE(Refusal(Job("  completionMode: Sideways\n")).find("spec.completionMode: must be"),
            std::string::npos);
}

TEST(ImportKubernetesJobTest, ATranslationTesseraRefusesIsReportedAsTranslated) {
  // 17 GPUs per pod: no node has that many, and Tessera's own validator says so.
  std::string yaml = Job("");
  yaml.replace(yaml.find("\"1\"}"), 3, "\"17\"");
  const std::string why = Refusal(yaml);
  EXPECT_NE(why.find("translated spec.gpusPerTask: must be between 0 and 16"), std::string::npos)
      << why;
}

}  // namespace
}  // namespace tessera
