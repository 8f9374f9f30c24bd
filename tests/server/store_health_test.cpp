// ctest-labels: integration security
// The store's health at the controller's edge, on the real tesserad: a database with corrupted
// pages refuses to start (instead of answering healthz 200 and acknowledging submissions), and
// a store that stops committing (a file-size limit, as a full disk) makes healthz 503 with the
// reason until a commit succeeds again.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/live_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

std::string Endpoint(const std::string& dir) {
  std::ifstream in(dir + "/endpoint");
  std::string url;
  std::getline(in, url);
  return url;
}

std::vector<std::string> Tesserad(const std::string& dir) {
  return {BinDir() + "/tesserad", "--state",         dir,         "--port", "0",
          "--endpoint-file",      dir + "/endpoint", "--insecure"};
}

TEST(StoreHealthTest, ACorruptedDatabaseRefusesToStart) {
  Watchdog watchdog(30s, "corrupt store test");
  TempDir dir("tessera-corrupt");
  {
    pid_t pid = Spawn(Tesserad(dir.path()), dir.path() + "/first.log");
    ASSERT_TRUE(WaitFor([&] { return !Endpoint(dir.path()).empty(); }, 10));
    Stop(pid, SIGTERM);
  }
  const std::string db = dir.path() + "/tesserad.db";
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h,
                           "CREATE TABLE filler(v BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION "
                           "ALL SELECT i + 1 FROM n WHERE i < 300) INSERT INTO filler SELECT "
                           "randomblob(1000) FROM n;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(h);
    const int fd = ::open(db.c_str(), O_WRONLY);
    std::vector<char> junk(3 * 4096, '\x5a');
    ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), 20 * 4096), static_cast<ssize_t>(junk.size()));
    ::close(fd);
  }
  std::filesystem::remove(dir.path() + "/endpoint");
  const pid_t pid = Spawn(Tesserad(dir.path()), dir.path() + "/second.log");
  int status = 0;
  ASSERT_TRUE(WaitFor([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, 15))
      << "tesserad started on a corrupt database";
  ProcessRegistry::Get().RemovePid(pid);
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_TRUE(Endpoint(dir.path()).empty()) << "it must not have listened";
  const std::string log = ReadFile(dir.path() + "/second.log");
  EXPECT_NE(log.find("failed its integrity check"), std::string::npos) << log;
}

TEST(StoreHealthTest, ACommitFailureMakesTheControllerUnreadyUntilTheStoreRecovers) {
  Watchdog watchdog(60s, "commit failure test");
  TempDir dir("tessera-fsize");
  // Every file tesserad writes is limited to 1 MiB (SIGXFSZ ignored, so writes fail EFBIG,
  // as on a full disk): the WAL fills after some submissions.
  std::string cmd = "trap '' XFSZ; exec prlimit --fsize=1048576:unlimited --";
  for (const auto& a : Tesserad(dir.path())) cmd += " '" + a + "'";
  const pid_t pid = Spawn({"/bin/sh", "-c", cmd}, "/dev/null");
  ASSERT_TRUE(WaitFor([&] { return !Endpoint(dir.path()).empty(); }, 10));
  httplib::Client client(Endpoint(dir.path()));
  client.set_read_timeout(5, 0);
  auto health = client.Get("/v1/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);

  int refused_at = -1;
  const std::string pad(20000, 'x');
  for (int i = 0; i < 400 && refused_at < 0; ++i) {
    const std::string spec =
        "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: j" + std::to_string(i) +
        "}\nspec: {tasks: 1, gpusPerTask: 0, env: {PAD: " + pad + "}, command: [true]}\n";
    auto r = client.Post("/v1/jobs", spec, "application/yaml");
    ASSERT_TRUE(r);
    if (r->status == 503)
      refused_at = i;
    else
      ASSERT_EQ(r->status, 201) << r->body;
  }
  ASSERT_GE(refused_at, 0) << "the store never failed to commit";
  health = client.Get("/v1/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503) << health->body;
  EXPECT_NE(health->body.find("storeError"), std::string::npos) << health->body;

  // The limit lifted, the probe commits and the controller is ready again.
  const std::string lift = "prlimit --pid " + std::to_string(pid) + " --fsize=unlimited";
  ASSERT_EQ(std::system(lift.c_str()), 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        auto h = client.Get("/v1/healthz");
        return h && h->status == 200;
      },
      10));
  auto again = client.Post("/v1/jobs",
                           "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: after}\n"
                           "spec: {tasks: 1, gpusPerTask: 0, command: [true]}\n",
                           "application/yaml");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 201) << again->body;
}

}  // namespace
}  // namespace tessera::testing
