// Renders the HTML report of one `tessera sim` run (see html_report.h and docs/report.md): the
// page is assembled here as HTML text plus one inline JSON document of chart specifications,
// which a small inline script hands to the inlined Chart.js. Every read of the summary checks
// the type first, so malformed or partial summaries render what they can and never throw.
#include "sim/report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/report/html_util.h"
#include "sim/report/verdict.h"
#include "web/chart_js.h"

namespace tessera {
namespace {

using nlohmann::json;
using report::FormatNumber;
using report::HtmlEscape;
using report::PickTimeUnit;
using report::Point;
using report::TimeUnit;

constexpr std::size_t kMaxPointsPerLine = 2000;
constexpr int kDefaultDemandMaxPercent = 130;
constexpr int kChartDigits = 6;  // significant digits kept in the inline chart data

// Tableau 10: distinguishable, and readable by most colour-blind readers.
constexpr std::array<std::string_view, 10> kPalette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                       "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                       "#9c755f", "#bab0ac"};

std::string Color(std::size_t i) { return std::string(kPalette[i % kPalette.size()]); }

// ---------------------------------------------------------------------------------------------
// Reading the summary without throwing.

const json* Field(const json* j, std::string_view key) {
  if (j == nullptr || !j->is_object()) return nullptr;
  const auto it = j->find(std::string(key));
  return it == j->end() ? nullptr : &*it;
}

std::optional<double> Number(const json* j) {
  if (j == nullptr || !j->is_number()) return std::nullopt;
  const double v = j->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::string Text(const json* j) {
  return j != nullptr && j->is_string() ? j->get<std::string>() : "";
}

bool IsTrue(const json* j) { return j != nullptr && j->is_boolean() && j->get<bool>(); }

// [[x, y], ...] with finite numbers; other entries are skipped. Sorted by x.
std::vector<Point> ReadPairs(const json* arr) {
  std::vector<Point> points;
  if (arr == nullptr || !arr->is_array()) return points;
  points.reserve(arr->size());
  for (const json& e : *arr) {
    if (!e.is_array() || e.size() < 2) continue;
    const auto x = Number(&e[0]);
    const auto y = Number(&e[1]);
    if (x && y) points.push_back({*x, *y});
  }
  if (!std::is_sorted(points.begin(), points.end(),
                      [](const Point& a, const Point& b) { return a.x < b.x; })) {
    std::stable_sort(points.begin(), points.end(),
                     [](const Point& a, const Point& b) { return a.x < b.x; });
  }
  return points;
}

// A chart value for the inline JSON: rounded, or null.
json ChartValue(std::optional<double> v) {
  if (!v) return nullptr;
  return report::RoundSignificant(*v, kChartDigits);
}

json PointsJson(const std::vector<Point>& points, double x_scale, double y_scale) {
  json out = json::array();
  for (const Point& p : points) {
    out.push_back(json::array({ChartValue(p.x / x_scale), ChartValue(p.y * y_scale)}));
  }
  return out;
}

// [v0, v1, ...] indexed by demand percent -> [[0, v0*scale], [1, ...], ...]; nulls kept so that
// every line of an allocation chart has the same x positions (tooltips list all policies).
json IndexedJson(const json* arr, double scale, std::size_t length) {
  json out = json::array();
  for (std::size_t i = 0; i < length; ++i) {
    std::optional<double> v;
    if (arr != nullptr && arr->is_array() && i < arr->size()) v = Number(&(*arr)[i]);
    out.push_back(json::array({static_cast<double>(i), v ? ChartValue(*v * scale) : json()}));
  }
  return out;
}

bool HasNumber(const json* arr) {
  if (arr == nullptr || !arr->is_array()) return false;
  return std::any_of(arr->begin(), arr->end(),
                     [](const json& v) { return Number(&v).has_value(); });
}

// ---------------------------------------------------------------------------------------------
// Units.

double MaxX(const std::vector<Point>& points) { return points.empty() ? 0 : points.back().x; }

// ---------------------------------------------------------------------------------------------
// Policies.

struct Policy {
  const json* result = nullptr;
  std::string name;   // as in the summary
  std::string label;  // name, plus " (oracle)" for oracle policies
  bool oracle = false;
  std::string color;
};

std::vector<Policy> ReadPolicies(const json& summary) {
  std::vector<Policy> policies;
  const json* results = Field(&summary, "results");
  if (results == nullptr || !results->is_array()) return policies;
  for (const json& r : *results) {
    if (!r.is_object()) continue;
    Policy p;
    p.result = &r;
    p.name = Text(Field(&r, "policy"));
    if (p.name.empty()) p.name = fmt::format("policy {}", policies.size() + 1);
    p.oracle = IsTrue(Field(&r, "oracle"));
    p.label = p.oracle ? p.name + " (oracle)" : p.name;
    p.color = Color(policies.size());
    policies.push_back(std::move(p));
  }
  return policies;
}

// ---------------------------------------------------------------------------------------------
// Page assembly.

class Page {
 public:
  void Append(std::string_view html) { body_ += html; }

  void Section(std::string_view title, std::string_view intro_html) {
    body_ += fmt::format("<section>\n<h2>{}</h2>\n", HtmlEscape(title));
    if (!intro_html.empty()) body_ += fmt::format("<p class=\"intro\">{}</p>\n", intro_html);
  }
  void EndSection() { body_ += "</section>\n"; }

  // Adds a figure with a canvas; `chart` is the chart's specification for the inline script.
  void Chart(std::string_view id, std::string_view title, std::string_view caption_html,
             json chart) {
    const std::string safe_id = HtmlEscape(id);
    body_ += fmt::format(
        "<figure class=\"chart\">\n<figcaption><h3>{0}</h3><p>{1}</p></figcaption>\n"
        "<div class=\"canvas-box\"><canvas id=\"{2}\" role=\"img\" aria-label=\"{0}\">"
        "</canvas></div>\n</figure>\n",
        HtmlEscape(title), caption_html, safe_id);
    chart["id"] = std::string(id);
    charts_.push_back(std::move(chart));
  }

  const std::string& body() const { return body_; }
  const json& charts() const { return charts_; }

 private:
  std::string body_;
  json charts_ = json::array();
};

json Axis(std::string_view label, std::string_view name, std::string_view suffix = "") {
  return json{{"label", label}, {"name", name}, {"suffix", suffix}, {"type", "linear"}};
}

json Dataset(std::string_view label, std::string_view color, std::string_view role, int group,
             bool dash = false) {
  return json{{"label", label}, {"color", color}, {"role", role}, {"group", group}, {"dash", dash}};
}

// ---------------------------------------------------------------------------------------------
// Results table.

enum class Kind { kCount, kDuration, kPercent, kNumber, kText, kBool };

struct Column {
  std::string key;  // key in the result, or in the group's object when nested
  std::string label;
  Kind kind = Kind::kNumber;
  std::optional<TimeUnit> unit;      // duration columns: the unit that suits the column's values
  std::optional<std::size_t> index;  // a column picked out of an array (allocation experiments)
};

struct Group {
  std::string key;  // top-level key in the result
  std::string label;
  bool nested = false;  // an object of scalars (one column per member) or a single scalar
  std::vector<Column> columns;
  bool known = false;          // one of the documented summary fields
  bool unit_in_label = false;  // the label already names the unit
};

// The value of column `c` of group `g` in `result`, or nullptr.
const json* ColumnValue(const json* result, const Group& g, const Column& c) {
  const json* v = Field(result, g.key);
  if (c.index) {
    return v != nullptr && v->is_array() && *c.index < v->size() ? &(*v)[*c.index] : nullptr;
  }
  return g.nested ? Field(v, c.key) : v;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Kind GuessKind(std::string_view parent, std::string_view key, const json& value) {
  if (value.is_boolean()) return Kind::kBool;
  if (value.is_string()) return Kind::kText;
  const bool integer = value.is_number_integer() || value.is_number_unsigned();
  if (key == "count" && integer) return Kind::kCount;
  if (EndsWith(key, "_seconds") || EndsWith(parent, "_seconds")) return Kind::kDuration;
  if (EndsWith(key, "ratio")) return Kind::kPercent;
  return integer ? Kind::kCount : Kind::kNumber;
}

bool IsScalar(const json& v) { return v.is_number() || v.is_boolean() || v.is_string(); }

// A field name for people: "pods_failed_mean" -> "Pods failed (mean)", "gpu_hours_lost" ->
// "GPU hours lost"; a trailing "_seconds" goes (the column names its unit), acronyms are
// capitalised. The field's own name stays on hover.
std::string HumanLabel(std::string_view key) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kWords{{
      {"gpu", "GPU"},
      {"gpus", "GPUs"},
      {"cpu", "CPU"},
      {"ettr", "ETTR"},
      {"jct", "JCT"},
      {"slo", "SLO"},
      {"ttft", "TTFT"},
      {"tbt", "TBT"},
      {"kv", "KV"},
      {"rps", "req/s"},
      {"sim", "simulator"},
      {"e2e", "end-to-end"},
  }};
  std::vector<std::string> words;
  for (std::size_t at = 0; at <= key.size();) {
    const std::size_t end = std::min(key.find('_', at), key.size());
    if (end > at) words.emplace_back(key.substr(at, end - at));
    at = end + 1;
  }
  if (words.size() > 1 && words.back() == "seconds") words.pop_back();
  std::string statistic;
  if (words.size() > 1 && (words.back() == "mean" || words.back() == "max" ||
                           words.back() == "min" || words.back() == "total")) {
    statistic = " (" + words.back() + ")";
    words.pop_back();
  }
  std::string out;
  for (const std::string& w : words) {
    std::string shown = w;
    for (const auto& [word, replacement] : kWords) {
      if (w == word) shown = replacement;
    }
    out += (out.empty() ? "" : " ") + shown;
  }
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z')
    out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out.empty() ? std::string(key) : out + statistic;
}

Group Single(std::string key, std::string label, Kind kind) {
  Group g{key, label, false, {{key, label, kind}}};
  g.known = true;
  return g;
}

// `short_labels` shortens some member names in the header (the full name shows on hover).
Group Nested(std::string key, std::string label, std::vector<std::string> members, Kind kind,
             const std::vector<std::pair<std::string, std::string>>& short_labels = {}) {
  Group g{std::move(key), std::move(label), true, {}};
  for (std::string& m : members) {
    std::string shown = m;
    for (const auto& [name, abbreviation] : short_labels) {
      if (name == m) shown = abbreviation;
    }
    g.columns.push_back({m, shown, kind});
  }
  g.known = true;
  return g;
}

// Values of an array indexed by demand percent, at the given demands.
Group AtDemand(std::string key, std::string label, std::vector<std::size_t> demands) {
  Group g{std::move(key), std::move(label), true, {}};
  for (std::size_t d : demands) {
    Column c{fmt::format("{}", d), fmt::format("{} %", d), Kind::kPercent};
    c.index = d;
    g.columns.push_back(std::move(c));
  }
  g.known = true;
  g.unit_in_label = true;
  return g;
}

// The documented result fields, in the order the results table shows them.
std::vector<Group> KnownGroups() {
  const std::vector<std::string> stats = {"mean", "p50", "p95", "p99"};
  return {Single("seeds", "Seeds", Kind::kCount),
          Nested("jobs", "Jobs", {"submitted", "finished", "unschedulable"}, Kind::kCount,
                 {{"unschedulable", "unsched."}}),
          Single("gpu_allocation_ratio", "GPU allocation", Kind::kPercent),
          Single("allocation_at_100", "Allocation at 100 % demand", Kind::kPercent),
          AtDemand("allocation_at_demand", "Allocation (%) at demand", {80, 100, 130}),
          AtDemand("fragmentation_at_demand", "Fragmentation (%) at demand", {100, 130}),
          Single("makespan_seconds", "Makespan", Kind::kDuration),
          Nested("jct_seconds", "Job completion time", stats, Kind::kDuration),
          Nested("queue_seconds", "Queueing delay", stats, Kind::kDuration),
          Single("preemptions", "Preemptions", Kind::kCount)};
}

// The columns of the results tables: the documented fields first in a fixed order, then any
// other scalar (or object of scalars) that some result has, by key. Arrays, "series" and
// "queues" are charted or tabled elsewhere. Columns that no result has are dropped.
std::vector<Group> TableGroups(const std::vector<Policy>& policies) {
  std::vector<Group> groups = KnownGroups();
  const auto find_group = [&](std::string_view key, bool known) -> Group* {
    for (Group& g : groups) {
      if (g.key == key && g.known == known) return &g;
    }
    return nullptr;
  };
  const auto has_column = [](const Group* g, std::string_view key) {
    return g != nullptr && std::any_of(g->columns.begin(), g->columns.end(),
                                       [&](const Column& c) { return c.key == key; });
  };
  for (const Policy& p : policies) {
    for (const auto& [key, value] : p.result->items()) {  // nlohmann objects iterate by key
      if (key == "policy" || key == "oracle") continue;
      if (IsScalar(value)) {
        if (find_group(key, true) == nullptr && find_group(key, false) == nullptr) {
          groups.push_back(
              {key, HumanLabel(key), false, {{key, HumanLabel(key), GuessKind("", key, value)}}});
        }
      } else if (value.is_object() && key != "series" && key != "queues") {
        const Group* known = find_group(key, true);
        if (known != nullptr && !known->nested) continue;  // documented as a scalar
        for (const auto& [sub, sub_value] : value.items()) {
          if (!IsScalar(sub_value) || has_column(known, sub)) continue;
          // A documented duration group's "count" repeats the job counts; leave it out.
          if (known != nullptr && sub == "count") continue;
          // Members beyond the documented ones go to a group of their own ("Other fields").
          Group* g = find_group(key, false);
          if (g == nullptr) {
            groups.push_back({key, known != nullptr ? known->label : HumanLabel(key), true, {}});
            g = &groups.back();
          }
          if (!has_column(g, sub))
            g->columns.push_back({sub, HumanLabel(sub), GuessKind(key, sub, sub_value)});
        }
      }
    }
  }
  // Keep the columns that some result has; give each duration column the unit its values suit.
  std::vector<Group> kept;
  for (Group& g : groups) {
    std::vector<Column> present;
    for (Column& c : g.columns) {
      bool found = false;
      double max_seconds = 0;
      for (const Policy& p : policies) {
        const json* v = ColumnValue(p.result, g, c);
        if (v == nullptr || !IsScalar(*v)) continue;
        found = true;
        max_seconds = std::max(max_seconds, std::fabs(Number(v).value_or(0)));
      }
      if (!found) continue;
      if (c.kind == Kind::kDuration) c.unit = PickTimeUnit(max_seconds);
      present.push_back(std::move(c));
    }
    if (present.empty()) continue;
    g.columns = std::move(present);
    kept.push_back(std::move(g));
  }
  // "allocation_at_100" repeats a column of the allocation-at-demand group.
  const auto has_group = [&](std::string_view key) {
    return std::any_of(kept.begin(), kept.end(), [&](const Group& g) { return g.key == key; });
  };
  if (has_group("allocation_at_demand")) {
    std::erase_if(kept, [](const Group& g) { return g.key == "allocation_at_100"; });
  }
  return kept;
}

std::string UnitSuffix(const Column& c) {
  if (c.unit) return fmt::format(" ({})", c.unit->short_name);
  if (c.kind == Kind::kPercent) return " (%)";
  return "";
}

// " (h)" when every column of the group shows the same unit (then the columns do not repeat it).
std::string SharedSuffix(const Group& g) {
  if (g.columns.empty() || g.unit_in_label) return "";
  const std::string first = UnitSuffix(g.columns.front());
  for (const Column& c : g.columns) {
    if (UnitSuffix(c) != first) return "";
  }
  return first;
}

// Text and yes/no columns are left-aligned; numbers right-aligned.
bool IsTextual(const Column& c) { return c.kind == Kind::kText || c.kind == Kind::kBool; }

std::string Cell(const json* v, const Column& c) {
  if (v == nullptr || !IsScalar(*v)) {
    return IsTextual(c) ? "<td class=\"missing\">—</td>" : "<td class=\"num missing\">—</td>";
  }
  if (v->is_string()) return fmt::format("<td>{}</td>", HtmlEscape(v->get<std::string>()));
  if (v->is_boolean()) return fmt::format("<td>{}</td>", v->get<bool>() ? "yes" : "no");
  const double x = v->get<double>();
  std::string shown;
  std::string exact = FormatNumber(x);
  switch (c.kind) {
    case Kind::kDuration:
      shown = FormatNumber(x / (c.unit ? c.unit->seconds : 1.0));
      exact += " s";
      break;
    case Kind::kPercent:
      shown = std::isfinite(x) ? fmt::format("{:.1f}", x * 100) : FormatNumber(x);
      break;
    default:
      shown = FormatNumber(x);
  }
  return fmt::format("<td class=\"num\" title=\"{}\">{}</td>", HtmlEscape(exact), shown);
}

std::string PolicyCell(const Policy& p) {
  return fmt::format(
      "<th scope=\"row\"><span class=\"swatch\" style=\"background:{}\"></span>{}{}</th>", p.color,
      HtmlEscape(p.name), p.oracle ? " <span class=\"tag\">(oracle)</span>" : "");
}

std::string ResultsTable(const std::vector<Policy>& policies, const std::vector<Group>& groups) {
  const bool two_rows =
      std::any_of(groups.begin(), groups.end(), [](const Group& g) { return g.nested; });
  std::string html = "<div class=\"table-wrap\"><table class=\"results\">\n<thead>\n<tr>";
  html += fmt::format("<th class=\"left\" scope=\"col\"{}>Policy</th>",
                      two_rows ? " rowspan=\"2\"" : "");
  for (const Group& g : groups) {
    if (g.nested) {
      html += fmt::format("<th class=\"group\" scope=\"colgroup\" colspan=\"{}\">{}{}</th>",
                          g.columns.size(), HtmlEscape(g.label), HtmlEscape(SharedSuffix(g)));
    } else {
      html += fmt::format("<th{} scope=\"col\" title=\"{}\"{}>{}{}</th>",
                          IsTextual(g.columns.front()) ? " class=\"left\"" : "", HtmlEscape(g.key),
                          two_rows ? " rowspan=\"2\"" : "", HtmlEscape(g.label),
                          HtmlEscape(SharedSuffix(g)));
    }
  }
  html += "</tr>\n";
  if (two_rows) {
    html += "<tr>";
    for (const Group& g : groups) {
      if (!g.nested) continue;
      const bool shared = !SharedSuffix(g).empty() || g.unit_in_label;
      for (const Column& c : g.columns) {
        html += fmt::format("<th{} scope=\"col\" title=\"{}\">{}{}</th>",
                            IsTextual(c) ? " class=\"left\"" : "", HtmlEscape(c.key),
                            HtmlEscape(c.label), shared ? "" : HtmlEscape(UnitSuffix(c)));
      }
    }
    html += "</tr>\n";
  }
  html += "</thead>\n<tbody>\n";
  for (const Policy& p : policies) {
    html += "<tr>" + PolicyCell(p);
    for (const Group& g : groups) {
      for (const Column& c : g.columns) {
        const json* v = ColumnValue(p.result, g, c);
        html += Cell(v, c);
      }
    }
    html += "</tr>\n";
  }
  html += "</tbody>\n</table></div>\n";
  return html;
}

// ---------------------------------------------------------------------------------------------
// Per-queue table and fair-share charts.

// Queue names across all policies, in order of first appearance. With more than 24 queues
// (e.g. one per user of a trace) only those with a share series are shown: the summary keeps
// one for the top-level queues and the leaves that held the most GPU-time.
std::vector<std::string> QueueNames(const std::vector<Policy>& policies) {
  std::vector<std::string> names, charted;
  for (const Policy& p : policies) {
    const json* queues = Field(p.result, "queues");
    if (queues == nullptr || !queues->is_object()) continue;
    for (const auto& [name, q] : queues->items()) {
      if (q.is_object() && std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
      }
      if (q.is_object() && q.contains("share_over_time") &&
          std::find(charted.begin(), charted.end(), name) == charted.end()) {
        charted.push_back(name);
      }
    }
  }
  return names.size() > 24 && !charted.empty() ? charted : names;
}

std::string QueueTable(const std::vector<Policy>& policies, const std::vector<std::string>& names) {
  double max_seconds = 0;
  for (const Policy& p : policies) {
    for (const std::string& name : names) {
      const json* q = Field(Field(p.result, "queues"), name);
      for (const char* metric : {"jct_seconds", "queue_seconds"}) {
        for (const char* stat : {"mean", "p95"}) {
          max_seconds = std::max(max_seconds, Number(Field(Field(q, metric), stat)).value_or(0));
        }
      }
    }
  }
  const TimeUnit unit = PickTimeUnit(max_seconds);
  const Column pct_col{"", "", Kind::kPercent};
  const Column dur_col{"", "", Kind::kDuration, unit};
  std::string html = fmt::format(
      "<div class=\"table-wrap\"><table class=\"queues\">\n<thead>\n<tr>"
      "<th class=\"left\" scope=\"col\" rowspan=\"2\">Policy</th>"
      "<th class=\"left\" scope=\"col\" rowspan=\"2\">Queue</th>"
      "<th scope=\"col\" rowspan=\"2\">Entitlement (%)</th>"
      "<th scope=\"col\" rowspan=\"2\">Mean share (%)</th>"
      "<th class=\"group\" scope=\"colgroup\" colspan=\"2\">Job completion time ({0})</th>"
      "<th class=\"group\" scope=\"colgroup\" colspan=\"2\">Queueing delay ({0})</th></tr>\n"
      "<tr><th scope=\"col\">mean</th><th scope=\"col\">p95</th>"
      "<th scope=\"col\">mean</th><th scope=\"col\">p95</th></tr>\n</thead>\n<tbody>\n",
      unit.short_name);
  for (const Policy& p : policies) {
    const json* queues = Field(p.result, "queues");
    if (queues == nullptr || !queues->is_object()) continue;
    for (const std::string& name : names) {
      const json* q = Field(queues, name);
      if (q == nullptr || !q->is_object()) continue;
      html += "<tr>" + PolicyCell(p) + fmt::format("<td>{}</td>", HtmlEscape(name));
      html += Cell(Field(q, "entitlement"), pct_col);
      html += Cell(Field(q, "share_mean"), pct_col);
      for (const char* metric : {"jct_seconds", "queue_seconds"}) {
        for (const char* stat : {"mean", "p95"}) {
          html += Cell(Field(Field(q, metric), stat), dur_col);
        }
      }
      html += "</tr>\n";
    }
  }
  html += "</tbody>\n</table></div>\n";
  return html;
}

void AddFairShare(Page& page, const std::vector<Policy>& policies) {
  const std::vector<std::string> names = QueueNames(policies);
  // One queue has nothing to share with: its "fair share" chart would be its allocation again.
  if (names.size() < 2) return;
  page.Section("Fair share",
               "How each queue fared: the GPU share it received against the share it is entitled "
               "to. A queue below its entitlement while it had work waiting was short-changed.");
  page.Append(QueueTable(policies, names));

  // Mean share vs entitlement, all policies side by side.
  json bar{{"type", "bar"},
           {"labels", names},
           {"x", {{"label", "Queue"}, {"name", "queue"}, {"type", "category"}}},
           {"y", Axis("Share of cluster GPUs (%)", "share", "%")},
           {"tooltip", "index"},
           {"datasets", json::array()}};
  bool any_bar_value = false;
  json entitlement = Dataset("Entitlement", "#9aa0a6", "bar", 0);
  entitlement["values"] = json::array();
  for (const std::string& name : names) {
    std::optional<double> e;
    for (const Policy& p : policies) {
      if (!e) e = Number(Field(Field(Field(p.result, "queues"), name), "entitlement"));
    }
    any_bar_value |= e.has_value();
    entitlement["values"].push_back(e ? ChartValue(*e * 100) : json());
  }
  bar["datasets"].push_back(std::move(entitlement));
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const Policy& p = policies[i];
    const json* queues = Field(p.result, "queues");
    if (queues == nullptr || !queues->is_object()) continue;
    json d = Dataset(p.label, p.color, "bar", static_cast<int>(i) + 1);
    d["values"] = json::array();
    for (const std::string& name : names) {
      const auto share = Number(Field(Field(queues, name), "share_mean"));
      any_bar_value |= share.has_value();
      d["values"].push_back(share ? ChartValue(*share * 100) : json());
    }
    bar["datasets"].push_back(std::move(d));
  }
  if (any_bar_value) {
    page.Chart("chart-share-mean", "Mean share received vs entitlement",
               "Grey bars: each queue's entitlement (its guaranteed share of the cluster's GPUs). "
               "Coloured bars: the mean share each policy gave it over the run. Above the grey "
               "bar means the queue borrowed idle capacity; below means it received less than "
               "it was owed (or had too little work to use it).",
               std::move(bar));
  }

  // Share over time, one chart per policy that recorded it.
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const Policy& p = policies[i];
    const json* queues = Field(p.result, "queues");
    std::vector<std::vector<Point>> series(names.size());
    double t_min = 0;
    double t_max = 0;
    bool any = false;
    for (std::size_t k = 0; k < names.size(); ++k) {
      series[k] = ReadPairs(Field(Field(queues, names[k]), "share_over_time"));
      if (series[k].empty()) continue;
      t_min = any ? std::min(t_min, series[k].front().x) : series[k].front().x;
      t_max = any ? std::max(t_max, series[k].back().x) : series[k].back().x;
      any = true;
    }
    if (!any) continue;
    const TimeUnit unit = PickTimeUnit(t_max);
    json chart{{"type", "line"},
               {"stepped", true},
               {"tooltip", "stepAt"},
               {"x", Axis(fmt::format("Simulated time ({})", unit.long_name), "time")},
               {"y", Axis("Share of cluster GPUs (%)", "share", "%")},
               {"datasets", json::array()}};
    chart["x"]["suffix"] = fmt::format(" {}", unit.short_name);
    chart["x"]["min"] = ChartValue(t_min / unit.seconds);
    for (std::size_t k = 0; k < names.size(); ++k) {
      if (series[k].empty()) continue;
      json line = Dataset(names[k], Color(k), "line", static_cast<int>(k));
      line["points"] =
          PointsJson(report::Downsample(series[k], kMaxPointsPerLine), unit.seconds, 100);
      chart["datasets"].push_back(std::move(line));
      if (const auto e = Number(Field(Field(queues, names[k]), "entitlement"))) {
        json target = Dataset(names[k] + " entitlement", Color(k), "target", static_cast<int>(k));
        target["points"] = PointsJson({{t_min, *e}, {t_max, *e}}, unit.seconds, 100);
        chart["datasets"].push_back(std::move(target));
      }
    }
    page.Chart(fmt::format("chart-share-over-time-{}", i + 1),
               fmt::format("Share over time: {}", p.label),
               "Solid lines: the share of the cluster's GPUs each queue held over time under "
               "this policy. Dotted lines in the same colour: that queue's entitlement. Fair "
               "share pulls each solid line towards its dotted line whenever the queue has work "
               "waiting.",
               std::move(chart));
  }
  page.EndSection();
}

// ---------------------------------------------------------------------------------------------
// Allocation experiment: the FGD paper's figure.

// Where the allocation charts start: the policies allocate alike (everything that arrived)
// at low demand, and the charts zoom to where they part, at most from 70 % demand (the region
// the FGD paper's comparison is about), so that a few points' difference is visible.
struct DemandZoom {
  int from_percent = 0;              // the demand axis starts here
  int allocation_floor_percent = 0;  // the allocation axis starts here
};

DemandZoom ZoomToDifferences(const std::vector<Policy>& policies, std::size_t length) {
  constexpr double kApart = 0.005;  // half a point of the cluster
  constexpr int kLatestStart = 70;
  if (std::count_if(policies.begin(), policies.end(), [](const Policy& p) {
        return HasNumber(Field(p.result, "allocation_at_demand"));
      }) < 2)
    return {};  // nothing to compare: the whole range
  std::size_t first_apart = length;
  for (std::size_t i = 0; i < length && first_apart == length; ++i) {
    std::optional<double> lo, hi;
    for (const Policy& p : policies) {
      const json* arr = Field(p.result, "allocation_at_demand");
      if (arr == nullptr || !arr->is_array() || i >= arr->size()) continue;
      if (auto v = Number(&(*arr)[i])) {
        lo = std::min(lo.value_or(*v), *v);
        hi = std::max(hi.value_or(*v), *v);
      }
    }
    if (lo && *hi - *lo >= kApart) first_apart = i;
  }
  DemandZoom zoom;
  // A step of 10 before the policies part, so that the lines are seen together first.
  const int apart = static_cast<int>(std::min<std::size_t>(first_apart, kLatestStart + 10));
  zoom.from_percent = std::clamp((apart - 10) / 10 * 10, 0, kLatestStart);
  if (zoom.from_percent == 0) return zoom;
  double lowest = 1;
  for (const Policy& p : policies) {
    for (const char* key : {"allocation_at_demand", "allocation_at_demand_min"}) {
      const json* arr = Field(p.result, key);
      if (arr == nullptr || !arr->is_array()) continue;
      for (std::size_t i = static_cast<std::size_t>(zoom.from_percent); i < arr->size(); ++i)
        if (auto v = Number(&(*arr)[i])) lowest = std::min(lowest, *v);
    }
  }
  zoom.allocation_floor_percent =
      std::clamp(static_cast<int>(std::floor(lowest * 10)) * 10 - 10, 0, zoom.from_percent);
  return zoom;
}

// A percent chart whose lines all lie high up (every setup allocates 60-110 %, serves 85-100 %
// of its demand within the SLO) starts its y axis at the ten below the lowest value shown, less
// a margin, so that the few points between the lines are visible; the caption says so.
// Returns that note ("" when the axis stays at 0).
std::string ZoomPercentAxis(json& chart) {
  std::optional<double> lowest;
  for (const json& d : chart["datasets"]) {
    for (const json& pt : d["points"]) {
      if (pt.is_array() && pt.size() == 2 && pt[1].is_number())
        lowest = std::min(lowest.value_or(pt[1].get<double>()), pt[1].get<double>());
    }
  }
  if (!lowest || *lowest < 25) return "";
  const int floor = static_cast<int>(std::floor((*lowest - 5) / 10)) * 10;
  chart["y"]["min"] = floor;
  return fmt::format(
      " The y axis starts at {}&nbsp;%, below the lowest value, where the lines "
      "differ.",
      floor);
}

// page.Chart for a percent chart, zoomed by ZoomPercentAxis and its caption saying so.
void PercentChart(Page& page, std::string_view id, std::string_view title,
                  std::string_view caption_html, json chart) {
  const std::string note = ZoomPercentAxis(chart);
  page.Chart(id, title, std::string(caption_html) + note, std::move(chart));
}

std::string ZoomNote(const DemandZoom& zoom) {
  if (zoom.from_percent == 0) return "";
  return fmt::format(
      " Zoomed to {}&nbsp;% demand and up, where the policies differ: below it they all "
      "allocate alike (within half a point).",
      zoom.from_percent);
}

void AddAllocation(Page& page, const std::vector<Policy>& policies, std::string_view experiment) {
  std::size_t length = 0;
  bool any_alloc = false;
  bool any_frag = false;
  for (const Policy& p : policies) {
    for (const char* key : {"allocation_at_demand", "fragmentation_at_demand",
                            "allocation_at_demand_min", "allocation_at_demand_max"}) {
      const json* arr = Field(p.result, key);
      if (arr != nullptr && arr->is_array()) length = std::max(length, arr->size());
    }
    any_alloc |= HasNumber(Field(p.result, "allocation_at_demand"));
    any_frag |= HasNumber(Field(p.result, "fragmentation_at_demand"));
  }
  if (!any_alloc && !any_frag) return;
  length = std::min<std::size_t>(length, 100000);
  const double x_max =
      std::max<double>(kDefaultDemandMaxPercent, static_cast<double>(length > 0 ? length - 1 : 0));
  const DemandZoom zoom = ZoomToDifferences(policies, length);
  const auto demand_axis = [&] {
    json x = Axis("Arrived GPU demand (% of cluster capacity)", "demand", "%");
    x["min"] = zoom.from_percent;
    x["max"] = x_max;
    x["step"] = 10;
    return x;
  };
  page.Section("Allocation under growing demand",
               experiment == "allocation"
                   ? "Jobs from the trace arrive one after another and never leave, until their "
                     "total GPU request reaches 130&nbsp;% of the cluster's capacity. Each policy "
                     "places them as they come; a job that fits nowhere is turned away. The "
                     "charts follow the FGD paper (ATC&nbsp;'23): a policy that packs well stays "
                     "on the ideal line longer and leaves fewer GPUs stranded."
                   : "");
  if (any_alloc) {
    json chart{{"type", "line"},
               {"tooltip", "index"},
               {"x", demand_axis()},
               {"y", Axis("GPUs allocated (% of cluster)", "allocated", "%")},
               {"datasets", json::array()}};
    chart["y"]["min"] = zoom.allocation_floor_percent;
    chart["y"]["max"] = 100;
    json ideal = Dataset("Ideal: all arrived demand allocated", "#9aa0a6", "ref", -1);
    ideal["points"] = json::array();
    for (std::size_t i = 0; i < std::max<std::size_t>(length, 1); ++i) {
      ideal["points"].push_back(json::array({i, std::min<std::size_t>(i, 100)}));
    }
    chart["datasets"].push_back(std::move(ideal));
    bool any_band = false;
    for (std::size_t i = 0; i < policies.size(); ++i) {
      const Policy& p = policies[i];
      const json* line = Field(p.result, "allocation_at_demand");
      if (!HasNumber(line)) continue;
      const int group = static_cast<int>(i);
      const json* lo = Field(p.result, "allocation_at_demand_min");
      const json* hi = Field(p.result, "allocation_at_demand_max");
      if (HasNumber(lo) && HasNumber(hi)) {
        any_band = true;
        json low = Dataset(p.label + " min", p.color, "band-low", group);
        low["points"] = IndexedJson(lo, 100, length);
        json high = Dataset(p.label + " max", p.color, "band-high", group);
        high["points"] = IndexedJson(hi, 100, length);
        chart["datasets"].push_back(std::move(low));
        chart["datasets"].push_back(std::move(high));
      }
      json d = Dataset(p.label, p.color, "line", group, p.oracle);
      d["points"] = IndexedJson(line, 100, length);
      chart["datasets"].push_back(std::move(d));
    }
    page.Chart(
        "chart-allocation", "GPU allocation ratio vs arrived demand",
        std::string("Each line: the share of the cluster's GPUs a policy had allocated once the "
                    "jobs that arrived asked for x&nbsp;% of the cluster's capacity. The grey "
                    "dashed line is the ideal (everything that arrived is running, up to "
                    "100&nbsp;%); the gap below it is demand the policy could not place. Higher "
                    "is better, and the demand at which a line leaves the ideal shows when "
                    "fragmentation starts to bite.") +
            (any_band ? " Shaded bands: the lowest and highest value across seeds." : "") +
            ZoomNote(zoom),
        std::move(chart));
  }
  if (any_frag) {
    json chart{{"type", "line"},
               {"tooltip", "index"},
               {"x", demand_axis()},
               {"y", Axis("Fragmented GPUs (% of cluster)", "fragmented", "%")},
               {"datasets", json::array()}};
    chart["y"]["min"] = 0;
    for (std::size_t i = 0; i < policies.size(); ++i) {
      const Policy& p = policies[i];
      const json* frag = Field(p.result, "fragmentation_at_demand");
      if (!HasNumber(frag)) continue;
      json d = Dataset(p.label, p.color, "line", static_cast<int>(i), p.oracle);
      d["points"] = IndexedJson(frag, 100, length);
      chart["datasets"].push_back(std::move(d));
    }
    page.Chart("chart-fragmentation", "Fragmentation vs arrived demand",
               "The share of the cluster's GPUs that were free but could not be used by the "
               "shapes of the jobs waiting to be placed (fragmentation as defined by the FGD "
               "paper), as demand grows. Lower is better: a fragmented GPU is capacity that "
               "exists but cannot run the work at hand. Read it together with the chart above; "
               "the policy whose line sits lowest near and past 100&nbsp;% demand is the one that "
               "keeps free capacity usable." +
                   ZoomNote(zoom),
               std::move(chart));
  }
  page.EndSection();
}

// ---------------------------------------------------------------------------------------------
// Replay experiment: time series.

std::vector<Point> Series(const Policy& p, std::string_view name) {
  return ReadPairs(Field(Field(p.result, "series"), name));
}

void AddReplay(Page& page, const std::vector<Policy>& policies, const json& summary,
               std::string_view experiment) {
  std::vector<std::vector<Point>> cdf(policies.size());
  std::vector<std::vector<Point>> gpus(policies.size());
  std::vector<std::vector<Point>> queue(policies.size());
  bool any_cdf = false;
  bool any_gpus = false;
  bool any_queue = false;
  double t_max = 0;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    cdf[i] = Series(policies[i], "jct_cdf");
    std::erase_if(cdf[i], [](const Point& pt) { return pt.x <= 0; });  // log-scale x
    gpus[i] = Series(policies[i], "gpus_allocated");
    queue[i] = Series(policies[i], "queue_length");
    any_cdf |= !cdf[i].empty();
    any_gpus |= !gpus[i].empty();
    any_queue |= !queue[i].empty();
    t_max = std::max({t_max, MaxX(gpus[i]), MaxX(queue[i])});
  }
  if (!any_cdf && !any_gpus && !any_queue) return;
  page.Section("Replay over time",
               experiment == "replay"
                   ? "The trace replayed in simulated time: jobs arrive at their recorded submit "
                     "times, run for their recorded durations and leave. Every policy sees the "
                     "same trace on the same cluster."
                   : "");
  if (any_cdf) {
    json chart{{"type", "line"},
               {"tooltip", "stepAt"},
               {"x", Axis("Job completion time (log scale)", "JCT", " s")},
               {"y", Axis("Jobs finished (%)", "finished", "%")},
               {"datasets", json::array()}};
    chart["x"]["type"] = "logarithmic";
    chart["x"]["durations"] = true;
    chart["y"]["min"] = 0;
    chart["y"]["max"] = 100;
    for (std::size_t i = 0; i < policies.size(); ++i) {
      if (cdf[i].empty()) continue;
      json d = Dataset(policies[i].label, policies[i].color, "line", static_cast<int>(i),
                       policies[i].oracle);
      d["points"] = PointsJson(report::Downsample(cdf[i], kMaxPointsPerLine), 1, 100);
      chart["datasets"].push_back(std::move(d));
    }
    page.Chart("chart-jct-cdf", "Job completion time (CDF)",
               "For each completion time x (submit to finish, log scale), the share of finished "
               "jobs that took at most x. Lines further up and to the left are better; the "
               "height at a given time is the share of jobs done by then, and the right-hand "
               "tail shows the slowest jobs.",
               std::move(chart));
  }
  const TimeUnit unit = PickTimeUnit(t_max);
  const auto time_chart = [&](std::string_view y_label, std::string_view y_name) {
    json chart{{"type", "line"},
               {"stepped", true},
               {"tooltip", "stepAt"},
               {"x", Axis(fmt::format("Simulated time ({})", unit.long_name), "time")},
               {"y", Axis(y_label, y_name)},
               {"datasets", json::array()}};
    chart["x"]["suffix"] = fmt::format(" {}", unit.short_name);
    chart["x"]["min"] = 0;
    chart["y"]["min"] = 0;
    return chart;
  };
  const auto add_lines = [&](json& chart, const std::vector<std::vector<Point>>& series) {
    for (std::size_t i = 0; i < policies.size(); ++i) {
      if (series[i].empty()) continue;
      json d = Dataset(policies[i].label, policies[i].color, "line", static_cast<int>(i),
                       policies[i].oracle);
      d["points"] = PointsJson(report::Downsample(series[i], kMaxPointsPerLine), unit.seconds, 1);
      chart["datasets"].push_back(std::move(d));
    }
  };
  if (any_gpus) {
    json chart = time_chart("GPUs allocated", "GPUs");
    if (const auto capacity = Number(Field(Field(&summary, "cluster"), "gpus"))) {
      json ref = Dataset("Cluster capacity", "#9aa0a6", "ref", -1);
      ref["points"] = PointsJson({{0, *capacity}, {t_max, *capacity}}, unit.seconds, 1);
      chart["datasets"].push_back(std::move(ref));
    }
    add_lines(chart, gpus);
    page.Chart("chart-gpus-allocated", "GPUs allocated over time",
               "How many GPUs each policy had allocated to running jobs at each moment; the "
               "grey dashed line is the cluster's capacity. The closer a line stays to it while "
               "jobs are waiting, the better the policy uses the cluster. A line that ends "
               "earlier finished the trace sooner (shorter makespan).",
               std::move(chart));
  }
  if (any_queue) {
    json chart = time_chart("Jobs waiting", "waiting");
    add_lines(chart, queue);
    page.Chart("chart-queue-length", "Queue length over time",
               "How many submitted jobs were waiting to start at each moment. Lower is better; "
               "long plateaus mean jobs sat in the queue, for lack of free GPUs or because the "
               "free ones were too fragmented for their shapes.",
               std::move(chart));
  }
  page.EndSection();
}

