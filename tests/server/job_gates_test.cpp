// The rules that hold a job back or stop it apart from capacity: afterok / afterany
// dependencies, the wall-time limit, BatchJob parallelism and the reasons they fail jobs with.
#include "server/job_gates.h"

#include <gtest/gtest.h>

#include <map>

namespace tessera {
namespace {

JobDependency Dep(DependencyType type, const std::string& name) { return {type, "q", name}; }

DependencyGate Gate(const std::vector<JobDependency>& deps,
                    const std::map<std::string, std::string>& phases) {
  return CheckDependencies(deps, [&](const JobDependency& d) -> std::optional<std::string> {
    auto it = phases.find(d.name);
    if (it == phases.end()) return std::nullopt;
    return it->second;
  });
}

TEST(JobGatesTest, AfterOkWaitsForSuccessAndFailsOnAnyOtherEnd) {
  const auto ok = Dep(DependencyType::kAfterOk, "prep");
  EXPECT_EQ(Gate({ok}, {{"prep", "Succeeded"}}).state, DependencyGate::State::kMet);
  for (const char* phase : {"Pending", "Running", "Restarting", "Stopping"}) {
    const auto g = Gate({ok}, {{"prep", phase}});
    EXPECT_EQ(g.state, DependencyGate::State::kWaiting) << phase;
    EXPECT_NE(g.message.find("waiting for q/prep to succeed"), std::string::npos) << g.message;
  }
  for (const char* phase : {"Failed", "Cancelled"}) {
    const auto g = Gate({ok}, {{"prep", phase}});
    EXPECT_EQ(g.state, DependencyGate::State::kNeverSatisfied) << phase;
    EXPECT_EQ(FailureReasonOf(g.message), "DependencyNeverSatisfied") << g.message;
    EXPECT_NE(g.message.find(std::string("ended ") + phase), std::string::npos);
  }
  EXPECT_EQ(Gate({ok}, {}).state, DependencyGate::State::kNeverSatisfied);  // purged
}

TEST(JobGatesTest, AfterAnyWaitsForTheEndHoweverItEnds) {
  const auto any = Dep(DependencyType::kAfterAny, "prep");
  for (const char* phase : {"Succeeded", "Failed", "Cancelled"}) {
    EXPECT_EQ(Gate({any}, {{"prep", phase}}).state, DependencyGate::State::kMet) << phase;
  }
  EXPECT_EQ(Gate({any}, {}).state, DependencyGate::State::kMet);
  EXPECT_EQ(Gate({any}, {{"prep", "Running"}}).state, DependencyGate::State::kWaiting);
}

TEST(JobGatesTest, AllMustBeMetAndAFailureIsFinalAtOnce) {
  const std::vector<JobDependency> deps = {Dep(DependencyType::kAfterAny, "a"),
                                           Dep(DependencyType::kAfterOk, "b")};
  EXPECT_EQ(Gate(deps, {{"a", "Running"}, {"b", "Succeeded"}}).state,
            DependencyGate::State::kWaiting);
  EXPECT_EQ(Gate(deps, {{"a", "Failed"}, {"b", "Succeeded"}}).state, DependencyGate::State::kMet);
  // b failed: no need to wait for a.
  EXPECT_EQ(Gate(deps, {{"a", "Running"}, {"b", "Failed"}}).state,
            DependencyGate::State::kNeverSatisfied);
}

TEST(JobGatesTest, TimeLimit) {
  EXPECT_FALSE(TimeLimitExceeded(0, 1000, 1'000'000'000));  // no limit
  EXPECT_FALSE(TimeLimitExceeded(60, 1000, 60'999));
  const auto why = TimeLimitExceeded(60, 1000, 61'000);
  ASSERT_TRUE(why);
  EXPECT_EQ(FailureReasonOf(*why), "TimeLimit");
  EXPECT_NE(why->find("past spec.timeLimitSeconds (60 s)"), std::string::npos) << *why;
  EXPECT_FALSE(FailureReasonOf("task rank 0 exited with code 1"));
  EXPECT_FALSE(FailureReasonOf("TimeLimit"));
}

TEST(JobGatesTest, MissingDependenciesAndParallelism) {
  JobSpec spec;
  spec.kind = WorkloadKind::kBatch;
  spec.dependencies = {Dep(DependencyType::kAfterOk, "here"),
                       Dep(DependencyType::kAfterOk, "gone")};
  const auto missing =
      MissingDependency(spec, [](const JobDependency& d) { return d.name == "here"; });
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing,
            "spec.dependencies[1].job: no job q/gone (submit the jobs it depends on first)");
  std::vector<UnitRecord> units(5);
  units[0].phase = UnitPhase::kRunning;
  units[1].phase = UnitPhase::kStopping;
  units[2].phase = UnitPhase::kSucceeded;
  EXPECT_GT(FreeParallelismSlots(spec, units), 100000);  // no cap
  spec.parallelism = 3;
  EXPECT_EQ(FreeParallelismSlots(spec, units), 1);
  spec.parallelism = 2;
  EXPECT_EQ(FreeParallelismSlots(spec, units), 0);
}

}  // namespace
}  // namespace tessera
