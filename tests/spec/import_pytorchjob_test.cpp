// Kubeflow PyTorchJob (kubeflow.org/v1) -> TrainingJob: Master and Workers as one gang,
// nvidia.com/gpu limits, runPolicy, elasticPolicy; container fields ignored with a note; what
// cannot be honoured refused with the field.
#include <gtest/gtest.h>

#include "import_test_util.h"

namespace tessera {
namespace {

using testing::Imported;
using testing::NoteFor;
using testing::Refusal;

const std::string kReplica = R"(
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1
              command: [python3, train.py]
              args: [--epochs, "1"]
              env: [{name: NCCL_DEBUG, value: INFO}]
              resources:
                limits: {nvidia.com/gpu: 4, memory: 32Gi}
                requests: {cpu: "8"}
              volumeMounts: [{name: data, mountPath: /data}]
          volumes: [{name: data, emptyDir: {}}]
)";

std::string Job(const std::string& spec_extra, int workers = 3) {
  return "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: mnist, namespace: "
         "research}\nspec:\n" +
         spec_extra + "  pytorchReplicaSpecs:\n    Master:\n      replicas: 1" + kReplica +
         "    Worker:\n      replicas: " + std::to_string(workers) + kReplica;
}

TEST(ImportPyTorchJobTest, MasterAndWorkersBecomeOneGangWithRankZeroFirst) {
  const auto job = Imported(Job("  runPolicy: {backoffLimit: 2, activeDeadlineSeconds: 600}\n"));
  EXPECT_EQ(job.spec.kind, WorkloadKind::kTraining);
  EXPECT_EQ(job.spec.name, "mnist");
  EXPECT_EQ(job.spec.queue, "research");  // the namespace
  ASSERT_EQ(job.spec.roles.size(), 1u);
  EXPECT_EQ(job.spec.roles[0].count, 4);  // 1 Master + 3 Workers
  EXPECT_EQ(job.spec.roles[0].shape.gpus, 4);
  EXPECT_EQ(job.spec.roles[0].shape.cpu_milli, 8000);
  EXPECT_EQ(job.spec.roles[0].shape.memory_mib, 32 * 1024);
  EXPECT_EQ(job.spec.roles[0].command,
            (std::vector<std::string>{"python3", "train.py", "--epochs", "1"}));
  EXPECT_EQ(job.spec.env.at("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(job.spec.success_policy, SuccessPolicy::kRank0);  // the Master decides, as in Kubeflow
  EXPECT_EQ(job.spec.max_restarts, 2);
  EXPECT_EQ(job.spec.time_limit_seconds, 600);
  EXPECT_FALSE(job.hold);
  // Container fields are ignored with a note, not refused.
  const std::string c = "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].";
  EXPECT_NE(NoteFor(job, c + "image").find("ignored: container images"), std::string::npos);
  EXPECT_NE(NoteFor(job, c + "volumeMounts").find("ignored"), std::string::npos);
  EXPECT_NE(NoteFor(job, "spec.pytorchReplicaSpecs.Master.template.spec.volumes").find("ignored"),
            std::string::npos);
  EXPECT_NE(NoteFor(job, c + "resources.limits.nvidia.com/gpu").find("= 4"), std::string::npos);
  EXPECT_EQ(job.document["apiVersion"], "tessera/v1");
}

TEST(ImportPyTorchJobTest, WorkersOnlyAndElasticPolicy) {
  const auto job = Imported(R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: elastic}
spec:
  elasticPolicy: {rdzvBackend: c10d, minReplicas: 1, maxReplicas: 4, maxRestarts: 10, nProcPerNode: 2}
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - {name: pytorch, image: x, command: [torchrun, train.py], resources: {limits: {nvidia.com/gpu: 2}}}
)");
  EXPECT_EQ(job.spec.queue, "default");
  EXPECT_EQ(job.spec.roles[0].count, 2);
  EXPECT_EQ(job.spec.min_workers, 1);
  EXPECT_EQ(job.spec.max_workers, 4);
  EXPECT_EQ(job.spec.success_policy, SuccessPolicy::kAllWorkers);
  EXPECT_EQ(job.spec.env.at("PET_RDZV_BACKEND"), "c10d");
  EXPECT_EQ(job.spec.env.at("PET_NNODES"), "1:4");
  EXPECT_EQ(job.spec.env.at("PET_NPROC_PER_NODE"), "2");
  EXPECT_EQ(job.spec.env.at("PET_MAX_RESTARTS"), "10");
  // The c10d endpoint is rank 0's node, known at launch: a wrapper sets it before torchrun.
  const auto& argv = job.spec.roles[0].command;
  ASSERT_GE(argv.size(), 6u);
  EXPECT_EQ(argv[0], "/bin/sh");
  EXPECT_NE(argv[2].find("PET_RDZV_ENDPOINT=\"$MASTER_ADDR:$MASTER_PORT\""), std::string::npos);
  EXPECT_EQ(argv[4], "torchrun");
}

TEST(ImportPyTorchJobTest, PriorityClassesComeFromTheFileOrTheFlag) {
  const std::string yaml = Job(
      "  runPolicy:\n    schedulingPolicy: {queue: nlp, priorityClass: high, minAvailable: 4}\n");
  ImportOptions options;
  EXPECT_NE(Refusal(yaml, options)
                .find("spec.runPolicy.schedulingPolicy.priorityClass: priority class \"high\" is "
                      "unknown"),
            std::string::npos);
  auto pc = ReadPriorityClass(
      testing::Yaml("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: "
                    "high}\nvalue: 1000\n"),
      options);
  ASSERT_TRUE(pc && *pc);
  const auto job = Imported(yaml, options);
  EXPECT_EQ(job.spec.priority, 1000);
  EXPECT_EQ(job.spec.queue, "nlp");  // schedulingPolicy.queue wins over the namespace
  auto too_high = ReadPriorityClass(
      testing::Yaml("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: "
                    "system}\nvalue: 2000000000\n"),
      options);
  ASSERT_FALSE(too_high);
  EXPECT_NE(too_high.error().message.find("value: Tessera priorities are between"),
            std::string::npos);
}

TEST(ImportPyTorchJobTest, WhatCannotBeHonouredIsRefusedWithTheField) {
  // Different programs for Master and Worker.
  std::string differ = Job("");
  differ.replace(differ.rfind("train.py"), 8, "worker.py");
  EXPECT_NE(Refusal(differ).find("spec.pytorchReplicaSpecs: Master and Worker differ"),
            std::string::npos);
  // A partial gang without elasticPolicy.
  EXPECT_NE(Refusal(Job("  runPolicy: {schedulingPolicy: {minAvailable: 2}}\n"))
                .find("spec.runPolicy.schedulingPolicy.minAvailable: a TrainingJob starts all 4"),
            std::string::npos);
  // No command: host processes have no image entrypoint.
  std::string no_command = Job("");
  for (std::size_t at; (at = no_command.find("command: [python3, train.py]")) != std::string::npos;)
    no_command.erase(at, 28);
  EXPECT_NE(Refusal(no_command).find("containers[0].command: required"), std::string::npos);
  // Node selection, secrets, unknown fields; every problem is listed.
  std::string more = Job("");
  more.replace(more.find("          volumes:"), 0, "          nodeSelector: {gpu: a100}\n");
  more.replace(more.find("env: [{name: NCCL_DEBUG, value: INFO}]"), 38,
               "env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: s, key: k}}}]");
  const std::string why = Refusal(more + "  bogus: 1\n");
  EXPECT_NE(why.find("Master.template.spec.nodeSelector: node selection by labels is not "
                     "supported"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("containers[0].env[0].valueFrom: values from secrets"), std::string::npos);
  EXPECT_NE(why.find("spec.bogus: not supported by the Kubeflow PyTorchJob"), std::string::npos);
  // Names Tessera cannot take.
  std::string dotted = Job("");
  dotted.replace(dotted.find("name: mnist"), 11, "name: mnist.v2");
  EXPECT_NE(Refusal(dotted).find("metadata.name: Tessera job names are at most 63"),
            std::string::npos);
}

TEST(ImportPyTorchJobTest, SuspendSubmitsHeld) {
  const auto job = Imported(Job("  runPolicy: {suspend: true}\n"));
  EXPECT_TRUE(job.hold);
}

}  // namespace
}  // namespace tessera
