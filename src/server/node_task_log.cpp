#include "server/node_task_log.h"

#include <chrono>

namespace tessera {

NodeTaskLog::NodeTaskLog()
    : first_(std::chrono::duration_cast<std::chrono::microseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count()),
      generation_(first_) {}

void NodeTaskLog::Note(const std::string& node) {
  if (node.empty()) return;
  ++generation_;
  auto [it, added] = generation_of_.try_emplace(node, generation_);
  if (!added) {
    by_generation_.erase(it->second);
    it->second = generation_;
  }
  by_generation_.emplace(generation_, node);
}

}  // namespace tessera
