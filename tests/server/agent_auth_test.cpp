// ctest-labels: integration security
// Forged agents on a loopback cluster with authentication on (tesserad --token-auth-file
// --bootstrap-token-file): a process without the node's credential cannot register a new node,
// send a heartbeat that marks a running rank Lost, report a task Succeeded, or re-register
// node-0 over the real one; one node's credential cannot act for another. The real agents,
// registered with the bootstrap token, keep working with the credentials they were issued.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "server/live_harness.h"
#include "server/secrets.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

const std::string kRegistration =
    R"({"node": "NODE", "address": "10.6.6.6", "simulated": true,
        "gpus": [{"index": 0, "model": "H100"}, {"index": 1, "model": "H100"}]})";

std::string RegistrationOf(const std::string& node) {
  std::string body = kRegistration;
  body.replace(body.find("NODE"), 4, node);
  return body;
}

std::string Credential(LiveCluster& c, int agent) {
  std::string secret = ReadFile(c.AgentState(agent) + "/credential");
  while (!secret.empty() && secret.back() == '\n') secret.pop_back();
  return secret;
}

// Every agent has kept the credential it was issued.
void WaitForCredentials(LiveCluster& c, int agents) {
  for (int i = 0; i < agents; ++i) {
    ASSERT_TRUE(WaitFor([&] { return Credential(c, i).size() == 64; }, 5)) << c.Logs();
  }
}

Json NodeNamed(LiveCluster& c, const std::string& name) {
  for (const auto& n : c.Nodes()) {
    if (n["name"] == name) return n;
  }
  return nullptr;
}

class AgentAuthTest : public ::testing::Test {
 protected:
  Watchdog dog_{90s, "agent_auth_test"};
  LiveCluster c_{LiveCluster::Options{.agents = 2, .gpus = "2xH100", .auth = true}};
};

TEST_F(AgentAuthTest, NewNodeNeedsTheBootstrapToken) {
  ASSERT_TRUE(c_.WaitForReadyNodes(2)) << c_.Logs();
  auto anonymous = c_.Call("POST", "/v1/agents/register", "", RegistrationOf("evil-0"));
  EXPECT_EQ(anonymous.status, 401) << anonymous.body;
  // A user token, even the admin's, is not the bootstrap token.
  auto admin =
      c_.Call("POST", "/v1/agents/register", LiveCluster::kAdminToken, RegistrationOf("evil-1"));
  EXPECT_EQ(admin.status, 403) << admin.body;
  EXPECT_NE(admin.body.find("bootstrap token"), std::string::npos) << admin.body;
  EXPECT_TRUE(NodeNamed(c_, "evil-0").is_null());
  EXPECT_TRUE(NodeNamed(c_, "evil-1").is_null());
  // With the bootstrap token a node registers and is issued its own credential.
  auto ok = c_.Call("POST", "/v1/agents/register", "", RegistrationOf("extra-0"),
                    {{"X-Tessera-Bootstrap-Token", LiveCluster::kBootstrapToken}});
  ASSERT_EQ(ok.status, 200) << ok.body;
  ASSERT_TRUE(ok.json["nodeCredential"].is_string()) << ok.body;
  EXPECT_EQ(ok.json["nodeCredential"].get<std::string>().size(), 64u);

  // An emulating agent's batch (register-nodes): all or none, under one credential that covers
  // exactly the nodes registered with it.
  auto batch = [](const std::vector<std::string>& nodes) {
    std::string body = R"({"nodes": [)";
    for (std::size_t i = 0; i < nodes.size(); ++i)
      body += (i > 0 ? "," : "") + RegistrationOf(nodes[i]);
    return body + "]}";
  };
  const std::map<std::string, std::string> bootstrap = {
      {"X-Tessera-Bootstrap-Token", LiveCluster::kBootstrapToken}};
  auto no_token = c_.Call("POST", "/v1/agents/register-nodes", "", batch({"emu-0", "emu-1"}));
  EXPECT_EQ(no_token.status, 401) << no_token.body;
  EXPECT_TRUE(NodeNamed(c_, "emu-0").is_null());
  auto emu = c_.Call("POST", "/v1/agents/register-nodes", "", batch({"emu-0", "emu-1"}), bootstrap);
  ASSERT_EQ(emu.status, 200) << emu.body;
  EXPECT_EQ(emu.json["registered"], 2);
  const std::string emu_secret = emu.json["nodeCredential"].get<std::string>();
  EXPECT_EQ(emu_secret.size(), 64u);
  auto grab = c_.Call("POST", "/v1/agents/register-nodes", emu_secret, batch({"emu-2", "node-0"}),
                      bootstrap);
  EXPECT_EQ(grab.status, 403) << grab.body;
  EXPECT_NE(grab.body.find("credential of its own"), std::string::npos) << grab.body;
  EXPECT_TRUE(NodeNamed(c_, "emu-2").is_null()) << "nothing half-applied";
  auto more = c_.Call("POST", "/v1/agents/register-nodes", emu_secret, batch({"emu-2"}), bootstrap);
  ASSERT_EQ(more.status, 200) << more.body;
  EXPECT_FALSE(more.json.contains("nodeCredential")) << "joins the agent's credential";
  const std::string delta =
      R"({"nodes": {}, "delta": true, "since": 1, "agentUrl": "x", "alive": )";
  auto own = c_.Call("POST", "/v1/agents/heartbeat?waitMs=0", emu_secret,
                     delta + R"(["emu-0", "emu-2"]})");
  EXPECT_EQ(own.status, 200) << own.body;
  for (const std::string& token : {emu_secret, ok.json["nodeCredential"].get<std::string>()}) {
    auto other =
        c_.Call("POST", "/v1/agents/heartbeat?waitMs=0", token,
                delta + (token == emu_secret ? R"(["emu-0", "node-0"]})" : R"(["emu-1"]})"));
    EXPECT_EQ(other.status, 403) << other.body;
  }
}

