#include "sim/export_comparison.h"

#include <algorithm>
#include <map>

namespace tessera {

namespace {

using Json = nlohmann::json;

std::vector<TaskPlace> PlacesOf(const Cluster& cluster, const Placement& placement) {
  std::vector<TaskPlace> out;
  for (const TaskPlacement& tp : placement) {
    out.push_back({cluster.node(tp.node).name, tp.gpu_mask,
                   tp.gpu_mask == 0   ? 0
                   : tp.gpu_milli > 0 ? tp.gpu_milli
                                      : 1000});
  }
  return out;
}

std::vector<std::string> NodesOf(const std::vector<TaskPlace>& on) {
  std::vector<std::string> out;
  for (const TaskPlace& p : on) out.push_back(TaskPlaceText(p.node, p.gpu_mask, p.gpu_milli));
  return out;
}

// "QUEUE/NAME" of a replay job (its name without a task's "#U").
std::string JobOf(const std::string& name) { return name.substr(0, name.find('#')); }

// One unit's decisions of one kind, in time order.
struct Sequence {
  std::vector<std::vector<TaskPlace>> on;  // kBind, kResize
  std::vector<std::string> by;             // kPreempt
  std::vector<Tick> time;
};
using ByKind = std::map<Decision::Kind, Sequence>;

// Pairs the k-th of each; returns whether all paired and agreed.
bool Compare(Decision::Kind kind, const Sequence& live, const Sequence& sim, DecisionCounts& c) {
  const bool placed = kind != Decision::Kind::kPreempt;
  const std::size_t n_live = live.time.size(), n_sim = sim.time.size();
  c.live += static_cast<int>(n_live);
  c.simulated += static_cast<int>(n_sim);
  bool all = n_live == n_sim;
  for (std::size_t k = 0; k < std::min(n_live, n_sim); ++k) {
    const bool same = placed ? live.on[k] == sim.on[k] : live.by[k] == sim.by[k];
    c.agree += same;
    all = all && same;
  }
  return all;
}

}  // namespace

ExportComparison CompareWithLive(const LiveExport& live, const ReplayResult& replay) {
  const std::size_t n = live.jobs.size();
  std::vector<ByKind> live_of(n), sim_of(n);
  Tick first_submit = kNever;
  for (const Workload& w : live.jobs) first_submit = std::min(first_submit, w.submit);
  for (const LiveDecision& d : live.decisions) {
    Sequence& s = live_of[d.unit][d.kind];
    s.time.push_back(d.time);
    s.on.push_back(d.on);
    s.by.push_back(d.by);
  }
  for (const ReplayDecision& d : replay.decisions) {
    Sequence& s = sim_of[d.job][d.kind];
    s.time.push_back(d.time);
    s.on.push_back(PlacesOf(live.cluster, d.placement));
    s.by.push_back(
        d.preemptor.valid() && d.preemptor.value < n ? JobOf(live.names[d.preemptor.value]) : "");
  }
  ExportComparison out;
  for (std::size_t u = 0; u < n; ++u) {
    UnitComparison row;
    row.unit = u;
    row.agree = Compare(Decision::Kind::kBind, live_of[u][Decision::Kind::kBind],
                        sim_of[u][Decision::Kind::kBind], out.binds);
    row.agree &= Compare(Decision::Kind::kPreempt, live_of[u][Decision::Kind::kPreempt],
                         sim_of[u][Decision::Kind::kPreempt], out.preemptions);
    row.agree &= Compare(Decision::Kind::kResize, live_of[u][Decision::Kind::kResize],
                         sim_of[u][Decision::Kind::kResize], out.resizes);
    if (const Sequence& b = live_of[u][Decision::Kind::kBind]; !b.time.empty()) {
      row.live_bound = b.time[0] - first_submit;
      row.live_nodes = NodesOf(b.on[0]);
    }
    if (const Sequence& b = sim_of[u][Decision::Kind::kBind]; !b.time.empty()) {
      row.simulated_bound = b.time[0] - first_submit;
      row.simulated_nodes = NodesOf(b.on[0]);
    }
    out.units.push_back(std::move(row));
  }
  return out;
}

Json ExportComparisonJson(const LiveExport& live, const ExportComparison& c) {
  auto counts = [](const DecisionCounts& d) {
    return Json{{"live", d.live}, {"simulated", d.simulated}, {"agree", d.agree}};
  };
  Json units = Json::array();
  for (const UnitComparison& u : c.units) {
    auto side = [](Tick bound, const std::vector<std::string>& nodes) {
      return bound < 0 ? Json(nullptr) : Json{{"boundMs", bound}, {"on", nodes}};
    };
    units.push_back({{"job", live.names[u.unit]},
                     {"live", side(u.live_bound, u.live_nodes)},
                     {"simulated", side(u.simulated_bound, u.simulated_nodes)},
                     {"agree", u.agree}});
  }
  return {{"binds", counts(c.binds)},
          {"preemptions", counts(c.preemptions)},
          {"resizes", counts(c.resizes)},
          {"decisions", {{"live", c.decisions_live()}, {"agree", c.decisions_agree()}}},
          {"cycles", live.options.cycles.size()},
          {"truncatedRecords", live.truncated_records},
          {"units", std::move(units)},
          {"notes", live.notes}};
}

}  // namespace tessera