// ---------------------------------------------------------------------------------------------
// Failures experiment: training progress over time, the checkpoint-interval sweep and the
// timeline of failures and recoveries (summary fields in docs/failures.md).

// "3 d 04:05:06" for a simulated instant in seconds.
std::string ClockTime(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  return fmt::format("{} d {:02}:{:02}:{:02}", s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
}

std::string TimelineTable(const Policy& p, const json& timeline) {
  constexpr std::size_t kMaxRows = 500;
  const std::size_t rows = std::min(timeline.size(), kMaxRows);
  std::string html = fmt::format(
      "<details><summary><span class=\"swatch\" style=\"background:{}\"></span>{}: {} "
      "events{}</summary>\n<div class=\"table-wrap\"><table class=\"timeline\">\n<thead><tr>"
      "<th class=\"left\">Time</th><th class=\"left\">Event</th><th class=\"left\">Component"
      "</th><th class=\"left\">Target</th><th>Lost (s)</th><th>Latency (s)</th>"
      "<th class=\"left\">Detail</th></tr></thead>\n<tbody>\n",
      p.color, HtmlEscape(p.label), FormatNumber(static_cast<double>(timeline.size())),
      rows < timeline.size() ? fmt::format(" (first {} shown)", rows) : "");
  for (std::size_t i = 0; i < rows; ++i) {
    const json& e = timeline[i];
    const auto number = [&](std::string_view key) {
      const auto v = Number(Field(&e, key));
      return v ? fmt::format("<td class=\"num\">{}</td>", FormatNumber(*v))
               : std::string("<td class=\"num missing\">—</td>");
    };
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}{}<td>{}</td></tr>\n",
        ClockTime(Number(Field(&e, "t_seconds")).value_or(0)), HtmlEscape(Text(Field(&e, "event"))),
        HtmlEscape(Text(Field(&e, "component"))), HtmlEscape(Text(Field(&e, "target"))),
        number("lost_seconds"), number("latency_seconds"), HtmlEscape(Text(Field(&e, "detail"))));
  }
  html += "</tbody>\n</table></div>\n</details>\n";
  return html;
}

