#include "sched/quota/fair_share_cycle.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace tessera {

double WeightedDominantShare(const Resources& usage, const Resources& capacity, double weight) {
  auto frac = [](std::int64_t u, std::int64_t c) {
    return c > 0 ? static_cast<double>(u) / static_cast<double>(c) : 0.0;
  };
  const double dominant = std::max({frac(usage.gpu_milli, capacity.gpu_milli),
                                    frac(usage.cpu_milli, capacity.cpu_milli),
                                    frac(usage.memory_mib, capacity.memory_mib)});
  return dominant / weight;
}

namespace {

bool WithinLimit(const Resources& usage, const QueueNode& q) {
  auto ok = [](std::int64_t u, std::int64_t g, std::int64_t b) {
    return b == kUnlimited || u <= g + b;
  };
  return ok(usage.gpu_milli, q.guaranteed.gpu_milli, q.borrow_limit.gpu_milli) &&
         ok(usage.cpu_milli, q.guaranteed.cpu_milli, q.borrow_limit.cpu_milli) &&
         ok(usage.memory_mib, q.guaranteed.memory_mib, q.borrow_limit.memory_mib);
}

class Cycle {
 public:
  Cycle(const Snapshot& snap, const QueueTree& tree)
      : snap_(snap),
        tree_(tree),
        usage_(tree.nodes().size()),
        pending_(tree.nodes().size()),
        next_(tree.nodes().size(), 0),
        active_(tree.nodes().size(), 0) {}

  int LeafOf(const JobView& v) const {
    const int q = tree_.Find(v.job->queue);
    return q >= 0 && tree_.node(q).leaf() ? q : -1;
  }

  void Charge(int leaf, const Resources& r, int sign) {
    for (int q = leaf; q >= 0; q = tree_.node(q).parent) {
      if (sign > 0) {
        usage_[static_cast<std::size_t>(q)] += r;
      } else {
        usage_[static_cast<std::size_t>(q)] -= r;
      }
    }
  }

  void Load() {
    auto add_pending = [&](const JobView* v) {
      const int leaf = LeafOf(*v);
      if (leaf >= 0) pending_[static_cast<std::size_t>(leaf)].push_back(v);
    };
    for (const auto& v : snap_.jobs) {
      if (v.phase == JobPhase::kRunning) {
        const int leaf = LeafOf(v);
        running_.push_back({&v, leaf, false});
        if (leaf >= 0) Charge(leaf, v.job->TotalResources(), +1);
      } else {
        add_pending(&v);
      }
    }
    if (snap_.pending_in_order != nullptr) {
      for (const JobView* v : *snap_.pending_in_order) add_pending(v);
    }
    for (int leaf : tree_.leaves()) {
      auto& p = pending_[static_cast<std::size_t>(leaf)];
      std::stable_sort(p.begin(), p.end(), [](const JobView* a, const JobView* b) {
        return std::make_tuple(-a->job->priority, a->job->submit, a->job->id) <
               std::make_tuple(-b->job->priority, b->job->submit, b->job->id);
      });
      if (!p.empty()) SetActive(leaf, +1);
    }
  }

  // The leaf to serve next, or -1.
  int Pick() const {
    const std::vector<int>* level = &tree_.roots();
    int chosen = -1;
    while (true) {
      int best = -1;
      std::tuple<int, double> best_key;
      for (int c : *level) {
        if (active_[static_cast<std::size_t>(c)] == 0) continue;
        const QueueNode& n = tree_.node(c);
        const std::tuple<int, double> key{
            -n.priority,
            WeightedDominantShare(usage_[static_cast<std::size_t>(c)], tree_.capacity(), n.weight)};
        if (best < 0 || key < best_key) {
          best = c;
          best_key = key;
        }
      }
      if (best < 0) return chosen;
      chosen = best;
      if (tree_.node(best).leaf()) return best;
      level = &tree_.node(best).children;
    }
  }

  const JobView* Head(int leaf) const {
    const auto& p = pending_[static_cast<std::size_t>(leaf)];
    const std::size_t i = next_[static_cast<std::size_t>(leaf)];
    return i < p.size() ? p[i] : nullptr;
  }
  // The head started: move on; a queue with nothing left stops competing.
  void Pop(int leaf) {
    ++next_[static_cast<std::size_t>(leaf)];
    if (Head(leaf) == nullptr) SetActive(leaf, -1);
  }
  void Block(int leaf) { SetActive(leaf, -1); }

