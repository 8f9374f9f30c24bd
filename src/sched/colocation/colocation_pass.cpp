#include "sched/colocation/colocation_pass.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "sched/colocation/eviction.h"
#include "sched/colocation/oversell.h"

namespace tessera {

namespace {

// Pending offline tasks tried on credit after the last one that failed, per cycle, when the
// snapshot sets no limit of its own.
constexpr std::size_t kCreditAttempts = 256;

template <typename F>
void ForEachGpu(const TaskPlacement& t, F f) {
  for (int g = 0; g < kMaxGpusPerNode; ++g) {
    if (t.gpu_mask & (1u << g)) f(g);
  }
}

}  // namespace

ColocationCycle::ColocationCycle(const ColocationConfig& config, const Snapshot& snap,
                                 ClusterState& working)
    : config_(config), snap_(snap), working_(working) {
  for (const JobView& v : snap.jobs) {
    if (v.phase != JobPhase::kRunning) continue;
    const CoClass cls = ClassOf(config, v.job->kind);
    for (const TaskPlacement& t : v.placement) {
      if (cls == CoClass::kOnline) {
        const std::int64_t used = v.used_gpu_milli < 0
                                      ? t.gpu_milli
                                      : std::min<std::int64_t>(v.used_gpu_milli, t.gpu_milli);
        ForEachGpu(t, [&](int g) {
          auto& l = gpus_[{t.node.value, g}];
          l.online_requested += t.gpu_milli;
          l.online_used += used;
        });
      } else if (cls == CoClass::kOffline && v.oversold) {
        ForEachGpu(t, [&](int g) { gpus_[{t.node.value, g}].oversold += t.gpu_milli; });
      }
    }
    if (cls == CoClass::kOffline) {
      std::set<std::uint32_t> nodes;
      for (const TaskPlacement& t : v.placement) nodes.insert(t.node.value);
      for (std::uint32_t n : nodes) offline_on_node_[n].push_back(&v);
    }
  }
  for (auto& [node, list] : offline_on_node_) {
    std::ranges::sort(list,
                      [](const JobView* a, const JobView* b) { return a->job->id < b->job->id; });
  }
}

bool ColocationCycle::Owns(const JobView& v) const {
  return v.phase == JobPhase::kPending && ClassOf(config_, v.job->kind) == CoClass::kOnline;
}

std::int64_t ColocationCycle::Credit(const GpuLedger& g) const {
  return OversellCredit(config_.oversell_permille, g.online_requested, g.online_used);
}

std::int64_t ColocationCycle::Cost(const JobView& v) const {
  return EvictionCost(v.job->TotalGpuMilli(), snap_.now - v.started, config_.eviction_cost);
}

void ColocationCycle::Evict(const JobView* v, const std::string& reason, Decisions& out) {
  working_.Release(ChargedPlacement(v->placement, v->oversold));
  if (v->oversold) {
    for (const TaskPlacement& t : v->placement) {
      ForEachGpu(t, [&](int g) { gpus_[{t.node.value, g}].oversold -= t.gpu_milli; });
    }
  }
  evicted_.insert(v->job->id);
  out.push_back({Decision::Kind::kPreempt, v->job->id, {}, reason});
}

void ColocationCycle::ReclaimCredit(Decisions& out) {
  for (auto& [key, ledger] : gpus_) {
    const std::int64_t credit = Credit(ledger);
    if (ledger.oversold <= credit) continue;
    std::vector<const JobView*> on_gpu;
    for (const JobView* v : offline_on_node_[key.first]) {
      if (!v->oversold || evicted_.contains(v->job->id)) continue;
      for (const TaskPlacement& t : v->placement) {
        if (t.node.value == key.first && (t.gpu_mask & (1u << key.second))) {
          on_gpu.push_back(v);
          break;
        }
      }
    }
    std::vector<EvictionCandidate> candidates;
    std::vector<std::int64_t> milli;
    for (const JobView* v : on_gpu) {
      candidates.push_back({v->job->id, Cost(*v)});
      std::int64_t m = 0;
      for (const TaskPlacement& t : v->placement) {
        if (t.node.value == key.first && (t.gpu_mask & (1u << key.second))) m += t.gpu_milli;
      }
      milli.push_back(m);
    }
    const std::int64_t oversold = ledger.oversold;
    bool ok = false;
    const auto victims = ChooseVictims(
        candidates,
        [&](const std::vector<char>& chosen) {
          std::int64_t left = oversold;
          for (std::size_t i = 0; i < chosen.size(); ++i) left -= chosen[i] ? milli[i] : 0;
          return left <= credit;
        },
        &ok);
    for (std::size_t i : victims) {
      Evict(on_gpu[i], "co-location: the online load took back the oversold GPU share", out);
    }
  }
}

std::vector<const JobView*> ColocationCycle::Pending(CoClass cls) const {
  std::vector<const JobView*> list;
  auto take = [&](const JobView* v) {
    if (v->phase == JobPhase::kPending && ClassOf(config_, v->job->kind) == cls) list.push_back(v);
  };
  for (const JobView& v : snap_.jobs) take(&v);
  if (snap_.pending_in_order != nullptr) {
    for (const JobView* v : *snap_.pending_in_order) take(v);
  }
  std::ranges::stable_sort(list, [](const JobView* a, const JobView* b) {
    return std::make_tuple(-a->job->priority, a->job->submit, a->job->id) <
           std::make_tuple(-b->job->priority, b->job->submit, b->job->id);
  });
  return list;
}

std::optional<TaskPlacement> ColocationCycle::PlaceOnlineTask(
    const TaskPlacer& placer, Rng& rng, const Workload& job, const TaskShape& shape,
    std::vector<const JobView*>& victims) {
  if (auto t = placer.Place(working_, shape, job.allowed_models, rng)) return t;
  // The node whose offline tasks cost least to evict for this task; ties by node id.
  std::int64_t best_cost = -1;
  std::uint32_t best_node = 0;
  std::vector<const JobView*> best_victims;
  for (const auto& [node_id, list] : offline_on_node_) {
    const Node& node = working_.cluster().node(NodeId(node_id));
    if (!job.allowed_models.Contains(node.gpu_model) || node.gpu_count < shape.gpus) continue;
    std::vector<const JobView*> live;
    std::vector<EvictionCandidate> candidates;
    for (const JobView* v : list) {
      if (evicted_.contains(v->job->id)) continue;
      live.push_back(v);
      candidates.push_back({v->job->id, Cost(*v)});
    }
    if (live.empty()) continue;
    bool ok = false;
    const auto chosen_idx = ChooseVictims(
        candidates,
        [&](const std::vector<char>& chosen) {
          for (std::size_t i = 0; i < chosen.size(); ++i) {
            if (chosen[i])
              working_.Release(ChargedPlacement(live[i]->placement, live[i]->oversold));
          }
          const bool fits = TaskFitsNode(node, working_.node(node.id), shape, job.allowed_models);
          for (std::size_t i = 0; i < chosen.size(); ++i) {
            if (chosen[i])
              (void)working_.Apply(ChargedPlacement(live[i]->placement, live[i]->oversold));
          }
          return fits;
        },
        &ok);
    if (!ok) continue;
    std::int64_t cost = 0;
    for (std::size_t i : chosen_idx) cost += candidates[i].cost;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_node = node_id;
      best_victims.clear();
      for (std::size_t i : chosen_idx) best_victims.push_back(live[i]);
    }
  }
  if (best_cost < 0) return std::nullopt;
  for (const JobView* v : best_victims) {
    working_.Release(ChargedPlacement(v->placement, v->oversold));
    evicted_.insert(v->job->id);
    victims.push_back(v);
  }
  const std::vector<NodeId> only = {NodeId(best_node)};
  return placer.Place(working_, shape, job.allowed_models, rng, &only);
}

