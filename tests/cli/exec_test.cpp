// ctest-labels: e2e security
// `tessera exec` on a real `tessera up` cluster (authentication and TLS on, as by default): a
// command runs in the task's environment and its stdout, stderr and exit code come back; stdin
// is relayed with -i; `-it` runs an interactive shell on a pseudo-terminal, driven here through a
// pty of the test's own (forkpty), window size included. A team member may exec only into their
// teams' jobs (403 with the reason), a user's open sessions are capped (429 with the reason),
// and nobody but the controller may call the agent's endpoint: without a client certificate, or
// with one that is not the controller's, task logs and exec are refused. One cluster for every
// test of the file.
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>

#include "server/process_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

constexpr const char* kAliceToken = "alice-token-0123456789abcdef0123456789";
constexpr const char* kViewerToken = "viewer-token-0123456789abcdef012345678";

class ExecTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::signal(SIGPIPE, SIG_IGN);  // a TLS peer that refuses us may close while we write
    state_ = new TempDir("tessera-exec");
    ::mkdir((state_->path() + "/auth").c_str(), 0700);
    // Users added by hand are kept by `up` (up_credentials.h).
    std::ofstream(state_->path() + "/auth/tokens.csv")
        << kAliceToken << ",alice,1001,\"team:nlp\"\n"
        << kViewerToken << ",vera,1002,\"tessera:viewers\"\n";
    auto up = Tessera({"up", "--state", state_->path(), "--agents", "1", "--gpus", "2xH100"});
    ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
    up_ = true;
    for (const auto& [name, queue] : {std::pair{"dev", "default"}, std::pair{"nlp-dev", "nlp"}}) {
      const std::string spec = state_->path() + "/" + std::string(name) + ".yaml";
      std::ofstream(spec) << "apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: " << name
                          << ", queue: " << queue
                          << "}\nspec: {gpus: 1, gracePeriodSeconds: 1, env: {GREETING: hello-"
                          << name << "}, command: [sleep, '3600']}\n";
      auto submit = Tessera({"submit", "-f", spec});
      ASSERT_EQ(submit.exit_code, 0) << submit.err;
    }
    ASSERT_TRUE(WaitFor(
        [] {
          auto jobs = Tessera({"get", "jobs", "-o", "json"});
          auto doc = Json::parse(jobs.out, nullptr, false);
          if (!doc.is_array() || doc.size() != 2) return false;
          for (const auto& j : doc)
            if (j["status"]["phase"] != "Running") return false;
          return true;
        },
        30));
  }
  static void TearDownTestSuite() {
    if (up_) Tessera({"down", "--state", state_->path()});
    delete state_;
  }
  static CommandResult Tessera(std::vector<std::string> args, const std::string& stdin_text = "",
                               std::vector<std::string> env = {}) {
    args.insert(args.begin(), BinDir() + "/tessera");
    // Before any `--`, after which everything is the remote command.
    if (args[1] != "up" && args[1] != "down" && env.empty())
      args.insert(args.begin() + 2, {"--state", state_->path()});
    for (const char* e : {"TESSERA_TOKEN=", "TESSERA_SERVER=", "TESSERA_STATE=", "TESSERA_CONFIG="})
      env.push_back(e);
    return RunCommand(args, 60, stdin_text, env);
  }
  // As alice or vera: the cluster's URL and CA, their own token.
  static CommandResult As(const char* token, std::vector<std::string> args) {
    std::ifstream in(state_->path() + "/endpoint");
    std::string url;
    std::getline(in, url);
    args.insert(args.begin() + 1,
                {"--server", url, "--ca-file", state_->path() + "/tls/ca.crt", "--token", token});
    return Tessera(args, "", {"TESSERA_X=1"});
  }
  static Json Node() {
    auto nodes = Tessera({"get", "nodes", "-o", "json"});
    auto doc = Json::parse(nodes.out, nullptr, false);
    return doc.is_array() && !doc.empty() ? doc[0] : Json();
  }
  // The task of the job's rank 0, from the API with the admin token.
  static std::int64_t TaskId(const std::string& name) {
    std::ifstream in(state_->path() + "/endpoint"), token(state_->path() + "/auth/admin.token");
    std::string url, admin;
    std::getline(in, url);
    std::getline(token, admin);
    httplib::Client c(url);
    c.set_ca_cert_path((state_->path() + "/tls/ca.crt").c_str());
    c.enable_server_certificate_verification(true);
    c.set_bearer_token_auth(admin);
    auto r = c.Get(("/v1/jobs/default/" + name).c_str());
    if (!r || r->status != 200) return 0;
    auto doc = Json::parse(r->body, nullptr, false);
    if (!doc.is_object() || !doc.contains("taskList") || doc["taskList"].empty()) return 0;
    return doc["taskList"].back().value("id", std::int64_t{0});
  }

  static TempDir* state_;
  static bool up_;
};
TempDir* ExecTest::state_ = nullptr;
bool ExecTest::up_ = false;

