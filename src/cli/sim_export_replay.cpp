#include "cli/sim_export_replay.h"

#include <fmt/core.h>

#include <fstream>
#include <iostream>

#include "sim/export_comparison.h"
#include "sim/live_export.h"
#include "sim/summary.h"

namespace tessera::cli {

namespace {

std::string Joined(const std::vector<std::string>& nodes) {
  std::string s;
  for (const auto& n : nodes) s += (s.empty() ? "" : " ") + n;
  return s.empty() ? "-" : s;
}

std::string Seconds(Tick ms) { return ms < 0 ? "-" : fmt::format("{:.3f}", ToSeconds(ms)); }

void PrintComparison(const LiveExport& live, const ExportComparison& c) {
  constexpr std::size_t kRows = 40;
  std::cout << fmt::format("{:<32} {:>9} {:>9}  {:<5} {}\n", "unit", "live s", "sim s", "agree",
                           "live nodes | simulated nodes (first bind)");
  for (std::size_t i = 0; i < std::min(kRows, c.units.size()); ++i) {
    const UnitComparison& u = c.units[i];
    std::cout << fmt::format("{:<32} {:>9} {:>9}  {:<5} {} | {}\n", live.names[u.unit],
                             Seconds(u.live_bound), Seconds(u.simulated_bound),
                             u.agree ? "yes" : "NO", Joined(u.live_nodes),
                             Joined(u.simulated_nodes));
  }
  if (c.units.size() > kRows)
    std::cout << fmt::format("... {} more units in summary.json\n", c.units.size() - kRows);
  std::cout << fmt::format(
      "decisions agreeing: {} of {} live (binds {}/{} live, {} simulated; preemptions {}/{}, "
      "{}; resizes {}/{}, {})\n",
      c.decisions_agree(), c.decisions_live(), c.binds.agree, c.binds.live, c.binds.simulated,
      c.preemptions.agree, c.preemptions.live, c.preemptions.simulated, c.resizes.agree,
      c.resizes.live, c.resizes.simulated);
  for (const auto& note : live.notes) std::cout << "note: " << note << "\n";
}

}  // namespace

Result<nlohmann::json> RunExportReplay(const std::string& path, const std::string& policies,
                                       const std::string& event_log) {
  auto live = LoadLiveExport(path);
  if (!live) return std::unexpected(live.error());
  SummaryHeader head{"replay", path, live->jobs.size(), "tessera-export", 0, path};
  nlohmann::json summary = SummaryHead(head, live->cluster);
  std::cerr << fmt::format(
      "export: {} nodes, {} GPUs (simulated); {} units, {} recorded cycles; seed {}\n",
      live->cluster.node_count(), live->cluster.total_gpus(), live->jobs.size(),
      live->options.cycles.size(), live->options.seed);
  std::vector<std::string> list;
  for (std::size_t start = 0; start < policies.size();) {
    const std::size_t comma = std::min(policies.find(',', start), policies.size());
    if (comma > start) list.push_back(policies.substr(start, comma - start));
    start = comma + 1;
  }
  if (list.empty()) list.push_back(live->options.scheduler.queue_policy);
  for (const std::string& policy : list) {
    ReplayOptions options = live->options;
    options.scheduler.queue_policy = policy;
    options.record_events = !event_log.empty();
    auto r = RunReplay(live->cluster, live->jobs, options);
    if (!r) return std::unexpected(r.error());
    if (!event_log.empty()) {
      std::ofstream log(event_log + (list.size() > 1 ? "." + policy : ""));
      for (const auto& line : r->events) log << line << "\n";
      if (!log) return IoError("--event-log: cannot write " + event_log);
    }
    const ExportComparison c = CompareWithLive(*live, *r);
    std::cout << fmt::format("replay of {} under {} (live: {}), placement {}, seed {}\n", path,
                             policy, live->options.scheduler.queue_policy,
                             options.scheduler.placement_policy, options.seed);
    PrintComparison(*live, c);
    auto j = ReplayResultJson(*r);
    j["seed"] = options.seed;
    j["comparison"] = ExportComparisonJson(*live, c);
    summary["results"].push_back(std::move(j));
  }
  summary["export"] = {{"path", path},
                       {"exported_at_ms", live->exported_at},
                       {"live_policy", live->options.scheduler.queue_policy},
                       {"cycles", live->options.cycles.size()}};
  return summary;
}

}  // namespace tessera::cli
