#include "sched/preemption/victim_search.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace tessera {

bool MayEvict(const Workload& victim, const Workload& preemptor) {
  if (!victim.preemptible) return false;
  if (victim.kind == WorkloadKind::kInference) {
    return preemptor.kind == WorkloadKind::kInference && preemptor.priority > victim.priority;
  }
  return true;
}

double GpuSecondsLost(const JobView& v, Tick now) {
  const Tick since = std::max(v.last_checkpoint, v.started);
  const double gpus = static_cast<double>(v.job->TotalGpuMilli()) / kMilliPerGpu;
  return gpus * ToSeconds(std::max<Tick>(0, now - since));
}

namespace {

struct Candidate {
  const JobView* view;
  double lost;
  std::int64_t gpu_milli;
};

// One place to free a placement in: the candidates with a task there, in preference order.
struct Scope {
  std::vector<std::size_t> members;  // indexes into the ordered candidates
  std::int64_t free_gpu_milli = 0;   // free now inside the place
  std::int64_t freeable_gpu_milli = 0;
};

class Search {
 public:
  Search(ClusterState& working, const Workload& job, const TaskPlacer& placer, Rng& rng,
         std::size_t budget)
      : working_(working), job_(job), placer_(placer), rng_(rng), budget_(budget) {}

  // Tries the gang on the current state; takes nothing.
  std::optional<Placement> TryPlace() {
    if (budget_ == 0) return std::nullopt;
    --budget_;
    auto p = placer_.PlaceGang(working_, job_, rng_);
    if (p) working_.Release(*p);
    return p;
  }

  // Greedy then minimal inside one scope; restores `working` before returning.
  std::optional<VictimSet> InScope(const Scope& s, const std::vector<Candidate>& cands, Tick now) {
    if (s.free_gpu_milli + s.freeable_gpu_milli < job_.TotalGpuMilli()) return std::nullopt;
    std::vector<std::size_t> out;
    std::int64_t freed = 0;
    std::optional<Placement> fit;
    for (std::size_t i : s.members) {
      working_.Release(cands[i].view->placement);
      out.push_back(i);
      freed += cands[i].gpu_milli;
      if (s.free_gpu_milli + freed < job_.TotalGpuMilli()) continue;
      if ((fit = TryPlace())) break;
      if (budget_ == 0) break;
    }
    if (!fit) {
      Restore(out, cands);
      return std::nullopt;
    }
    // Minimal: give each victim its GPUs back, costliest first; keep it running if the gang
    // still fits without it.
    for (std::size_t k = out.size(); k-- > 0;) {
      const std::size_t i = out[k];
      if (!working_.Apply(cands[i].view->placement)) continue;  // cannot happen: it was there
      if (auto p = TryPlace()) {
        fit = std::move(p);
        out.erase(out.begin() + static_cast<long>(k));
      } else {
        working_.Release(cands[i].view->placement);
      }
    }
    VictimSet set;
    set.placement = std::move(*fit);
    for (std::size_t i : out) {
      set.victims.push_back(cands[i].view);
      set.gpu_seconds_lost += GpuSecondsLost(*cands[i].view, now);
    }
    Restore(out, cands);
    return set;
  }

  bool exhausted() const { return budget_ == 0; }

 private:
  void Restore(const std::vector<std::size_t>& released, const std::vector<Candidate>& cands) {
    for (std::size_t i : released) (void)working_.Apply(cands[i].view->placement);
  }
  ClusterState& working_;
  const Workload& job_;
  const TaskPlacer& placer_;
  Rng& rng_;
  std::size_t budget_;
};

// (non-batch victims, GPU-time lost, GPUs evicted): smaller is better.
std::tuple<std::size_t, double, std::int64_t> Rank(const VictimSet& s) {
  std::size_t non_batch = 0;
  std::int64_t gpus = 0;
  for (const JobView* v : s.victims) {
    non_batch += v->job->kind != WorkloadKind::kBatch;
    gpus += v->job->TotalGpuMilli();
  }
  return {non_batch, s.gpu_seconds_lost, gpus};
}

}  // namespace