// Co-location experiment: GPU allocation and inference SLO attainment over the day.
void AddColocation(Page& page, const std::vector<Policy>& policies) {
  std::vector<std::vector<Point>> alloc(policies.size());
  std::vector<std::vector<Point>> slo(policies.size());
  bool any = false;
  double t_max = 0;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    if (Field(Field(policies[i].result, "series"), "slo_attainment") == nullptr) continue;
    alloc[i] = Series(policies[i], "gpu_allocation_ratio");
    slo[i] = Series(policies[i], "slo_attainment");
    any |= !alloc[i].empty() || !slo[i].empty();
    t_max = std::max({t_max, MaxX(alloc[i]), MaxX(slo[i])});
  }
  if (!any) return;
  page.Section("Co-location over time",
               "An inference fleet with a daily load cycle and a stream of offline batch tasks on "
               "one cluster, under each setup (docs/colocation.md). Every setup sees the same "
               "services, loads and tasks.");
  const TimeUnit unit = PickTimeUnit(t_max);
  const auto chart_of = [&](const std::vector<std::vector<Point>>& series, std::string_view y_label,
                            std::string_view y_name) {
    json chart{{"type", "line"},
               {"tooltip", "stepAt"},
               {"x", Axis(fmt::format("Simulated time ({})", unit.long_name), "time")},
               {"y", Axis(y_label, y_name, "%")},
               {"datasets", json::array()}};
    chart["x"]["suffix"] = fmt::format(" {}", unit.short_name);
    chart["x"]["min"] = 0;
    chart["y"]["min"] = 0;
    for (std::size_t i = 0; i < policies.size(); ++i) {
      if (series[i].empty()) continue;
      json d = Dataset(policies[i].label, policies[i].color, "line", static_cast<int>(i));
      d["points"] = PointsJson(report::Downsample(series[i], kMaxPointsPerLine), unit.seconds, 100);
      chart["datasets"].push_back(std::move(d));
    }
    return chart;
  };
  PercentChart(page, "chart-colocation-allocation", "GPU allocation ratio",
               "GPU milli held by online replicas and offline tasks (oversold shares included) "
               "over the cluster's GPUs, against simulated time. Higher is better; dedicated "
               "pools leave the online pool's trough idle.",
               chart_of(alloc, "Allocated (%)", "allocated"));
  PercentChart(page, "chart-colocation-slo", "Inference SLO attainment",
               "Share of the fleet's demand served by replicas running below their target "
               "utilisation on GPUs not oversubscribed, per step. 100% is the goal; dips are "
               "replicas waiting for GPUs or sharing a GPU with oversold offline work.",
               chart_of(slo, "Demand served within the SLO (%)", "SLO"));
  page.EndSection();
}