TEST_F(ExecTest, RunsInTheTaskEnvironmentWithOutputAndExitCode) {
  Watchdog watchdog(60s, "exec test");
  auto r = Tessera({"exec", "dev", "--", "sh", "-c",
                    "pwd; echo $GREETING rank=$RANK gpus=$CUDA_VISIBLE_DEVICES; echo oops >&2; "
                    "exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("/work/task-"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hello-dev rank=0 gpus=0"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("oops"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("oops"), std::string::npos) << "stderr apart from stdout: " << r.out;

  auto piped =
      Tessera({"exec", "-i", "dev", "--", "sh", "-c", "tr a-z A-Z; echo done"}, "from stdin\n");
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, "FROM STDIN\ndone\n");

  auto missing = Tessera({"exec", "dev", "--", "no-such-command-here"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("no-such-command-here"), std::string::npos) << missing.err;
}

// Reads from `fd` until `want` appears in what was read or `limit` passes.
std::string ReadUntil(int fd, const std::string& want, std::chrono::milliseconds limit) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buf[4096];
  while (got.find(want) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

TEST_F(ExecTest, InteractiveShellOnAPseudoTerminal) {
  Watchdog watchdog(60s, "exec -it test");
  winsize ws{};
  ws.ws_row = 33;
  ws.ws_col = 101;
  int master = -1;
  const std::string tessera = BinDir() + "/tessera", state = state_->path();
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    for (const char* e : {"TESSERA_TOKEN", "TESSERA_SERVER", "TESSERA_CONFIG"}) ::unsetenv(e);
    ::execl(tessera.c_str(), tessera.c_str(), "exec", "-it", "dev", "--state", state.c_str(), "--",
            "bash", "--norc", "-i", nullptr);
    ::_exit(127);
  }
  ProcessRegistry::Get().AddPid(pid);
  const std::string cmd = "echo sum=$((6*7)); tty; stty size\n";
  ASSERT_EQ(::write(master, cmd.data(), cmd.size()), static_cast<ssize_t>(cmd.size()));
  const std::string got = ReadUntil(master, "33 101", 20s);
  EXPECT_NE(got.find("sum=42"), std::string::npos) << got;
  EXPECT_NE(got.find("/dev/pts/"), std::string::npos) << "a terminal on the agent: " << got;
  EXPECT_NE(got.find("33 101"), std::string::npos) << "the window size passed on: " << got;
  const std::string bye = "exit 4\n";
  ASSERT_EQ(::write(master, bye.data(), bye.size()), static_cast<ssize_t>(bye.size()));
  int status = 0;
  ASSERT_TRUE(WaitFor([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, 20));
  ProcessRegistry::Get().RemovePid(pid);
  ::close(master);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 4);
}

TEST_F(ExecTest, OnlyTeamMembersMayExec) {
  Watchdog watchdog(60s, "exec authorisation test");
  auto own =
      As(kAliceToken, {"exec", "nlp-dev", "--queue", "nlp", "--", "sh", "-c", "echo $GREETING"});
  EXPECT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.out, "hello-nlp-dev\n");
  auto other = As(kAliceToken, {"exec", "dev", "--queue", "default", "--", "true"});
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("user alice may not exec into jobs of queue default"), std::string::npos)
      << other.err;
  auto viewer = As(kViewerToken, {"exec", "nlp-dev", "--queue", "nlp", "--", "true"});
  EXPECT_NE(viewer.exit_code, 0);
  EXPECT_NE(viewer.err.find("may not exec into jobs of queue nlp"), std::string::npos)
      << viewer.err;
}

