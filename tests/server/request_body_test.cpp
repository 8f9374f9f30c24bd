// ctest-labels: integration security
// Request bodies on the live controller, whatever the client sends them as. `curl
// --data-binary @spec.json` sends application/x-www-form-urlencoded: httplib capped such bodies
// at 8 KiB with a 413 that claimed the limit was 1 MiB, and parsed them into query parameters.
// Now every document body is read as the document up to the one payload limit, and duplicate
// keys and absurd numbers are refused over the wire with the field named.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <string>

#include "server/live_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kForm = "application/x-www-form-urlencoded";

// A DevSession in JSON whose env makes it `bytes` long; `extra` goes into the env map.
std::string SessionJson(const std::string& name, std::size_t bytes, const std::string& extra = "") {
  std::string spec =
      R"({"apiVersion": "tessera/v1", "kind": "DevSession", "metadata": {"name": ")" + name +
      R"("}, "spec": {"gpus": 1, "command": ["sleep", "1"], "env": {)" + extra + R"("PAD": ")";
  const std::string tail = R"("}}})";
  if (spec.size() + tail.size() < bytes)
    spec += std::string(bytes - spec.size() - tail.size(), 'p');
  return spec + tail;
}

std::string MessageOf(const httplib::Result& r) {
  if (!r) return "no answer";
  auto doc = Json::parse(r->body, nullptr, false);
  return doc.is_object() && doc.contains("error") ? doc["error"].value("message", r->body)
                                                  : r->body;
}

class RequestBodyTest : public ::testing::Test {
 protected:
  RequestBodyTest() : cluster_(LiveCluster::Options{.agents = 0}), client_(cluster_.url()) {
    client_.set_connection_timeout(2, 0);
    client_.set_read_timeout(10, 0);
  }
  LiveCluster cluster_;
  httplib::Client client_;
};

TEST_F(RequestBodyTest, AFormEncodedSpecOver8KiBIsAccepted) {
  Watchdog watchdog(30s, "form-encoded body test");
  // Before: 413 "request body too large (at most 1 MiB)" for a 12 KiB body.
  auto r = client_.Post("/v1/jobs?queueAnyway=true", SessionJson("big-form", 12 * 1024), kForm);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(cluster_.Get("/v1/jobs/default/big-form").status, 200);
}

TEST_F(RequestBodyTest, AFormEncodedBodyDoesNotSetQueryParameters) {
  Watchdog watchdog(30s, "form-encoded parameters test");
  // Before: httplib parsed the body as a query string, so "&hold=true" in a value held the job.
  auto r = client_.Post("/v1/jobs?queueAnyway=true",
                        SessionJson("not-held", 200, R"("X": "a&hold=true&", )"), kForm);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  auto job = cluster_.Get("/v1/jobs/default/not-held");
  EXPECT_NE(job.json.value("reason", ""), "Held") << job.body;
}

TEST_F(RequestBodyTest, TooLargeAndMultipartBodiesGetTheirOwnErrors) {
  Watchdog watchdog(30s, "body limits test");
  auto big = client_.Post("/v1/jobs", SessionJson("too-big", 2 << 20), kForm);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_NE(MessageOf(big).find("at most 1 MiB"), std::string::npos) << MessageOf(big);
  httplib::MultipartFormDataItems items = {{"spec", SessionJson("multi", 100), "", ""}};
  auto multi = client_.Post("/v1/jobs", items);
  ASSERT_TRUE(multi);
  EXPECT_EQ(multi->status, 415);
  EXPECT_NE(MessageOf(multi).find("multipart/form-data bodies are not accepted"),
            std::string::npos);
}

TEST_F(RequestBodyTest, DuplicateKeysAndAbsurdNumbersAreRefusedOverTheWire) {
  Watchdog watchdog(30s, "strict JSON over REST test");
  const std::string dup =
      R"({"apiVersion": "tessera/v1", "kind": "DevSession", "metadata": {"name": "a", "name": "b"},)"
      R"( "spec": {"gpus": 1, "command": ["x"]}})";
  auto r = client_.Post("/v1/jobs?queueAnyway=true", dup, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(MessageOf(r).find("metadata.name: duplicate key"), std::string::npos) << MessageOf(r);
  EXPECT_EQ(cluster_.Get("/v1/jobs/default/b").status, 404);

  // A registration that names its node twice: before, the last name won.
  r = client_.Post("/v1/agents/register",
                   R"({"node": "node-0", "node": "node-1", "address": "127.0.0.1"})",
                   "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(MessageOf(r).find("node: duplicate key"), std::string::npos) << MessageOf(r);

  r = client_.Post("/v1/agents/register",
                   R"({"node": "node-0", "gpus": [{"index": 9223372036854775808}]})",
                   "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(MessageOf(r).find("gpus[0].index: the integer \"9223372036854775808\" is out of range"),
            std::string::npos)
      << MessageOf(r);
  r = client_.Post("/v1/agents/register", R"({"node": "node-0", "memoryMiB": 1e309})",
                   "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(MessageOf(r).find("memoryMiB: the number \"1e309\" is out of range"), std::string::npos)
      << MessageOf(r);
  EXPECT_EQ(cluster_.Get("/v1/nodes").json["nodes"].size(), 0u);
}

}  // namespace
}  // namespace tessera::testing