// Serving experiment: goodput, SLO attainment and TTFT p99 against the request rate, one line
// per router, from the summary's "rate_sweep" points (docs/serving.md).
void AddServing(Page& page, const std::vector<Policy>& policies, const json& summary) {
  const json* sweep = Field(&summary, "rate_sweep");
  if (sweep == nullptr || !sweep->is_array() || sweep->empty()) return;
  const auto line_of = [&](std::string_view y_key, double y_scale) {
    std::vector<std::vector<Point>> lines(policies.size());
    for (const json& pt : *sweep) {
      const std::string router = Text(Field(&pt, "router"));
      const auto x = Number(Field(&pt, "request_rate_rps"));
      const auto y = Number(Field(&pt, y_key));
      if (!x || !y) continue;
      for (std::size_t i = 0; i < policies.size(); ++i) {
        if (policies[i].name == router) lines[i].push_back({*x, *y * y_scale});
      }
    }
    for (auto& l : lines) {
      std::sort(l.begin(), l.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
    }
    return lines;
  };
  const auto chart_of = [&](std::string_view y_key, std::string_view y_label,
                            std::string_view suffix, double y_scale) {
    json chart{{"type", "line"},
               {"tooltip", "index"},
               {"x", Axis("Request rate (requests/s)", "rate", " rps")},
               {"y", Axis(y_label, y_key, suffix)},
               {"datasets", json::array()}};
    chart["y"]["min"] = 0;
    const auto lines = line_of(y_key, y_scale);
    for (std::size_t i = 0; i < policies.size(); ++i) {
      if (lines[i].empty()) continue;
      json d = Dataset(policies[i].label, policies[i].color, "line", static_cast<int>(i));
      d["points"] = PointsJson(lines[i], 1, 1);
      chart["datasets"].push_back(std::move(d));
    }
    return chart;
  };
  page.Section("Serving over request rate",
               "The trace replayed at several rates (arrival times divided by the rate scale) "
               "through simulated engine replicas behind each router (docs/serving.md).");
  page.Chart("chart-serving-goodput", "Goodput",
             "Requests per second that met both the TTFT and the TBT SLO (rejected requests "
             "count as missed). Higher is better; it follows the offered rate until the "
             "replicas saturate.",
             chart_of("goodput_rps", "Goodput (requests/s)", " rps", 1));
  PercentChart(page, "chart-serving-slo", "SLO attainment",
               "Share of requests that met both SLOs, rejected requests counted as missed.",
               chart_of("slo_attainment", "Requests within the SLOs (%)", "%", 100));
  page.Chart("chart-serving-ttft", "TTFT p99",
             "99th-percentile time to first token of the requests served (rejected ones are "
             "left out). Lower is better.",
             chart_of("ttft_p99_ms", "TTFT p99 (ms)", " ms", 1));
  PercentChart(page, "chart-serving-hit", "Prefix hit rate",
               "Prompt tokens served from KV cache over prompt tokens of the requests served.",
               chart_of("prefix_hit_rate", "Prefix hit rate (%)", "%", 100));
  page.Chart("chart-serving-imbalance", "Load imbalance",
             "Max over mean running requests per replica, averaged over the time any request "
             "runs (DESIGN.md). 1 is a perfect balance; with fewer requests running than "
             "replicas no router can go below about 2 (summary.json's load_imbalance_floor).",
             chart_of("load_imbalance", "Max / mean running requests", "", 1));
  page.EndSection();
}

void AddFailures(Page& page, const std::vector<Policy>& policies) {
  std::vector<std::vector<Point>> progress(policies.size());
  std::vector<std::vector<Point>> sweep(policies.size());
  bool any_progress = false;
  bool any_sweep = false;
  bool any_timeline = false;
  double t_max = 0;
  std::optional<double> young_daly;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    progress[i] = Series(policies[i], "progress_hours");
    any_progress |= !progress[i].empty();
    t_max = std::max(t_max, MaxX(progress[i]));
    const json* points = Field(policies[i].result, "checkpoint_sweep");
    if (points != nullptr && points->is_array()) {
      for (const json& e : *points) {
        const auto x = Number(Field(&e, "interval_seconds"));
        const auto y = Number(Field(&e, "ettr"));
        if (x && y) sweep[i].push_back({*x, *y});
      }
    }
    any_sweep |= !sweep[i].empty();
    if (!young_daly) young_daly = Number(Field(policies[i].result, "young_daly_interval_seconds"));
    const json* timeline = Field(policies[i].result, "timeline");
    any_timeline |= timeline != nullptr && timeline->is_array() && !timeline->empty();
  }
  if (!any_progress && !any_sweep && !any_timeline) return;
  page.Section("Failures and recoveries",
               "One or a few large training gangs under failures, recovering under each policy. "
               "Every policy sees the same failures at the same instants.");
  if (any_progress) {
    // The gap between wall time and training kept: it jumps at each failure by the work lost,
    // climbs through each recovery, and creeps up with every checkpoint stall.
    const TimeUnit unit = PickTimeUnit(t_max);
    json chart{{"type", "line"},
               {"tooltip", "stepAt"},
               {"x", Axis(fmt::format("Simulated time ({})", unit.long_name), "time")},
               {"y", Axis("Training time lost (hours)", "lost", " h")},
               {"datasets", json::array()}};
    chart["x"]["suffix"] = fmt::format(" {}", unit.short_name);
    chart["x"]["min"] = 0;
    chart["y"]["min"] = 0;
    for (std::size_t i = 0; i < policies.size(); ++i) {
      if (progress[i].empty()) continue;
      std::vector<Point> lost;
      lost.reserve(progress[i].size());
      for (const Point& pt : progress[i]) lost.push_back({pt.x, std::max(0.0, pt.x / 3600 - pt.y)});
      json d = Dataset(policies[i].label, policies[i].color, "line", static_cast<int>(i));
      d["points"] = PointsJson(report::Downsample(lost, kMaxPointsPerLine), unit.seconds, 1);
      chart["datasets"].push_back(std::move(d));
    }
    page.Chart("chart-training-lost", "Training time lost over time",
               "Wall time minus the training the job has kept (hours at full size), against "
               "simulated time. Each failure is a jump by the work done since the last "
               "checkpoint, each recovery a climb while the job is down (detection, new nodes, "
               "restart), and checkpoint stalls a slow creep. Lower is better; the final value "
               "divided by the run's length is 1 − ETTR.",
               std::move(chart));
  }
  if (any_sweep) {
    double lo = 1;
    double hi = 0;
    double x_max = 0;
    for (const auto& s : sweep) {
      for (const Point& pt : s) {
        lo = std::min(lo, pt.y);
        hi = std::max(hi, pt.y);
        x_max = std::max(x_max, pt.x);
      }
    }
    json chart{{"type", "line"},
               {"tooltip", "stepAt"},
               {"x", Axis("Checkpoint interval (s)", "interval", " s")},
               {"y", Axis("ETTR (%)", "ETTR", "%")},
               {"datasets", json::array()}};
    chart["x"]["min"] = 0;
    chart["y"]["min"] = std::floor(lo * 100 - 1);
    chart["y"]["max"] = std::min(100.0, std::ceil(hi * 100 + 0.5));
    if (young_daly && *young_daly <= x_max) {
      json ref = Dataset("Young/Daly estimate", "#9aa0a6", "ref", -1);
      ref["points"] = PointsJson({{*young_daly, std::floor(lo * 100 - 1) / 100},
                                  {*young_daly, std::min(1.0, std::ceil(hi * 100 + 0.5) / 100)}},
                                 1, 100);
      chart["datasets"].push_back(std::move(ref));
    }
    for (std::size_t i = 0; i < policies.size(); ++i) {
      if (sweep[i].empty()) continue;
      json d = Dataset(policies[i].label, policies[i].color, "line", static_cast<int>(i));
      d["points"] = PointsJson(sweep[i], 1, 100);
      chart["datasets"].push_back(std::move(d));
    }
    page.Chart("chart-checkpoint-sweep", "ETTR against the checkpoint interval",
               "The same failures replayed at several checkpoint intervals. Short intervals "
               "lose time to checkpoint stalls, long ones to work redone after a failure; the "
               "peak is the simulated best interval. The grey line marks the Young/Daly "
               "estimate sqrt(2 × checkpoint cost × MTBF).",
               std::move(chart));
  }
  if (any_timeline) {
    page.Append(
        "<h3 class=\"table-title\">Timeline of failures and recoveries</h3>\n<p class=\"intro\">"
        "Per policy, the first seed's failures that hit a job, each recovery decision, each "
        "restart with its latency (failure to restart), and every node drained. Click a policy "
        "to open its timeline.</p>\n");
    for (const Policy& p : policies) {
      const json* timeline = Field(p.result, "timeline");
      if (timeline != nullptr && timeline->is_array() && !timeline->empty()) {
        page.Append(TimelineTable(p, *timeline));
      }
    }
  }
  page.EndSection();
}

