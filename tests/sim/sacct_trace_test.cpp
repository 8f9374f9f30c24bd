// sacct --parsable2 exports as a trace: one TraceJob per job (steps passed over), GPUs from
// AllocTRES (ReqTRES for jobs that never started), times from the earliest submission.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/trace/trace_reader.h"
#include "sim/workload_builder.h"

namespace tessera {
namespace {

const char* kSample = "tests/sim/data/sacct_sample.txt";

const TraceJob* Find(const Trace& t, const std::string& id) {
  for (const auto& j : t.jobs) {
    if (j.id == id) return &j;
  }
  return nullptr;
}

TEST(SacctTraceTest, TheSampleIsRecognisedAndStepsArePassedOver) {
  auto trace = ReadTrace(kSample);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "sacct");
  ASSERT_EQ(trace->jobs.size(), 7u);  // 4101..4107; 4101.batch, .extern, .0, 4102.batch skipped
  EXPECT_EQ(trace->skipped_rows, 0);
  for (const auto& j : trace->jobs) EXPECT_EQ(j.id.find('.'), std::string::npos) << j.id;
  // Submission order: 4102 was submitted 30 s before 4101 and comes first, at time 0.
  EXPECT_EQ(trace->jobs[0].id, "4102");
  EXPECT_EQ(trace->jobs[0].submit, 0);
  EXPECT_EQ(trace->jobs[1].id, "4101");
  EXPECT_EQ(trace->jobs[1].submit, 30'000);
}

TEST(SacctTraceTest, FieldsComeFromAllocTresElapsedUserAndAccount) {
  auto trace = ReadTrace(kSample);
  ASSERT_TRUE(trace) << trace.error().message;
  const TraceJob* pretrain = Find(*trace, "4101");
  ASSERT_NE(pretrain, nullptr);
  EXPECT_EQ(pretrain->gpus, 16);
  EXPECT_EQ(pretrain->gpu_milli, 1000);
  EXPECT_EQ(pretrain->nodes, 2);
  EXPECT_EQ(pretrain->cpu_milli, 64'000);
  EXPECT_EQ(pretrain->memory_mib, 512 * 1024);
  EXPECT_EQ(pretrain->duration, 2 * 3600 * 1000);
  EXPECT_EQ(pretrain->user, "alice");
  EXPECT_EQ(pretrain->account, "nlp");
  EXPECT_EQ(pretrain->status, "COMPLETED");
  // Typed and untyped GPU counts of one job are the same GPUs; the type becomes the model.
  const TraceJob* eval = Find(*trace, "4102");
  EXPECT_EQ(eval->gpus, 2);
  EXPECT_EQ(eval->gpu_models, std::vector<std::string>{"A100"});
  const TraceJob* sweep = Find(*trace, "4104");  // typed only, a day and more of Elapsed
  EXPECT_EQ(sweep->gpus, 1);
  EXPECT_EQ(sweep->gpu_models, std::vector<std::string>{"H100"});
  EXPECT_EQ(sweep->duration, (26 * 3600 + 30) * 1000);
  EXPECT_EQ(sweep->status, "TIMEOUT");
  const TraceJob* prep = Find(*trace, "4103");  // CPU only; "CANCELLED by 1002"
  EXPECT_EQ(prep->gpus, 0);
  EXPECT_EQ(prep->gpu_milli, 0);
  EXPECT_EQ(prep->memory_mib, 16000);
  EXPECT_EQ(prep->status, "CANCELLED");
  EXPECT_NE(Find(*trace, "4105_1"), nullptr);      // array tasks are jobs of their own
  const TraceJob* running = Find(*trace, "4106");  // End Unknown: Elapsed so far
  EXPECT_EQ(running->duration, 45 * 60 * 1000);
  const TraceJob* pending = Find(*trace, "4107");  // never started: ReqTRES, no run time
  EXPECT_EQ(pending->gpus, 32);
  EXPECT_EQ(pending->nodes, 4);
  EXPECT_EQ(pending->duration, 0);
}

TEST(SacctTraceTest, TheAccountIsTheQueueOfTheReplay) {
  auto trace = ReadTrace(kSample);
  ASSERT_TRUE(trace) << trace.error().message;
  Cluster cluster;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(cluster.AddNode("n" + std::to_string(i), "H100", 8, 64000, 1 << 20));
  const auto jobs = ToWorkloads(trace->jobs, cluster);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(jobs[i].queue, trace->jobs[i].account) << trace->jobs[i].id;
  }
}

TEST(SacctTraceTest, ABadRowNamesTheLineAndTheColumn) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "tessera_sacct_bad.txt").string();
  {
    std::ofstream out(path);
    out << "JobID|User|Account|State|Submit|Start|End|Elapsed|AllocTRES\n"
        << "1|u|a|COMPLETED|2024-03-01T09:00:00|2024-03-01T09:00:01|2024-03-01T09:01:01|00:01:00|"
           "gres/gpu=1\n"
        << "2|u|a|COMPLETED|yesterday|2024-03-01T09:00:01|2024-03-01T09:01:01|00:01:00|"
           "gres/gpu=1\n"
        << "3|u|a|COMPLETED|2024-03-01T09:00:00|2024-03-01T09:00:01|2024-03-01T09:01:01|00:01:00|"
           "gres/gpu=many\n";
  }
  auto trace = ReadTrace(path);
  ASSERT_FALSE(trace);
  EXPECT_NE(trace.error().message.find(path + ":3:5: column 'submit'"), std::string::npos)
      << trace.error().message;
  auto skipped = ReadTrace(path, {.format = "sacct", .skip_bad_rows = true});
  ASSERT_TRUE(skipped) << skipped.error().message;
  EXPECT_EQ(skipped->jobs.size(), 1u);
  EXPECT_EQ(skipped->skipped_rows, 2);
  ASSERT_EQ(skipped->skip_reasons.size(), 2u);
  EXPECT_NE(skipped->skip_reasons[1].find(":4:9: column 'alloctres'"), std::string::npos)
      << skipped->skip_reasons[1];
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessera
