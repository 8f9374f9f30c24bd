// `tessera get events [--for job/NAME|job/QUEUE/NAME|node/NAME] [--since 10m] [-w]`: the
// controller's event log as a table (AGE, TYPE, OBJECT, MESSAGE) or -o json/yaml, oldest
// first; scheduling-cycle records are left out unless --cycles. With -w it then prints each new
// event as it is committed, flushed at once (long poll on GET /v1/events).
#pragma once

#include <string>

#include "cli/live_client.h"

namespace tessera::cli {

struct EventsQuery {
  std::string for_object;  // --for: job/NAME, job/QUEUE/NAME, node/NAME; empty: all
  std::string queue;       // --queue: the queue of a job/NAME
  std::string since;       // --since: a duration (30s, 10m, 2h, 1d); empty: all held
  bool cycles = false;     // --cycles: SchedulingCycle records too
  int limit = 1000;        // the newest this many before the filters
  bool watch = false;
  double timeout_seconds = 0;  // with watch: stop after this long (0: never)
  OutputFormat format = OutputFormat::kTable;
};

Status RunGetEvents(ApiClient& api, const EventsQuery& query);

// "30s", "10m", "2h", "1d", "1h30m" as milliseconds; the error names --since.
Result<std::int64_t> ParseSince(const std::string& text);

}  // namespace tessera::cli
