// Several controller URLs (`--server URL,URL,...`: the controllers of an etcd cluster, one of
// which leads): which one to talk to. A failed request moves on to the next; a standby's 503
// names the leader (standby_server.h), which is followed at once.
//
// Thread-safety: none; the agent guards its one instance, the CLI has one per client.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera {

class ControllerUrls {
 public:
  // "http://a:7480" or "http://a:7480,http://b:7481"; each entry must start with http:// or
  // https://.
  static Result<ControllerUrls> Parse(std::string_view list);

  const std::string& current() const { return urls_[index_]; }
  const std::vector<std::string>& all() const { return urls_; }
  std::size_t size() const { return urls_.size(); }
  // The request to current() failed: the next one is tried.
  void Next() { index_ = (index_ + 1) % urls_.size(); }
  // A standby named `leader`: talk to it (added when not one of the given URLs).
  void Follow(const std::string& leader);

 private:
  std::vector<std::string> urls_;
  std::size_t index_ = 0;
};

// The leader a standby names in its 503 (its body's error.leader); nullopt when the reply is
// not a standby's refusal. An empty string: a standby that knows no leader yet.
std::optional<std::string> StandbyLeader(int status, std::string_view body);

}  // namespace tessera
