// Kubeflow Trainer TrainJob (trainer.kubeflow.org/v1alpha1) -> TrainingJob where it maps
// cleanly: the trainer's command, numNodes, resourcesPerNode, numProcPerNode.
#include <gtest/gtest.h>

#include "import_test_util.h"

namespace tessera {
namespace {

using testing::Imported;
using testing::Refusal;

std::string Job(const std::string& runtime, const std::string& extra) {
  return R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: fine-tune, namespace: llm}
spec:
  runtimeRef: {name: )" +
         runtime + R"(}
  trainer:
    image: docker.io/pytorch/pytorch:2.5.0-cuda12.4-cudnn9-runtime
    command: [torchrun, train.py]
    args: [--lr, "1e-4"]
    env: [{name: HF_HOME, value: /cache/hf}]
    numNodes: 2
    numProcPerNode: 4
    resourcesPerNode: {limits: {nvidia.com/gpu: 4}}
)" + extra;
}

TEST(ImportTrainJobTest, TheTrainerBecomesATrainingJob) {
  const auto job = Imported(Job("torch-distributed", "  activeDeadlineSeconds: 7200\n"));
  EXPECT_EQ(job.spec.kind, WorkloadKind::kTraining);
  EXPECT_EQ(job.spec.queue, "llm");
  EXPECT_EQ(job.spec.roles[0].count, 2);
  EXPECT_EQ(job.spec.roles[0].shape.gpus, 4);
  EXPECT_EQ(job.spec.roles[0].processes_per_worker, 1);  // torchrun starts the 4 processes
  EXPECT_EQ(job.spec.env.at("PET_NPROC_PER_NODE"), "4");
  EXPECT_EQ(job.spec.env.at("HF_HOME"), "/cache/hf");
  EXPECT_EQ(job.spec.roles[0].command,
            (std::vector<std::string>{"torchrun", "train.py", "--lr", "1e-4"}));
  EXPECT_EQ(job.spec.time_limit_seconds, 7200);
}

TEST(ImportTrainJobTest, WhatDoesNotMapCleanlyIsRefused) {
  EXPECT_NE(Refusal(Job("mpi-distributed", ""))
                .find("spec.runtimeRef.name: runtime "
                      "\"mpi-distributed\" starts ranks with mpirun"),
            std::string::npos);
  EXPECT_NE(Refusal(Job("torch-distributed", "  initializer: {dataset: {storageUri: hf://x}}\n"))
                .find("spec.initializer: dataset and model initializers are not run"),
            std::string::npos);
  std::string no_command = Job("torch-distributed", "");
  no_command.erase(no_command.find("    command: [torchrun, train.py]\n"), 34);
  EXPECT_NE(Refusal(no_command).find("spec.trainer.command: required"), std::string::npos);
}

}  // namespace
}  // namespace tessera
