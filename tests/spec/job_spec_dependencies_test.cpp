// The spec fields every kind has for ordering and bounding runs: spec.dependencies
// (afterok, afterany) and spec.timeLimitSeconds; and TrainingJob successPolicy, BatchJob
// parallelism. They parse, round-trip through the canonical form, and refuse bad values.
#include <gtest/gtest.h>

#include "spec/job_spec.h"

namespace tessera {
namespace {

std::string Batch(const std::string& spec_lines) {
  return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: eval, queue: nlp/sft}\n"
         "spec:\n  tasks: 4\n  gpusPerTask: 1\n  command: [python3, eval.py]\n" +
         spec_lines;
}

std::string ErrorOf(const std::string& text) {
  auto spec = ParseJobSpec(text);
  EXPECT_FALSE(spec) << text;
  return spec ? std::string() : spec.error().message;
}

TEST(JobSpecDependenciesTest, DependenciesAndTimeLimitParseAndRoundTrip) {
  auto spec = ParseJobSpec(
      Batch("  timeLimitSeconds: 3600\n  parallelism: 2\n  dependencies:\n"
            "    - {type: afterok, job: train}\n    - {type: afterany, job: research/prep}\n"
            "    - {type: afterok, job: train}\n"));
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->time_limit_seconds, 3600);
  EXPECT_EQ(spec->parallelism, 2);
  ASSERT_EQ(spec->dependencies.size(), 2u);  // the repeated one once
  EXPECT_EQ(spec->dependencies[0], (JobDependency{DependencyType::kAfterOk, "nlp/sft", "train"}));
  EXPECT_EQ(spec->dependencies[1], (JobDependency{DependencyType::kAfterAny, "research", "prep"}));
  const auto json = JobSpecToJson(*spec);
  EXPECT_EQ(json["spec"]["dependencies"][0]["job"], "nlp/sft/train");
  auto again = JobSpecFromJson(json);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *spec);
}

TEST(JobSpecDependenciesTest, EveryKindTakesThem) {
  auto training = ParseJobSpec(
      "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: t}\nspec: {workers: 2, "
      "gpusPerWorker: 1, command: [x], timeLimitSeconds: 60, successPolicy: Rank0, "
      "dependencies: [{type: afterok, job: prep}]}\n");
  ASSERT_TRUE(training) << training.error().message;
  EXPECT_EQ(training->success_policy, SuccessPolicy::kRank0);
  EXPECT_EQ(JobSpecFromJson(JobSpecToJson(*training)).value(), *training);
  auto dev = ParseJobSpec(
      "apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: d}\nspec: {timeLimitSeconds: "
      "28800}\n");
  ASSERT_TRUE(dev) << dev.error().message;
  EXPECT_EQ(dev->time_limit_seconds, 28800);
}

TEST(JobSpecDependenciesTest, BadValuesAreRefusedWithTheField) {
  EXPECT_NE(ErrorOf(Batch("  timeLimitSeconds: -1\n"))
                .find("spec.timeLimitSeconds: must be between 0 and 31622400, got -1"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Batch("  dependencies: [{type: afternotok, job: a}]\n"))
                .find("spec.dependencies[0].type: must be afterok or afterany"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Batch("  dependencies: [{type: afterok, job: eval}]\n"))
                .find("spec.dependencies[0].job: a job cannot depend on itself"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Batch("  dependencies: [{type: afterok, job: Bad_Name}]\n"))
                .find("spec.dependencies[0].job: must be a job name"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Batch("  dependencies: afterok:x\n")).find("spec.dependencies: must be a list"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Batch("  dependencies: [{type: afterok, job: a, when: now}]\n"))
                .find("spec.dependencies[0].when: unknown field"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Batch("  successPolicy: Rank0\n"))
                .find("spec.successPolicy: unknown field for BatchJob"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera
