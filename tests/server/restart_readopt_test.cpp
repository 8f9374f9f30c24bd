// ctest-labels: e2e security
// `tessera up` on the state of a crashed controller (kill -9) brings it back where its agents
// look for it, leaves the live agents alone, and the running gang is re-adopted: same port,
// same agent processes, same task processes, attempt 1.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "server/process_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

class RestartTest : public ::testing::Test {
 protected:
  void TearDown() override {
    RunCommand({BinDir() + "/tessera", "down", "--state", state_.path()}, 60);
  }
  CommandResult Tessera(std::vector<std::string> args) {
    args.insert(args.begin(), BinDir() + "/tessera");
    return RunCommand(args, 60, "", {"TESSERA_STATE=" + state_.path()});
  }
  std::string Line(const std::string& file) {
    std::ifstream in(state_.path() + "/" + file);
    std::string line;
    std::getline(in, line);
    return line;
  }
  Json Job(const std::string& url, const std::string& name) {
    httplib::Client client(url);
    // Authentication and TLS are on by default: tessera up's admin token and CA.
    client.set_bearer_token_auth(Line("auth/admin.token"));
    client.set_ca_cert_path(state_.path() + "/tls/ca.crt");
    client.enable_server_certificate_verification(true);
    client.set_connection_timeout(2, 0);
    client.set_read_timeout(5, 0);
    auto r = client.Get(("/v1/jobs/default/" + name).c_str());
    if (!r || r->status != 200) return Json();
    return Json::parse(r->body, nullptr, false);
  }

  TempDir state_{"tessera-restart"};
};

TEST_F(RestartTest, UpOnACrashedControllersStateReadoptsTheRunningGang) {
  Watchdog watchdog(90s, "restart test");
  const std::vector<std::string> up = {"up",     "--state", state_.path(),         "--agents", "2",
                                       "--gpus", "2xH100",  "--heartbeat-timeout", "5"};
  auto first = Tessera(up);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const std::string url = Line("endpoint");
  const std::string spec = state_.path() + "/gang.yaml";
  std::ofstream(spec) << "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: gang}\n"
                         "spec:\n  workers: 2\n  gpusPerWorker: 2\n  maxRestarts: 3\n"
                         "  command: [sleep, \"120\"]\n";
  ASSERT_EQ(Tessera({"submit", "-f", spec}).exit_code, 0);
  std::map<int, long> pids;  // rank -> pid
  ASSERT_TRUE(WaitFor(
      [&] {
        const Json job = Job(url, "gang");
        pids.clear();
        for (const auto& t : job.value("taskList", Json::array())) {
          if (t["state"] == "Running" && t.value("pid", 0) > 0)
            pids[t["rank"].get<int>()] = t["pid"].get<long>();
        }
        return pids.size() == 2;
      },
      30));
  const std::string agent0 = Line("agents/node-0.pid"), agent1 = Line("agents/node-1.pid");

  ASSERT_EQ(::kill(std::stoi(Line("tesserad.pid")), SIGKILL), 0);
  std::this_thread::sleep_for(300ms);
  auto second = Tessera(up);
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_NE(second.out.find("re-adopted  2 running agent(s)"), std::string::npos) << second.out;

  EXPECT_EQ(Line("endpoint"), url) << "the controller came back where the agents look for it";
  EXPECT_EQ(Line("agents/node-0.pid"), agent0) << "the live agents were left alone";
  EXPECT_EQ(Line("agents/node-1.pid"), agent1);
  ASSERT_TRUE(WaitFor(
      [&] {
        const Json job = Job(url, "gang");
        int readopted = 0;
        for (const auto& e : job.value("events", Json::array()))
          readopted += e["type"] == "TaskReadopted";
        return readopted == 2;
      },
      20))
      << Job(url, "gang").dump(2);
  const Json job = Job(url, "gang");
  EXPECT_EQ(job["phase"], "Running");
  EXPECT_EQ(job["attempt"], 1) << "re-adopted, not restarted";
  for (const auto& t : job["taskList"]) {
    EXPECT_EQ(t["pid"].get<long>(), pids[t["rank"].get<int>()]);
    EXPECT_EQ(t["state"], "Running");
    EXPECT_TRUE(ProcessAlive(static_cast<pid_t>(t["pid"].get<long>())));
  }
}

}  // namespace
}  // namespace tessera::testing
