// The fit check at submit (server/submit_fit.h): which jobs can never run on the registered
// nodes, and the field and reason each refusal names.
#include "server/submit_fit.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

// `nodes` nodes of `gpus` GPUs of `model`, 64 cores and 512 GiB each.
void AddNodes(Cluster& c, int nodes, int gpus, const std::string& model) {
  for (int i = 0; i < nodes; ++i) {
    ASSERT_TRUE(
        c.AddNode(model + "-" + std::to_string(c.node_count()), model, gpus, 64000, 512 * 1024)
            .has_value());
  }
}

JobSpec Spec(const std::string& text) {
  auto spec = ParseJobSpec(text);
  EXPECT_TRUE(spec.has_value()) << (spec ? "" : spec.error().message);
  return spec ? *spec : JobSpec{};
}

std::string Training(int workers, int gpus, const std::string& extra = "") {
  return "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: t}\nspec: {workers: " +
         std::to_string(workers) + ", gpusPerWorker: " + std::to_string(gpus) + extra +
         ", command: [x]}\n";
}

class SubmitFitTest : public ::testing::Test {
 protected:
  void SetUp() override { AddNodes(cluster_, 2, 4, "H100"); }  // 2 x 4 H100 = 8 GPUs
  Cluster cluster_;
};

TEST_F(SubmitFitTest, AJobThatFitsAnEmptyClusterIsAccepted) {
  EXPECT_EQ(NeverFitsAtSubmit(cluster_, Spec(Training(2, 4))), std::nullopt);
  EXPECT_EQ(NeverFitsAtSubmit(cluster_, Spec(Training(8, 1))), std::nullopt);
  // A BatchJob's tasks run one at a time when they must: 100 tasks of 4 GPUs fit 8 GPUs.
  EXPECT_EQ(NeverFitsAtSubmit(cluster_, Spec("apiVersion: tessera/v1\nkind: BatchJob\nmetadata: "
                                             "{name: b}\nspec: {tasks: 100, gpusPerTask: 4, "
                                             "command: [x]}\n")),
            std::nullopt);
  // A share of one GPU fits any GPU.
  EXPECT_EQ(NeverFitsAtSubmit(cluster_, Spec("apiVersion: tessera/v1\nkind: DevSession\nmetadata: "
                                             "{name: d}\nspec: {gpus: \"0.5\", command: [x]}\n")),
            std::nullopt);
}

TEST_F(SubmitFitTest, MoreGpusPerWorkerThanAnyNodeHas) {
  auto f = NeverFitsAtSubmit(cluster_, Spec(Training(1, 8)));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->field, "spec.gpusPerWorker");
  EXPECT_EQ(f->reason, "8 GPUs per worker, and the largest registered node has 4");
}

TEST_F(SubmitFitTest, MoreGpusAtOnceThanTheClusterHas) {
  // 3 workers x 4 GPUs = 12 > 8: each node holds one such worker, two in all.
  auto f = NeverFitsAtSubmit(cluster_, Spec(Training(3, 4)));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->field, "spec.workers");
  EXPECT_EQ(f->reason,
            "3 workers of 4 GPUs must run at once, and the 2 registered nodes hold at most 2 such "
            "tasks");
}

TEST_F(SubmitFitTest, WorkersThatDoNotPackOntoTheNodes) {
  // 3 workers x 3 GPUs = 9 GPUs: more than 8, but also only one 3-GPU worker per 4-GPU node.
  Cluster three;
  AddNodes(three, 3, 4, "H100");  // 12 GPUs, and still only 3 workers of 3 GPUs
  EXPECT_EQ(NeverFitsAtSubmit(three, Spec(Training(3, 3))), std::nullopt);
  auto f = NeverFitsAtSubmit(three, Spec(Training(4, 3)));  // 12 GPUs, 4 nodes' worth
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->field, "spec.workers");
  EXPECT_NE(f->reason.find("hold at most 3 such tasks"), std::string::npos) << f->reason;
}

TEST_F(SubmitFitTest, GpuModelsNoNodeHas) {
  auto f = NeverFitsAtSubmit(cluster_, Spec(Training(1, 1, ", gpuModels: [A100, L40S]")));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->field, "spec.gpuModels");
  EXPECT_EQ(f->reason, "no registered node has A100, L40S (the cluster has H100)");
  // One model that is there is enough; the GPUs are counted on that model's nodes only.
  AddNodes(cluster_, 1, 8, "A100");
  EXPECT_EQ(NeverFitsAtSubmit(cluster_, Spec(Training(1, 8, ", gpuModels: [A100, L40S]"))),
            std::nullopt);
  auto h100 = NeverFitsAtSubmit(cluster_, Spec(Training(1, 8, ", gpuModels: [H100]")));
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->reason,
            "8 GPUs per worker, and the largest registered node has 4 (of the accepted models "
            "H100)");
}

TEST_F(SubmitFitTest, RolesOfAnRLJobAreNamedByTheirIndex) {
  auto f = NeverFitsAtSubmit(
      cluster_, Spec("apiVersion: tessera/v1\nkind: RLJob\nmetadata: {name: r}\nspec:\n  roles:\n"
                     "    - {name: trainer, workers: 1, gpusPerWorker: 4, command: [x]}\n"
                     "    - {name: rollout, workers: 1, gpusPerWorker: 6, command: [x]}\n"));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->field, "spec.roles[1].gpusPerWorker");
  EXPECT_EQ(f->reason, "6 GPUs per rollout, and the largest registered node has 4");
}

TEST_F(SubmitFitTest, CpuNoNodeHasIsLeftToTheSchedulersReason) {
  auto f = NeverFitsAtSubmit(cluster_, Spec(Training(1, 1, ", cpu: 128")));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->field, "spec");
  EXPECT_NE(f->reason.find("no node can hold one worker"), std::string::npos) << f->reason;
}

TEST(SubmitFitNoNodes, NothingIsRefusedBeforeANodeRegisters) {
  EXPECT_EQ(NeverFitsAtSubmit(Cluster{}, Spec(Training(64, 8))), std::nullopt);
}

TEST(SubmitFitClusterCache, RebuildsOnlyWhenTheGenerationMoves) {
  SubmitFitCluster cache;
  int builds = 0;
  auto build = [&](Cluster& c) {
    ++builds;
    AddNodes(c, builds, 4, "H100");
  };
  EXPECT_EQ(cache.Get(1, build)->node_count(), 1);
  EXPECT_EQ(cache.Get(1, build)->node_count(), 1);
  EXPECT_EQ(builds, 1);
  EXPECT_EQ(cache.Get(2, build)->node_count(), 2);
  EXPECT_EQ(builds, 2);
}

}  // namespace
}  // namespace tessera
