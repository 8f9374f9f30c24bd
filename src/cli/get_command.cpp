// `tessera get jobs|nodes|queues|controllers [NAME...]`: a table for people, or -o json / -o yaml
// for scripts. Jobs come out in -o json/yaml as objects that `tessera submit -f` takes again
// (apiVersion, kind, metadata, spec, status; server/job_object.h), a list as a JSON array or
// YAML sequence, one named job as that object alone, as `kubectl get` does. Nodes and queues
// keep their flat fields (name, gpuCount, agentUrl, ...). A filter that matches nothing says
// so; --phase takes any case and refuses a phase that does not exist. -l selects jobs on their
// metadata.labels in kubectl's selector syntax (spec/label_selector.h), --user on metadata.user.
#include <httplib.h>

#include <algorithm>
#include <array>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "cli/events_view.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "cli/watch.h"
#include "spec/job_spec.h"
#include "spec/label_selector.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;

struct GetFlags {
  ClusterFlags cluster;
  std::string what;
  std::vector<std::string> names;
  std::string output;
  std::string queue;
  std::string phase;
  std::string selector;  // -l: a label selector
  std::string user;      // --user
  bool show_labels = false;
  bool watch = false;  // -w: print changes as they happen (watch.h)
  double timeout = 0;  // with -w: stop after this many seconds (0: never)
  EventsQuery events;  // get events: --for, --since, --cycles, --limit
};

// The phases of a job as the controller reports them.
constexpr std::array<std::string_view, 8> kJobPhases = {"Pending",    "Running",    "Stopping",
                                                        "Restarting", "Cancelling", "Succeeded",
                                                        "Failed",     "Cancelled"};

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// --phase in any case, as the controller spells it ("running" -> "Running").
Result<std::string> ParsePhase(const std::string& phase) {
  std::string valid;
  for (auto p : kJobPhases) {
    if (Lower(p) == Lower(phase)) return std::string(p);
    valid += (valid.empty() ? "" : ", ") + std::string(p);
  }
  return InvalidArgument("--phase " + phase + ": not a job phase; expected one of " + valid);
}

// "--queue nlp --phase Running" for the flags given, "" for none.
std::string Filters(const GetFlags& f, const std::string& phase) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : " ") + s; };
  if (!f.queue.empty()) add("--queue " + f.queue);
  if (!phase.empty()) add("--phase " + phase);
  if (!f.selector.empty()) add("-l " + f.selector);
  if (!f.user.empty()) add("--user " + f.user);
  return out;
}

std::string JobsPath(const GetFlags& f, const std::string& phase, const std::string& name,
                     bool objects) {
  httplib::Params params;
  if (!f.queue.empty()) params.emplace("queue", f.queue);
  if (!phase.empty()) params.emplace("phase", phase);
  if (!name.empty()) params.emplace("name", name);
  if (!f.selector.empty()) params.emplace("labelSelector", f.selector);
  if (!f.user.empty()) params.emplace("user", f.user);
  if (objects) params.emplace("view", "object");
  return httplib::append_query_params("/v1/jobs", params);
}

// "team=nlp,tier=prod": a job's labels as kubectl's --show-labels prints them.
std::string LabelsText(const Json& job) {
  std::string out;
  if (job.contains("labels") && job["labels"].is_object()) {
    for (const auto& [k, v] : job["labels"].items())
      out += (out.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : "");
  }
  return out.empty() ? "<none>" : out;
}

void PrintJobTable(const Json& jobs, bool header = true, bool show_labels = false) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& j : jobs) {
    rows.push_back(
        {j.value("queue", ""), j.value("name", ""), j.value("kind", ""), j.value("phase", ""),
         std::to_string(j.value("runningTasks", 0)) + "/" + std::to_string(j.value("tasks", 0)),
         Number(j.value("gpus", 0.0)), std::to_string(j.value("attempt", 0)),
         std::to_string(j.value("restarts", 0)), Age(j.value("submitTimeMs", std::int64_t{0})),
         j.value("message", "")});
    if (show_labels) rows.back().insert(rows.back().end() - 1, LabelsText(j));
  }
  std::vector<std::string> columns = {"QUEUE", "NAME",    "KIND",     "PHASE", "RUNNING",
                                      "GPUS",  "ATTEMPT", "RESTARTS", "AGE",   "MESSAGE"};
  if (show_labels) columns.insert(columns.end() - 1, "LABELS");
  PrintTable(columns, rows, header);
}