bool ColocationCycle::WaitsForReleased(const TaskPlacer& placer, const Workload& job) {
  if (snap_.releasing.empty()) return false;
  auto trial_place = [&] {
    Rng cycle(snap_.seed);
    auto placed = placer.PlaceGang(working_, job, cycle);
    if (placed) working_.Release(*placed);
    return placed;
  };
  if (trial_place()) return false;
  for (const Placement& p : snap_.releasing) working_.Release(p);
  const std::optional<Placement> later = trial_place();
  // Only a trial placement, given back, was made in between: these apply again.
  for (const Placement& p : snap_.releasing) (void)working_.Apply(p);
  if (!later) return false;
  // What of its place is free already stays the job's for the rest of the cycle, so that the
  // regular cycle does not hand it to offline work (a requeued victim would take it back, and
  // be evicted again for the same job next cycle).
  (void)working_.Apply(FreePartOf(*later));
  return true;
}

Placement ColocationCycle::FreePartOf(const Placement& p) const {
  Placement part;
  for (const TaskPlacement& t : p) {
    const NodeState& n = working_.node(t.node);
    TaskPlacement rest{t.node, 0, 0, std::min(t.cpu_milli, n.free.cpu_milli),
                       std::min(t.memory_mib, n.free.memory_mib)};
    ForEachGpu(t, [&](int g) {
      const std::int32_t free = std::min(t.gpu_milli, n.gpu_free[g]);
      if (free > 0) {
        part.push_back(
            {t.node, static_cast<std::uint16_t>(1u << g), free, rest.cpu_milli, rest.memory_mib});
        rest.cpu_milli = rest.memory_mib = 0;  // taken once, with the first GPU's part
      }
    });
    if (rest.cpu_milli > 0 || rest.memory_mib > 0) part.push_back(rest);
  }
  return part;
}

