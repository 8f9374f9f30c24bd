// ctest-labels: integration ha
// Failover of controllers on etcd, end to end: `tessera up --store etcd --controllers 2` (a
// real 3-member etcd cluster on loopback, two tesserads, two agents with simulated GPUs), every
// controller, leader or standby, on HTTPS with tessera up's CA and its admin token:
//  - kill -9 of the leader during a burst of submissions from several clients while a gang
//    runs: every acknowledged submission is present once, the gang's tasks are re-adopted (same
//    attempt and pids, no restart), no GPU is bound twice, and a job submitted after the kill is
//    accepted by the new leader and its process is running within 5 s of the kill;
//  - one etcd member killed, or hung: nothing happens (the same leader acknowledges on);
//  - etcd's quorum lost: no controller acknowledges, healthz says why, and submissions are
//    acknowledged again once it returns;
//  - the CLI finds the new leader over HTTPS through --state, and a standby refuses plain HTTP;
//  - `tessera up` on the same state, without --store, brings the etcd cluster back (and
//    refuses --store sqlite there);
//  - the controllers reach etcd over HTTPS with a client certificate, the only way in.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "server/process_harness.h"

namespace tessera::testing {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string BatchJob(const std::string& name, int gpus, const std::string& seconds) {
  return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name +
         "}\nspec: {tasks: 1, gpusPerTask: " + std::to_string(gpus) + ", command: [sleep, \"" +
         seconds + "\"]}\n";
}

// A client of one controller over HTTPS, checked against `ca`, presenting `token`.
std::unique_ptr<httplib::Client> ClientOf(const std::string& url, const std::string& token,
                                          const std::string& ca) {
  auto c = std::make_unique<httplib::Client>(url);
  c->set_ca_cert_path(ca);
  if (!token.empty()) c->set_bearer_token_auth(token);
  c->set_connection_timeout(1, 0);
  c->set_read_timeout(10, 0);
  return c;
}

// Talks to whichever controller leads: a refused connection or a standby's 503 moves on.
class Follower {
 public:
  // `token`: tessera up's admin token (authentication is on by default); `ca`: its CA.
  Follower(std::vector<std::string> urls, std::string token, std::string ca)
      : urls_(std::move(urls)), token_(std::move(token)), ca_(std::move(ca)) {}
  enum class Outcome { kAcknowledged, kRefused, kUnknown };
  // POST /v1/jobs until acknowledged (201), refused for good, or `seconds` pass.
  Outcome Submit(const std::string& spec, const std::string& query, double seconds,
                 int* status = nullptr) {
    const auto deadline =
        Clock::now() + std::chrono::milliseconds(static_cast<long>(seconds * 1000));
    bool sent_unanswered = false;
    while (Clock::now() < deadline) {
      auto c = ClientOf(urls_[current_ % urls_.size()], token_, ca_);
      auto r = c->Post("/v1/jobs" + query, spec, "application/yaml");
      if (status != nullptr) *status = r ? r->status : 0;
      if (r && r->status == 201) return Outcome::kAcknowledged;
      // 409 after an unanswered try: the first one may have committed it.
      if (r && r->status == 409) return sent_unanswered ? Outcome::kUnknown : Outcome::kRefused;
      if (!r && r.error() != httplib::Error::Connection) sent_unanswered = true;
      if (r && r->status != 503) return Outcome::kRefused;
      ++current_;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return sent_unanswered ? Outcome::kUnknown : Outcome::kRefused;
  }
  // GET from the leader.
  Json Get(const std::string& path, double seconds = 10) {
    const auto deadline =
        Clock::now() + std::chrono::milliseconds(static_cast<long>(seconds * 1000));
    while (Clock::now() < deadline) {
      auto c = ClientOf(urls_[current_ % urls_.size()], token_, ca_);
      auto r = c->Get(path);
      if (r && r->status == 200) return Json::parse(r->body, nullptr, false);
      if (r && r->status != 503) return Json();
      ++current_;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Json();
  }

 private:
  std::vector<std::string> urls_;
  std::string token_;
  std::string ca_;
  std::size_t current_ = 0;
};

class FailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/etcd", X_OK) != 0)
      GTEST_SKIP() << "etcd is not installed (scripts/install-deps.sh: etcd-server)";
    tessera_ = BinDir() + "/tessera";
    auto up = RunCommand({tessera_, "up", "--state", state_.path(), "--store", "etcd",
                          "--controllers", "2", "--agents", "2", "--gpus", "4xH100"},
                         60);
    ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
    up_ = true;
    const std::string list = ReadFile(state_.path() + "/endpoint");
    for (std::size_t start = 0; start < list.size();) {
      std::size_t end = list.find_first_of(",\n", start);
      if (end == std::string::npos) end = list.size();
      if (end > start) urls_.push_back(list.substr(start, end - start));
      start = end + 1;
    }
    ASSERT_EQ(urls_.size(), 2u) << list;
    for (const auto& u : urls_) ASSERT_EQ(u.rfind("https://", 0), 0u) << list;
    ca_ = state_.path() + "/tls/ca.crt";
    token_ = ReadFile(state_.path() + "/auth/admin.token");
    while (!token_.empty() && std::isspace(static_cast<unsigned char>(token_.back())))
      token_.pop_back();
  }
  void TearDown() override {
    if (up_) RunCommand({tessera_, "down", "--state", state_.path()}, 60);
  }
  // The leader's {url, pid}, as the controllers list it.
  Json Leader() {
    for (const auto& u : urls_) {
      auto c = ClientOf(u, token_, ca_);
      c->set_connection_timeout(0, 300'000);
      c->set_read_timeout(3, 0);
      auto r = c->Get("/v1/controllers");
      if (!r || r->status != 200) continue;
      const Json doc = Json::parse(r->body, nullptr, false);
      if (!doc.is_object()) continue;
      for (const auto& ctl : doc.value("controllers", Json::array()))
        if (ctl.value("leader", false)) return ctl;
    }
    return Json();
  }
  pid_t EtcdMember(int i) {
    return std::stoi(ReadFile(state_.path() + "/etcd/m" + std::to_string(i) + ".pid"));
  }
  int Health(const std::string& url, std::string* body) {
    auto c = ClientOf(url, "", ca_);
    c->set_connection_timeout(0, 300'000);
    c->set_read_timeout(3, 0);
    auto r = c->Get("/v1/healthz");
    if (body != nullptr) *body = r ? r->body : "";
    return r ? r->status : 0;
  }

  Watchdog watchdog_{std::chrono::seconds(90), "FailoverTest"};
  TempDir state_{"tessera-failover"};
  std::string token_;  // tessera up's admin token
  std::string ca_;     // tessera up's CA
  std::string tessera_;
  std::vector<std::string> urls_;
  bool up_ = false;
};

TEST_F(FailoverTest, KillingTheLeaderLosesNoAcknowledgedJobAndReadoptsTheGang) {
  Follower api(urls_, token_, ca_);
  ASSERT_EQ(api.Submit("apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: gang}\n"
                       "spec: {workers: 2, gpusPerWorker: 2, command: [sleep, \"120\"]}\n",
                       "", 10),
            Follower::Outcome::kAcknowledged);
  Json gang;
  ASSERT_TRUE(WaitFor(
      [&] {
        gang = api.Get("/v1/jobs/default/gang");
        int running = 0;
        for (const auto& t : gang.value("taskList", Json::array()))
          running += t.value("state", "") == "Running" && t.value("pid", 0) > 0;
        return running == 2;
      },
      15))
      << gang.dump();
  std::map<std::int64_t, int> gang_pids;  // task id -> pid
  for (const auto& t : gang["taskList"])
    gang_pids[t["id"].get<std::int64_t>()] = t["pid"].get<int>();
  const Json old_leader = Leader();
  ASSERT_TRUE(old_leader.is_object());

  // 4 clients, 1,000 held submissions (stored, not scheduled); the leader dies a third in.
  constexpr int kClients = 4, kPerClient = 250;
  std::mutex mu;
  std::set<std::string> acknowledged, maybe;
  std::atomic<int> done{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      Follower mine(urls_, token_, ca_);
      for (int i = 0; i < kPerClient; ++i) {
        const std::string name = "s-" + std::to_string(c) + "-" + std::to_string(i);
        const auto outcome = mine.Submit(BatchJob(name, 1, "1"), "?hold=true", 20);
        std::lock_guard lock(mu);
        if (outcome == Follower::Outcome::kAcknowledged) acknowledged.insert(name);
        if (outcome == Follower::Outcome::kUnknown) maybe.insert(name);
        ++done;
      }
    });
  }
  ASSERT_TRUE(WaitFor([&] { return done.load() >= 300; }, 30));
  ASSERT_EQ(::kill(old_leader["pid"].get<int>(), SIGKILL), 0);
  const auto killed = Clock::now();
  // A job submitted after the kill is accepted by the new leader and runs within 5 s.
  Follower after_api(urls_, token_, ca_);
  ASSERT_EQ(after_api.Submit(BatchJob("after", 1, "120"), "", 5), Follower::Outcome::kAcknowledged);
  const auto accepted = Clock::now();
  Json after;
  ASSERT_TRUE(WaitFor(
      [&] {
        after = after_api.Get("/v1/jobs/default/after", 1);
        for (const auto& t : after.value("taskList", Json::array()))
          if (t.value("state", "") == "Running" && t.value("pid", 0) > 0) return true;
        return false;
      },
      5.0 - std::chrono::duration<double>(Clock::now() - killed).count()))
      << after.dump();
  const double running_s = std::chrono::duration<double>(Clock::now() - killed).count();
  std::printf(
      "failover: submission accepted %.2f s and running %.2f s after kill -9 of the leader\n",
      std::chrono::duration<double>(accepted - killed).count(), running_s);
  EXPECT_LT(running_s, 5.0);
  for (auto& t : clients) t.join();