void PrintNodeTable(const Json& nodes, bool header = true) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& n : nodes) {
    std::string model = n.value("gpuModel", "");
    if (n.value("simulated", false)) model += " (simulated)";
    std::string status = n.value("status", "");
    if (n.value("cordoned", false)) {
      status += ",SchedulingDisabled";  // kubectl's word for a cordoned node
    } else if (status == "Ready" && !n.value("schedulable", true)) {
      status += ",NotSchedulable";
    }
    std::string domains;  // LEVEL=DOMAIN,...
    if (n.contains("topology") && n["topology"].is_object()) {
      for (const auto& [level, domain] : n["topology"].items()) {
        if (!domains.empty()) domains += ',';
        domains += level + "=" + (domain.is_string() ? domain.get<std::string>() : "?");
      }
    }
    std::string gpus =
        Number(n.value("gpusAllocated", 0.0)) + "/" + std::to_string(n.value("gpuCount", 0));
    if (const double oversold = n.value("oversold", 0.0); oversold > 0)
      gpus += " +" + Number(oversold) + " oversold";
    rows.push_back({n.value("name", ""), status, gpus, model.empty() ? "-" : model,
                    std::to_string(n.value("liveTasks", 0)),
                    Number(n.value("lastHeartbeatAgoMs", std::int64_t{0}) / 1000.0) + "s ago",
                    domains.empty() ? "-" : domains, n.value("address", "")});
  }
  PrintTable({"NAME", "STATUS", "GPUS", "MODEL", "TASKS", "HEARTBEAT", "DOMAINS", "ADDRESS"}, rows,
             header);
}

// The queue tree indented by depth; amounts are "-" until the tree resolves against the
// registered nodes (and for queues outside a tree).
void PrintQueueTable(const Json& queues, bool header = true) {
  std::vector<std::vector<std::string>> rows;
  bool unresolved = false;
  for (const auto& q : queues) {
    const bool in_tree = q.contains("depth");
    const bool resolved = q.contains("guaranteedGpus");
    unresolved |= in_tree && !resolved;
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%", 100 * q.value("dominantShare", 0.0));
    rows.push_back(
        {std::string(2 * static_cast<std::size_t>(q.value("depth", 0)), ' ') + q.value("name", ""),
         resolved ? Number(q["guaranteedGpus"].get<double>()) : "-",
         !resolved                       ? "-"
         : q.contains("borrowLimitGpus") ? Number(q["borrowLimitGpus"].get<double>())
                                         : "unlimited",
         Number(q.value("gpusAllocated", 0.0)), share,
         std::to_string(q.value("pendingJobs", 0)) + " (" + Number(q.value("pendingGpus", 0.0)) +
             " GPUs)",
         std::to_string(q.value("activeJobs", 0)), std::to_string(q.value("finishedJobs", 0))});
  }
  PrintTable({"QUEUE", "GUARANTEED", "BORROW-LIMIT", "ALLOCATED", "SHARE", "PENDING", "ACTIVE",
              "FINISHED"},
             rows, header);
  if (unresolved && header) {
    std::cout << "(guarantees are resolved against the registered nodes' GPUs once they hold "
                 "the tree's absolute amounts)\n";
  }
}

// Jobs, one request per name when names are given. `objects`: resubmittable objects.
Result<Json> FetchJobs(ApiClient& api, const GetFlags& f, const std::string& phase, bool objects) {
  Json all = Json::array();
  std::vector<std::string> names = f.names.empty() ? std::vector<std::string>{""} : f.names;
  for (const auto& name : names) {
    auto doc = JsonOf(api.Get(JobsPath(f, phase, name, objects)));
    if (!doc) return std::unexpected(doc.error());
    for (auto& j : (*doc)["jobs"]) all.push_back(std::move(j));
  }
  return all;
}

// The controllers (several on etcd, one leading): URL, PID and ROLE.
void PrintControllerTable(const Json& controllers, bool header = true) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : controllers) {
    rows.push_back({c.value("url", ""), std::to_string(c.value("pid", 0)),
                    c.value("leader", false) ? "leader" : "standby"});
  }
  PrintTable({"URL", "PID", "ROLE"}, rows, header);
}

enum class Listing { kJobs, kNodes, kQueues, kEvents, kControllers };

// "jobs", "job", "nodes", ... as the listing; the plural names it in messages.
Result<Listing> ParseListing(const std::string& what) {
  if (what == "jobs" || what == "job") return Listing::kJobs;
  if (what == "nodes" || what == "node") return Listing::kNodes;
  if (what == "queues" || what == "queue") return Listing::kQueues;
  if (what == "events" || what == "event") return Listing::kEvents;
  if (what == "controllers" || what == "controller") return Listing::kControllers;
  return InvalidArgument("get " + what + ": expected jobs, nodes, queues, events or controllers");
}

