// What keeps a SQLite store safe to open: one process at a time, and no silent fresh start.
//
// - The lock is an flock on the database file itself, opened by its real path, so a second
//   controller reaching the same file through a symlink, a hard link or another spelling of
//   the path finds it taken. (A lock on "<path>.lock" was keyed on the spelling.)
// - The cluster marker "<real path>.cluster" is written when a store is created and names the
//   store's cluster id (also kept in meta.cluster_id). A database that is missing, zero-length
//   or of another cluster while the marker exists is refused: the state says a cluster lived
//   here, so starting empty would silently lose every acknowledged job.
#pragma once

#include <string>

#include "core/status.h"

namespace tessera {

// The path with every symlink resolved; for a file that does not exist yet, its directory's.
Result<std::string> RealDatabasePath(const std::string& path);

// An exclusive, non-blocking flock on the database file (created 0600 when missing). Holds it
// until destroyed. Writes the holder's pid into "<real>.lock" for the refusal message only.
class DatabaseLock {
 public:
  static Result<DatabaseLock> Take(const std::string& real_path);
  DatabaseLock(DatabaseLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DatabaseLock& operator=(DatabaseLock&& other) noexcept;
  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;
  ~DatabaseLock();

 private:
  explicit DatabaseLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// The marker of the cluster a store belongs to.
std::string ClusterMarkerPath(const std::string& real_path);
// The id in the marker; empty when there is no marker.
Result<std::string> ReadClusterMarker(const std::string& real_path);
// Writes the marker durably (0600, fsync of the file and its directory).
Status WriteClusterMarker(const std::string& real_path, const std::string& cluster_id);
// A fresh random cluster id (32 hex digits from /dev/urandom).
Result<std::string> NewClusterId();

// Refuses a database that is missing or zero-length while its marker says a cluster existed.
Status CheckNotSilentlyEmpty(const std::string& real_path, const std::string& marker_id);

}  // namespace tessera
