#include "store/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstring>
#include <string_view>
#include <vector>

#include "store/store_guard.h"

namespace tessera {

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS queues(
  name TEXT PRIMARY KEY,
  created_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs(
  id INTEGER PRIMARY KEY,
  queue TEXT NOT NULL,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  spec TEXT NOT NULL,
  submit_ms INTEGER NOT NULL,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  held INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  message TEXT NOT NULL DEFAULT '',
  UNIQUE(queue, name));
CREATE TABLE IF NOT EXISTS units(
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  unit INTEGER NOT NULL,
  phase TEXT NOT NULL,
  stop_target TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  restarts INTEGER NOT NULL,
  pending_since_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  first_started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  exit_code INTEGER NOT NULL,
  message TEXT NOT NULL,
  resize TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(job_id, unit)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tasks(
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  unit INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  node TEXT NOT NULL,
  gpus TEXT NOT NULL,
  gpu_milli INTEGER NOT NULL,
  cpu_milli INTEGER NOT NULL,
  memory_mib INTEGER NOT NULL,
  state TEXT NOT NULL,
  exit_code INTEGER NOT NULL,
  signal INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  message TEXT NOT NULL,
  master_addr TEXT NOT NULL,
  master_port INTEGER NOT NULL,
  oversold INTEGER NOT NULL DEFAULT 0,
  UNIQUE(job_id, unit, attempt, rank));
CREATE INDEX IF NOT EXISTS tasks_by_job ON tasks(job_id);
CREATE TABLE IF NOT EXISTS gpu_claims(
  node TEXT NOT NULL,
  gpu INTEGER NOT NULL,
  task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  milli INTEGER NOT NULL CHECK(milli > 0 AND milli <= 1000),
  PRIMARY KEY(node, gpu, task_id)) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS gpu_claims_whole ON gpu_claims(node, gpu) WHERE milli = 1000;
CREATE INDEX IF NOT EXISTS gpu_claims_by_task ON gpu_claims(task_id);
CREATE TRIGGER IF NOT EXISTS gpu_claims_capacity BEFORE INSERT ON gpu_claims
  WHEN (SELECT COALESCE(SUM(milli), 0) FROM gpu_claims
        WHERE node = NEW.node AND gpu = NEW.gpu) + NEW.milli > 1000
  BEGIN SELECT RAISE(ABORT, 'GPU claimed by two live tasks'); END;
CREATE TABLE IF NOT EXISTS nodes(
  name TEXT PRIMARY KEY,
  address TEXT NOT NULL,
  agent_url TEXT NOT NULL,
  gpu_model TEXT NOT NULL,
  gpu_count INTEGER NOT NULL,
  simulated INTEGER NOT NULL,
  cpu_milli INTEGER NOT NULL,
  memory_mib INTEGER NOT NULL,
  gpus TEXT NOT NULL,
  status TEXT NOT NULL,
  registered_ms INTEGER NOT NULL,
  version TEXT NOT NULL,
  message TEXT NOT NULL,
  topology TEXT NOT NULL DEFAULT '{}',
  cordoned INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS node_credentials(
  node TEXT PRIMARY KEY,
  digest TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  time_ms INTEGER NOT NULL,
  type TEXT NOT NULL,
  object TEXT NOT NULL,
  message TEXT NOT NULL);
)sql";

Tick NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A statement prepared once per connection and reused (a bind commits one row per task: preparing
// each time cost more than running it); errors are kept and reported through `ok()`/`error()`.
class Stmt {
 public:
  Stmt(SqliteStore::Statements& cache, sqlite3* db, const char* sql) : db_(db) {
    auto it = cache.find(std::string_view(sql));
    if (it != cache.end()) {
      stmt_ = it->second;
      return;
    }
    rc_ = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
    if (rc_ == SQLITE_OK) cache.emplace(sql, stmt_);
  }
  // Back to the cache ready for the next use, whatever happened to this one.
  ~Stmt() {
    if (stmt_ == nullptr) return;
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Int(int i, std::int64_t v) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& Text(int i, std::string_view v) {
    if (rc_ == SQLITE_OK) {
      rc_ = sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    }
    return *this;
  }
  // Runs a statement that returns no rows.
  bool Run() {
    if (rc_ != SQLITE_OK) return false;
    rc_ = sqlite3_step(stmt_);
    if (rc_ == SQLITE_DONE || rc_ == SQLITE_ROW) {
      rc_ = SQLITE_OK;
      sqlite3_reset(stmt_);
      sqlite3_clear_bindings(stmt_);
      return true;
    }
    return false;
  }
  // Steps a query; true while there is a row.
  bool Next() {
    if (rc_ != SQLITE_OK) return false;
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) rc_ = rc;
    return false;
  }
  std::int64_t ColInt(int c) const { return sqlite3_column_int64(stmt_, c); }
  std::string ColText(int c) const {
    const auto* p = sqlite3_column_text(stmt_, c);
    return p == nullptr ? std::string()
                        : std::string(reinterpret_cast<const char*>(p),
                                      static_cast<std::size_t>(sqlite3_column_bytes(stmt_, c)));
  }
  bool ok() const { return rc_ == SQLITE_OK; }
  std::string error() const { return sqlite3_errmsg(db_); }
  int extended_code() const { return sqlite3_extended_errcode(db_); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

std::string GpusText(const std::vector<int>& gpus) {
  std::string s;
  for (int g : gpus) {
    if (!s.empty()) s += ',';
    s += std::to_string(g);
  }
  return s;
}

std::vector<int> ParseGpus(std::string_view s) {
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t comma = s.find(',', pos);
    if (comma == std::string_view::npos) comma = s.size();
    int v = 0;
    std::from_chars(s.data() + pos, s.data() + comma, v);
    out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

// Maps a failed statement to an Error with a meaningful code.
std::unexpected<Error> StatementError(const Stmt& st, const std::string& what) {
  const std::string msg = st.error();
  const int code = st.extended_code();
  if (code == SQLITE_CONSTRAINT_UNIQUE && msg.find("jobs.queue") != std::string::npos) {
    return AlreadyExists(what + ": a job of that name already exists in its queue");
  }
  if ((code & 0xff) == SQLITE_CONSTRAINT && msg.find("gpu") != std::string::npos) {
    return FailedPrecondition(what + ": " + msg);
  }
  if ((code & 0xff) == SQLITE_CONSTRAINT) return FailedPrecondition(what + ": " + msg);
  return IoError(what + ": " + msg);
}

}  // namespace

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path, Options options) {
  std::unique_ptr<SqliteStore> store(new SqliteStore());
  auto real = RealDatabasePath(path);
  if (!real) return std::unexpected(real.error());
  store->path_ = path;
  store->options_ = options;
  std::string marker_id;
  if (!options.read_only) {
    auto marker = ReadClusterMarker(*real);
    if (!marker) return std::unexpected(marker.error());
    marker_id = *marker;
    if (auto s = CheckNotSilentlyEmpty(*real, marker_id); !s) return std::unexpected(s.error());
    auto lock = DatabaseLock::Take(*real);
    if (!lock) return std::unexpected(lock.error());
    store->lock_.emplace(std::move(*lock));
  }
  const int flags =
      options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(real->c_str(), &store->db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string msg = store->db_ ? sqlite3_errmsg(store->db_) : "out of memory";
    return IoError("store " + path + ": " + msg);
  }
  sqlite3_busy_timeout(store->db_, 5000);
  if (!options.read_only) {
    if (auto s = store->CheckIntegrity(); !s) return std::unexpected(s.error());
    if (auto s = store->Exec("PRAGMA journal_mode=WAL"); !s) return std::unexpected(s.error());
  }
  if (auto s = store->Exec("PRAGMA synchronous=FULL"); !s) return std::unexpected(s.error());
  if (auto s = store->Exec("PRAGMA foreign_keys=ON"); !s) return std::unexpected(s.error());
  if (!options.read_only) {
    if (auto s = store->CreateSchema(); !s) return std::unexpected(s.error());
    if (auto s = store->AdoptClusterId(*real, marker_id); !s) return std::unexpected(s.error());
  }
  return store;
}

// PRAGMA quick_check reads every page (O(N), without integrity_check's index cross-checks),
// so corrupted pages refuse the start instead of failing every scheduling cycle later.
Status SqliteStore::CheckIntegrity() {
  std::vector<std::string> problems;
  {
    Stmt st(statements_, db_, "PRAGMA quick_check(5)");
    while (st.Next()) problems.push_back(st.ColText(0));
    if (!st.ok()) problems.push_back(st.error());
  }
  if (problems.size() == 1 && problems.front() == "ok") return {};
  std::string list;
  for (const auto& p : problems) list += (list.empty() ? "" : "; ") + p;
  return FailedPrecondition("store " + path_ + " failed its integrity check (" + list +
                            "); refusing to start on a corrupt database: restore it from a "
                            "backup");
}

// Gives a store its cluster id (meta.cluster_id) and the marker beside it; refuses a database
// whose id is not the marker's.
Status SqliteStore::AdoptClusterId(const std::string& real_path, const std::string& marker_id) {
  std::string stored;
  {
    Stmt st(statements_, db_, "SELECT value FROM meta WHERE key = 'cluster_id'");
    if (st.ok() && st.Next()) stored = st.ColText(0);
  }
  if (!marker_id.empty() && stored != marker_id) {
    return FailedPrecondition("store " + path_ + " belongs to cluster " +
                              (stored.empty() ? "(none)" : stored) + ", but " +
                              ClusterMarkerPath(real_path) + " says cluster " + marker_id +
                              " kept its state here; refusing to start on the wrong database");
  }
  if (stored.empty()) {
    auto id = NewClusterId();
    if (!id) return std::unexpected(id.error());
    Stmt st(statements_, db_, "INSERT INTO meta(key, value) VALUES('cluster_id', ?)");
    if (!st.Text(1, *id).Run()) return StatementError(st, "store " + path_);
    stored = *id;
  }
  if (marker_id.empty()) return WriteClusterMarker(real_path, stored);
  return {};
}

SqliteStore::~SqliteStore() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Status SqliteStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return IoError("store " + path_ + ": " + msg);
  }
  return {};
}

Status SqliteStore::ExecPrepared(const char* sql) {
  Stmt st(statements_, db_, sql);
  if (!st.Run()) return IoError("store " + path_ + ": " + st.error());
  return {};
}

bool SqliteStore::TableHasColumn(const std::string& table, const std::string& column) {
  Stmt st(statements_, db_, "SELECT name FROM pragma_table_info(?)");
  st.Text(1, table);
  while (st.Next()) {
    if (st.ColText(0) == column) return true;
  }
  return false;
}

Status SqliteStore::CreateSchema() {
  long long from_version = 0;  // 0: a new store
  {
    Stmt st(statements_, db_, "SELECT value FROM meta WHERE key = 'schema_version'");
    if (st.ok() && st.Next()) {
      const std::string text = st.ColText(0);
      long long version = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
      if (ec != std::errc() || ptr != text.data() + text.size()) {
        return FailedPrecondition("store " + path_ + ": unreadable schema version \"" + text +
                                  "\"");
      }
      if (version > kSchemaVersion) {
        return FailedPrecondition("store " + path_ + " has schema version " +
                                  std::to_string(version) + "; this build knows up to " +
                                  std::to_string(kSchemaVersion));
      }
      if (version == kSchemaVersion) return {};
      from_version = version;
    }
  }
  if (auto s = Exec("BEGIN IMMEDIATE"); !s) return s;
  if (auto s = Exec(kSchema); !s) {
    (void)Exec("ROLLBACK");
    return s;
  }
  // Older stores lack the columns added since (CREATE TABLE IF NOT EXISTS leaves their tables
  // as they are): version 1 jobs.held, versions 1 and 2 nodes.topology, 1 to 3 nodes.cordoned,
  // 1 to 4 units.resize, 1 to 6 tasks.oversold.
  std::vector<const char*> upgrades;
  if (from_version == 1)
    upgrades.push_back("ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0");
  if (from_version == 1 || from_version == 2)
    upgrades.push_back("ALTER TABLE nodes ADD COLUMN topology TEXT NOT NULL DEFAULT '{}'");
  if (from_version >= 1 && from_version <= 3 && !TableHasColumn("nodes", "cordoned"))
    upgrades.push_back("ALTER TABLE nodes ADD COLUMN cordoned INTEGER NOT NULL DEFAULT 0");
  if (from_version >= 1 && from_version <= 4 && !TableHasColumn("units", "resize"))
    upgrades.push_back("ALTER TABLE units ADD COLUMN resize TEXT NOT NULL DEFAULT ''");
  if (from_version >= 1 && from_version <= 6 && !TableHasColumn("tasks", "oversold"))
    upgrades.push_back("ALTER TABLE tasks ADD COLUMN oversold INTEGER NOT NULL DEFAULT 0");
  for (const char* sql : upgrades) {
    if (auto s = Exec(sql); !s) {
      (void)Exec("ROLLBACK");
      return s;
    }
  }
  Stmt st(statements_, db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)");
  if (!st.Text(1, std::to_string(kSchemaVersion)).Run()) {
    (void)Exec("ROLLBACK");
    return StatementError(st, "store " + path_);
  }
  return Exec("COMMIT");
}

Result<StoreContents> SqliteStore::Load() {
  std::lock_guard lock(mu_);
  StoreContents out;
  {
    Stmt st(statements_, db_, "SELECT name, created_ms FROM queues ORDER BY name");
    while (st.Next()) out.queues.push_back({st.ColText(0), st.ColInt(1)});
    if (!st.ok()) return StatementError(st, "loading queues");
  }
  {
    Stmt st(statements_, db_,
            "SELECT id, queue, name, kind, spec, submit_ms, cancel_requested, finished_ms, "
            "message, held FROM jobs ORDER BY id");
    while (st.Next()) {
      JobRecord j;
      j.id = st.ColInt(0);
      j.queue = st.ColText(1);
      j.name = st.ColText(2);
      j.kind = st.ColText(3);
      j.spec_json = st.ColText(4);
      j.submit_ms = st.ColInt(5);
      j.cancel_requested = st.ColInt(6) != 0;
      j.finished_ms = st.ColInt(7);
      j.message = st.ColText(8);
      j.held = st.ColInt(9) != 0;
      out.jobs.push_back(std::move(j));
    }
    if (!st.ok()) return StatementError(st, "loading jobs");
  }
  {
    Stmt st(statements_, db_,
            "SELECT job_id, unit, phase, stop_target, attempt, restarts, pending_since_ms, "
            "started_ms, first_started_ms, finished_ms, exit_code, message, resize FROM units "
            "ORDER BY job_id, unit");
    while (st.Next()) {
      UnitRecord u;
      u.job_id = st.ColInt(0);
      u.unit = static_cast<int>(st.ColInt(1));
      if (!ParseUnitPhase(st.ColText(2), &u.phase) ||
          !ParseUnitPhase(st.ColText(3), &u.stop_target)) {
        return IoError("store " + path_ + ": unit of job " + std::to_string(u.job_id) +
                       " has an unknown phase");
      }
      u.attempt = static_cast<int>(st.ColInt(4));
      u.restarts = static_cast<int>(st.ColInt(5));
      u.pending_since_ms = st.ColInt(6);
      u.started_ms = st.ColInt(7);
      u.first_started_ms = st.ColInt(8);
      u.finished_ms = st.ColInt(9);
      u.exit_code = static_cast<int>(st.ColInt(10));
      u.message = st.ColText(11);
      u.resize = st.ColText(12);
      out.units.push_back(std::move(u));
    }
    if (!st.ok()) return StatementError(st, "loading units");
  }
  {
    Stmt st(statements_, db_,
            "SELECT id, job_id, unit, attempt, rank, node, gpus, gpu_milli, cpu_milli, "
            "memory_mib, state, exit_code, signal, pid, created_ms, started_ms, finished_ms, "
            "message, master_addr, master_port, oversold FROM tasks ORDER BY id");
    while (st.Next()) {
      TaskRecord t;
      t.id = st.ColInt(0);
      t.job_id = st.ColInt(1);
      t.unit = static_cast<int>(st.ColInt(2));
      t.attempt = static_cast<int>(st.ColInt(3));
      t.rank = static_cast<int>(st.ColInt(4));
      t.node = st.ColText(5);
      t.gpus = ParseGpus(st.ColText(6));
      t.gpu_milli = static_cast<std::int32_t>(st.ColInt(7));
      t.cpu_milli = st.ColInt(8);
      t.memory_mib = st.ColInt(9);
      if (!ParseTaskState(st.ColText(10), &t.state)) {
        return IoError("store " + path_ + ": task " + std::to_string(t.id) +
                       " has an unknown state");
      }
      t.exit_code = static_cast<int>(st.ColInt(11));
      t.signal = static_cast<int>(st.ColInt(12));
      t.pid = static_cast<int>(st.ColInt(13));
      t.created_ms = st.ColInt(14);
      t.started_ms = st.ColInt(15);
      t.finished_ms = st.ColInt(16);
      t.message = st.ColText(17);
      t.master_addr = st.ColText(18);
      t.master_port = static_cast<int>(st.ColInt(19));
      t.oversold = st.ColInt(20) != 0;
      out.tasks.push_back(std::move(t));
    }
    if (!st.ok()) return StatementError(st, "loading tasks");
  }
  {
    Stmt st(
        statements_, db_,
        "SELECT name, address, agent_url, gpu_model, gpu_count, simulated, cpu_milli, "
        "memory_mib, gpus, status, registered_ms, version, message, topology, cordoned FROM nodes "
        "ORDER BY name");
    while (st.Next()) {
      NodeRecord n;
      n.name = st.ColText(0);
      n.address = st.ColText(1);
      n.agent_url = st.ColText(2);
      n.gpu_model = st.ColText(3);
      n.gpu_count = static_cast<int>(st.ColInt(4));
      n.simulated = st.ColInt(5) != 0;
      n.cpu_milli = st.ColInt(6);
      n.memory_mib = st.ColInt(7);
      n.gpus_json = st.ColText(8);
      if (!ParseNodeStatus(st.ColText(9), &n.status)) n.status = NodeStatus::kNotReady;
      n.registered_ms = st.ColInt(10);
      n.version = st.ColText(11);
      n.message = st.ColText(12);
      n.topology_json = st.ColText(13);
      n.cordoned = st.ColInt(14) != 0;
      out.nodes.push_back(std::move(n));
    }
    if (!st.ok()) return StatementError(st, "loading nodes");
  }
  {
    Stmt st(statements_, db_, "SELECT COALESCE(MAX(seq), 0) FROM events");
    if (st.Next()) out.last_event_seq = st.ColInt(0);
    if (!st.ok()) return StatementError(st, "loading events");
  }
  return out;
}

Result<std::vector<EventRecord>> SqliteStore::Commit(const Change& change) {
  if (options_.read_only) return FailedPrecondition("store " + path_ + " is open read-only");
  std::lock_guard lock(mu_);
  std::vector<EventRecord> events;
  if (auto s = ExecPrepared("BEGIN IMMEDIATE"); !s) return std::unexpected(s.error());
  if (auto s = ApplyLocked(change, events); !s) {
    (void)ExecPrepared("ROLLBACK");
    return std::unexpected(s.error());
  }
  if (auto s = ExecPrepared("COMMIT"); !s) {
    (void)ExecPrepared("ROLLBACK");
    return std::unexpected(s.error());
  }
  if (!events.empty() && ++commits_since_prune_ >= 1000) {
    commits_since_prune_ = 0;
    Stmt st(statements_, db_, "DELETE FROM events WHERE seq <= (SELECT MAX(seq) FROM events) - ?");
    st.Int(1, options_.keep_events).Run();  // best effort: pruning is not part of the change
  }
  return events;
}

Status SqliteStore::ApplyLocked(const Change& change, std::vector<EventRecord>& events) {
  for (const auto& q : change.put_queues) {
    Stmt st(statements_, db_,
            "INSERT INTO queues(name, created_ms) VALUES(?, ?) ON CONFLICT(name) DO NOTHING");
    if (!st.Text(1, q.name).Int(2, q.created_ms).Run())
      return StatementError(st, "queue " + q.name);
  }
  for (const auto& j : change.put_jobs) {
    Stmt st(statements_, db_,
            "INSERT INTO jobs(id, queue, name, kind, spec, submit_ms, cancel_requested, "
            "finished_ms, message, held) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO "
            "UPDATE SET cancel_requested = excluded.cancel_requested, finished_ms = "
            "excluded.finished_ms, message = excluded.message, held = excluded.held");
    st.Int(1, j.id).Text(2, j.queue).Text(3, j.name).Text(4, j.kind).Text(5, j.spec_json);
    st.Int(6, j.submit_ms)
        .Int(7, j.cancel_requested ? 1 : 0)
        .Int(8, j.finished_ms)
        .Text(9, j.message)
        .Int(10, j.held ? 1 : 0);
    if (!st.Run()) return StatementError(st, "job " + j.queue + "/" + j.name);
  }
  for (const auto& u : change.put_units) {
    Stmt st(statements_, db_,
            "INSERT OR REPLACE INTO units(job_id, unit, phase, stop_target, attempt, restarts, "
            "pending_since_ms, started_ms, first_started_ms, finished_ms, exit_code, message, "
            "resize) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    st.Int(1, u.job_id)
        .Int(2, u.unit)
        .Text(3, UnitPhaseName(u.phase))
        .Text(4, UnitPhaseName(u.stop_target));
    st.Int(5, u.attempt).Int(6, u.restarts).Int(7, u.pending_since_ms).Int(8, u.started_ms);
    st.Int(9, u.first_started_ms).Int(10, u.finished_ms).Int(11, u.exit_code).Text(12, u.message);
    st.Text(13, u.resize);
    if (!st.Run())
      return StatementError(st, "unit " + std::to_string(u.job_id) + "/" + std::to_string(u.unit));
  }
  for (const auto& t : change.put_tasks) {
    const std::string what = "task " + std::to_string(t.id);
    Stmt st(statements_, db_,
            "INSERT INTO tasks(id, job_id, unit, attempt, rank, node, gpus, gpu_milli, cpu_milli, "
            "memory_mib, state, exit_code, signal, pid, created_ms, started_ms, finished_ms, "
            "message, master_addr, master_port, oversold) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET state = excluded.state, "
            "exit_code = "
            "excluded.exit_code, signal = excluded.signal, pid = excluded.pid, started_ms = "
            "excluded.started_ms, finished_ms = excluded.finished_ms, message = excluded.message");
    st.Int(1, t.id).Int(2, t.job_id).Int(3, t.unit).Int(4, t.attempt).Int(5, t.rank);
    st.Text(6, t.node).Text(7, GpusText(t.gpus)).Int(8, t.gpu_milli).Int(9, t.cpu_milli);
    st.Int(10, t.memory_mib).Text(11, TaskStateName(t.state)).Int(12, t.exit_code);
    st.Int(13, t.signal).Int(14, t.pid).Int(15, t.created_ms).Int(16, t.started_ms);
    st.Int(17, t.finished_ms).Text(18, t.message).Text(19, t.master_addr).Int(20, t.master_port);
    st.Int(21, t.oversold ? 1 : 0);
    if (!st.Run()) return StatementError(st, what);
    // Claims follow the task's state: a live task holds its GPUs, an ended one holds none.
    Stmt release(statements_, db_, "DELETE FROM gpu_claims WHERE task_id = ?");
    if (!release.Int(1, t.id).Run()) return StatementError(release, what);
    if (IsLive(t.state) && ClaimedGpuMilli(t) > 0) {
      for (int g : t.gpus) {
        Stmt claim(statements_, db_,
                   "INSERT INTO gpu_claims(node, gpu, task_id, milli) VALUES(?, ?, ?, ?)");
        if (!claim.Text(1, t.node).Int(2, g).Int(3, t.id).Int(4, t.gpu_milli).Run()) {
          return StatementError(claim, what + " on GPU " + std::to_string(g) + " of " + t.node);
        }
      }
    }
  }
  for (const auto id : change.delete_jobs) {
    Stmt live(
        statements_, db_,
        "SELECT COUNT(*) FROM gpu_claims WHERE task_id IN (SELECT id FROM tasks WHERE job_id = ?)");
    live.Int(1, id);
    if (live.Next() && live.ColInt(0) > 0) {
      return FailedPrecondition("job " + std::to_string(id) + " still has live tasks");
    }
    Stmt st(statements_, db_, "DELETE FROM jobs WHERE id = ?");
    if (!st.Int(1, id).Run()) return StatementError(st, "job " + std::to_string(id));
  }
  for (const auto& c : change.put_node_credentials) {
    Stmt st(statements_, db_, "INSERT OR REPLACE INTO node_credentials(node, digest) VALUES(?, ?)");
    if (!st.Text(1, c.node).Text(2, c.digest).Run())
      return StatementError(st, "the credential of node " + c.node);
  }
  for (const auto& n : change.put_nodes) {
    Stmt st(statements_, db_,
            "INSERT OR REPLACE INTO nodes(name, address, agent_url, gpu_model, gpu_count, "
            "simulated, cpu_milli, memory_mib, gpus, status, registered_ms, version, message, "
            "topology, cordoned) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    st.Text(1, n.name).Text(2, n.address).Text(3, n.agent_url).Text(4, n.gpu_model);
    st.Int(5, n.gpu_count).Int(6, n.simulated ? 1 : 0).Int(7, n.cpu_milli).Int(8, n.memory_mib);
    st.Text(9, n.gpus_json).Text(10, NodeStatusName(n.status)).Int(11, n.registered_ms);
    st.Text(12, n.version).Text(13, n.message).Text(14, n.topology_json);
    st.Int(15, n.cordoned ? 1 : 0);
    if (!st.Run()) return StatementError(st, "node " + n.name);
  }
  const Tick now = NowMs();
  for (const auto& e : change.events) {
    EventRecord rec = e;
    if (rec.time_ms == 0) rec.time_ms = now;
    Stmt st(statements_, db_,
            "INSERT INTO events(time_ms, type, object, message) VALUES(?, ?, ?, ?)");
    if (!st.Int(1, rec.time_ms).Text(2, rec.type).Text(3, rec.object).Text(4, rec.message).Run()) {
      return StatementError(st, "event");
    }
    rec.seq = sqlite3_last_insert_rowid(db_);
    events.push_back(std::move(rec));
  }
  return {};
}

Result<std::vector<NodeCredentialRecord>> SqliteStore::LoadNodeCredentials() {
  std::lock_guard lock(mu_);
  std::vector<NodeCredentialRecord> out;
  Stmt st(statements_, db_, "SELECT node, digest FROM node_credentials ORDER BY node");
  while (st.Next()) out.push_back({st.ColText(0), st.ColText(1)});
  if (!st.ok()) return StatementError(st, "loading node credentials");
  return out;
}

Result<std::vector<EventRecord>> SqliteStore::EventsSince(std::int64_t after, int limit) {
  std::lock_guard lock(mu_);
  std::vector<EventRecord> out;
  Stmt st(
      statements_, db_,
      "SELECT seq, time_ms, type, object, message FROM events WHERE seq > ? ORDER BY seq LIMIT ?");
  st.Int(1, after).Int(2, limit);
  while (st.Next()) {
    out.push_back({st.ColInt(0), st.ColInt(1), st.ColText(2), st.ColText(3), st.ColText(4)});
  }
  if (!st.ok()) return StatementError(st, "reading events");
  return out;
}

Status SqliteStore::Probe() {
  std::lock_guard lock(mu_);
  if (auto s = ExecPrepared("BEGIN IMMEDIATE"); !s) return s;
  Stmt st(statements_, db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('probe_ms', ?)");
  if (!st.Text(1, std::to_string(NowMs())).Run()) {
    (void)ExecPrepared("ROLLBACK");
    return StatementError(st, "store " + path_);
  }
  if (auto s = ExecPrepared("COMMIT"); !s) {
    (void)ExecPrepared("ROLLBACK");
    return s;
  }
  return {};
}

}  // namespace tessera