std::string Plural(Listing l) {
  switch (l) {
    case Listing::kJobs:
      return "jobs";
    case Listing::kNodes:
      return "nodes";
    case Listing::kQueues:
      return "queues";
    case Listing::kControllers:
      return "controllers";
    case Listing::kEvents:
      break;
  }
  return "events";
}

std::string NothingFound(Listing what, const std::string& filters) {
  if (!filters.empty()) return "No " + Plural(what) + " match " + filters + ".";
  switch (what) {
    case Listing::kJobs:
      return "No jobs yet: submit one with `tessera submit -f examples/jobs/training-job.yaml`.";
    case Listing::kNodes:
      return "No nodes registered yet: start agents with `tessera-agent --server URL` (or "
             "`tessera up`).";
    case Listing::kQueues:
    case Listing::kEvents:
    case Listing::kControllers:
      break;
  }
  return "No queues yet: without a queue tree (tesserad --queues FILE) a queue appears when a "
         "job names it.";
}

// Nodes or queues, only those of `names` when given (the API lists them all).
Result<Json> FetchNamed(ApiClient& api, Listing what, const std::vector<std::string>& names) {
  auto doc = JsonOf(api.Get("/v1/" + Plural(what)));
  if (!doc) return std::unexpected(doc.error());
  const std::set<std::string> wanted(names.begin(), names.end());
  Json items = Json::array();
  for (auto& item : (*doc)[Plural(what)]) {
    if (wanted.empty() || wanted.contains(item.value("name", ""))) items.push_back(item);
  }
  return items;
}

void Print(Listing what, const Json& items, OutputFormat format, const GetFlags& f,
           const std::string& phase) {
  if (format != OutputFormat::kTable) {
    // One named job is that object alone, as `kubectl get job NAME -o yaml` prints it.
    const bool one = what == Listing::kJobs && f.names.size() == 1 && items.size() == 1;
    PrintStructured(one ? items[0] : items, format);
  } else if (items.empty()) {
    if (f.names.empty()) std::cout << NothingFound(what, Filters(f, phase)) << "\n";
  } else if (what == Listing::kJobs) {
    PrintJobTable(items, true, f.show_labels);
  } else if (what == Listing::kNodes) {
    PrintNodeTable(items);
  } else if (what == Listing::kControllers) {
    PrintControllerTable(items);
  } else {
    PrintQueueTable(items);
  }
}

// -w: the listing, then each item that changes, as it changes.
Status Watch(ApiClient& api, Listing what, OutputFormat format, const GetFlags& f,
             const std::string& phase) {
  WatchSource source;
  source.fetch = [&]() -> Result<Json> {
    return what == Listing::kJobs ? FetchJobs(api, f, phase, format != OutputFormat::kTable)
                                  : FetchNamed(api, what, f.names);
  };
  source.key = [what](const Json& item) {
    if (what == Listing::kControllers) return item.value("url", "");
    if (what != Listing::kJobs) return item.value("name", "");
    const Json& meta = item.contains("metadata") ? item["metadata"] : item;
    return meta.value("queue", "") + "/" + meta.value("name", "");
  };
  source.comparable = [](Json item) {
    item.erase("lastHeartbeatAgoMs");  // ticks every second; a stopped heartbeat shows as Lost
    return item;
  };
  source.print = [&, what, format](const Json& items, bool header) {
    if (format != OutputFormat::kTable) {
      for (const auto& item : items) PrintStructured(item, format);
      std::cout.flush();
    } else if (what == Listing::kJobs) {
      PrintJobTable(items, header, f.show_labels);
    } else if (what == Listing::kNodes) {
      PrintNodeTable(items, header);
    } else if (what == Listing::kControllers) {
      PrintControllerTable(items, header);
    } else {
      PrintQueueTable(items, header);
    }
  };
  if (what == Listing::kNodes) source.refresh_seconds = 2;
  return WatchListing(api, source, f.timeout);
}

Status RunGetEvents(const GetFlags& f, OutputFormat format) {
  if (!f.names.empty()) return InvalidArgument("get events takes no names; use --for job/NAME");
  if (!f.phase.empty()) return InvalidArgument("--phase selects jobs, not events");
  if (!f.selector.empty() || !f.user.empty()) {
    return InvalidArgument("-l and --user select jobs, not events");
  }
  auto url = ResolveServer(f.cluster);
  if (!url) return std::unexpected(url.error());
  ApiClient api(*url);
  EventsQuery q = f.events;
  q.queue = f.queue;
  q.watch = f.watch;
  q.timeout_seconds = f.timeout;
  q.format = format;
  return RunGetEvents(api, q);
}

