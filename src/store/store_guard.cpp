#include "store/store_guard.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tessera {

namespace {

std::string Errno() { return std::strerror(errno); }

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

Result<std::string> RealDatabasePath(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) {
    auto real = fs::canonical(path, ec);
    if (ec) return IoError("store " + path + ": cannot resolve the path: " + ec.message());
    return real.string();
  }
  const fs::path p = fs::absolute(path, ec);
  if (ec) return IoError("store " + path + ": " + ec.message());
  auto dir = fs::canonical(p.parent_path(), ec);
  if (ec)
    return IoError("store " + path + ": directory " + p.parent_path().string() + ": " +
                   ec.message());
  return (dir / p.filename()).string();
}

Result<DatabaseLock> DatabaseLock::Take(const std::string& real_path) {
  const int fd = ::open(real_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("store " + real_path + ": cannot open: " + Errno());
  const std::string pid_path = real_path + ".lock";
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    std::ifstream in(pid_path);
    std::string holder;
    std::getline(in, holder);
    holder = Trimmed(holder);
    return FailedPrecondition("store " + real_path + " is in use by another process (pid " +
                              (holder.empty() ? std::string("?") : holder) +
                              "); the lock is on the database file itself, whatever path "
                              "reached it");
  }
  std::ofstream(pid_path, std::ios::trunc) << ::getpid() << "\n";  // informational only
  ::chmod(pid_path.c_str(), 0600);
  return DatabaseLock(fd);
}

DatabaseLock& DatabaseLock::operator=(DatabaseLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

DatabaseLock::~DatabaseLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string ClusterMarkerPath(const std::string& real_path) { return real_path + ".cluster"; }

Result<std::string> ReadClusterMarker(const std::string& real_path) {
  const std::string path = ClusterMarkerPath(real_path);
  std::ifstream in(path);
  if (!in) return std::string();
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("cluster-id ")) {
      std::string id = Trimmed(line.substr(11));
      if (!id.empty()) return id;
    }
  }
  return FailedPrecondition("cluster marker " + path +
                            " has no cluster-id line; restore it or remove it deliberately");
}

Status WriteClusterMarker(const std::string& real_path, const std::string& cluster_id) {
  const std::string path = ClusterMarkerPath(real_path);
  const std::string tmp = path + ".tmp";
  const std::string text =
      "# The cluster whose state is " + real_path +
      ". While this file exists, tesserad refuses to start on a missing, empty or foreign "
      "database (docs/live-cluster.md).\ncluster-id " +
      cluster_id + "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("cannot write " + tmp + ": " + Errno());
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    return IoError("cannot write " + path + ": " + Errno());
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Result<std::string> NewClusterId() {
  unsigned char bytes[16];
  std::ifstream in("/dev/urandom", std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(bytes), sizeof bytes)) {
    return IoError("cannot read /dev/urandom for a cluster id");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

Status CheckNotSilentlyEmpty(const std::string& real_path, const std::string& marker_id) {
  if (marker_id.empty()) return {};
  struct stat st {};
  const bool missing = ::stat(real_path.c_str(), &st) != 0;
  if (!missing && st.st_size > 0) return {};
  return FailedPrecondition(
      "store " + real_path + " is " + (missing ? "missing" : "empty (0 bytes)") + ", but " +
      ClusterMarkerPath(real_path) + " says cluster " + marker_id +
      " kept its state there; refusing to start an empty cluster in its place. Restore the "
      "database from a backup, or remove the marker to start a new cluster deliberately");
}

}  // namespace tessera