void ColocationCycle::Before(const TaskPlacer& placer, Rng& /*cycle*/, Decisions& out) {
  ReclaimCredit(out);
  for (const JobView* v : Pending(CoClass::kOnline)) {
    const Workload& job = *v->job;
    // Victims of an earlier cycle hold their resources until their processes are gone (the
    // controller's grace period): a job that fits once they have waits, evicting no one else.
    if (WaitsForReleased(placer, job)) continue;
    Placement placed;
    std::vector<const JobView*> victims;
    bool ok = true;
    Rng rng = placer.DrawsFor(job);  // as its gang placement's draws, not the cycle's
    for (int rank = 0; rank < job.TaskCount() && ok; ++rank) {
      auto t = PlaceOnlineTask(placer, rng, job, job.ShapeOfTask(rank), victims);
      if (!t) {
        ok = false;
        break;
      }
      (void)working_.Apply({*t});
      placed.push_back(*t);
    }
    if (!ok) {
      // All or nothing: the tasks placed go back, and so do the victims they evicted.
      working_.Release(placed);
      for (const JobView* victim : victims) {
        (void)working_.Apply(ChargedPlacement(victim->placement, victim->oversold));
      }
      for (const JobView* victim : victims) evicted_.erase(victim->job->id);
      continue;
    }
    for (const JobView* victim : victims) {
      if (victim->oversold) {
        for (const TaskPlacement& t : victim->placement) {
          ForEachGpu(t, [&](int g) { gpus_[{t.node.value, g}].oversold -= t.gpu_milli; });
        }
      }
      out.push_back({Decision::Kind::kPreempt,
                     victim->job->id,
                     {},
                     "co-location: evicted for online job " + job.name,
                     false,
                     job.id});
    }
    // A new replica's load is not known yet: it counts as using all it asked for, so it adds
    // no credit.
    for (const TaskPlacement& t : placed) {
      ForEachGpu(t, [&](int g) {
        auto& l = gpus_[{t.node.value, g}];
        l.online_requested += t.gpu_milli;
        l.online_used += t.gpu_milli;
      });
    }
    out.push_back({Decision::Kind::kBind, job.id, std::move(placed), {}});
  }
}

