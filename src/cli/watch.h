// `tessera get ... -w`: a listing printed once, then each item again whenever it changes, as
// `kubectl get -w` does. Changes are found by long-polling the controller's event stream
// (GET /v1/events?since=SEQ&wait=S): any event makes the listing be fetched again, and the
// items whose content differs from what was last printed are printed, flushed at once so that
// a pipe or a file sees each change as it happens. Nodes are also re-read every few seconds,
// since a heartbeat that stops is no event until the node is declared lost.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/live_client.h"

namespace tessera::cli {

struct WatchSource {
  std::function<Result<nlohmann::json>()> fetch;             // the listing now (an array)
  std::function<std::string(const nlohmann::json&)> key;     // an item's identity
  std::function<nlohmann::json(nlohmann::json)> comparable;  // without fields that tick
  std::function<void(const nlohmann::json&, bool)> print;    // items; with the header?
  double refresh_seconds = 0;  // > 0: also fetch again this often without an event
};

// Watches until `timeout_seconds` pass (0: until interrupted) or the controller is gone.
Status WatchListing(ApiClient& api, const WatchSource& source, double timeout_seconds);

// The sequence number of the controller's last event.
Result<std::int64_t> LastEventSeq(ApiClient& api);

// Long-polls for events after `since`, waiting at most `wait_seconds`; returns them (oldest
// first) and advances `since` past them.
Result<nlohmann::json> NextEvents(ApiClient& api, std::int64_t& since, int wait_seconds);

}  // namespace tessera::cli