std::optional<VictimSet> FindVictims(ClusterState& working, const Workload& preemptor,
                                     std::vector<const JobView*> candidates, Tick now,
                                     VictimOrder order, const TaskPlacer& placer, Rng& rng,
                                     const VictimSearchLimits& limits) {
  std::vector<Candidate> cands;
  cands.reserve(candidates.size());
  for (const JobView* v : candidates) {
    if (v->phase != JobPhase::kRunning || v->placement.empty()) continue;
    if (!MayEvict(*v->job, preemptor)) continue;  // enforced here too, whatever the caller passes
    cands.push_back({v, GpuSecondsLost(*v, now), v->job->TotalGpuMilli()});
  }
  auto not_batch = [](const Candidate& c) { return c.view->job->kind != WorkloadKind::kBatch; };
  if (order == VictimOrder::kCheckpointAware) {
    std::sort(cands.begin(), cands.end(), [&](const Candidate& a, const Candidate& b) {
      return std::make_tuple(not_batch(a), a.lost, a.view->job->id) <
             std::make_tuple(not_batch(b), b.lost, b.view->job->id);
    });
  } else {
    std::sort(cands.begin(), cands.end(), [&](const Candidate& a, const Candidate& b) {
      return std::make_tuple(not_batch(a), a.view->job->priority, -a.view->started,
                             a.view->job->id) < std::make_tuple(not_batch(b), b.view->job->priority,
                                                                -b.view->started, b.view->job->id);
    });
  }
  if (cands.empty()) return std::nullopt;

  // The places to free a placement in. Naive: the whole cluster, as Kueue and Volcano look.
  // Checkpoint-aware: each node (a one-task job) or each innermost topology domain (a gang),
  // then the whole cluster.
  const Cluster& cluster = working.cluster();
  std::vector<Scope> scopes;
  auto whole = [&] {
    Scope s;
    s.free_gpu_milli = working.free_gpu_milli();
    for (std::size_t i = 0; i < cands.size(); ++i) {
      s.members.push_back(i);
      s.freeable_gpu_milli += cands[i].gpu_milli;
    }
    return s;
  };
  if (order == VictimOrder::kCheckpointAware) {
    const bool one_node = preemptor.TaskCount() == 1;
    const auto levels = cluster.topology().levels.size();
    if (one_node || levels > 0) {
      // Key of a node's place: the node itself, or its innermost named domain.
      auto place_of = [&](NodeId n) -> std::uint64_t {
        if (one_node) return n.value;
        const auto& d = cluster.node(n).domain;
        return d.size() >= levels ? d[levels - 1] : 0;
      };
      std::map<std::uint64_t, Scope> by_place;
      for (std::size_t i = 0; i < cands.size(); ++i) {
        std::map<std::uint64_t, std::int64_t> gpus_in;
        for (const auto& t : cands[i].view->placement) {
          gpus_in[place_of(t.node)] += t.gpu_count() * std::int64_t{t.gpu_milli};
        }
        for (const auto& [place, gpus] : gpus_in) {
          auto& s = by_place[place];
          s.members.push_back(i);
          s.freeable_gpu_milli += gpus;
        }
      }
      for (const Node& n : cluster.nodes()) {
        auto it = by_place.find(place_of(n.id));
        if (it != by_place.end()) it->second.free_gpu_milli += working.node(n.id).free.gpu_milli;
      }
      for (auto& [place, s] : by_place) scopes.push_back(std::move(s));
      // Most promising first (cheapest lower bound on what it costs), so a tight budget
      // still sees the good places.
      std::stable_sort(scopes.begin(), scopes.end(), [&](const Scope& a, const Scope& b) {
        return cands[a.members.front()].lost < cands[b.members.front()].lost;
      });
      if (scopes.size() > limits.max_scopes) scopes.resize(limits.max_scopes);
    }
    if (!one_node) scopes.push_back(whole());
  } else {
    scopes.push_back(whole());
  }

  Search search(working, preemptor, placer, rng, limits.max_placements);
  std::optional<VictimSet> best;
  for (const Scope& s : scopes) {
    auto set = search.InScope(s, cands, now);
    if (set && (!best || Rank(*set) < Rank(*best))) best = std::move(set);
    if (order == VictimOrder::kNaive && best) break;
    if (search.exhausted()) break;
  }
  if (!best) return std::nullopt;
  for (const JobView* v : best->victims) working.Release(v->placement);
  if (!working.Apply(best->placement)) {
    for (const JobView* v : best->victims) (void)working.Apply(v->placement);
    return std::nullopt;
  }
  return best;
}

}  // namespace tessera