std::optional<Placement> ColocationCycle::PlaceOnCredit(
    const Workload& job, const std::vector<SpareCredit>& spares) const {
  const TaskShape& shape = job.ShapeOfTask(0);
  if (shape.gpus <= 0) return std::nullopt;
  // Per node, the GPUs whose spare credit holds the share; best fit: least credit left over.
  std::optional<Placement> best;
  std::int64_t best_left = 0;
  std::vector<std::pair<std::int64_t, int>> fit;  // (spare credit, GPU index) on one node
  auto consider = [&](std::uint32_t node_id) {
    if (static_cast<int>(fit.size()) < shape.gpus) return;
    const Node& node = working_.cluster().node(NodeId(node_id));
    const NodeState& s = working_.node(node.id);
    if (!s.healthy || !job.allowed_models.Contains(node.gpu_model)) return;
    if (s.free.cpu_milli < shape.cpu_milli || s.free.memory_mib < shape.memory_mib) return;
    std::ranges::sort(fit);
    std::int64_t left = 0;
    TaskPlacement t{node.id, 0, shape.gpu_milli, shape.cpu_milli, shape.memory_mib};
    for (int i = 0; i < shape.gpus; ++i) {
      left += fit[i].first - shape.gpu_milli;
      t.gpu_mask |= static_cast<std::uint16_t>(1u << fit[i].second);
    }
    if (!best || left < best_left) {
      best = Placement{t};
      best_left = left;
    }
  };
  for (std::size_t i = 0; i < spares.size();) {
    const std::uint32_t node = spares[i].node;
    fit.clear();
    for (; i < spares.size() && spares[i].node == node; ++i) {
      if (spares[i].spare >= shape.gpu_milli) fit.emplace_back(spares[i].spare, spares[i].gpu);
    }
    consider(node);
  }
  return best;
}

void ColocationCycle::After(Decisions& out) {
  if (config_.oversell_permille == 0) return;
  // The GPUs with credit to spare, in (node, GPU) order: a contiguous list that placements
  // update in place.
  std::vector<SpareCredit> spares;
  std::int64_t max_spare = 0;
  for (const auto& [key, ledger] : gpus_) {
    const std::int64_t left = Credit(ledger) - ledger.oversold;
    if (left > 0) spares.push_back({key.first, key.second, left});
    max_spare = std::max(max_spare, left);
  }
  if (spares.empty()) return;
  std::vector<JobId> bound_now;
  for (const Decision& d : out) {
    if (d.kind == Decision::Kind::kBind) bound_now.push_back(d.job);
  }
  std::ranges::sort(bound_now);
  const std::size_t limit =
      snap_.max_attempts_after_block > 0 ? snap_.max_attempts_after_block : kCreditAttempts;
  std::size_t failures = 0;
  for (const JobView* v : Pending(CoClass::kOffline)) {
    if (max_spare <= 0) break;
    // A task whose share no GPU's spare credit holds is passed over without counting as an
    // attempt: the queue's head is often whole-GPU tasks credit can never hold.
    if (v->job->TaskCount() != 1 || v->job->ShapeOfTask(0).gpu_milli > max_spare) continue;
    if (std::ranges::binary_search(bound_now, v->job->id)) continue;
    auto p = PlaceOnCredit(*v->job, spares);
    if (!p) {
      if (++failures >= limit) break;
      continue;
    }
    if (!working_.Apply(ChargedPlacement(*p, true))) continue;
    for (const TaskPlacement& t : *p) {
      ForEachGpu(t, [&](int g) {
        gpus_[{t.node.value, g}].oversold += t.gpu_milli;
        for (SpareCredit& c : spares) {
          if (c.node == t.node.value && c.gpu == g) c.spare -= t.gpu_milli;
        }
      });
    }
    max_spare = 0;
    for (const SpareCredit& c : spares) max_spare = std::max(max_spare, c.spare);
    Decision d{Decision::Kind::kBind, v->job->id, std::move(*p), {}};
    d.oversold = true;
    out.push_back(std::move(d));
  }
}

}  // namespace tessera
