// A listed job as an object that can be submitted again (server/job_object.h).
#include "server/job_object.h"

#include <gtest/gtest.h>

#include "spec/document.h"

namespace tessera {
namespace {

using Json = nlohmann::json;

TEST(JobObjectTest, TheObjectParsesBackToTheSameSpecWithItsStatusIgnored) {
  auto spec = ParseJobSpec(
      "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: demo, queue: nlp/sft, user: "
      "ann}\nspec: {workers: 2, gpusPerWorker: 4, priority: 5, command: [python3, train.py]}\n");
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  const Json summary = {{"id", 7},
                        {"name", "demo"},
                        {"queue", "nlp/sft"},
                        {"kind", "TrainingJob"},
                        {"user", "ann"},
                        {"phase", "Running"},
                        {"runningTasks", 2},
                        {"restarts", 1},
                        {"submitTimeMs", 1000},
                        {"startTimeMs", 2000},
                        {"finishTimeMs", 0},
                        {"message", "x"}};
  const Json object = ResubmittableJob(*spec, summary);
  EXPECT_EQ(object["apiVersion"], "tessera/v1");
  EXPECT_EQ(object["kind"], "TrainingJob");
  EXPECT_EQ(object["metadata"]["name"], "demo");
  EXPECT_EQ(object["metadata"]["queue"], "nlp/sft");
  EXPECT_EQ(object["spec"]["workers"], 2);
  // Today's summary fields, under their own names, below status; the identity is metadata's.
  const Json& status = object["status"];
  EXPECT_EQ(status["phase"], "Running");
  EXPECT_EQ(status["runningTasks"], 2);
  EXPECT_EQ(status["restarts"], 1);
  EXPECT_EQ(status["submitTimeMs"], 1000);
  EXPECT_EQ(status["startTimeMs"], 2000);
  EXPECT_EQ(status["id"], 7);
  EXPECT_FALSE(status.contains("name"));
  EXPECT_FALSE(status.contains("queue"));

  // Both as JSON and as the YAML `-o yaml` prints, it is the same job again.
  for (const std::string& text : {DumpJson(object), ToYaml(object)}) {
    auto again = ParseJobSpec(text);
    ASSERT_TRUE(again.has_value()) << again.error().message << "\n" << text;
    EXPECT_EQ(*again, *spec);
  }
}

TEST(JobObjectTest, UnknownTopLevelKeysBesideStatusAreStillRefused) {
  auto bad = ParseJobSpec(
      "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: b}\nstatsu: {}\n"
      "spec: {tasks: 1, gpusPerTask: 1, command: [x]}\n");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("statsu: unknown field"), std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace tessera
