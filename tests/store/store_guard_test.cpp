// ctest-labels: unit security
// Opening a SQLite store safely: the lock is on the database file itself (a symlink or a hard
// link to a store in use is refused), corrupted pages refuse the start, and a missing, empty or
// foreign database is refused where the cluster marker says a cluster kept its state.
#include "store/store_guard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "store/sqlite_store.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class StoreGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-guard-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/a");
    fs::create_directories(dir_ + "/b");
    path_ = dir_ + "/a/tesserad.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A store with its schema and some pages of data; closed (WAL checkpointed) on return.
  void CreateStore(const std::string& path, int filler_rows = 0) {
    {
      auto store = SqliteStore::Open(path);
      ASSERT_TRUE(store.has_value()) << store.error().message;
    }
    if (filler_rows == 0) return;
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TABLE filler(id INTEGER PRIMARY KEY, v BLOB);"
                           "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE "
                           "i < 300) INSERT INTO filler SELECT i, randomblob(1000) FROM n;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  static std::string Error(const Result<std::unique_ptr<SqliteStore>>& r) {
    return r ? std::string("(opened)") : r.error().message;
  }

  std::string dir_, path_;
};

TEST_F(StoreGuardTest, ASymlinkToAStoreInUseIsRefused) {
  auto first = SqliteStore::Open(path_);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  const std::string link = dir_ + "/b/other-name.db";
  fs::create_symlink(path_, link);
  auto second = SqliteStore::Open(link);
  ASSERT_FALSE(second.has_value()) << "two controllers on one database through a symlink";
  EXPECT_NE(second.error().message.find("in use by another process (pid " +
                                        std::to_string(::getpid()) + ")"),
            std::string::npos)
      << second.error().message;
  // A symlinked directory and a hard link reach the same file too.
  fs::create_directory_symlink(dir_ + "/a", dir_ + "/b/dir-link");
  EXPECT_FALSE(SqliteStore::Open(dir_ + "/b/dir-link/tesserad.db").has_value());
  fs::create_hard_link(path_, dir_ + "/b/hard.db");
  EXPECT_FALSE(SqliteStore::Open(dir_ + "/b/hard.db").has_value());
  // Once the first is closed, the symlink opens the same store.
  first->reset();
  auto again = SqliteStore::Open(link);
  EXPECT_TRUE(again.has_value()) << Error(again);
}

TEST_F(StoreGuardTest, CorruptedPagesRefuseTheStart) {
  CreateStore(path_, 300);
  ASSERT_FALSE(fs::exists(path_ + "-wal") && fs::file_size(path_ + "-wal") > 0);
  const auto size = fs::file_size(path_);
  ASSERT_GT(size, 40u * 4096);
  {
    // Pages 20..22 of the filler table's b-tree overwritten, as a bad disk would.
    const int fd = ::open(path_.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    std::vector<char> junk(3 * 4096, '\x5a');
    ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), 20 * 4096), static_cast<ssize_t>(junk.size()));
    ::close(fd);
  }
  auto store = SqliteStore::Open(path_);
  ASSERT_FALSE(store.has_value()) << "a corrupt database must not start";
  EXPECT_NE(store.error().message.find("failed its integrity check"), std::string::npos)
      << store.error().message;
  EXPECT_NE(store.error().message.find("restore it from a backup"), std::string::npos);
}

TEST_F(StoreGuardTest, AnEmptyOrMissingDatabaseIsRefusedWhereAClusterWas) {
  CreateStore(path_);
  auto marker = ReadClusterMarker(fs::canonical(path_).string());
  ASSERT_TRUE(marker.has_value());
  ASSERT_EQ(marker->size(), 32u) << "the marker names the cluster";
  fs::resize_file(path_, 0);
  auto empty = SqliteStore::Open(path_);
  ASSERT_FALSE(empty.has_value()) << "a zero-length database silently started empty";
  EXPECT_NE(empty.error().message.find("is empty (0 bytes), but " + path_ +
                                       ".cluster says cluster " + *marker),
            std::string::npos)
      << empty.error().message;
  EXPECT_EQ(fs::file_size(path_), 0u) << "nothing written over it";
  fs::remove(path_);
  auto missing = SqliteStore::Open(path_);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("is missing"), std::string::npos) << Error(missing);
  // Removing the marker is the deliberate way to start a new cluster here.
  fs::remove(path_ + ".cluster");
  auto fresh = SqliteStore::Open(path_);
  EXPECT_TRUE(fresh.has_value()) << Error(fresh);
}

TEST_F(StoreGuardTest, AnotherClustersDatabaseIsRefused) {
  CreateStore(path_);
  const std::string other = dir_ + "/b/tesserad.db";
  CreateStore(other);
  fs::copy_file(other, path_, fs::copy_options::overwrite_existing);
  auto store = SqliteStore::Open(path_);
  ASSERT_FALSE(store.has_value());
  EXPECT_NE(store.error().message.find("refusing to start on the wrong database"),
            std::string::npos)
      << store.error().message;
}

TEST_F(StoreGuardTest, AZeroLengthFileWithoutAMarkerStartsANewCluster) {
  std::ofstream(path_).close();
  auto store = SqliteStore::Open(path_);
  ASSERT_TRUE(store.has_value()) << Error(store);
  EXPECT_TRUE(fs::exists(path_ + ".cluster"));
}

}  // namespace
}  // namespace tessera
