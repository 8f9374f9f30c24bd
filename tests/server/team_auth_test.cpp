// ctest-labels: integration security
// Users and teams on a loopback cluster with authentication on: no token is 401; a team member
// submits only to its queue subtree, sees and cancels, purges and releases only its team's
// jobs, and never reads another team's env; a viewer reads every job without env and writes
// nothing; the database and the credentials file are 0600.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "server/live_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kAlice = "alice-token-0123456789abcdef";    // team:nlp
constexpr const char* kBob = "bob-token-0123456789abcdef";        // team:vision
constexpr const char* kViewer = "viewer-token-0123456789abcdef";  // tessera:viewers
constexpr const char* kMetrics = "metrics-token-0123456789abcdef";

std::string Spec(const std::string& name, const std::string& queue) {
  return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name + ", queue: " + queue +
         "}\nspec:\n  tasks: 1\n  gpusPerTask: 1\n  shell: true\n  gracePeriodSeconds: 1\n"
         "  env: {API_KEY: hunter2-" +
         name + "}\n  command: [\"sleep 30\"]\n";
}

std::set<std::string> Names(const HttpResult& r) {
  std::set<std::string> out;
  EXPECT_EQ(r.status, 200) << r.body;
  if (!r.json.is_object() || !r.json["jobs"].is_array()) return out;
  for (const auto& j : r.json["jobs"])
    out.insert(j["queue"].get<std::string>() + "/" + j["name"].get<std::string>());
  return out;
}

class TeamAuthTest : public ::testing::Test {
 protected:
  Watchdog dog_{90s, "team_auth_test"};
  LiveCluster c_{LiveCluster::Options{
      .agents = 1,
      .gpus = "4xH100",
      .auth = true,
      .users = {std::string(kAlice) + ",alice,1001,\"team:nlp\"",
                std::string(kBob) + ",bob,1002,\"team:vision,other\"",
                std::string(kViewer) + ",vera,1003,\"tessera:viewers\"",
                std::string(kMetrics) + ",prometheus,1004,\"tessera:metrics\""}}};
};

TEST_F(TeamAuthTest, NoTokenIsUnauthenticated) {
  for (const char* path : {"/v1/jobs", "/v1/nodes", "/v1/status", "/v1/events"}) {
    auto r = c_.Call("GET", path, "");
    EXPECT_EQ(r.status, 401) << path << " " << r.body;
    EXPECT_EQ(r.headers["WWW-Authenticate"], "Bearer realm=\"tessera\"");
  }
  EXPECT_EQ(c_.Call("GET", "/v1/jobs", "wrong-token-0123456789").status, 401);
  EXPECT_EQ(c_.Call("POST", "/v1/jobs", "", Spec("x", "nlp")).status, 401);
  EXPECT_EQ(c_.Call("GET", "/v1/healthz", "").status, 200);  // liveness stays open
  EXPECT_EQ(c_.Call("GET", "/ui/", "").status, 200);  // the dashboard's files: no data in them
  EXPECT_EQ(c_.Call("GET", "/v1/usage", "").status, 401);
}

TEST_F(TeamAuthTest, TeamsSubmitOnlyToTheirQueues) {
  ASSERT_TRUE(c_.WaitForReadyNodes(1)) << c_.Logs();
  EXPECT_EQ(c_.Call("POST", "/v1/jobs", kAlice, Spec("a1", "nlp/sft")).status, 201);
  auto wrong = c_.Call("POST", "/v1/jobs", kAlice, Spec("a2", "vision"));
  EXPECT_EQ(wrong.status, 403) << wrong.body;
  EXPECT_NE(wrong.body.find("may not submit to queue vision"), std::string::npos) << wrong.body;
  EXPECT_EQ(c_.Call("POST", "/v1/jobs", kViewer, Spec("v1", "nlp")).status, 403);
  EXPECT_EQ(c_.Call("POST", "/v1/jobs", kMetrics, Spec("m1", "nlp")).status, 403);
}

