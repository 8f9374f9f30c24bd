// The controller's count of open `tessera exec` sessions (exec_routes.cpp), so that they are
// bounded: each one's reads hold a long-poll worker while they wait for output, and its agent
// holds a process and endpoint threads. A session is admitted only below both caps, per user
// and in all (beyond them the open is refused, 429, with the reason); it is counted from the
// agent's 201 until its command's end has been read, it is deleted, or no request named it for
// `idle` (the agent drops it then too: ExecSessions::kIdle). Each entry also keeps where the
// session lives, so that its reads and writes reach the agent without looking the job up again.
//
// Thread-safety: thread-safe. Pure otherwise: the caller passes the time.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace tessera {

struct ExecSessionLimits {
  int max_total = 16;    // tesserad --max-exec-sessions
  int max_per_user = 4;  // tesserad --max-exec-sessions-per-user
  // A little beyond the agent's own idle limit, so the agent has dropped it first.
  std::chrono::milliseconds idle{65'000};
};

struct ExecSessionEntry {
  std::string user;
  std::string job;  // queue/name, as in the route's path
  std::string agent_url;
  std::int64_t task_id = 0;
  std::chrono::steady_clock::time_point last_used;
};

class ExecSessionTable {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  void SetLimits(const ExecSessionLimits& limits);
  ExecSessionLimits limits() const;

  // Holds a place for a session of `user` about to be opened (so that opens at once cannot pass
  // a cap together), or says why there is none. Every Reserve is followed by Add or Unreserve.
  std::optional<std::string> Reserve(const std::string& user, TimePoint now);
  void Unreserve(const std::string& user);
  // The reserved place becomes session `id`.
  void Add(const std::string& id, ExecSessionEntry entry);

  // Session `id`, when `user` opened it for `job`; counts as a use at `now`.
  std::optional<ExecSessionEntry> Use(const std::string& id, const std::string& user,
                                      const std::string& job, TimePoint now);
  void Remove(const std::string& id);

  int open(const std::string& user) const;
  int open_total() const;

 private:
  void ExpireLocked(TimePoint now);
  void ReleaseLocked(const std::string& user);  // one open or reserved place of `user`

  mutable std::mutex mu_;
  ExecSessionLimits limits_;
  std::map<std::string, ExecSessionEntry> sessions_;
  std::map<std::string, int> by_user_;  // open and reserved, per user
  int total_ = 0;                       // open and reserved
};

}  // namespace tessera