// Open sessions are capped per user (tesserad --max-exec-sessions-per-user, 4 by default): the
// fifth of alice's is refused with 429 and the reason, and ending one makes room again.
TEST_F(ExecTest, SessionsPerUserAreCapped) {
  Watchdog watchdog(60s, "exec session cap test");
  std::ifstream in(state_->path() + "/endpoint");
  std::string url;
  std::getline(in, url);
  httplib::Client c(url);
  c.set_ca_cert_path((state_->path() + "/tls/ca.crt").c_str());
  c.enable_server_certificate_verification(true);
  c.set_bearer_token_auth(kAliceToken);
  const std::string base = "/v1/exec/nlp/nlp-dev?rank=0";
  const std::string body = R"({"command": ["sleep", "30"]})";
  auto open = [&] { return c.Post(base.c_str(), body, "application/json"); };
  std::vector<std::string> sessions;
  for (int i = 0; i < 4; ++i) {
    auto r = open();
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    ASSERT_EQ(r->status, 201) << r->body;
    sessions.push_back(Json::parse(r->body).value("session", ""));
  }
  auto refused = open();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429) << refused->body;
  EXPECT_NE(refused->body.find("user alice has 4 exec sessions open"), std::string::npos)
      << refused->body;
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  auto end = [&](const std::string& session) {
    auto r = c.Delete((base + "&session=" + session).c_str());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 204) << r->body;
  };
  end(sessions.back());
  sessions.pop_back();
  auto again = open();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 201) << again->body;
  if (again->status == 201) sessions.push_back(Json::parse(again->body).value("session", ""));
  for (const auto& s : sessions) end(s);
}

// The agent's endpoint answers task logs and exec only to the controller's client certificate.
TEST_F(ExecTest, AgentEndpointAnswersOnlyTheController) {
  Watchdog watchdog(60s, "agent endpoint test");
  const Json node = Node();
  const std::string url = node.value("agentUrl", "");
  ASSERT_EQ(url.rfind("https://127.0.0.1:", 0), 0u) << node.dump();
  const std::int64_t task = TaskId("dev");
  ASSERT_GT(task, 0);
  const std::string tls = state_->path() + "/tls/";
  const std::string log = "/v1/tasks/" + std::to_string(task) + "/log";
  const std::string exec = "/v1/tasks/" + std::to_string(task) + "/exec";
  const std::string body = R"({"command": ["id"]})";
  auto client = [&](const std::string& cert, const std::string& key) {
    httplib::Client c = cert.empty() ? httplib::Client(url) : httplib::Client(url, cert, key);
    c.set_ca_cert_path((tls + "ca.crt").c_str());
    c.enable_server_certificate_verification(true);
    c.set_connection_timeout(3, 0);
    return c;
  };

  // Any local process: TLS, but no client certificate.
  auto anonymous = client("", "");
  auto health = anonymous.Get("/v1/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  auto read = anonymous.Get(log.c_str());
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, 403) << read->body;
  EXPECT_NE(read->body.find("only the controller"), std::string::npos) << read->body;
  auto start = anonymous.Post(exec.c_str(), body, "application/json");
  ASSERT_TRUE(start);
  EXPECT_EQ(start->status, 403) << start->body;
  // Plain HTTP on the HTTPS port is not served.
  std::string plain = url;
  plain.replace(0, 5, "http");
  httplib::Client http(plain);
  http.set_connection_timeout(3, 0);
  http.set_read_timeout(3, 0);
  auto over_http = http.Get(log.c_str());
  EXPECT_TRUE(!over_http || over_http->status != 200);
  // A certificate of the same CA that is not a client certificate (the agents' own): refused in
  // the handshake.
  auto agent_cert = client(tls + "agent.crt", tls + "agent.key");
  auto as_agent = agent_cert.Get(log.c_str());
  EXPECT_TRUE(!as_agent || as_agent->status == 403);
  // The controller's client certificate: answered (so the refusals above are the check's).
  auto controller = client(tls + "controller-client.crt", tls + "controller-client.key");
  auto as_controller = controller.Get(log.c_str());
  ASSERT_TRUE(as_controller) << httplib::to_string(as_controller.error());
  EXPECT_EQ(as_controller->status, 200) << as_controller->body;
  // And through the controller, with a token, logs work.
  auto logs = Tessera({"logs", "dev"});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
}

}  // namespace
}  // namespace tessera::testing
