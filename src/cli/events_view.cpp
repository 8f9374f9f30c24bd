#include "cli/events_view.h"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "cli/watch.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;

// The object events name: "job/QUEUE/NAME" for a job (its queue found when only the name is
// given), "node/NAME" for a node.
Result<std::string> ResolveObject(ApiClient& api, const std::string& what,
                                  const std::string& queue) {
  const auto slash = what.find('/');
  const std::string type = slash == std::string::npos ? "" : what.substr(0, slash);
  const std::string rest = slash == std::string::npos ? "" : what.substr(slash + 1);
  if (type == "node" && !rest.empty()) return what;
  if (type != "job" || rest.empty()) {
    return InvalidArgument("--for " + what + ": expected job/NAME, job/QUEUE/NAME or node/NAME");
  }
  if (rest.find('/') != std::string::npos) return what;  // job/QUEUE/NAME
  auto q = ResolveJobQueue(api, rest, queue);
  if (!q) return std::unexpected(q.error());
  return "job/" + *q + "/" + rest;
}

struct EventFilter {
  std::string object;
  std::int64_t since_ms = 0;  // epoch ms; 0: any time
  bool cycles = false;
  bool Keeps(const Json& e) const {
    if (!cycles && e.value("type", "") == "SchedulingCycle") return false;
    if (!object.empty() && e.value("object", "") != object) return false;
    return e.value("timeMs", std::int64_t{0}) >= since_ms;
  }
};

void PrintEvents(const Json& events, OutputFormat format, bool header) {
  if (format != OutputFormat::kTable) {
    for (const auto& e : events) PrintStructured(e, format);
    std::cout.flush();
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : events) {
    rows.push_back({Clock(e.value("timeMs", std::int64_t{0})), e.value("type", ""),
                    e.value("object", ""), e.value("message", "")});
  }
  PrintTable({"TIME", "TYPE", "OBJECT", "MESSAGE"}, rows, header);
}

Json Kept(const Json& events, const EventFilter& filter) {
  Json out = Json::array();
  for (const auto& e : events)
    if (filter.Keeps(e)) out.push_back(e);
  return out;
}

}  // namespace

Result<std::int64_t> ParseSince(const std::string& text) {
  const auto bad = [&] {
    return InvalidArgument("--since " + text +
                           ": expected a duration such as 30s, 10m, 2h, 1d or 1h30m");
  };
  if (text.empty()) return bad();
  std::int64_t total = 0, number = 0;
  bool digits = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      number = number * 10 + (c - '0');
      if (number > 100'000'000) return bad();
      digits = true;
      continue;
    }
    if (!digits) return bad();
    const std::int64_t unit = c == 's'   ? 1000
                              : c == 'm' ? 60'000
                              : c == 'h' ? 3'600'000
                              : c == 'd' ? 86'400'000
                                         : 0;
    if (unit == 0) return bad();
    total += number * unit;
    number = 0;
    digits = false;
  }
  if (digits) return bad();  // a number without its unit
  return total;
}

Status RunGetEvents(ApiClient& api, const EventsQuery& q) {
  EventFilter filter;
  filter.cycles = q.cycles;
  if (!q.for_object.empty()) {
    auto object = ResolveObject(api, q.for_object, q.queue);
    if (!object) return std::unexpected(object.error());
    filter.object = *object;
  }
  if (!q.since.empty()) {
    auto ms = ParseSince(q.since);
    if (!ms) return std::unexpected(ms.error());
    filter.since_ms = NowMs() - *ms;
  }
  auto last = LastEventSeq(api);
  if (!last) return std::unexpected(last.error());
  std::int64_t since = std::max<std::int64_t>(0, *last - q.limit);
  Json shown = Json::array();
  while (since < *last) {  // pages of at most 10,000, oldest first
    auto page = NextEvents(api, since, 0);
    if (!page) return std::unexpected(page.error());
    if (page->empty()) break;
    for (auto& e : Kept(*page, filter)) shown.push_back(std::move(e));
  }
  if (shown.empty() && q.format == OutputFormat::kTable && !q.watch) {
    std::cout << "No events" << (filter.object.empty() ? "" : " for " + filter.object)
              << (q.since.empty() ? "" : " in the last " + q.since) << ".\n";
    return {};
  }
  PrintEvents(shown, q.format, true);
  if (!q.watch) return {};
  using Steady = std::chrono::steady_clock;
  const auto deadline = Steady::now() + std::chrono::milliseconds(
                                            static_cast<std::int64_t>(q.timeout_seconds * 1000));
  while (q.timeout_seconds <= 0 || Steady::now() < deadline) {
    const double left = q.timeout_seconds <= 0
                            ? 10.0
                            : std::chrono::duration<double>(deadline - Steady::now()).count();
    auto page = NextEvents(api, since, static_cast<int>(std::clamp(left, 1.0, 10.0)));
    if (!page) return std::unexpected(page.error());
    Json kept = Kept(*page, filter);
    if (kept.empty()) continue;
    PrintEvents(kept, q.format, false);  // under the header printed above, even over no rows
  }
  return {};
}

}  // namespace tessera::cli
