// Slurm batch scripts -> TrainingJob (BatchJob with --array): #SBATCH options, the script run
// once on rank 0's node, Slurm's environment, and the options refused or ignored.
#include <gtest/gtest.h>

#include "spec/imported_spec.h"

namespace tessera {
namespace {

ImportOptions Options() {
  ImportOptions o;
  o.submit_dir = "/home/alice/project";
  o.script_name = "train.sh";
  o.submit_env = {{"PATH", "/usr/bin:/bin"},
                  {"CONDA_PREFIX", "/opt/conda"},
                  {"CUDA_VISIBLE_DEVICES", "0"},
                  {"SLURM_CONF", "/etc/slurm.conf"}};
  return o;
}

ImportedJob Script(const std::string& directives, const ImportOptions& o = Options()) {
  const std::string text = "#!/bin/bash\n" + directives + "\necho hello\n#SBATCH --time=1\n";
  auto job = ImportSbatchScript(text, o);
  EXPECT_TRUE(job) << job.error().message;
  return job ? *job : ImportedJob{};
}

std::string Refused(const std::string& directives) {
  auto job = ImportSbatchScript("#!/bin/sh\n" + directives + "\ntrue\n", Options());
  EXPECT_FALSE(job);
  return job ? std::string() : job.error().message;
}

TEST(ImportSbatchTest, TheAllocationBecomesTheGangAndTheScriptRunsOnRankZero) {
  const auto job = Script(
      "#SBATCH --job-name=LLaMA_sft\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n"
      "#SBATCH --gpus-per-node=h100:4\n#SBATCH -c 8\n#SBATCH --mem=64G\n"
      "#SBATCH --time=1-02:30:00\n#SBATCH -p research\n#SBATCH --output=slurm-%j.out\n"
      "#SBATCH --dependency=afterok:prep:tokenize,afterany:nlp/cleanup\n");
  const JobSpec& s = job.spec;
  EXPECT_EQ(s.kind, WorkloadKind::kTraining);
  EXPECT_EQ(s.name, "llama-sft");
  EXPECT_EQ(s.queue, "research");
  EXPECT_EQ(s.roles[0].count, 2);
  EXPECT_EQ(s.roles[0].shape.gpus, 4);
  EXPECT_EQ(s.gpu_models, std::vector<std::string>{"H100"});
  EXPECT_EQ(s.roles[0].shape.cpu_milli, 32'000);  // 8 CPUs x 4 tasks per node
  EXPECT_EQ(s.roles[0].shape.memory_mib, 64 * 1024);
  EXPECT_EQ(s.time_limit_seconds, 26 * 3600 + 1800);  // the #SBATCH after `echo` is not read
  EXPECT_EQ(s.success_policy, SuccessPolicy::kRank0);
  EXPECT_EQ(s.max_restarts, 0);
  EXPECT_EQ(s.working_dir, "/home/alice/project");
  ASSERT_EQ(s.dependencies.size(), 3u);
  EXPECT_EQ(s.dependencies[0], (JobDependency{DependencyType::kAfterOk, "research", "prep"}));
  EXPECT_EQ(s.dependencies[1], (JobDependency{DependencyType::kAfterOk, "research", "tokenize"}));
  EXPECT_EQ(s.dependencies[2], (JobDependency{DependencyType::kAfterAny, "nlp", "cleanup"}));
  // Slurm's environment: the allocation, the job name as written, the submit directory, and
  // the submitting environment (--export=ALL) less what Tessera and Slurm set.
  EXPECT_EQ(s.env.at("SLURM_JOB_NAME"), "LLaMA_sft");
  EXPECT_EQ(s.env.at("SLURM_NNODES"), "2");
  EXPECT_EQ(s.env.at("SLURM_NTASKS_PER_NODE"), "4");
  EXPECT_EQ(s.env.at("SLURM_NTASKS"), "8");
  EXPECT_EQ(s.env.at("SLURM_GPUS_PER_NODE"), "4");
  EXPECT_EQ(s.env.at("SLURM_SUBMIT_DIR"), "/home/alice/project");
  EXPECT_EQ(s.env.at("CONDA_PREFIX"), "/opt/conda");
  EXPECT_FALSE(s.env.contains("CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(s.env.contains("SLURM_CONF"));
  EXPECT_EQ(s.env.at("TESSERA_BATCH_SCRIPT").substr(0, 12), "#!/bin/bash\n");
  // The launcher: other ranks hold their node, rank 0 runs the script with SLURM_* set.
  const std::string& launcher = s.roles[0].command[2];
  EXPECT_NE(launcher.find("if [ \"$NODE_RANK\" != 0 ]; then exec sleep infinity; fi"),
            std::string::npos);
  EXPECT_NE(launcher.find("SLURM_JOB_NODELIST="), std::string::npos);
  bool ignored_output = false;
  for (const auto& n : job.notes) ignored_output |= n.ignored && n.field == "--output (line 10)";
  EXPECT_TRUE(ignored_output);
}

TEST(ImportSbatchTest, OneNodeDefaultsAndTheScriptName) {
  const auto job = Script("#SBATCH --gres=gpu:2 --export=NONE,WANDB_MODE=offline\n");
  EXPECT_EQ(job.spec.name, "train");
  EXPECT_EQ(job.spec.queue, "default");
  EXPECT_EQ(job.spec.roles[0].count, 1);
  EXPECT_EQ(job.spec.roles[0].shape.gpus, 2);
  EXPECT_EQ(job.spec.success_policy, SuccessPolicy::kAllWorkers);
  EXPECT_EQ(job.spec.time_limit_seconds, 0);
  EXPECT_EQ(job.spec.env.at("WANDB_MODE"), "offline");
  EXPECT_FALSE(job.spec.env.contains("CONDA_PREFIX"));  // --export=NONE
  EXPECT_EQ(job.spec.roles[0].command[2].find("sleep infinity"), std::string::npos);
}

TEST(ImportSbatchTest, AnArrayIsABatchJobWithItsTaskIds) {
  const auto job = Script("#SBATCH --array=1-7:3%2\n#SBATCH --gpus=1\n#SBATCH --hold\n");
  EXPECT_EQ(job.spec.kind, WorkloadKind::kBatch);
  EXPECT_EQ(job.spec.roles[0].count, 3);  // 1, 4, 7
  EXPECT_EQ(job.spec.parallelism, 2);
  EXPECT_EQ(job.spec.roles[0].shape.gpus, 1);
  EXPECT_TRUE(job.hold);
  EXPECT_NE(job.spec.roles[0].command[2].find("SLURM_ARRAY_TASK_ID=$((1 + TASK_INDEX * 3))"),
            std::string::npos);
  const auto list = Script("#SBATCH -a 2,3,10\n");
  EXPECT_NE(list.spec.roles[0].command[2].find("set -- 2 3 10"), std::string::npos);
  EXPECT_EQ(list.spec.env.at("SLURM_ARRAY_TASK_MAX"), "10");
}

TEST(ImportSbatchTest, GpuOptionsAgreeOrAreRefused) {
  EXPECT_EQ(Script("#SBATCH -N 2 --gpus=8\n").spec.roles[0].shape.gpus, 4);
  EXPECT_EQ(Script("#SBATCH --ntasks-per-node=2 --gpus-per-task=2\n").spec.roles[0].shape.gpus, 4);
  EXPECT_NE(Refused("#SBATCH -N 3 --gpus=8").find("--gpus: 8 GPUs do not split evenly over 3"),
            std::string::npos);
  EXPECT_NE(Refused("#SBATCH --gres=gpu:2 --gpus-per-node=4").find("asks for 4 GPUs per node"),
            std::string::npos);
  EXPECT_NE(Refused("#SBATCH --gres=license:3").find("generic resource \"license:3\""),
            std::string::npos);
}

TEST(ImportSbatchTest, UnsupportedOptionsAreRefusedWithTheLineAndTheReason) {
  const std::string why = Refused(
      "#SBATCH --nodelist=gpu01\n#SBATCH --time=soon\n#SBATCH --frobnicate\n"
      "#SBATCH --dependency=afternotok:x\n#SBATCH -N 1-4\n#SBATCH --array=0-3 -N 2");
  EXPECT_NE(why.find("--nodelist (line 2): jobs cannot name nodes"), std::string::npos) << why;
  EXPECT_NE(why.find("--time (line 3): 'soon' is not a Slurm time"), std::string::npos);
  EXPECT_NE(why.find("--frobnicate (line 4): not supported"), std::string::npos);
  EXPECT_NE(why.find("dependency type \"afternotok\" is not supported"), std::string::npos);
  EXPECT_NE(why.find("--nodes (line 6): a range of nodes"), std::string::npos);
  EXPECT_NE(why.find("--array: array tasks of more than one node"), std::string::npos);
  auto no_shebang = ImportSbatchScript("echo hi\n", Options());
  ASSERT_FALSE(no_shebang);
  EXPECT_NE(no_shebang.error().message.find("line 1: a batch script starts with #!"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera
