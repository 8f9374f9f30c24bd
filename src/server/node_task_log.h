// Which nodes' tasks changed, by generation: an emulating agent's delta heartbeat (protocol.h)
// asks for the nodes whose tasks changed after the generation it last applied, and gets them
// without the controller visiting the nodes that stayed as they were. ControllerState::Apply
// notes the node of every task it puts; one entry per node (its latest change), so the log
// holds at most one entry a node.
//
// Generations start at the controller's start time in microseconds: a generation from before a
// restart is below first() and cannot be answered from the log (the agent sends a full report).
//
// Thread-safety: none; ControllerCore's mutex guards it with the state.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

namespace tessera {

class NodeTaskLog {
 public:
  NodeTaskLog();

  void Note(const std::string& node);
  std::int64_t generation() const { return generation_; }
  // Whether changes after `since` can be listed: a generation this log has handed out.
  bool Answers(std::int64_t since) const { return since >= first_ && since <= generation_; }
  // Calls f(node) for every node changed after `since`, oldest change first.
  template <typename F>
  void ForEachSince(std::int64_t since, F f) const {
    for (auto it = by_generation_.upper_bound(since); it != by_generation_.end(); ++it)
      f(it->second);
  }

 private:
  std::int64_t first_ = 0;
  std::int64_t generation_ = 0;
  std::map<std::int64_t, std::string> by_generation_;
  std::unordered_map<std::string, std::int64_t> generation_of_;
};

}  // namespace tessera