TEST_F(AgentAuthTest, ReRegisteringNode0NeedsItsOwnCredential) {
  ASSERT_TRUE(c_.WaitForReadyNodes(2)) << c_.Logs();
  WaitForCredentials(c_, 2);
  const Json before = NodeNamed(c_, "node-0");
  for (const std::string& token :
       {std::string(), std::string(LiveCluster::kBootstrapToken), Credential(c_, 1)}) {
    auto r = c_.Call("POST", "/v1/agents/register", token, RegistrationOf("node-0"),
                     {{"X-Tessera-Bootstrap-Token", LiveCluster::kBootstrapToken}});
    EXPECT_TRUE(r.status == 401 || r.status == 403) << r.status << " " << r.body;
    EXPECT_NE(r.body.find("credential of its own"), std::string::npos) << r.body;
  }
  const Json after = NodeNamed(c_, "node-0");
  EXPECT_EQ(after["address"], before["address"]);
  EXPECT_EQ(after["gpuCount"], 2);
  // The agent's credential is private to it.
  struct stat st {};
  ASSERT_EQ(::stat((c_.AgentState(0) + "/credential").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(AgentAuthTest, ForgedHeartbeatAndTaskStatusAreRefused) {
  ASSERT_TRUE(c_.WaitForReadyNodes(2)) << c_.Logs();
  auto sub = c_.Submit(
      "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: held}\nspec:\n"
      "  workers: 1\n  gpusPerWorker: 2\n  shell: true\n  gracePeriodSeconds: 1\n"
      "  command: [\"sleep 60\"]\n");
  ASSERT_EQ(sub.status, 201) << sub.body;
  ASSERT_TRUE(c_.WaitForPhase("default", "held", "Running")) << c_.Logs();
  WaitForCredentials(c_, 2);
  const Json task = c_.TaskList("default", "held")[0];
  const std::string node = task["node"];
  const int other = node == "node-0" ? 1 : 0;
  const std::string id = std::to_string(task["id"].get<long>());

  // A heartbeat with no tasks would mark the rank Lost; a report Exited 0 would end the job.
  const std::string report = R"({"state": "exited", "exitCode": 0})";
  for (const std::string& token :
       {std::string(), std::string("not-a-token-0123456789"), Credential(c_, other),
        std::string(LiveCluster::kAdminToken), std::string(LiveCluster::kBootstrapToken)}) {
    auto hb = c_.Call("POST", "/v1/agents/" + node + "/heartbeat", token, R"({"tasks": []})");
    EXPECT_TRUE(hb.status == 401 || hb.status == 403) << hb.status << " " << hb.body;
    auto st = c_.Call("POST", "/v1/agents/" + node + "/tasks/" + id + "/status", token, report);
    EXPECT_TRUE(st.status == 401 || st.status == 403) << st.status << " " << st.body;
    auto batch = c_.Call("POST", "/v1/agents/heartbeat?waitMs=0", token,
                         R"({"nodes": {")" + node + R"(": {"tasks": []}}})");
    EXPECT_TRUE(batch.status == 401 || batch.status == 403) << batch.status << " " << batch.body;
  }
  // The other node's credential is named in the reason.
  auto cross = c_.Call("POST", "/v1/agents/" + node + "/heartbeat", Credential(c_, other),
                       R"({"tasks": []})");
  EXPECT_EQ(cross.status, 403);
  EXPECT_NE(cross.body.find("acts only for itself"), std::string::npos) << cross.body;

  std::this_thread::sleep_for(1s);  // a few real heartbeats later
  const Json job = c_.Job("default", "held");
  EXPECT_EQ(job["phase"], "Running") << job.dump();
  EXPECT_EQ(job["restarts"], 0) << job.dump();
  EXPECT_EQ(c_.TaskList("default", "held")[0]["state"], "Running");
  EXPECT_EQ(c_.Delete("/v1/jobs/default/held").status, 202);
}

TEST_F(AgentAuthTest, AgentKeepsItsCredentialAcrossAControllerRestart) {
  ASSERT_TRUE(c_.WaitForReadyNodes(2)) << c_.Logs();
  // Ready once registered; the agent keeps its credential as the reply reaches it.
  ASSERT_TRUE(WaitFor([&] { return Credential(c_, 0).size() == 64; }, 5)) << c_.Logs();
  const std::string before = Credential(c_, 0);
  ASSERT_EQ(before.size(), 64u);
  // The digests are in the store (a table of tesserad.db), not in a file beside it.
  EXPECT_FALSE(std::filesystem::exists(c_.dir() + "/node-credentials"));
  // An earlier version's file beside the database: its nodes are imported on the restart.
  const std::string legacy(64, 'e');
  std::ofstream(c_.dir() + "/node-credentials") << "legacy-0 " << Sha256Hex(legacy) << "\n";
  c_.KillController();
  c_.StartController();
  ASSERT_TRUE(c_.WaitForReadyNodes(2)) << c_.Logs();
  EXPECT_EQ(Credential(c_, 0), before);  // heartbeats resumed with the same credential
  // The restarted controller knows node-0's credential: the bootstrap token cannot take it.
  auto taken = c_.Call("POST", "/v1/agents/register", "", RegistrationOf("node-0"),
                       {{"X-Tessera-Bootstrap-Token", LiveCluster::kBootstrapToken}});
  EXPECT_EQ(taken.status, 401) << taken.body;
  EXPECT_NE(taken.body.find("credential of its own"), std::string::npos) << taken.body;
  auto imported = c_.Call("POST", "/v1/agents/register", legacy, RegistrationOf("legacy-0"));
  EXPECT_EQ(imported.status, 200) << imported.body;
  auto bootstrap = c_.Call("POST", "/v1/agents/register", "", RegistrationOf("legacy-0"),
                           {{"X-Tessera-Bootstrap-Token", LiveCluster::kBootstrapToken}});
  EXPECT_EQ(bootstrap.status, 401) << bootstrap.body;
  EXPECT_NE(bootstrap.body.find("credential of its own"), std::string::npos) << bootstrap.body;
}

}  // namespace
}  // namespace tessera::testing
