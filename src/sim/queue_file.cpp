#include "sim/queue_file.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/cluster.h"

namespace tessera {

Result<QueueTree> LoadQueueTree(const std::string& path, const Resources& capacity) {
  auto spec = ReadQueueFile(path);
  if (!spec) return std::unexpected(spec.error());
  auto tree = QueueTree::Build(*spec, capacity);
  if (!tree) return InvalidArgument(path + ": " + tree.error().message);
  return tree;
}

Status AssignQueues(std::vector<Workload>& jobs, const QueueTree& tree, const std::string& source) {
  for (auto& w : jobs) {
    int leaf = tree.Find(w.queue);
    if (leaf < 0 || !tree.node(leaf).leaf()) leaf = tree.LeafFor(w.user, w.name);
    if (leaf < 0) {
      return InvalidArgument(source + ": job '" + w.name + "' (user '" + w.user +
                             "') matches no leaf queue: list the user under a queue's users, "
                             "or set unmatched: hash or unmatched: QUEUE");
    }
    w.queue = tree.node(leaf).path;
  }
  return {};
}

Status ApplyQueueMap(std::vector<Workload>& jobs, const QueueTree& tree, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return IoError(path + ": cannot open");
  auto trim = [](std::string s) {
    while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
    while (!s.empty() && s.front() == ' ') s.erase(s.begin());
    return s;
  };
  std::string line;
  if (!std::getline(f, line))
    return InvalidArgument(path + ": empty (expected a header user,queue or job,queue)");
  const std::string header = trim(line);
  if (header != "user,queue" && header != "job,queue") {
    return InvalidArgument(path + ":1: header '" + header + "': expected user,queue or job,queue");
  }
  const bool by_user = header == "user,queue";
  std::map<std::string, std::string, std::less<>> to_queue;
  for (int n = 2; std::getline(f, line); ++n) {
    line = trim(line);
    if (line.empty()) continue;
    const auto comma = line.find(',');
    const std::string where = path + ":" + std::to_string(n) + ": ";
    if (comma == std::string::npos || line.find(',', comma + 1) != std::string::npos) {
      return InvalidArgument(where + "expected two columns, " + header);
    }
    const std::string key = trim(line.substr(0, comma)), queue = trim(line.substr(comma + 1));
    const int leaf = tree.Find(queue);
    if (leaf < 0 || !tree.node(leaf).leaf()) {
      return InvalidArgument(where + "column 'queue': '" + queue +
                             "' is not a leaf queue of the tree");
    }
    if (key.empty())
      return InvalidArgument(where + "column '" + header.substr(0, header.find(',')) + "': empty");
    if (!to_queue.emplace(key, tree.node(leaf).path).second) {
      return InvalidArgument(where + "'" + key + "' is mapped twice");
    }
  }
  for (auto& w : jobs) {
    auto it = to_queue.find(by_user ? w.user : w.name);
    if (it != to_queue.end()) w.queue = it->second;
  }
  return {};
}

QueueTree QueuePerUser(const std::vector<Workload>& jobs, const Resources& capacity) {
  std::set<std::string> names;
  for (const auto& w : jobs) names.insert(w.queue);
  return QueueTree::EqualShares({names.begin(), names.end()}, capacity);
}

}  // namespace tessera
