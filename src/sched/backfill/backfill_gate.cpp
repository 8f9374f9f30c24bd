#include "sched/backfill/backfill_gate.h"

#include <algorithm>

namespace tessera {

namespace {

std::vector<NodeId> DistinctNodes(const Placement& p) {
  std::vector<NodeId> nodes;
  nodes.reserve(p.size());
  for (const auto& t : p) nodes.push_back(t.node);
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

}  // namespace

Reservation ReserveEarliest(const ClusterState& state, const Workload& job,
                            std::vector<ExpectedEnd> ends, Tick now, const TaskPlacer& placer,
                            Rng& rng) {
  // Only ends that are known count; ties by end time keep the order of the input (stable), so
  // the result does not depend on anything but the input order.
  std::erase_if(ends,
                [](const ExpectedEnd& e) { return e.end >= kNever || e.placement == nullptr; });
  std::stable_sort(ends.begin(), ends.end(),
                   [](const ExpectedEnd& a, const ExpectedEnd& b) { return a.end < b.end; });
  // cuts[i]: how many ends have passed at the i-th distinct end time.
  std::vector<std::size_t> cuts;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    if (i + 1 == ends.size() || ends[i + 1].end != ends[i].end) cuts.push_back(i + 1);
  }
  // One seed for every probe, so a probe's outcome does not depend on which probes came first.
  const std::uint64_t seed = rng.Next();
  // One scratch copy of the state, moved between cuts by releasing or re-applying ends (a
  // copy per probe costs more than the placement at 1,250 nodes).
  ClusterState future = state;
  std::size_t at = 0;  // ends[0, at) are released in `future`
  auto probe = [&](std::size_t released) -> std::optional<Placement> {
    for (; at < released; ++at) future.Release(*ends[at].placement);
    for (; at > released; --at) (void)future.Apply(*ends[at - 1].placement);
    Rng r(seed);
    auto p = placer.PlaceGang(future, job, r);
    if (p) future.Release(*p);
    return p;
  };
  // Below this cut, too few GPUs are free even counted cluster-wide: no need to probe there.
  std::size_t lo = 0;
  {
    std::int64_t free = state.free_gpu_milli();
    std::size_t i = 0;
    while (lo < cuts.size() && free < job.TotalGpuMilli()) {
      for (; i < cuts[lo]; ++i) free += ends[i].gpu_milli;
      if (free < job.TotalGpuMilli()) ++lo;
    }
  }
  Reservation out;
  if (auto p = state.free_gpu_milli() >= job.TotalGpuMilli() ? probe(0) : std::nullopt) {
    out.start = now;
    out.placement = std::move(*p);
  } else if (lo < cuts.size() && probe(cuts.back())) {
    std::size_t hi = cuts.size() - 1;  // the answer is in cuts[lo..hi]
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (probe(cuts[mid])) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    out.start = std::max(now, ends[cuts[lo] - 1].end);
    out.placement = std::move(*probe(cuts[lo]));
  }
  out.nodes = DistinctNodes(out.placement);
  return out;
}

std::optional<BackfillReservation> ParseBackfillReservation(const std::string& name) {
  if (name == "domain") return BackfillReservation::kDomain;
  if (name == "gpu-count") return BackfillReservation::kGpuCount;
  return std::nullopt;
}

void BackfillGate::Block(const ClusterState& state, const Workload& head,
                         std::vector<ExpectedEnd> ends, Tick now, Rng& rng) {
  if (kind_ == BackfillReservation::kDomain) {
    reservation_ = ReserveEarliest(state, head, std::move(ends), now, placer_, rng);
    return;
  }
  // EASY: walk the expected ends until the GPUs counted cluster-wide cover the head.
  std::stable_sort(ends.begin(), ends.end(),
                   [](const ExpectedEnd& a, const ExpectedEnd& b) { return a.end < b.end; });
  std::int64_t free = state.free_gpu_milli();
  const std::int64_t need = head.TotalGpuMilli();
  Tick shadow = now;
  // Jobs that end at the same instant give their GPUs back together.
  for (std::size_t i = 0; i < ends.size() && free < need;) {
    shadow = ends[i].end;
    for (; i < ends.size() && ends[i].end == shadow; ++i) free += ends[i].gpu_milli;
  }
  reservation_ = Reservation{};
  reservation_.start = free >= need ? shadow : kNever;
  spare_at_shadow_ = free >= need ? free - need : 0;
}

std::optional<Placement> BackfillGate::TryStart(ClusterState& state, const Workload& job,
                                                Tick estimate, Tick now, Rng& rng) {
  const Tick start = reservation_.start;
  // No estimate says when the head can start: nothing can be promised to it, so later jobs
  // may use what is free (as EASY does when the shadow time is unknown).
  const bool ends_in_time = start >= kNever || (estimate > 0 && now + estimate <= start);
  if (ends_in_time) return placer_.PlaceGang(state, job, rng);
  if (kind_ == BackfillReservation::kGpuCount) {
    if (job.TotalGpuMilli() > spare_at_shadow_) return std::nullopt;
    auto p = placer_.PlaceGang(state, job, rng);
    if (p) spare_at_shadow_ -= job.TotalGpuMilli();
    return p;
  }
  // Outlives the reservation's start: it may not touch a reserved node. The reserved nodes are
  // made unavailable for this one try (and given back exactly as they were).
  Fence(state);
  auto p = placer_.PlaceGang(state, job, rng);
  Unfence(state);
  return p;
}

void BackfillGate::Fence(ClusterState& state) {
  fenced_.clear();
  for (NodeId n : reservation_.nodes) {
    if (state.node(n).healthy) {
      state.SetHealthy(n, false);
      fenced_.push_back(n);
    }
  }
}

void BackfillGate::Unfence(ClusterState& state) {
  for (NodeId n : fenced_) state.SetHealthy(n, true);
  fenced_.clear();
}

}  // namespace tessera