// ---------------------------------------------------------------------------------------------
// Static parts of the page.

constexpr std::string_view kStyle = R"css(
:root { --fg: #1f2937; --muted: #6b7280; --line: #e5e7eb; --panel: #ffffff; --page: #f6f7f9; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--page); color: var(--fg); line-height: 1.5;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 32px 24px 48px; }
.eyebrow { margin: 0; font-size: 12px; letter-spacing: .08em; text-transform: uppercase; color: var(--muted); }
h1 { margin: 4px 0 12px; font-size: 28px; line-height: 1.25; }
p.verdict { max-width: 90ch; margin: 0 0 20px; padding: 10px 14px; font-size: 17px; font-weight: 500;
  background: #eef4fb; border-left: 4px solid #4e79a7; border-radius: 4px; }
h2 { margin: 40px 0 10px; padding-bottom: 6px; font-size: 20px; border-bottom: 1px solid var(--line); }
h3 { margin: 0 0 4px; font-size: 16px; }
.meta { display: grid; grid-template-columns: repeat(auto-fit, minmax(230px, 1fr)); gap: 12px; margin: 0; }
.meta > div { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.meta dt { font-size: 12px; letter-spacing: .05em; text-transform: uppercase; color: var(--muted); }
.meta dd { margin: 2px 0 0; font-weight: 600; overflow-wrap: anywhere; }
.meta dd .sub { font-weight: 400; color: var(--muted); }
p.intro { max-width: 80ch; margin: 0 0 14px; color: #374151; }
p.empty { color: var(--muted); }
h3.table-title { margin: 18px 0 8px; font-size: 15px; }
.table-wrap { width: fit-content; max-width: 100%; overflow-x: auto; margin: 0 0 16px;
  background: var(--panel); border: 1px solid var(--line); border-radius: 8px; }
table { width: auto; border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { padding: 7px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th:first-child, td:first-child { padding-left: 12px; }
th:last-child, td:last-child { padding-right: 12px; }
thead th { background: #f3f4f6; color: #374151; font-size: 12px; font-weight: 600; line-height: 1.3;
  text-align: right; vertical-align: bottom; white-space: normal; }
thead th.group { text-align: center; border-bottom: 1px solid #d1d5db; }
thead th.left, tbody th, tbody td { text-align: left; }
tbody th { font-weight: 600; position: sticky; left: 0; background: var(--panel);
  white-space: normal; min-width: 11em; }
tbody td.num { text-align: right; }
tbody td.missing { color: #9ca3af; }
tbody tr:last-child > * { border-bottom: 0; }
tbody tr:hover, tbody tr:hover th { background: #f9fafb; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 8px; border-radius: 2px; }
.tag { font-weight: 400; color: var(--muted); }
figure.chart { margin: 0 0 18px; padding: 16px 18px 12px; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; }
figure.chart p { max-width: 85ch; margin: 0 0 10px; font-size: 14px; color: #4b5563; }
.canvas-box { position: relative; height: 380px; }
.no-charts .canvas-box { display: none; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em; }
footer { margin-top: 40px; font-size: 12px; color: var(--muted); }
@media print { body { background: #fff; } figure.chart, .table-wrap, .meta > div { break-inside: avoid; } }
)css";

// Turns the chart specifications in #tessera-data into Chart.js charts.
constexpr std::string_view kRenderScript = R"js(
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('tessera-data').textContent);
  if (typeof Chart === 'undefined') { document.body.className += ' no-charts'; return; }
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.font.size = 12;
  Chart.defaults.color = '#374151';
  Chart.defaults.borderColor = '#e5e7eb';
  Chart.defaults.animation = false;

  function fmt(v) {
    if (v === null || v === undefined || !isFinite(v)) return 'n/a';
    var a = Math.abs(v);
    if (a >= 1e15) return v.toExponential(2);
    if (a >= 100 || Number.isInteger(v)) return Math.round(v).toLocaleString('en-US');
    if (a >= 10) return v.toFixed(1);
    if (a >= 1) return v.toFixed(2);
    return String(Number(v.toPrecision(3)));
  }
  var DURATIONS = [[0.1, '0.1 s'], [1, '1 s'], [10, '10 s'], [60, '1 min'], [600, '10 min'],
    [3600, '1 h'], [36000, '10 h'], [86400, '1 d'], [604800, '1 wk'], [2592000, '30 d'],
    [8640000, '100 d'], [31536000, '1 yr']];
  function duration(v) {
    for (var i = 0; i < DURATIONS.length; i++) {
      if (Math.abs(DURATIONS[i][0] - v) < 1e-9 * v) return DURATIONS[i][1];
    }
    return fmt(v) + ' s';
  }
  // A duration in seconds for people: "45 s", "12.5 min", "3.20 h", "11.4 d".
  function human(v) {
    var a = Math.abs(v);
    if (a < 120) return fmt(v) + ' s';
    if (a < 7200) return fmt(v / 60) + ' min';
    if (a < 172800) return fmt(v / 3600) + ' h';
    return fmt(v / 86400) + ' d';
  }
  // Tooltip mode for series sampled at different x: each visible line's value at the pointer's
  // x, i.e. its last sample at or before x (the value of a step function there).
  Chart.Interaction.modes.stepAt = function (chart, e) {
    var area = chart.chartArea;
    if (e.x < area.left || e.x > area.right) return [];
    var x = chart.scales.x.getValueForPixel(e.x);
    chart.$pointerX = x;
    var items = [];
    chart.data.datasets.forEach(function (ds, di) {
      if (!chart.isDatasetVisible(di)) return;
      var data = ds.data, lo = 0, hi = data.length - 1, found = -1;
      if (!data.length || x > data[hi].x) return;  // this run had ended by then
      while (lo <= hi) {
        var mid = (lo + hi) >> 1;
        if (data[mid].x <= x) { found = mid; lo = mid + 1; } else { hi = mid - 1; }
      }
      if (found < 0 || data[found].y === null) return;
      items.push({element: chart.getDatasetMeta(di).data[found], datasetIndex: di, index: found});
    });
    return items;
  };
  function rgba(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return 'rgba(' + (n >> 16 & 255) + ',' + (n >> 8 & 255) + ',' + (n & 255) + ',' + alpha + ')';
  }
  function axis(spec, isX) {
    var a = {type: spec.type || 'linear', grid: {color: '#eef0f3'}, ticks: {},
      title: {display: !!spec.label, text: spec.label || '', font: {weight: '600'}}};
    if (spec.min !== undefined && spec.min !== null) a.min = spec.min;
    if (spec.max !== undefined && spec.max !== null) a.max = spec.max;
    if (spec.step) a.ticks.stepSize = spec.step;
    var suffix = spec.suffix || '';
    if (a.type === 'logarithmic' && spec.durations) {
      a.afterBuildTicks = function (scale) {
        var ticks = DURATIONS.filter(function (d) {
          return d[0] >= scale.min * 0.999 && d[0] <= scale.max * 1.001;
        }).map(function (d) { return {value: d[0]}; });
        if (ticks.length >= 2) scale.ticks = ticks;
      };
      a.ticks.callback = function (v) { return duration(v); };
    } else if (a.type === 'logarithmic') {
      a.ticks.callback = function (v) {
        var m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
        return Math.abs(m - 1) < 1e-6 ? fmt(v) + suffix : null;
      };
    } else if (a.type === 'linear') {
      a.ticks.callback = function (v) { return fmt(v) + (isX ? '' : suffix); };
      if (!isX && a.min === undefined) a.beginAtZero = true;
    }
    return a;
  }
  function dataset(c, d) {
    if (c.type === 'bar') {
      return {label: d.label, data: d.values, backgroundColor: d.color, borderWidth: 0,
        borderRadius: 2};
    }
    var o = {label: d.label, borderColor: d.color, backgroundColor: d.color, borderWidth: 2,
      pointRadius: 0, pointHoverRadius: 4, pointHitRadius: 4, fill: false, spanGaps: true,
      stepped: c.stepped ? 'before' : false,
      data: d.points.map(function (p) { return {x: p[0], y: p[1]}; })};
    if (c.stepped) o.borderWidth = 1.5;
    if (d.dash) o.borderDash = [7, 4];
    if (d.role === 'ref') {
      o.borderColor = o.backgroundColor = '#9aa0a6';
      o.borderWidth = 1.5; o.borderDash = [5, 4]; o.stepped = false; o.pointHoverRadius = 0;
    } else if (d.role === 'target') {
      o.borderWidth = 1.5; o.borderDash = [2, 3]; o.stepped = false;
    } else if (d.role === 'band-low' || d.role === 'band-high') {
      o.borderWidth = 0; o.pointHoverRadius = 0;
      o.backgroundColor = d.role === 'band-high' ? rgba(d.color, 0.18) : 'transparent';
      if (d.role === 'band-high') o.fill = '-1';
    }
    return o;
  }
  function legendShows(d) { return d.role === 'line' || d.role === 'ref' || d.role === 'bar'; }
  function tooltipShows(d) { return d.role === 'line' || d.role === 'target' || d.role === 'bar'; }

  data.charts.forEach(function (c) {
    var canvas = document.getElementById(c.id);
    if (!canvas) return;
    var specs = c.datasets;
    new Chart(canvas, {
      type: c.type,
      data: {labels: c.labels, datasets: specs.map(function (d) { return dataset(c, d); })},
      options: {
        responsive: true, maintainAspectRatio: false, animation: false,
        parsing: c.type === 'bar' ? undefined : false,
        interaction: {mode: c.tooltip || 'stepAt', intersect: false, axis: 'x'},
        scales: {x: axis(c.x, true), y: axis(c.y, false)},
        plugins: {
          legend: {
            position: 'bottom',
            labels: {boxWidth: 18, boxHeight: 10, padding: 14,
              filter: function (item) { return legendShows(specs[item.datasetIndex]); }},
            onClick: function (e, item, legend) {
              var chart = legend.chart, group = specs[item.datasetIndex].group;
              var show = !chart.isDatasetVisible(item.datasetIndex);
              specs.forEach(function (d, i) {
                if (d.group === group && (d.role !== 'bar' || i === item.datasetIndex)) {
                  chart.setDatasetVisibility(i, show);
                }
              });
              chart.update();
            }
          },
          tooltip: {
            filter: function (item) { return tooltipShows(specs[item.datasetIndex]); },
            callbacks: {
              title: function (items) {
                if (!items.length) return '';
                if (c.type === 'bar') return items[0].label;
                var x = c.tooltip === 'stepAt' ? items[0].chart.$pointerX : items[0].parsed.x;
                return c.x.name + ': ' + (c.x.durations ? human(x) : fmt(x) + (c.x.suffix || ''));
              },
              label: function (item) {
                return ' ' + item.dataset.label + ': ' + fmt(item.parsed.y) + (c.y.suffix || '');
              }
            }
          }
        }
      }
    });
  });
})();
)js";

// Chart.js, with any "</script" (there is none in 4.x) defused so it cannot end the element.
std::string ChartJsSource() {
  std::string js;
  for (const char* chunk : web::kChartJsChunks) js += chunk;
  for (std::size_t pos = 0; (pos = js.find("</script", pos)) != std::string::npos; pos += 2) {
    js.replace(pos, 2, "<\\/");
  }
  return js;
}

std::string Header(const json& summary, std::string_view experiment) {
  std::string html = "<header>\n<p class=\"eyebrow\">Tessera · simulated cluster</p>\n";
  html += fmt::format("<h1>Simulation report{}</h1>\n",
                      experiment.empty() ? "" : ": " + HtmlEscape(experiment));
  // The page opens with what it found, in one sentence (verdict.h).
  html += fmt::format("<p class=\"verdict\" id=\"verdict\">{}</p>\n",
                      HtmlEscape(report::Verdict(summary)));
  html += "<dl class=\"meta\">\n";
  html += fmt::format("<div><dt>Experiment</dt><dd>{}</dd></div>\n",
                      experiment.empty() ? "unknown" : HtmlEscape(experiment));
  const json* trace = Field(&summary, "trace");
  const std::string path = Text(Field(trace, "path"));
  const auto jobs = Number(Field(trace, "jobs"));
  if (!path.empty() || jobs) {
    html += "<div><dt>Trace</dt><dd>";
    if (!path.empty()) html += fmt::format("<code>{}</code>", HtmlEscape(path));
    if (jobs) {
      html += fmt::format("{}{} jobs{}", path.empty() ? "" : "<br><span class=\"sub\">",
                          FormatNumber(*jobs), path.empty() ? "" : "</span>");
    }
    html += "</dd></div>\n";
  }
  const json* cluster = Field(&summary, "cluster");
  const auto nodes = Number(Field(cluster, "nodes"));
  const auto gpus = Number(Field(cluster, "gpus"));
  std::string size;
  if (nodes) size += FormatNumber(*nodes) + " nodes";
  if (gpus) size += (size.empty() ? "" : " · ") + FormatNumber(*gpus) + " GPUs";
  html += fmt::format(
      "<div><dt>Cluster</dt><dd>{}<span class=\"sub\">simulated cluster{}</span></dd></div>\n",
      size.empty() ? "" : size + "<br>",
      IsTrue(Field(&summary, "simulated_gpus")) ? ", simulated GPUs" : "");
  const auto results = Field(&summary, "results");
  if (results != nullptr && results->is_array()) {
    html += fmt::format("<div><dt>Policies compared</dt><dd>{}</dd></div>\n", results->size());
  }
  html += "</dl>\n</header>\n";
  return html;
}

std::string Render(const json& summary) {
  const std::string experiment = Text(Field(&summary, "experiment"));
  const std::vector<Policy> policies = ReadPolicies(summary);
  Page page;
  page.Append(Header(summary, experiment));

  const bool known_experiment = experiment == "allocation" || experiment == "replay";
  page.Section("Results", known_experiment
                              ? "One row per policy; hover a cell for the exact value (durations "
                                "in seconds)."
                              : "One row per policy, with every scalar field of its result; hover "
                                "a cell for the exact value.");
  if (policies.empty()) {
    page.Append("<p class=\"empty\">This summary has no results.</p>\n");
  } else if (!known_experiment) {
    page.Append(ResultsTable(policies, TableGroups(policies)));
  } else {
    // The documented fields first; any others in a second table, so that neither gets too wide.
    std::vector<Group> main_groups;
    std::vector<Group> other_groups;
    for (Group& g : TableGroups(policies)) (g.known ? main_groups : other_groups).push_back(g);
    page.Append(ResultsTable(policies, main_groups));
    if (!other_groups.empty()) {
      page.Append("<h3 class=\"table-title\">Other fields</h3>\n");
      page.Append(ResultsTable(policies, other_groups));
    }
  }
  page.EndSection();

  // Charts follow the data present, whatever the experiment is called.
  AddAllocation(page, policies, experiment);
  AddReplay(page, policies, summary, experiment);
  AddFairShare(page, policies);
  AddFailures(page, policies);
  AddColocation(page, policies);
  AddServing(page, policies, summary);

  json data{{"format", "tessera-report/1"}, {"experiment", experiment}, {"charts", page.charts()}};
  const std::string generated_by = Text(Field(&summary, "generated_by"));

  std::string html;
  html.reserve(page.body().size() + 260000);
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<meta name=\"generator\" content=\"tessera sim\">\n";
  html += fmt::format("<title>Tessera simulation report{}</title>\n",
                      experiment.empty() ? "" : " — " + HtmlEscape(experiment));
  html += "<style>";
  html += kStyle;
  html += "</style>\n</head>\n<body>\n<main>\n";
  html += page.body();
  html += "<footer>";
  if (!generated_by.empty()) html += fmt::format("Generated by {}. ", HtmlEscape(generated_by));
  html +=
      "Simulated cluster; charts drawn with Chart.js, embedded in this file, which opens "
      "offline.</footer>\n";
  if (!page.charts().empty()) {
    html += "<noscript><p>The charts need JavaScript.</p></noscript>\n";
  }
  html += "</main>\n<script type=\"application/json\" id=\"tessera-data\">";
  html += report::JsonForScript(data);
  html += "</script>\n<script>\n";
  html += ChartJsSource();
  html += "\n</script>\n<script>";
  html += kRenderScript;
  html += "</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace

std::string RenderHtmlReport(const nlohmann::json& summary) {
  try {
    return Render(summary);
  } catch (const std::exception& e) {
    return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Tessera "
           "simulation report</title></head><body><h1>Simulation report</h1><p>The report could "
           "not be rendered: " +
           HtmlEscape(e.what()) + "</p></body></html>\n";
  } catch (...) {
    return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Tessera "
           "simulation report</title></head><body><h1>Simulation report</h1><p>The report could "
           "not be rendered.</p></body></html>\n";
  }
}

}  // namespace tessera
