#include "sim/report/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace tessera::report {

namespace {

using json = nlohmann::json;

enum class Unit { kRatio, kSeconds, kRequestsPerSecond };

// How one experiment is decided.
struct Decider {
  std::vector<std::string> path;  // to the figure in a result
  int index = -1;                 // >= 0: the figure is element `index` of that array
  bool higher_wins = true;
  Unit unit = Unit::kRatio;
  std::string_view wins;    // "... allocates the most GPUs at 100 % demand"
  std::string_view figure;  // "allocation at 100 % demand"
};

std::optional<double> At(const json& result, const Decider& d) {
  const json* j = &result;
  for (const auto& key : d.path) {
    if (!j->is_object() || !j->contains(key)) return std::nullopt;
    j = &(*j)[key];
  }
  if (d.index >= 0) {
    if (!j->is_array() || static_cast<int>(j->size()) <= d.index) return std::nullopt;
    j = &(*j)[static_cast<std::size_t>(d.index)];
  }
  if (!j->is_number()) return std::nullopt;
  const double v = j->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// "45 s", "12.5 min", "3.2 h", "1.4 d": the units the report's charts and tables use.
std::string Duration(double s) {
  const double a = std::abs(s);
  if (a < 120) return fmt::format("{:.3g} s", s);
  if (a < 7200) return fmt::format("{:.3g} min", s / 60);
  if (a < 172800) return fmt::format("{:.3g} h", s / 3600);
  return fmt::format("{:.3g} d", s / 86400);
}

std::string Value(double v, Unit unit) {
  switch (unit) {
    case Unit::kRatio:
      return fmt::format("{:.1f} %", 100 * v);
    case Unit::kSeconds:
      return Duration(v);
    case Unit::kRequestsPerSecond:
      return fmt::format("{:.3g} req/s", v);
  }
  return "";
}

// How much better `best` is than `other`: points for ratios, a relative share otherwise.
std::string Margin(double best, double other, const Decider& d) {
  if (d.unit == Unit::kRatio) return fmt::format("{:.1f} points", 100 * std::abs(best - other));
  if (other == 0) return "infinitely";
  const double rel = 100 * std::abs(best - other) / std::abs(other);
  return fmt::format("{:.0f} %", rel);
}

std::string_view Comparative(const Decider& d) {
  if (d.unit == Unit::kRatio) return d.higher_wins ? "more than" : "less than";
  return d.higher_wins ? "more than" : "shorter than";
}

bool Negligible(double a, double b, const Decider& d) {
  if (d.unit == Unit::kRatio) return std::abs(a - b) < 0.0005;
  const double scale = std::max(std::abs(a), std::abs(b));
  return scale == 0 || std::abs(a - b) / scale < 0.005;
}

struct Entry {
  std::string name;
  double value = 0;
};

std::string Decide(std::vector<Entry> entries, const Decider& d, std::string_view among) {
  if (entries.empty()) {
    return fmt::format("No verdict: no result has its {}.", d.figure);
  }
  std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
    return d.higher_wins ? a.value > b.value : a.value < b.value;
  });
  const Entry& best = entries.front();
  if (entries.size() == 1) {
    return fmt::format("Only {} {}: {} {}.", best.name, among.empty() ? "ran" : among, d.figure,
                       Value(best.value, d.unit));
  }
  const Entry& next = entries[1];
  if (Negligible(best.value, entries.back().value, d)) {
    return fmt::format("No policy wins: all {} have the same {} ({}).", entries.size(), d.figure,
                       Value(best.value, d.unit));
  }
  if (Negligible(best.value, next.value, d)) {
    return fmt::format("{} and {} tie {}: {} {}, {} {} the last ({}, {}).", best.name, next.name,
                       d.wins, d.figure, Value(best.value, d.unit),
                       Margin(best.value, entries.back().value, d), Comparative(d),
                       entries.back().name, Value(entries.back().value, d.unit));
  }
  std::string s =
      fmt::format("{} {}: {} {}, {} {} the runner-up ({}, {})", best.name, d.wins, d.figure,
                  Value(best.value, d.unit), Margin(best.value, next.value, d), Comparative(d),
                  next.name, Value(next.value, d.unit));
  if (entries.size() > 2) {
    const Entry& last = entries.back();
    s += fmt::format(" and {} {} the last ({}, {})", Margin(best.value, last.value, d),
                     Comparative(d), last.name, Value(last.value, d.unit));
  }
  return s + ".";
}

std::optional<Decider> DeciderFor(std::string_view experiment) {
  if (experiment == "allocation")
    return Decider{{"allocation_at_demand"},
                   100,
                   true,
                   Unit::kRatio,
                   "allocates the most GPUs once demand reaches the cluster's capacity",
                   "allocation at 100 % demand"};
  if (experiment == "replay")
    return Decider{{"jct_seconds", "mean"}, -1,        false, Unit::kSeconds,
                   "finishes jobs soonest", "mean JCT"};
  if (experiment == "failures")
    return Decider{{"ettr"}, -1, true, Unit::kRatio, "keeps training the most productive", "ETTR"};
  if (experiment == "colocation")
    return Decider{{"gpu_allocation_ratio"},
                   -1,
                   true,
                   Unit::kRatio,
                   "keeps the most GPUs allocated while meeting the inference SLO",
                   "GPU allocation"};
  if (experiment == "serving")
    return Decider{{"goodput_rps"},
                   -1,
                   true,
                   Unit::kRequestsPerSecond,
                   "serves the most requests within the SLOs",
                   "goodput"};
  return std::nullopt;
}

std::string NameOf(const json& r) {
  for (const char* key : {"policy", "router"}) {
    if (r.contains(key) && r[key].is_string()) return r[key].get<std::string>();
  }
  return "a policy";
}

}  // namespace

std::string Verdict(const json& summary) {
  if (!summary.is_object()) return "No verdict: the summary is not an object.";
  const std::string experiment = summary.contains("experiment") && summary["experiment"].is_string()
                                     ? summary["experiment"].get<std::string>()
                                     : "";
  const auto decider = DeciderFor(experiment);
  if (!decider) {
    return fmt::format(
        "No verdict: the report does not know which figure decides the {} "
        "experiment; the table below has every result.",
        experiment.empty() ? "unnamed" : "\"" + experiment + "\"");
  }
  const json* results = summary.contains("results") ? &summary["results"] : nullptr;
  if (results == nullptr || !results->is_array() || results->empty())
    return "No verdict: the summary has no results.";

  // Co-location: only setups that meet the SLO about as well as the best one compete.
  std::optional<double> slo_floor;
  if (experiment == "colocation") {
    const Decider slo{{"slo_attainment"}, -1, true, Unit::kRatio, "", ""};
    for (const json& r : *results) {
      if (auto v = r.is_object() ? At(r, slo) : std::nullopt)
        slo_floor = std::max(slo_floor.value_or(0), *v - 0.01);
    }
  }
  std::vector<Entry> real, oracles;
  for (const json& r : *results) {
    if (!r.is_object()) continue;
    auto v = At(r, *decider);
    if (!v) continue;
    if (slo_floor) {
      auto slo = At(r, {{"slo_attainment"}, -1, true, Unit::kRatio, "", ""});
      if (!slo || *slo < *slo_floor) continue;
    }
    const bool oracle = r.contains("oracle") && r["oracle"].is_boolean() && r["oracle"];
    (oracle ? oracles : real).push_back({NameOf(r), *v});
  }
  const std::string among = slo_floor ? "meets the SLO" : "";
  return Decide(real.empty() ? oracles : real, *decider, among);
}

}  // namespace tessera::report
