#include "server/exec_session_table.h"

namespace tessera {

void ExecSessionTable::SetLimits(const ExecSessionLimits& limits) {
  std::lock_guard lock(mu_);
  limits_ = limits;
}

ExecSessionLimits ExecSessionTable::limits() const {
  std::lock_guard lock(mu_);
  return limits_;
}

std::optional<std::string> ExecSessionTable::Reserve(const std::string& user, TimePoint now) {
  std::lock_guard lock(mu_);
  ExpireLocked(now);
  const int mine = by_user_.contains(user) ? by_user_.at(user) : 0;
  if (mine >= limits_.max_per_user) {
    return "user " + user + " has " + std::to_string(mine) +
           " exec sessions open, the most one user may (tesserad --max-exec-sessions-per-user " +
           std::to_string(limits_.max_per_user) + "); end one first";
  }
  if (total_ >= limits_.max_total) {
    return "the controller has " + std::to_string(total_) +
           " exec sessions open, the most it allows (tesserad --max-exec-sessions " +
           std::to_string(limits_.max_total) + "); try again when one has ended";
  }
  ++by_user_[user];
  ++total_;
  return std::nullopt;
}

void ExecSessionTable::Unreserve(const std::string& user) {
  std::lock_guard lock(mu_);
  ReleaseLocked(user);
}

void ExecSessionTable::ReleaseLocked(const std::string& user) {
  auto it = by_user_.find(user);
  if (it == by_user_.end()) return;
  if (--it->second == 0) by_user_.erase(it);
  --total_;
}

void ExecSessionTable::Add(const std::string& id, ExecSessionEntry entry) {
  std::lock_guard lock(mu_);
  sessions_.insert_or_assign(id, std::move(entry));
}

std::optional<ExecSessionEntry> ExecSessionTable::Use(const std::string& id,
                                                      const std::string& user,
                                                      const std::string& job, TimePoint now) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.user != user || it->second.job != job)
    return std::nullopt;
  it->second.last_used = now;
  return it->second;
}

void ExecSessionTable::Remove(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  ReleaseLocked(it->second.user);
  sessions_.erase(it);
}

void ExecSessionTable::ExpireLocked(TimePoint now) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now - it->second.last_used < limits_.idle) {
      ++it;
      continue;
    }
    ReleaseLocked(it->second.user);
    it = sessions_.erase(it);
  }
}

int ExecSessionTable::open(const std::string& user) const {
  std::lock_guard lock(mu_);
  return by_user_.contains(user) ? by_user_.at(user) : 0;
}

int ExecSessionTable::open_total() const {
  std::lock_guard lock(mu_);
  return total_;
}

}  // namespace tessera