TEST_F(TeamAuthTest, NoCrossTeamCancelPurgeReleaseOrEnv) {
  ASSERT_TRUE(c_.WaitForReadyNodes(1)) << c_.Logs();
  ASSERT_EQ(c_.Call("POST", "/v1/jobs", kAlice, Spec("a1", "nlp")).status, 201);
  ASSERT_EQ(c_.Call("POST", "/v1/jobs", kBob, Spec("b1", "vision")).status, 201);
  ASSERT_EQ(c_.Call("POST", "/v1/jobs?hold=true", kBob, Spec("b2", "vision")).status, 201);
  ASSERT_EQ(c_.Call("POST", "/v1/jobs", kBob, Spec("b3", "vision")).status, 201);
  ASSERT_EQ(c_.Call("DELETE", "/v1/jobs/vision/b3", kBob).status, 202);
  ASSERT_TRUE(WaitFor([&] { return c_.Job("vision", "b3")["phase"] == "Cancelled"; }, 15))
      << c_.Job("vision", "b3").dump();

  auto cancel = c_.Call("DELETE", "/v1/jobs/vision/b1", kAlice);
  EXPECT_EQ(cancel.status, 403) << cancel.body;
  EXPECT_NE(cancel.body.find("may not cancel jobs of queue vision"), std::string::npos)
      << cancel.body;
  EXPECT_EQ(c_.Call("DELETE", "/v1/jobs/vision/b3?purge=true", kAlice).status, 403);
  EXPECT_EQ(
      c_.Call("POST", "/v1/release", kAlice, R"({"queue": "vision", "names": ["b2"]})").status,
      403);
  EXPECT_EQ(c_.Call("POST", "/v1/release", kAlice, R"({"all": true})").status, 403);
  EXPECT_EQ(c_.Call("GET", "/v1/jobs/vision/b1", kAlice).status, 403);
  EXPECT_EQ(c_.Call("GET", "/v1/logs/vision/b1", kAlice).status, 403);
  // Nothing of bob's changed.
  EXPECT_NE(c_.Job("vision", "b1")["phase"], "Cancelled");
  EXPECT_EQ(c_.Job("vision", "b2")["reason"], "Held");
  EXPECT_EQ(c_.Job("vision", "b3")["phase"], "Cancelled");

  // Lists and events are cut to the caller's teams; env only for the job's team.
  auto alice_jobs = c_.Call("GET", "/v1/jobs", kAlice);
  EXPECT_EQ(Names(alice_jobs), (std::set<std::string>{"nlp/a1"})) << alice_jobs.body;
  auto objects = c_.Call("GET", "/v1/jobs?view=object", kAlice);
  EXPECT_EQ(objects.body.find("hunter2-b1"), std::string::npos) << objects.body;
  auto events = c_.Call("GET", "/v1/events", kAlice);
  ASSERT_EQ(events.status, 200);
  EXPECT_EQ(events.body.find("job/vision/"), std::string::npos) << events.body;
  EXPECT_NE(events.body.find("job/nlp/a1"), std::string::npos) << events.body;

  auto own = c_.Call("GET", "/v1/jobs/vision/b1", kBob);
  EXPECT_NE(own.body.find("hunter2-b1"), std::string::npos) << own.body;
  auto viewed = c_.Call("GET", "/v1/jobs/vision/b1", kViewer);
  EXPECT_EQ(viewed.status, 200);
  EXPECT_EQ(viewed.body.find("hunter2"), std::string::npos) << viewed.body;
  EXPECT_EQ(Names(c_.Call("GET", "/v1/jobs", kViewer)).size(), 4u);
  EXPECT_EQ(c_.Call("DELETE", "/v1/jobs/vision/b1", kViewer).status, 403);

  // Bob may act on his own jobs.
  EXPECT_EQ(c_.Call("POST", "/v1/release", kBob, R"({"queue": "vision", "names": ["b2"]})").status,
            200);
  EXPECT_EQ(c_.Call("DELETE", "/v1/jobs/vision/b1", kBob).status, 202);
  EXPECT_EQ(c_.Call("DELETE", "/v1/jobs/vision/b2", kBob).status, 202);
  EXPECT_EQ(c_.Call("DELETE", "/v1/jobs/nlp/a1", kAlice).status, 202);
}

TEST_F(TeamAuthTest, MetricsTokenReadsStatusOnly) {
  EXPECT_EQ(c_.Call("GET", "/v1/status", kMetrics).status, 200);
  EXPECT_EQ(c_.Call("GET", "/v1/jobs", kMetrics).status, 403);
}

TEST_F(TeamAuthTest, StateFilesArePrivate) {
  ASSERT_TRUE(c_.WaitForReadyNodes(1)) << c_.Logs();
  for (const char* file : {"/tesserad.db", "/tesserad.db-wal"}) {
    struct stat st {};
    ASSERT_EQ(::stat((c_.dir() + file).c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 0077, 0u) << file << " mode " << std::oct << (st.st_mode & 0777);
  }
}

}  // namespace
}  // namespace tessera::testing
