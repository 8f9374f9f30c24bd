#include "sched/quota/fair_share_cycle.h"

#include <algorithm>
#include <set>
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

// What a job holds at `workers` workers (an elastic job may run below or above its nominal
// size).
Resources ResourcesAt(const Workload& job, std::size_t workers) {
  if (!IsElastic(job)) return job.TotalResources();
  return WithWorkers(job, static_cast<int>(workers)).TotalResources();
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
        const Resources held = ResourcesAt(*v.job, v.placement.size());
        running_.push_back({&v, leaf, false, held});
        if (leaf >= 0) Charge(leaf, held, +1);
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
    Resources charged;  // what its queue is charged for it
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

namespace {

// Charges the queues of elastic jobs shrunk this cycle what they hold now.
void Recharge(Cycle& cycle, const ElasticCycle& elastic, const Decisions& out) {
  for (auto& r : cycle.running()) {
    if (r.evicted || r.leaf < 0 || !IsElastic(*r.view->job)) continue;
    const Resources now = ResourcesAt(*r.view->job, elastic.Current(*r.view, out).size());
    if (now == r.charged) continue;
    cycle.Charge(r.leaf, r.charged, -1);
    cycle.Charge(r.leaf, now, +1);
    r.charged = now;
  }
}

// Elastic jobs grow only as far as their queue (and its ancestors) stay within their limits.
class QueueGrowthLimit final : public ElasticCycle::GrowthLimit {
 public:
  QueueGrowthLimit(Cycle& cycle, const QueueTree& tree) : cycle_(cycle), tree_(tree) {}
  int MaxWorkers(const Workload& job, int current) const override {
    const int leaf = tree_.Find(job.queue);
    if (leaf < 0 || !tree_.node(leaf).leaf()) return current;
    const Resources one = ResourcesAt(job, 1);
    int most = current;
    while (most < tessera::MaxWorkers(job) && cycle_.Admits(leaf, one * (most + 1 - current)))
      ++most;
    return most;
  }
  void Grew(const Workload& job, int from, int to) override {
    const int leaf = tree_.Find(job.queue);
    if (leaf >= 0) cycle_.Charge(leaf, ResourcesAt(job, 1) * (to - from), +1);
  }

 private:
  Cycle& cycle_;
  const QueueTree& tree_;
};

}  // namespace

namespace {

// One fair-share cycle's decisions, job by job.
class FairShareRun {
 public:
  FairShareRun(const Snapshot& snap, const QueueTree& tree, VictimOrder victims,
               ClusterState& working, const TaskPlacer& placer, Rng& rng, Decisions& out,
               const FairShareLimits& limits, ElasticCycle* elastic)
      : snap_(snap),
        tree_(tree),
        victims_(victims),
        working_(working),
        placer_(placer),
        rng_(rng),
        out_(out),
        limits_(limits),
        elastic_(elastic),
        cycle_(snap, tree) {}

  void Run() {
    cycle_.Load();
    std::size_t failures = 0;
    const std::size_t max_failures = snap_.max_attempts_after_block;
    for (int leaf = cycle_.Pick(); leaf >= 0; leaf = cycle_.Pick()) {
      const Workload& job = *cycle_.Head(leaf)->job;
      if (!cycle_.Admits(leaf, job.TotalResources())) {
        cycle_.Block(leaf);
        continue;
      }
      if (Place(leaf, job) || Reclaim(leaf, job)) continue;
      cycle_.Block(leaf);
      if (max_failures > 0 && ++failures >= max_failures) break;
    }
    if (elastic_ != nullptr) {
      QueueGrowthLimit limit(cycle_, tree_);
      elastic_->Grow(working_, nullptr, rng_, out_, &limit);
    }
  }

 private:
  void Bind(int leaf, const Workload& job, Placement p) {
    cycle_.Charge(leaf, ResourcesAt(job, p.size()), +1);
    out_.push_back({Decision::Kind::kBind, job.id, std::move(p), {}});
    if (elastic_ != nullptr) elastic_->NoteBound(job, out_.size() - 1);
    cycle_.Pop(leaf);
  }

  // Where it fits now (an elastic job at its minimum if not at its nominal size).
  bool Place(int leaf, const Workload& job) {
    if (job.TotalGpuMilli() > 0 && working_.free_gpu_milli() == 0) return false;
    std::optional<Placement> p = placer_.PlaceGang(working_, job, rng_);
    if (!p && elastic_ != nullptr) p = elastic_->PlaceAtMinimum(working_, job, rng_);
    if (p) Bind(leaf, job, std::move(*p));
    return p.has_value();
  }

  // Jobs it may take from: lower-priority jobs of its own queue, and borrowed capacity of
  // other queues when its queue is within its guarantee.
  std::vector<const JobView*> Candidates(int leaf, const Workload& job) {
    const bool reclaim = cycle_.WithinGuarantee(leaf, job.TotalResources());
    std::vector<const JobView*> out;
    for (const auto& r : cycle_.running()) {
      if (r.evicted || r.leaf < 0 || !MayEvict(*r.view->job, job)) continue;
      // Shrunk this cycle: its snapshot placement is no longer what it holds.
      if (elastic_ != nullptr && &elastic_->Current(*r.view, out_) != &r.view->placement) continue;
      const bool lower_here = r.leaf == leaf && r.view->job->priority < job.priority;
      const bool borrowed = reclaim && r.leaf != leaf && cycle_.Borrowing(r.leaf) &&
                            snap_.now - r.view->started >= tree_.reclaim_grace();
      if (lower_here || borrowed) out.push_back(r.view);
    }
    return out;
  }

  // Does not fit: elastic candidates give up workers first; else evict a victim set.
  bool Reclaim(int leaf, const Workload& job) {
    if (searches_ >= limits_.max_victim_searches) return false;
    std::vector<const JobView*> candidates = Candidates(leaf, job);
    if (candidates.empty()) return false;
    if (elastic_ != nullptr) {
      const std::set<const JobView*> among(candidates.begin(), candidates.end());
      if (auto p = elastic_->ShrinkFor(working_, job, rng_, out_,
                                       [&](const JobView& v) { return among.contains(&v); })) {
        Recharge(cycle_, *elastic_, out_);
        Bind(leaf, job, std::move(*p));
        return true;
      }
    }
    ++searches_;
    auto set = FindVictims(working_, job, std::move(candidates), snap_.now, victims_, placer_, rng_,
                           limits_.search);
    if (!set) return false;
    for (const JobView* victim : set->victims) Evict(leaf, job, *victim);
    Bind(leaf, job, std::move(set->placement));
    return true;
  }

  void Evict(int leaf, const Workload& job, const JobView& victim) {
    for (auto& r : cycle_.running()) {
      if (r.view != &victim) continue;
      r.evicted = true;
      cycle_.Charge(r.leaf, r.charged, -1);
      const std::string why =
          r.leaf == leaf
              ? "preempted by higher-priority " + job.name + " in queue " + tree_.node(leaf).path
              : "reclaimed by queue " + tree_.node(leaf).path + " for " + job.name + " (queue " +
                    tree_.node(r.leaf).path + " is over its guarantee)";
      out_.push_back({Decision::Kind::kPreempt, victim.job->id, {}, why});
    }
  }

  const Snapshot& snap_;
  const QueueTree& tree_;
  VictimOrder victims_;
  ClusterState& working_;
  const TaskPlacer& placer_;
  Rng& rng_;
  Decisions& out_;
  const FairShareLimits& limits_;
  ElasticCycle* elastic_;
  Cycle cycle_;
  std::size_t searches_ = 0;
};

}  // namespace

void ScheduleFairShare(const Snapshot& snap, const QueueTree& tree, VictimOrder victims,
                       ClusterState& working, const TaskPlacer& placer, Rng& rng, Decisions& out,
                       const FairShareLimits& limits, ElasticCycle* elastic) {
  FairShareRun(snap, tree, victims, working, placer, rng, out, limits, elastic).Run();
}

}  // namespace tessera
