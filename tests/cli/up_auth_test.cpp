// ctest-labels: e2e security
// `tessera up` with authentication and TLS on by default: it writes an admin token and a CLI
// context into its state directory, serves HTTPS with a certificate from a local CA, and the
// CLI finds both through --state; without a token (or with a wrong one) the API answers 401,
// a user of another team 403; `up --insecure` is plain HTTP without authentication.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "server/process_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

class UpAuthTest : public ::testing::Test {
 protected:
  void SetUp() override { tessera_ = BinDir() + "/tessera"; }
  void TearDown() override {
    if (up_) RunCommand({tessera_, "down", "--state", state_.path()}, 60);
  }
  CommandResult Tessera(std::vector<std::string> args,
                        std::vector<std::string> env = {"TESSERA_TOKEN=", "TESSERA_SERVER="}) {
    args.insert(args.begin(), tessera_);
    env.push_back("TESSERA_STATE=");
    env.push_back("TESSERA_CONFIG=");
    return RunCommand(args, 60, "", env);
  }
  std::string Endpoint() {
    std::ifstream in(state_.path() + "/endpoint");
    std::string url;
    std::getline(in, url);
    return url;
  }
  unsigned Mode(const std::string& file) {
    struct stat st {};
    return ::stat((state_.path() + "/" + file).c_str(), &st) == 0 ? st.st_mode & 0777 : 07777;
  }

  std::string tessera_;
  TempDir state_{"tessera-up-auth"};
  bool up_ = false;
};

TEST_F(UpAuthTest, TokensContextAndTlsFoundThroughState) {
  Watchdog watchdog(90s, "up auth test");
  auto up = Tessera({"up", "--state", state_.path(), "--agents", "1", "--gpus", "2xH100"});
  up_ = true;
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  const std::string url = Endpoint();
  EXPECT_EQ(url.rfind("https://127.0.0.1:", 0), 0u) << url;
  for (const char* f : {"auth/admin.token", "auth/tokens.csv", "auth/bootstrap.token",
                        "tessera.config", "tls/server.key", "tls/ca.key", "tesserad.db"}) {
    EXPECT_EQ(Mode(f) & 0077, 0u) << f << " mode " << std::oct << Mode(f);
  }

  // The CLI finds the server, the CA and the admin token through --state.
  auto nodes = Tessera({"get", "nodes", "--state", state_.path()});
  EXPECT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_NE(nodes.out.find("node-0"), std::string::npos) << nodes.out;
  const std::string ca = state_.path() + "/tls/ca.crt";

  // The same server without a token, or with a wrong one: 401.
  auto anonymous = Tessera({"get", "jobs", "--server", url, "--ca-file", ca});
  EXPECT_NE(anonymous.exit_code, 0);
  EXPECT_NE(anonymous.err.find("authentication required"), std::string::npos) << anonymous.err;
  auto wrong = Tessera(
      {"get", "jobs", "--server", url, "--ca-file", ca, "--token", "wrong-token-0123456789abcdef"});
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.err.find("not valid"), std::string::npos) << wrong.err;
  // The admin token from $TESSERA_TOKEN works with --server; without the CA, TLS fails.
  std::ifstream admin_file(state_.path() + "/auth/admin.token");
  std::string admin;
  std::getline(admin_file, admin);
  auto by_env = Tessera({"get", "nodes", "--server", url, "--ca-file", ca},
                        {"TESSERA_TOKEN=" + admin, "TESSERA_SERVER="});
  EXPECT_EQ(by_env.exit_code, 0) << by_env.err;
  auto no_ca = Tessera({"get", "nodes", "--server", url, "--token", admin});
  EXPECT_NE(no_ca.exit_code, 0) << no_ca.out;
  // A context file of one's own.
  auto context = Tessera({"get", "nodes", "--context-file", state_.path() + "/tessera.config"});
  EXPECT_EQ(context.exit_code, 0) << context.err;
}

TEST_F(UpAuthTest, InsecureIsPlainHttpWithoutTokens) {
  Watchdog watchdog(90s, "up insecure test");
  auto up =
      Tessera({"up", "--state", state_.path(), "--agents", "1", "--gpus", "1xH100", "--insecure"});
  up_ = true;
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  const std::string url = Endpoint();
  EXPECT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << url;
  auto anonymous = Tessera({"get", "nodes", "--server", url});
  EXPECT_EQ(anonymous.exit_code, 0) << anonymous.err;
}

}  // namespace
}  // namespace tessera::testing
