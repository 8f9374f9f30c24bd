#include "cli/watch.h"

#include <algorithm>
#include <chrono>
#include <map>

namespace tessera::cli {

using Json = nlohmann::json;

Result<std::int64_t> LastEventSeq(ApiClient& api) {
  // Nothing is newer than the largest sequence number: the answer is at once, with lastSeq.
  auto doc = JsonOf(api.Get("/v1/events?since=9223372036854775806&wait=0&limit=1"));
  if (!doc) return std::unexpected(doc.error());
  return doc->value("lastSeq", std::int64_t{0});
}

Result<Json> NextEvents(ApiClient& api, std::int64_t& since, int wait_seconds) {
  auto doc = JsonOf(api.Get("/v1/events?since=" + std::to_string(since) +
                            "&wait=" + std::to_string(std::max(0, wait_seconds)) + "&limit=10000"));
  if (!doc) return std::unexpected(doc.error());
  since = std::max(since, doc->value("next", since));
  return (*doc)["events"];
}

Status WatchListing(ApiClient& api, const WatchSource& source, double timeout_seconds) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto remaining = [&] {
    if (timeout_seconds <= 0) return 1e9;
    return timeout_seconds - std::chrono::duration<double>(Clock::now() - start).count();
  };
  auto seq = LastEventSeq(api);
  if (!seq) return std::unexpected(seq.error());
  std::int64_t since = *seq;
  auto items = source.fetch();
  if (!items) return std::unexpected(items.error());
  std::map<std::string, Json> shown;
  for (const auto& item : *items) shown[source.key(item)] = source.comparable(item);
  source.print(*items, true);
  auto last_fetch = Clock::now();
  while (remaining() > 0) {
    double wait = std::min(10.0, remaining());
    if (source.refresh_seconds > 0) wait = std::min(wait, source.refresh_seconds);
    auto events = NextEvents(api, since, static_cast<int>(std::max(1.0, wait)));
    if (!events) return std::unexpected(events.error());
    const bool due =
        source.refresh_seconds > 0 &&
        Clock::now() - last_fetch >= std::chrono::duration<double>(source.refresh_seconds);
    if (events->empty() && !due) continue;
    auto now = source.fetch();
    if (!now) return std::unexpected(now.error());
    last_fetch = Clock::now();
    Json changed = Json::array();
    for (const auto& item : *now) {
      Json c = source.comparable(item);
      auto [it, added] = shown.try_emplace(source.key(item), c);
      if (added || it->second != c) {
        it->second = std::move(c);
        changed.push_back(item);
      }
    }
    if (!changed.empty()) source.print(changed, false);
  }
  return {};
}

}  // namespace tessera::cli
