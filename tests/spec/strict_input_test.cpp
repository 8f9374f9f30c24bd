// ctest-labels: unit security
// Input that nlohmann's and yaml-cpp's defaults accept quietly: a key given twice (the last
// won), 1e309 (reported without its field, or as inf), 2^63 (read back as -2^63 or as the
// inexact 9.2233720368547758e+18) and wire integers that did not fit (5e9 as a pid). Each is
// refused, naming the field, in job specs (JSON and YAML) and in the agent protocol.
#include <gtest/gtest.h>

#include <string>

#include "spec/document.h"
#include "spec/job_spec.h"
#include "spec/protocol.h"
#include "spec/strict_json.h"

namespace tessera {
namespace {

std::string SpecError(const std::string& text) {
  auto spec = ParseJobSpec(text);
  EXPECT_FALSE(spec.has_value()) << text;
  return spec ? std::string() : spec.error().message;
}

std::string JsonTraining(const std::string& spec_fields) {
  return R"({"apiVersion": "tessera/v1", "kind": "TrainingJob", "metadata": {"name": "t"},)"
         R"( "spec": {"gpusPerWorker": 1, "command": ["x"], )" +
         spec_fields + "}}";
}

std::string YamlTraining(const std::string& spec_lines) {
  return "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: t}\nspec:\n"
         "  gpusPerWorker: 1\n  command: [x]\n" +
         spec_lines;
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "got: " << (haystack)

TEST(StrictInputTest, DuplicateJsonKeysAreRefusedWithTheKeyNamed) {
  // Before: the second "workers" silently won and the job asked for 64 workers.
  EXPECT_CONTAINS(SpecError(JsonTraining(R"("workers": 2, "workers": 64)")),
                  "spec.workers: duplicate key");
  EXPECT_CONTAINS(SpecError(JsonTraining(R"("workers": 2, "env": {"A": "1", "A": "2"})")),
                  "spec.env.A: duplicate key");
  EXPECT_CONTAINS(SpecError(R"({"kind": "DevSession", "kind": "TrainingJob"})"),
                  "kind: duplicate key");
  EXPECT_CONTAINS(
      ParseJson(R"({"node": "node-0", "gpus": [{"index": 0, "index": 1}]})").error().message,
      "gpus[0].index: duplicate key");
  // Equal keys in different objects are fine.
  EXPECT_TRUE(ParseJson(R"({"a": {"x": 1}, "b": {"x": 1}, "c": [{"x": 1}, {"x": 2}]})"));
}

TEST(StrictInputTest, DuplicateYamlKeysNameTheirPath) {
  EXPECT_CONTAINS(SpecError(YamlTraining("  workers: 2\n  env: {A: 1, A: 2}\n")),
                  "spec.env.A: duplicate key");
}

TEST(StrictInputTest, AbsurdJsonNumbersAreRefusedWithTheFieldNamed) {
  // Before: "document: invalid JSON: [json.exception.out_of_range.406] number overflow ...".
  EXPECT_CONTAINS(SpecError(JsonTraining(R"("workers": 1e309)")),
                  "spec.workers: the number \"1e309\" is out of range");
  // Before: "spec.workers: must be between 1 and 100000, got -9223372036854775808".
  EXPECT_CONTAINS(SpecError(JsonTraining(R"("workers": 9223372036854775808)")),
                  "spec.workers: the integer \"9223372036854775808\" is out of range");
  EXPECT_CONTAINS(SpecError(JsonTraining(R"("workers": 1, "priority": -99999999999999999999)")),
                  "spec.priority: the integer \"-99999999999999999999\" is out of range");
  EXPECT_CONTAINS(SpecError(JsonTraining(R"("workers": 1, "gpuModels": {"H100": 1e999})")),
                  "spec.gpuModels.H100: the number \"1e999\" is out of range");
  // The largest signed 64-bit integer is still a number, and reported exactly.
  EXPECT_CONTAINS(SpecError(JsonTraining(R"("workers": 9223372036854775807)")),
                  "spec.workers: must be between 1 and 100000, got 9223372036854775807");
}

TEST(StrictInputTest, AbsurdYamlNumbersAreRefusedWithTheFieldNamed) {
  // Before: "spec.workers: must be an integer, got inf".
  EXPECT_CONTAINS(SpecError(YamlTraining("  workers: 1e309\n")),
                  "spec.workers: the number \"1e309\" is out of range");
  // Before: "spec.workers: must be between 1 and 100000, got 9.2233720368547758e+18".
  EXPECT_CONTAINS(SpecError(YamlTraining("  workers: 9223372036854775808\n")),
                  "spec.workers: the integer \"9223372036854775808\" is out of range");
  EXPECT_CONTAINS(SpecError(YamlTraining("  workers: 1\n  env: [.inf]\n")),
                  "spec.env[0]: the number \".inf\" is out of range");
  // Quoted, it is a string and reported as one.
  EXPECT_CONTAINS(SpecError(YamlTraining("  workers: \"1e309\"\n")),
                  "spec.workers: must be an integer, got string \"1e309\"");
}

TEST(StrictInputTest, AgentProtocolIntegersMustFitTheirField) {
  auto report = [](const std::string& fields) {
    auto doc = ParseJson(R"({"taskId": 7, "state": "running", )" + fields + "}");
    if (!doc) return doc.error().message;
    auto r = TaskReportFromJson(*doc);
    return r ? std::string("accepted, pid " + std::to_string(r->pid)) : r.error().message;
  };
  // Before: 2^63 was accepted as taskId -2^63; 5e9 as pid 705032704; 1.5 as pid 1.
  EXPECT_EQ(report(R"("pid": 1, "startedMs": 9223372036854775808)"),
            "startedMs: the integer \"9223372036854775808\" is out of range");
  EXPECT_EQ(report(R"("pid": 5000000000)"), "report.pid: out of range, got 5000000000");
  EXPECT_EQ(report(R"("pid": 1.5)"), "report.pid: must be an integer, got 1.5");
  EXPECT_EQ(report(R"("pid": "12")"), "report.pid: must be an integer, got string");
  EXPECT_EQ(report(R"("pid": 2147483647)"), "accepted, pid 2147483647");
  auto launch = ParseJson(R"({"taskId": 1, "command": ["x"], "gpus": [0, 1e300]})");
  ASSERT_TRUE(launch) << launch.error().message;
  EXPECT_EQ(TaskLaunchFromJson(*launch).error().message,
            "task.gpus[1]: must be an integer, got 1e+300");
}

TEST(StrictInputTest, SyntaxErrorsStillSayInvalidJson) {
  EXPECT_CONTAINS(SpecError("{\"a\": }"), "document: invalid JSON: parse error");
  EXPECT_CONTAINS(ParseJson("[1, 2").error().message, "invalid JSON: parse error");
  EXPECT_CONTAINS(ParseStrictJson(std::string(100, '[')).error().message,
                  "nested deeper than 32 levels");
}

}  // namespace
}  // namespace tessera
