#include "sched/quota/queue_tree.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/rng.h"

namespace tessera {

namespace {

// Errors name the key in the queue file's terms: "key 'queues[2].guaranteed.gpu': negative".
std::unexpected<Error> Bad(const std::string& key, const std::string& why) {
  return InvalidArgument("key '" + key + "': " + why);
}

bool ValidName(std::string_view n) {
  if (n.empty() || n.size() > 63) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

// Resolves one amount; `unit` converts the absolute form (GPUs, cores, GiB) to fixed point.
Result<std::int64_t> Resolve(const QuotaAmount& a, std::int64_t capacity, double unit,
                             const std::string& key, std::int64_t unset) {
  if (!a.set) return unset;
  if (!std::isfinite(a.value)) return Bad(key, "not a number");
  if (a.value < 0) return Bad(key, "negative");
  if (a.fraction) {
    if (a.value > 1) return Bad(key, "more than 100% of the cluster");
    return static_cast<std::int64_t>(std::llround(a.value * static_cast<double>(capacity)));
  }
  return static_cast<std::int64_t>(std::llround(a.value * unit));
}

Result<Resources> ResolveQuota(const QuotaSpec& q, const Resources& capacity,
                               const std::string& key, std::int64_t unset) {
  Resources r;
  auto gpu = Resolve(q.gpu, capacity.gpu_milli, 1000.0, key + ".gpu", unset);
  if (!gpu) return std::unexpected(gpu.error());
  auto cpu = Resolve(q.cpu, capacity.cpu_milli, 1000.0, key + ".cpu", unset);
  if (!cpu) return std::unexpected(cpu.error());
  auto mem = Resolve(q.memory, capacity.memory_mib, 1024.0, key + ".memory", unset);
  if (!mem) return std::unexpected(mem.error());
  r.gpu_milli = *gpu;
  r.cpu_milli = *cpu;
  r.memory_mib = *mem;
  return r;
}

std::string Describe(const Resources& r) {
  return std::to_string(static_cast<double>(r.gpu_milli) / 1000.0) + " GPUs, " +
         std::to_string(r.cpu_milli / 1000) + " CPU cores, " + std::to_string(r.memory_mib / 1024) +
         " GiB";
}

// The first component in which `a` exceeds `b`, or nullptr.
const char* Exceeds(const Resources& a, const Resources& b) {
  if (a.gpu_milli > b.gpu_milli) return "gpu";
  if (a.cpu_milli > b.cpu_milli) return "cpu";
  if (a.memory_mib > b.memory_mib) return "memory";
  return nullptr;
}

}  // namespace

Result<QueueTree> QueueTree::Build(const QueueTreeSpec& spec, const Resources& capacity) {
  QueueTree t;
  t.capacity_ = capacity;
  if (spec.reclaim_grace < 0) return Bad("reclaim.graceSeconds", "negative");
  t.reclaim_grace_ = spec.reclaim_grace;
  if (spec.queues.empty()) return Bad("queues", "the tree has no queue");
  auto key = [](std::size_t i) { return "queues[" + std::to_string(i) + "]"; };
  for (std::size_t i = 0; i < spec.queues.size(); ++i) {
    const QueueSpec& q = spec.queues[i];
    if (!ValidName(q.name)) {
      return Bad(key(i) + ".name",
                 "'" + q.name + "' is not a queue name (1-63 of A-Z a-z 0-9 . _ -)");
    }
    if (auto [it, added] = t.by_name_.emplace(q.name, static_cast<int>(i)); !added) {
      return Bad(key(i) + ".name", "'" + q.name + "' is used twice (also " +
                                       key(static_cast<std::size_t>(it->second)) + ")");
    }
    if (!(q.weight > 0) || !std::isfinite(q.weight)) {
      return Bad(key(i) + ".weight", "must be a positive number");
    }
    QueueNode n;
    n.name = q.name;
    n.weight = q.weight;
    n.priority = q.priority;
    auto g = ResolveQuota(q.guaranteed, capacity, key(i) + ".guaranteed", 0);
    if (!g) return std::unexpected(g.error());
    n.guaranteed = *g;
    auto b = ResolveQuota(q.borrow_limit, capacity, key(i) + ".borrowLimit", kUnlimited);
    if (!b) return std::unexpected(b.error());
    n.borrow_limit = *b;
    t.nodes_.push_back(std::move(n));
  }
  for (std::size_t i = 0; i < spec.queues.size(); ++i) {
    const std::string& parent = spec.queues[i].parent;
    if (parent.empty()) continue;
    auto it = t.by_name_.find(parent);
    if (it == t.by_name_.end()) {
      return Bad(key(i) + ".parent", "unknown queue '" + parent + "'");
    }
    t.nodes_[i].parent = it->second;
  }
  // Cycles: walk up from each queue; more steps than queues means a loop.
  for (std::size_t i = 0; i < t.nodes_.size(); ++i) {
    std::string chain = t.nodes_[i].name;
    int at = t.nodes_[i].parent;
    for (std::size_t steps = 0; at >= 0; ++steps) {
      chain += " -> " + t.nodes_[static_cast<std::size_t>(at)].name;
      if (at == static_cast<int>(i) || steps > t.nodes_.size()) {
        return Bad(key(i) + ".parent", "the parents form a cycle (" + chain + ")");
      }
      at = t.nodes_[static_cast<std::size_t>(at)].parent;
    }
  }
  t.Finish();
  // Paths, then guarantees bottom-up: an unset parent guarantee is its children's sum; a set
  // one must cover them.
  for (auto& n : t.nodes_) {
    std::vector<std::string> parts{n.name};
    for (int at = n.parent; at >= 0; at = t.nodes_[static_cast<std::size_t>(at)].parent) {
      parts.push_back(t.nodes_[static_cast<std::size_t>(at)].name);
    }
    std::reverse(parts.begin(), parts.end());
    for (const auto& p : parts) n.path += (n.path.empty() ? "" : "/") + p;
  }
  std::vector<int> post;  // children before parents
  auto visit = [&](auto&& self, int i) -> void {
    for (int c : t.nodes_[static_cast<std::size_t>(i)].children) self(self, c);
    post.push_back(i);
  };
  for (int r : t.roots_) visit(visit, r);
  for (int i : post) {
    QueueNode& n = t.nodes_[static_cast<std::size_t>(i)];
    if (n.children.empty()) continue;
    Resources sum;
    for (int c : n.children) sum += t.nodes_[static_cast<std::size_t>(c)].guaranteed;
    const QuotaSpec& g = spec.queues[static_cast<std::size_t>(i)].guaranteed;
    if (!g.gpu.set) n.guaranteed.gpu_milli = sum.gpu_milli;
    if (!g.cpu.set) n.guaranteed.cpu_milli = sum.cpu_milli;
    if (!g.memory.set) n.guaranteed.memory_mib = sum.memory_mib;
    if (const char* r = Exceeds(sum, n.guaranteed)) {
      return Bad(key(static_cast<std::size_t>(i)) + ".guaranteed." + r,
                 "its children are guaranteed more (" + Describe(sum) + ") than queue '" + n.path +
                     "' (" + Describe(n.guaranteed) + ")");
    }
  }
  Resources top;
  for (int r : t.roots_) top += t.nodes_[static_cast<std::size_t>(r)].guaranteed;
  if (const char* r = Exceeds(top, capacity)) {
    return Bad("queues", std::string("the top-level queues are guaranteed more ") + r + " (" +
                             Describe(top) + ") than the cluster has (" + Describe(capacity) + ")");
  }
  for (std::size_t i = 0; i < spec.queues.size(); ++i) {
    const auto& users = spec.queues[i].users;
    if (!users.empty() && !t.nodes_[i].leaf()) {
      return Bad(key(i) + ".users",
                 "only a leaf queue takes jobs, and '" + t.nodes_[i].path + "' has children");
    }
    for (std::size_t u = 0; u < users.size(); ++u) {
      auto [it, added] = t.by_user_.emplace(users[u], static_cast<int>(i));
      if (!added) {
        return Bad(
            key(i) + ".users[" + std::to_string(u) + "]",
            "user '" + users[u] + "' is already in " + key(static_cast<std::size_t>(it->second)));
      }
    }
  }
  t.unmatched_ = spec.unmatched;
  if (!t.unmatched_.empty() && t.unmatched_ != "hash") {
    const int u = t.Find(t.unmatched_);
    if (u < 0) return Bad("unmatched", "unknown queue '" + t.unmatched_ + "'");
    if (!t.nodes_[static_cast<std::size_t>(u)].leaf()) {
      return Bad("unmatched", "'" + t.unmatched_ + "' is not a leaf queue");
    }
  }
  for (std::size_t i = 0; i < t.nodes_.size(); ++i) t.by_path_.emplace(t.nodes_[i].path, i);
  t.Finish();
  return t;
}

QueueTree QueueTree::EqualShares(const std::vector<std::string>& names, const Resources& capacity) {
  QueueTree t;
  t.capacity_ = capacity;
  const auto n = static_cast<std::int64_t>(std::max<std::size_t>(names.size(), 1));
  for (const auto& name : names) {
    QueueNode q;
    q.name = name;
    q.path = name;
    q.guaranteed =
        Resources{capacity.cpu_milli / n, capacity.memory_mib / n, capacity.gpu_milli / n};
    t.by_name_.emplace(name, static_cast<int>(t.nodes_.size()));
    t.by_path_.emplace(name, static_cast<int>(t.nodes_.size()));
    t.nodes_.push_back(std::move(q));
  }
  t.Finish();
  return t;
}

void QueueTree::Finish() {
  roots_.clear();
  leaves_.clear();
  for (auto& n : nodes_) n.children.clear();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const int p = nodes_[i].parent;
    if (p < 0) {
      roots_.push_back(static_cast<int>(i));
    } else {
      nodes_[static_cast<std::size_t>(p)].children.push_back(static_cast<int>(i));
    }
  }
  // Siblings and leaves in path order, so that every walk over the tree has a defined order.
  auto by_path = [&](int a, int b) {
    return nodes_[static_cast<std::size_t>(a)].path < nodes_[static_cast<std::size_t>(b)].path;
  };
  std::sort(roots_.begin(), roots_.end(), by_path);
  for (auto& n : nodes_) std::sort(n.children.begin(), n.children.end(), by_path);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].leaf()) leaves_.push_back(static_cast<int>(i));
  }
  std::sort(leaves_.begin(), leaves_.end(), by_path);
  // Entitlement: a queue's guaranteed fraction of the cluster's GPUs, plus a weighted share of
  // what its parent is entitled to beyond its children's guarantees.
  const double cap = static_cast<double>(std::max<std::int64_t>(capacity_.gpu_milli, 1));
  auto split = [&](const std::vector<int>& kids, double parent) {
    double guaranteed = 0, weights = 0;
    for (int c : kids) {
      guaranteed +=
          static_cast<double>(nodes_[static_cast<std::size_t>(c)].guaranteed.gpu_milli) / cap;
      weights += nodes_[static_cast<std::size_t>(c)].weight;
    }
    const double rest = std::max(0.0, parent - guaranteed);
    for (int c : kids) {
      auto& n = nodes_[static_cast<std::size_t>(c)];
      n.entitlement = static_cast<double>(n.guaranteed.gpu_milli) / cap +
                      (weights > 0 ? rest * n.weight / weights : 0);
    }
  };
  auto walk = [&](auto&& self, const std::vector<int>& kids, double parent) -> void {
    split(kids, parent);
    for (int c : kids) {
      const auto& n = nodes_[static_cast<std::size_t>(c)];
      self(self, n.children, n.entitlement);
    }
  };
  walk(walk, roots_, 1.0);
}

int QueueTree::Find(std::string_view path_or_name) const {
  if (auto it = by_path_.find(path_or_name); it != by_path_.end()) return it->second;
  if (auto it = by_name_.find(path_or_name); it != by_name_.end()) return it->second;
  return -1;
}

int QueueTree::LeafFor(std::string_view user, std::string_view job_name) const {
  if (auto it = by_user_.find(user); it != by_user_.end()) return it->second;
  if (unmatched_ == "hash" && !leaves_.empty()) {
    // Stable across runs and builds: the synthetic team of a user must not change.
    const std::uint64_t h = Rng::HashText(user.empty() ? job_name : user);
    return leaves_[h % leaves_.size()];
  }
  if (!unmatched_.empty()) return Find(unmatched_);
  return -1;
}

}  // namespace tessera