Status RunGet(const GetFlags& f) {
  auto format = ParseOutput(f.output);
  if (!format) return std::unexpected(format.error());
  auto what = ParseListing(f.what);
  if (!what) return std::unexpected(what.error());
  if (*what == Listing::kEvents) return RunGetEvents(f, *format);
  if (!f.events.for_object.empty() || !f.events.since.empty() || f.events.cycles) {
    return InvalidArgument("--for, --since and --cycles select events, not " + Plural(*what));
  }
  if (*what != Listing::kJobs && (!f.queue.empty() || !f.phase.empty() || !f.selector.empty() ||
                                  !f.user.empty() || f.show_labels)) {
    return InvalidArgument("--queue, --phase, -l, --user and --show-labels select jobs, not " +
                           Plural(*what));
  }
  if (auto sel = LabelSelector::Parse(f.selector); !sel) {
    return InvalidArgument("-l: " + sel.error().message);
  }
  if (*what == Listing::kControllers && !f.names.empty())
    return InvalidArgument("get controllers takes no names (it lists every controller)");
  for (const auto& n : f.names) {  // job names go into the request; the others filter here
    if (*what == Listing::kJobs && !ValidJobName(n))
      return InvalidArgument(n + " is not a valid job name");
  }
  std::string phase;
  if (!f.phase.empty()) {
    auto parsed = ParsePhase(f.phase);
    if (!parsed) return std::unexpected(parsed.error());
    phase = *parsed;
  }
  auto url = ResolveServer(f.cluster);
  if (!url) return std::unexpected(url.error());
  ApiClient api(*url);
  if (f.watch) return Watch(api, *what, *format, f, phase);
  auto items = *what == Listing::kJobs ? FetchJobs(api, f, phase, *format != OutputFormat::kTable)
                                       : FetchNamed(api, *what, f.names);
  if (!items) return std::unexpected(items.error());
  Print(*what, *items, *format, f, phase);
  if (!f.names.empty() && items->empty()) {
    std::string names;
    for (const auto& n : f.names) names += (names.empty() ? "" : ", ") + n;
    const std::string filters = Filters(f, phase);
    return NotFound("no " + Plural(*what) + " named " + names +
                    (filters.empty() ? "" : " match " + filters));
  }
  return {};
}

}  // namespace

void RegisterGetCommand(CLI::App& app) {
  auto flags = std::make_shared<GetFlags>();
  auto* cmd = app.add_subcommand("get", "List jobs, nodes, queues, events or controllers");
  cmd->add_option("what", flags->what, "jobs | nodes | queues | events | controllers")->required();
  cmd->add_option("names", flags->names, "Only these names (a job in -o yaml/json: its object)");
  cmd->add_option("--queue", flags->queue, "Only jobs of this queue");
  cmd->add_option("--phase", flags->phase,
                  "Only jobs in this phase (Pending, Running, Stopping, Restarting, Cancelling, "
                  "Succeeded, Failed, Cancelled; any case)");
  cmd->add_option("-l,--selector", flags->selector,
                  "Only jobs whose metadata.labels match (k=v, k!=v, k in (a,b), k notin (a,b), "
                  "k, !k; joined by ',')");
  cmd->add_option("--user", flags->user, "Only jobs of this metadata.user");
  cmd->add_flag("--show-labels", flags->show_labels, "Jobs: a LABELS column");
  cmd->add_flag("-w,--watch", flags->watch,
                "After the listing, print each change as it happens (until Ctrl-C or --timeout)");
  cmd->add_option("--timeout", flags->timeout, "With -w: stop watching after this many seconds");
  cmd->add_option("--for", flags->events.for_object,
                  "Events: only those of job/NAME, job/QUEUE/NAME or node/NAME");
  cmd->add_option("--since", flags->events.since,
                  "Events: only those of the last 30s, 10m, 2h, 1d, ...");
  cmd->add_flag("--cycles", flags->events.cycles, "Events: scheduling-cycle records too");
  cmd->add_option("--limit", flags->events.limit, "Events: look at the newest this many")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  AddClusterFlags(cmd, &flags->cluster);
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunGet(*flags); })); });
}

}  // namespace tessera::cli