  // Admission: the job keeps its queue and every ancestor within guarantee + borrow limit.
  bool Admits(int leaf, const Resources& r) const {
    for (int q = leaf; q >= 0; q = tree_.node(q).parent) {
      if (!WithinLimit(usage_[static_cast<std::size_t>(q)] + r, tree_.node(q))) return false;
    }
    return true;
  }
  // GPUs always; CPU and memory only where the queue is guaranteed some (a tree that only
  // guarantees GPUs does not make every job with CPU "over its guarantee").
  bool WithinGuarantee(int leaf, const Resources& r) const {
    const Resources u = usage_[static_cast<std::size_t>(leaf)] + r;
    const Resources& g = tree_.node(leaf).guaranteed;
    return u.gpu_milli <= g.gpu_milli && (g.cpu_milli == 0 || u.cpu_milli <= g.cpu_milli) &&
           (g.memory_mib == 0 || u.memory_mib <= g.memory_mib);
  }
  bool Borrowing(int leaf) const {
    return usage_[static_cast<std::size_t>(leaf)].gpu_milli > tree_.node(leaf).guaranteed.gpu_milli;
  }

  struct Running {
    const JobView* view;
    int leaf;
    bool evicted;
  };
  std::vector<Running>& running() { return running_; }

 private:
  void SetActive(int leaf, int delta) {
    for (int q = leaf; q >= 0; q = tree_.node(q).parent)
      active_[static_cast<std::size_t>(q)] += delta;
  }
  const Snapshot& snap_;
  const QueueTree& tree_;
  std::vector<Resources> usage_;
  std::vector<std::vector<const JobView*>> pending_;
  std::vector<std::size_t> next_;
  std::vector<int> active_;  // leaves below (or self) that still compete this cycle
  std::vector<Running> running_;
};

}  // namespace

void ScheduleFairShare(const Snapshot& snap, const QueueTree& tree, VictimOrder victims,
                       ClusterState& working, const TaskPlacer& placer, Rng& rng, Decisions& out,
                       const FairShareLimits& limits) {
  Cycle cycle(snap, tree);
  cycle.Load();
  std::size_t searches = 0;
  std::size_t failures = 0;
  const std::size_t max_failures = snap.max_attempts_after_block;
  for (int leaf = cycle.Pick(); leaf >= 0; leaf = cycle.Pick()) {
    const JobView* v = cycle.Head(leaf);
    const Workload& job = *v->job;
    const Resources need = job.TotalResources();
    if (!cycle.Admits(leaf, need)) {
      cycle.Block(leaf);
      continue;
    }
    if (need.gpu_milli == 0 || working.free_gpu_milli() > 0) {
      if (auto p = placer.PlaceGang(working, job, rng)) {
        out.push_back({Decision::Kind::kBind, job.id, std::move(*p), {}});
        cycle.Charge(leaf, need, +1);
        cycle.Pop(leaf);
        continue;
      }
    }
    // Does not fit: evict lower-priority jobs of its own queue, and reclaim borrowed capacity
    // when its queue is within its guarantee.
    std::optional<VictimSet> set;
    if (searches < limits.max_victim_searches) {
      const bool reclaim = cycle.WithinGuarantee(leaf, need);
      std::vector<const JobView*> candidates;
      for (const auto& r : cycle.running()) {
        if (r.evicted || r.leaf < 0 || !MayEvict(*r.view->job, job)) continue;
        const bool lower_here = r.leaf == leaf && r.view->job->priority < job.priority;
        const bool borrowed = reclaim && r.leaf != leaf && cycle.Borrowing(r.leaf) &&
                              snap.now - r.view->started >= tree.reclaim_grace();
        if (lower_here || borrowed) candidates.push_back(r.view);
      }
      if (!candidates.empty()) {
        ++searches;
        set = FindVictims(working, job, std::move(candidates), snap.now, victims, placer, rng,
                          limits.search);
      }
    }
    if (!set) {
      cycle.Block(leaf);
      if (max_failures > 0 && ++failures >= max_failures) break;
      continue;
    }
    for (const JobView* victim : set->victims) {
      for (auto& r : cycle.running()) {
        if (r.view != victim) continue;
        r.evicted = true;
        cycle.Charge(r.leaf, victim->job->TotalResources(), -1);
        const std::string why =
            r.leaf == leaf
                ? "preempted by higher-priority " + job.name + " in queue " + tree.node(leaf).path
                : "reclaimed by queue " + tree.node(leaf).path + " for " + job.name + " (queue " +
                      tree.node(r.leaf).path + " is over its guarantee)";
        out.push_back({Decision::Kind::kPreempt, victim->job->id, {}, why});
      }
    }
    out.push_back({Decision::Kind::kBind, job.id, std::move(set->placement), {}});
    cycle.Charge(leaf, need, +1);
    cycle.Pop(leaf);
  }
}

}  // namespace tessera