  const Json new_leader = Leader();
  ASSERT_TRUE(new_leader.is_object());
  EXPECT_NE(new_leader["url"], old_leader["url"]);
  // The CLI, given only --state, follows the leader over HTTPS (tessera.config: CA, token).
  auto listed =
      RunCommand({tessera_, "get", "controllers", "-o", "json", "--state", state_.path()}, 20);
  ASSERT_EQ(listed.exit_code, 0) << listed.out << listed.err;
  EXPECT_NE(listed.out.find(new_leader["url"].get<std::string>()), std::string::npos) << listed.out;
  // Every acknowledged submission is there, once.
  const Json jobs = api.Get("/v1/jobs?limit=0");
  std::map<std::string, int> seen;
  for (const auto& j : jobs["jobs"]) ++seen[j.value("name", "")];
  EXPECT_GE(acknowledged.size(), 900u) << "too few acknowledged to mean anything";
  for (const auto& name : acknowledged) EXPECT_EQ(seen[name], 1) << name;
  for (const auto& [name, count] : seen) {
    EXPECT_EQ(count, 1) << name;
    if (name.starts_with("s-")) {
      EXPECT_TRUE(acknowledged.contains(name) || maybe.contains(name)) << name << " never sent";
    }
  }
  // The gang was re-adopted, not restarted: the same tasks, attempt and processes.
  gang = api.Get("/v1/jobs/default/gang");
  EXPECT_EQ(gang.value("restarts", -1), 0) << gang.dump();
  int readopted = 0;
  for (const auto& t : gang["taskList"]) {
    auto it = gang_pids.find(t["id"].get<std::int64_t>());
    ASSERT_NE(it, gang_pids.end()) << "a new task: the gang restarted: " << gang.dump();
    EXPECT_EQ(t["pid"].get<int>(), it->second);
    EXPECT_EQ(t.value("state", ""), "Running");
    readopted += ProcessAlive(it->second);
  }
  EXPECT_EQ(readopted, 2);
  // No GPU bound twice among live tasks.
  std::set<std::pair<std::string, int>> bound;
  for (const auto& job : {gang, after_api.Get("/v1/jobs/default/after")}) {
    for (const auto& t : job["taskList"]) {
      const std::string state = t.value("state", "");
      if (state != "Running" && state != "Assigned") continue;
      for (int g : t["gpus"])
        EXPECT_TRUE(bound.insert({t.value("node", ""), g}).second)
            << "GPU " << g << " of " << t.value("node", "") << " bound twice";
    }
  }
  EXPECT_EQ(bound.size(), 5u);
}

TEST_F(FailoverTest, OneEtcdMemberKilledChangesNothing) {
  const Json leader = Leader();
  ASSERT_TRUE(leader.is_object()) << ReadFile(state_.path() + "/endpoint");
  // The standby speaks HTTPS too: healthz over TLS says standby, plain HTTP gets nothing.
  const std::string standby = urls_[0] == leader["url"] ? urls_[1] : urls_[0];
  std::string body;
  EXPECT_EQ(Health(standby, &body), 503);
  EXPECT_NE(body.find("\"standby\""), std::string::npos) << body;
  httplib::Client plain("http://" + standby.substr(std::string("https://").size()));
  plain.set_connection_timeout(1, 0);
  plain.set_read_timeout(2, 0);
  auto r = plain.Get("/v1/healthz");
  EXPECT_TRUE(!r || r->status != 503) << "plain HTTP answered by a standby";
  ::kill(EtcdMember(0), SIGKILL);  // the first endpoint: the one every controller talks to
  Follower api(urls_, token_, ca_);
  for (int i = 0; i < 20; ++i) {
    int status = 0;
    EXPECT_EQ(api.Submit(BatchJob("m-" + std::to_string(i), 0, "1"), "?hold=true", 5, &status),
              Follower::Outcome::kAcknowledged)
        << status;
  }
  const Json still = Leader();
  EXPECT_EQ(still, leader) << "the leader changed: " << still.dump();
  EXPECT_EQ(Health(leader["url"], &body), 200) << body;
}

TEST_F(FailoverTest, OneEtcdMemberHungChangesNothing) {
  const Json leader = Leader();
  ASSERT_TRUE(leader.is_object());
  ::kill(EtcdMember(0), SIGSTOP);  // answers nothing, connections hang: worse than dead
  Follower api(urls_, token_, ca_);
  for (int i = 0; i < 20; ++i) {
    int status = 0;
    EXPECT_EQ(api.Submit(BatchJob("h-" + std::to_string(i), 0, "1"), "?hold=true", 5, &status),
              Follower::Outcome::kAcknowledged)
        << status;
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // past a lease TTL
  EXPECT_EQ(Leader(), leader);
  ::kill(EtcdMember(0), SIGCONT);
}

TEST_F(FailoverTest, LosingQuorumStopsAcknowledgementsUntilItReturns) {
  Follower api(urls_, token_, ca_);
  ASSERT_EQ(api.Submit(BatchJob("before", 0, "1"), "?hold=true", 5),
            Follower::Outcome::kAcknowledged);
  // Two of three members stop answering (SIGSTOP): no quorum.
  ::kill(EtcdMember(1), SIGSTOP);
  ::kill(EtcdMember(2), SIGSTOP);
  int status = 0;
  EXPECT_NE(api.Submit(BatchJob("during", 0, "1"), "?hold=true", 4, &status),
            Follower::Outcome::kAcknowledged)
      << status;
  // Every controller says it cannot serve, and why.
  std::string why;
  EXPECT_TRUE(WaitFor(
      [&] {
        bool all_unready = true;
        for (const auto& u : urls_) {
          std::string body;
          const int code = Health(u, &body);
          all_unready = all_unready && code != 200;
          if (body.find("etcd") != std::string::npos) why = body;
        }
        return all_unready && !why.empty();
      },
      10))
      << why;
  std::printf("healthz while etcd has no quorum: %s", why.c_str());
  ::kill(EtcdMember(1), SIGCONT);
  ::kill(EtcdMember(2), SIGCONT);
  const auto back = Clock::now();
  EXPECT_EQ(api.Submit(BatchJob("after", 0, "1"), "?hold=true", 15),
            Follower::Outcome::kAcknowledged);
  std::printf("acknowledging again %.2f s after quorum returned\n",
              std::chrono::duration<double>(Clock::now() - back).count());
  const Json jobs = api.Get("/v1/jobs?limit=0");
  std::set<std::string> names;
  for (const auto& j : jobs["jobs"]) names.insert(j.value("name", ""));
  EXPECT_TRUE(names.contains("before"));
  EXPECT_TRUE(names.contains("after"));
}

// The controllers reach etcd over HTTPS with their client certificate: a member answers that
// certificate, and refuses plain HTTP and a caller without one.
void ExpectEtcdOnlyOverHttpsWithClientCertificate(const std::string& state) {
  std::istringstream ports(ReadFile(state + "/etcd/ports"));
  int client_port = 0;
  ASSERT_TRUE(ports >> client_port) << "no " << state << "/etcd/ports";
  const std::string https = "https://127.0.0.1:" + std::to_string(client_port);
  httplib::Client with_cert(https, state + "/tls/controller-client.crt",
                            state + "/tls/controller-client.key");
  with_cert.set_ca_cert_path((state + "/tls/ca.crt").c_str());
  with_cert.enable_server_certificate_verification(true);
  auto ok = with_cert.Get("/health");
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200);
  httplib::Client without_cert(https);
  without_cert.set_ca_cert_path((state + "/tls/ca.crt").c_str());
  without_cert.set_connection_timeout(1, 0);
  without_cert.set_read_timeout(1, 0);
  auto refused = without_cert.Get("/health");
  EXPECT_TRUE(!refused || refused->status != 200) << "etcd answered a caller without a certificate";
  httplib::Client plain("http://127.0.0.1:" + std::to_string(client_port));
  plain.set_connection_timeout(1, 0);
  plain.set_read_timeout(1, 0);
  auto plain_answer = plain.Get("/health");
  EXPECT_TRUE(!plain_answer || plain_answer->status != 200) << "etcd answered plain HTTP";
}

TEST_F(FailoverTest, UpOnTheSameStatePicksEtcdAgain) {
  ExpectEtcdOnlyOverHttpsWithClientCertificate(state_.path());
  Follower api(urls_, token_, ca_);
  ASSERT_EQ(api.Submit(BatchJob("kept", 0, "1"), "?hold=true", 5),
            Follower::Outcome::kAcknowledged);
  ASSERT_EQ(RunCommand({tessera_, "down", "--state", state_.path()}, 60).exit_code, 0);
  up_ = false;
  auto sqlite = RunCommand({tessera_, "up", "--state", state_.path(), "--store", "sqlite"}, 20);
  EXPECT_NE(sqlite.exit_code, 0);
  EXPECT_NE(sqlite.err.find("keeps its state in etcd"), std::string::npos) << sqlite.err;
  auto again = RunCommand(
      {tessera_, "up", "--state", state_.path(), "--agents", "2", "--gpus", "4xH100"}, 60);
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  up_ = true;
  auto listed =
      RunCommand({tessera_, "get", "controllers", "-o", "json", "--state", state_.path()}, 20);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const Json controllers = Json::parse(listed.out, nullptr, false);
  ASSERT_TRUE(controllers.is_array()) << listed.out;
  EXPECT_EQ(controllers.size(), 2u) << listed.out;
  auto job = RunCommand({tessera_, "get", "jobs", "--state", state_.path()}, 20);
  EXPECT_NE(job.out.find("kept"), std::string::npos) << job.out << job.err;
}

}  // namespace
}  // namespace tessera::testing
