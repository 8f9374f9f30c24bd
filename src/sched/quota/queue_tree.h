// The queue tree of a shared cluster: organisation → team → project, each queue with a
// guaranteed quota, a borrowing limit, a fair-share weight and a priority (docs/quotas.md).
// Built from an already parsed description (QueueTreeSpec, core/queue_tree_spec.h; the YAML
// reader is spec/queue_file.h), so this stays pure. Build() refuses a tree that cannot be right
// (duplicate names, unknown parents, cycles, negative amounts, children guaranteed more than
// their parent, more guaranteed than the cluster has) with an error naming the key.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/queue_tree_spec.h"
#include "core/resources.h"
#include "core/status.h"
#include "core/time.h"

namespace tessera {

inline constexpr std::int64_t kUnlimited = -1;

struct QueueNode {
  std::string name;
  std::string path;  // "org/team/project"
  int parent = -1;   // -1 = under the root
  std::vector<int> children;
  Resources guaranteed;
  Resources borrow_limit{kUnlimited, kUnlimited, kUnlimited};  // per component
  double weight = 1;
  int priority = 0;
  double entitlement = 0;  // fraction of the cluster's GPUs this queue is entitled to
  bool leaf() const { return children.empty(); }
};

class QueueTree {
 public:
  // `capacity`: the cluster's total CPU, memory and GPUs, against which fractions resolve.
  static Result<QueueTree> Build(const QueueTreeSpec& spec, const Resources& capacity);
  // One leaf queue per name, with equal weights and equal guaranteed shares of the cluster
  // (the default when no queue file is given: every user is a queue).
  static QueueTree EqualShares(const std::vector<std::string>& names, const Resources& capacity);

  const std::vector<QueueNode>& nodes() const { return nodes_; }
  const QueueNode& node(int i) const { return nodes_[static_cast<std::size_t>(i)]; }
  const std::vector<int>& roots() const { return roots_; }
  const std::vector<int>& leaves() const { return leaves_; }  // in path order
  // The queue with this path, or this (unique) name; -1 when there is none.
  int Find(std::string_view path_or_name) const;
  const Resources& capacity() const { return capacity_; }
  Tick reclaim_grace() const { return reclaim_grace_; }
  const std::string& unmatched() const { return unmatched_; }
  // The leaf queue for a job of `user` (named `job_name`), following the users lists and the
  // unmatched rule; -1 when none applies.
  int LeafFor(std::string_view user, std::string_view job_name) const;

 private:
  void Finish();  // children, leaves, entitlements
  std::vector<QueueNode> nodes_;
  std::vector<int> roots_;
  std::vector<int> leaves_;
  std::map<std::string, int, std::less<>> by_path_;
  std::map<std::string, int, std::less<>> by_name_;
  std::map<std::string, int, std::less<>> by_user_;
  Resources capacity_;
  Tick reclaim_grace_ = 0;
  std::string unmatched_;
};

}  // namespace tessera
