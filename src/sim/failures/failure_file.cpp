// Reads and writes failure files (see failure_file.h). A deliberately small CSV dialect: the
// fields are numbers and names, so there is no quoting; a stray quote is reported, not guessed.
#include "sim/failures/failure_file.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace tessera {
namespace {

constexpr std::string_view kColumns[] = {"time_seconds", "component", "target", "repair_seconds"};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(
        Trim(line.substr(start, comma == std::string_view::npos ? comma : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

std::optional<double> ToNumber(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<std::uint32_t> ToIndex(std::string_view s) {
  std::uint32_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Quotes `s` for an error message, at most 60 characters, control bytes as '?'.
std::string Shown(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 60)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  if (s.size() > 60) out += "...";
  return out + "'";
}

std::string SecondsText(Tick t) {
  std::ostringstream s;
  s.precision(15);
  s << ToSeconds(t);
  return s.str();
}

}  // namespace

Result<std::vector<FailureEvent>> ParseFailureCsv(std::string_view text, std::string_view source,
                                                  const Cluster& cluster,
                                                  const RecoveryTopology& topology, Tick horizon) {
  const auto fail = [&](std::int64_t line, std::string_view field, const std::string& reason) {
    return InvalidArgument(std::string(source) + ":" + std::to_string(line) + ": field '" +
                           std::string(field) + "': " + reason);
  };
  std::unordered_map<std::string_view, std::uint32_t> node_by_name, leaf_by_name;
  for (const Node& n : cluster.nodes()) node_by_name.emplace(n.name, n.id.value);
  for (std::size_t l = 0; l < topology.leaf_names.size(); ++l) {
    leaf_by_name.emplace(topology.leaf_names[l], static_cast<std::uint32_t>(l));
  }

  std::vector<FailureEvent> events;
  std::vector<int> column;  // position of each of kColumns in a row, -1 = absent
  std::int64_t line_no = 0;
  std::size_t pos = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") pos = 3;  // UTF-8 byte order mark
  while (pos <= text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string_view raw =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    const std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    if (line.find('"') != std::string_view::npos) {
      return fail(line_no, "(line)", "quotes are not allowed in a failure file");
    }
    const auto fields = Split(line);
    if (column.empty()) {  // the header
      column.assign(std::size(kColumns), -1);
      for (std::size_t i = 0; i < fields.size(); ++i) {
        const auto it = std::find(std::begin(kColumns), std::end(kColumns), fields[i]);
        if (it == std::end(kColumns)) {
          return fail(line_no, fields[i],
                      "unknown column (expected time_seconds,component,target[,repair_seconds])");
        }
        auto& c = column[static_cast<std::size_t>(it - std::begin(kColumns))];
        if (c >= 0) return fail(line_no, fields[i], "column given twice");
        c = static_cast<int>(i);
      }
      for (std::size_t k = 0; k < 3; ++k) {
        if (column[k] < 0) return fail(line_no, kColumns[k], "missing column in the header");
      }
      continue;
    }
    const auto field = [&](std::size_t k) -> std::string_view {
      const int c = column[k];
      return c >= 0 && static_cast<std::size_t>(c) < fields.size()
                 ? fields[static_cast<std::size_t>(c)]
                 : std::string_view();
    };
    const int expected =
        static_cast<int>(std::count_if(column.begin(), column.end(), [](int c) { return c >= 0; }));
    if (static_cast<int>(fields.size()) > expected) {  // a missing trailing optional is fine
      return fail(
          line_no, "(line)",
          std::to_string(fields.size()) + " fields, the header has " + std::to_string(expected));
    }

    FailureEvent e;
    e.line = line_no;
    const auto time = ToNumber(field(0));
    if (!time) return fail(line_no, "time_seconds", "expected a number, got " + Shown(field(0)));
    e.time = FromSeconds(*time);
    if (*time < 0 || e.time >= horizon) {
      return fail(
          line_no, "time_seconds",
          Shown(field(0)) + " is outside the run [0, " + SecondsText(horizon) + ") seconds");
    }
    const auto component = ParseComponent(field(1));
    if (!component) {
      return fail(line_no, "component",
                  "unknown component " + Shown(field(1)) + " (known: " + ComponentList() + ")");
    }
    e.component = *component;
    const std::string_view target = field(2);
    const bool leaf = UnitOf(e.component) == FailureUnit::kLeaf;
    const auto& by_name = leaf ? leaf_by_name : node_by_name;
    const std::size_t count = leaf ? topology.leaf_names.size() : cluster.nodes().size();
    if (const auto it = by_name.find(target); it != by_name.end()) {
      e.target = it->second;
    } else if (const auto index = ToIndex(target); index && *index < count) {
      e.target = *index;
    } else {
      return fail(line_no, "target",
                  std::string(leaf ? "no leaf named " : "no node named ") + Shown(target) +
                      " (a name, or an index below " + std::to_string(count) + ")");
    }
    if (column[3] >= 0 && !field(3).empty()) {
      const auto repair = ToNumber(field(3));
      if (!repair || *repair < 0) {
        return fail(line_no, "repair_seconds",
                    "expected a number of seconds >= 0, got " + Shown(field(3)));
      }
      e.repair = FromSeconds(*repair);
    }
    events.push_back(e);
  }
  if (column.empty()) {
    return InvalidArgument(std::string(source) +
                           ":1: field '(header)': empty file (expected "
                           "time_seconds,component,target[,repair_seconds])");
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const FailureEvent& a, const FailureEvent& b) { return a.time < b.time; });
  return events;
}

Result<std::vector<FailureEvent>> LoadFailureFile(const std::string& path, const Cluster& cluster,
                                                  const RecoveryTopology& topology, Tick horizon) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot open the failure file");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseFailureCsv(text.str(), path, cluster, topology, horizon);
}

std::string FailureCsv(const std::vector<FailureEvent>& events, const Cluster& cluster,
                       const RecoveryTopology& topology) {
  std::string out = "time_seconds,component,target,repair_seconds\n";
  for (const auto& e : events) {
    const bool leaf = UnitOf(e.component) == FailureUnit::kLeaf;
    std::ostringstream row;
    row.precision(15);
    row << ToSeconds(e.time) << "," << ComponentName(e.component) << ","
        << (leaf ? topology.leaf_names[e.target] : cluster.node(NodeId(e.target)).name) << ",";
    if (e.repair >= 0) row << ToSeconds(e.repair);
    out += row.str() + "\n";
  }
  return out;
}

}  // namespace tessera
