// SqliteStore: the Store on one SQLite file in WAL mode with synchronous=FULL, so a commit is
// on disk before Commit returns. Each Change is one IMMEDIATE transaction. The schema carries
// a version (meta.schema_version); a newer file is refused rather than misread.
//
// Invariants enforced by the database itself, not only by the controller:
//  - job names are unique within a queue (UNIQUE(queue, name));
//  - a GPU is never claimed by two live tasks: whole-GPU claims are unique per (node, gpu)
//    (a partial unique index), and a trigger refuses any claim that would take a GPU's claimed
//    share above 1000 milli, so shares cannot overlap a whole-GPU claim either.
//
// One process at a time: Open takes an exclusive flock on the database file itself (unless
// read_only), runs PRAGMA quick_check, and refuses a missing or empty database where a
// cluster marker says one lived (store/store_guard.h).
// Thread-safe: calls are serialised by a mutex.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "store/store.h"
#include "store/store_guard.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tessera {

class SqliteStore final : public Store {
 public:
  // 2: jobs.held; 3: nodes.topology; 4: nodes.cordoned; 5: units.resize; 6: node_credentials;
  // 7: tasks.oversold
  static constexpr int kSchemaVersion = 7;

  struct Options {
    bool read_only = false;              // no lock, no writes (inspection, tests)
    std::int64_t keep_events = 200'000;  // older events are pruned
  };

  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& path, Options options);
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& path) {
    return Open(path, Options{});
  }
  ~SqliteStore() override;

  Result<StoreContents> Load() override;
  Result<std::vector<EventRecord>> Commit(const Change& change) override;
  Result<std::vector<NodeCredentialRecord>> LoadNodeCredentials() override;
  Result<std::vector<EventRecord>> EventsSince(std::int64_t after, int limit) override;
  Status Probe() override;

  const std::string& path() const { return path_; }

  // Prepared statements of this connection by their SQL, reused across commits.
  using Statements = std::map<std::string, sqlite3_stmt*, std::less<>>;

 private:
  SqliteStore() = default;
  Status Exec(const char* sql);
  // One statement, prepared once and kept (BEGIN, COMMIT and ROLLBACK run at every commit).
  Status ExecPrepared(const char* sql);
  // Whether `table` has `column` (tests and older builds may have added it already).
  bool TableHasColumn(const std::string& table, const std::string& column);
  Status CreateSchema();
  Status CheckIntegrity();
  Status AdoptClusterId(const std::string& real_path, const std::string& marker_id);
  Status ApplyLocked(const Change& change, std::vector<EventRecord>& events);

  std::mutex mu_;
  sqlite3* db_ = nullptr;
  Statements statements_;
  std::optional<DatabaseLock> lock_;  // destroyed after db_ is closed (see ~SqliteStore)
  std::string path_;
  Options options_;
  std::int64_t commits_since_prune_ = 0;
};

}  // namespace tessera
