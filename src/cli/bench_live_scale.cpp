#include "cli/bench_live_scale.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli/daemon.h"
#include "cli/live_client.h"
#include "core/metrics_scrape.h"
#include "core/percentile.h"
#include "spec/document.h"
#include "spec/job_spec.h"
#include "store/sqlite_store.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// How long the pending job `i` runs once started: 20-61 s, spread to the millisecond so that
// jobs end, and others start, all the time once the first ones have run. Whole seconds did not:
// the cluster fills at once, so the jobs of each whole second ended within a few ms of one
// another and their successors started together, ~240 ends in one burst a second and almost
// none between; a probe then waited for the next burst (docs/benchmarks.md).
int DurationMs(int i) { return 20000 + static_cast<int>((std::int64_t{i} * 104729) % 41000); }

// `sleep`'s argument for `ms`: seconds with three decimals.
std::string SleepSeconds(int ms) {
  std::string frac = std::to_string(ms % 1000);
  return std::to_string(ms / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

std::string SingleGpuSpec(const std::string& name, const std::string& queue, int priority,
                          const std::string& seconds) {
  return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name + ", queue: " + queue +
         "}\nspec: {tasks: 1, gpusPerTask: 1, priority: " + std::to_string(priority) +
         ", maxRestarts: 0, command: [sleep, \"" + seconds + "\"]}\n";
}

// The pending jobs, committed with the controller's schema and canonical specs, in chunks.
Status WritePendingStore(const std::string& path, int jobs) {
  auto store = SqliteStore::Open(path);
  if (!store) return std::unexpected(store.error());
  // One parsed spec; each job is it under its own name and with its own duration.
  auto parsed = ParseJobSpec(SingleGpuSpec("template", "bench-scale", 0, SleepSeconds(0)));
  if (!parsed) return std::unexpected(parsed.error());
  const JobSpec& job_template = *parsed;
  const Tick now = NowMs();
  constexpr int kChunk = 20000;
  for (int first = 0; first < jobs; first += kChunk) {
    Change c;
    if (first == 0) c.put_queues.push_back({"bench-scale", now});
    for (int i = first; i < std::min(jobs, first + kChunk); ++i) {
      JobSpec spec = job_template;
      spec.name = "job-" + std::to_string(i);
      spec.roles.front().command.back() = SleepSeconds(DurationMs(i));
      JobRecord j;
      j.id = i + 1;
      j.queue = spec.queue;
      j.name = spec.name;
      j.kind = std::string(KindName(spec.kind));
      j.spec_json = DumpJson(JobSpecToJson(spec));
      j.submit_ms = now - jobs + i;  // in submission order
      UnitRecord u;
      u.job_id = j.id;
      u.pending_since_ms = j.submit_ms;
      c.put_jobs.push_back(std::move(j));
      c.put_units.push_back(u);
    }
    if (auto r = (*store)->Commit(c); !r) return std::unexpected(r.error());
  }
  return {};
}

// tesserad's --heartbeat-timeout for `nodes` emulated nodes: 10 s, or 10 ms a node.
double HeartbeatTimeoutSeconds(int nodes) { return std::max(10.0, 0.01 * nodes); }

class ScaleCluster {
 public:
  ScaleCluster(std::string dir, std::string bin) : dir_(std::move(dir)), bin_(std::move(bin)) {}
  ~ScaleCluster() {
    if (agent_ > 0) Terminate(agent_, "tessera-agent", 15000);
    if (controller_ > 0) Terminate(controller_, "tesserad", 15000);
  }
  Status Start(const LiveScaleOptions& o) {
    // One agent registers every emulated node, one request each, before its first heartbeat:
    // at 12,500 nodes that outlasts the default 10 s timeout and the first nodes would be lost.
    const double timeout_s = HeartbeatTimeoutSeconds(o.nodes);
    auto pid = SpawnDetached(
        {bin_ + "/tesserad", "--state", dir_, "--port", "0", "--endpoint-file", dir_ + "/endpoint",
         "--insecure", "--heartbeat-timeout", std::to_string(timeout_s)},
        dir_ + "/tesserad.log");
    if (!pid) return std::unexpected(pid.error());
    controller_ = *pid;
    for (int i = 0; i < 60000 && url_.empty(); ++i) {
      std::ifstream in(dir_ + "/endpoint");
      std::getline(in, url_);
      if (!url_.empty()) break;
      if (!ProcessIs(controller_, "tesserad"))
        return Internal("tesserad exited; see " + dir_ + "/tesserad.log");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (url_.empty()) return Internal("tesserad did not start");
    auto agent = SpawnDetached(
        {bin_ + "/tessera-agent", "--server", url_, "--node", "sim", "--state", dir_ + "/agent",
         "--simulate-nodes", std::to_string(o.nodes), "--simulate-gpus",
         std::to_string(o.gpus_per_node) + "xH100", "--simulate-tasks", "--no-cgroups"},
        dir_ + "/agent.log");
    if (!agent) return std::unexpected(agent.error());
    agent_ = *agent;
    return {};
  }
  const std::string& url() const { return url_; }
  pid_t controller() const { return controller_; }
  pid_t agent() const { return agent_; }

 private:
  std::string dir_, bin_, url_;
  pid_t controller_ = 0, agent_ = 0;
};

// Polls /v1/status until `done` holds for it, or fails after `seconds`.
template <typename Done>
Result<Json> WaitForStatus(ApiClient& api, int seconds, const std::string& what, Done done) {
  const auto deadline = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < deadline) {
    if (auto status = JsonOf(api.Get("/v1/status")); status && done(*status)) return *status;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return Internal("bench live: " + what + " within " + std::to_string(seconds) + " s");
}

int JobsIn(const Json& status, const char* phase) {
  return status.contains("jobs") ? status["jobs"].value(phase, 0) : 0;
}

}  // namespace

Result<double> SubmitAndTimeMs(ApiClient& api, const std::string& queue, const std::string& name,
                               const std::string& spec, const std::string& task_stamp,
                               int poll_ms) {
  auto job = JsonOf(api.Post("/v1/jobs", spec));
  if (!job) return std::unexpected(job.error());
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (true) {
    auto detail = JsonOf(api.Get("/v1/jobs/" + queue + "/" + name));
    if (!detail) return std::unexpected(detail.error());
    const Json& tasks = (*detail)["taskList"];
    if (!tasks.empty() && tasks[0].value(task_stamp, std::int64_t{0}) > 0) {
      return static_cast<double>(tasks[0][task_stamp].get<std::int64_t>() -
                                 (*detail)["submitTimeMs"].get<std::int64_t>());
    }
    if (Clock::now() > deadline)
      return Internal("job " + queue + "/" + name + ": no " + task_stamp + " within 30 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
}

namespace {

// Probe jobs of priority 100, one at a time until `stop`: the bind's commit (its task's
// creation) minus the submission, both stamped by the controller.
Result<std::vector<double>> RunProbes(const std::string& url, int probes,
                                      const std::atomic<bool>& stop) {
  ApiClient api(url, 30);
  std::vector<double> waits;
  for (int i = 0; i < probes && !stop; ++i) {
    const std::string name = "probe-" + std::to_string(i);
    auto wait = SubmitAndTimeMs(api, "bench-probe", name,
                                SingleGpuSpec(name, "bench-probe", 100, "2"), "createdMs", 2);
    if (!wait) return std::unexpected(wait.error());
    waits.push_back(*wait);
  }
  return waits;
}

struct Listing {
  std::vector<double> request_ms;
  std::int64_t listings = 0;  // complete walks through every page
  std::int64_t last_running = 0;
};

// GET /v1/jobs?phase=Running&limit=500, paged with `continue` to the end, again and again
// (200 ms apart, as a dashboard refreshes) until `stop`.
Result<Listing> RunListings(const std::string& url, const std::atomic<bool>& stop) {
  ApiClient api(url, 30);
  Listing out;
  while (!stop) {
    std::string token;
    std::int64_t running = 0;
    do {
      std::string path = "/v1/jobs?phase=Running&limit=500";
      if (!token.empty()) path += "&continue=" + token;
      const auto t0 = Clock::now();
      auto page = JsonOf(api.Get(path));
      out.request_ms.push_back(MsSince(t0));
      if (!page) return std::unexpected(page.error());
      running += static_cast<std::int64_t>((*page)["jobs"].size());
      token = page->value("continue", "");
    } while (!token.empty() && !stop);
    if (token.empty()) {
      ++out.listings;
      out.last_running = running;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return out;
}

// GET /metrics every 500 ms until `stop` (a scraper more eager than Prometheus' default 15 s),
// each answer timed by the client.
Result<std::vector<double>> RunScrapes(const std::string& url, const std::atomic<bool>& stop) {
  ApiClient api(url, 30);
  std::vector<double> ms;
  while (!stop) {
    const auto t0 = Clock::now();
    auto res = api.Get("/metrics");
    if (!res) return std::unexpected(res.error());
    ms.push_back(MsSince(t0));
    for (int i = 0; i < 5 && !stop; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ms;
}

// tesserad's own sums, by "METHOD ROUTE", "cycle" or "store commit": requests (cycles,
// commits), their seconds, and the seconds of it spent waiting for (a cycle: holding) the
// controller's lock. Every commit holds that lock through the store's fsync.
struct ServerTimes {
  double count = 0, seconds = 0, lock_seconds = 0;
};
using ServerTimesByRoute = std::map<std::string, ServerTimes>;

Result<ServerTimesByRoute> ServerTimesOf(const std::string& url) {
  ApiClient api(url, 30);
  auto res = api.Get("/metrics");
  if (!res) return std::unexpected(res.error());
  ServerTimesByRoute out;
  for (const auto& s :
       ParseMetricsText(res->body, {"tessera_api_request_duration_seconds_sum",
                                    "tessera_api_request_duration_seconds_count",
                                    "tessera_api_request_lock_wait_seconds_sum",
                                    "tessera_scheduling_cycle_duration_seconds_sum",
                                    "tessera_scheduling_cycle_duration_seconds_count",
                                    "tessera_scheduling_cycle_locked_seconds_sum",
                                    "tessera_store_commit_duration_seconds_sum",
                                    "tessera_store_commit_duration_seconds_count"})) {
    const bool cycle = s.name.starts_with("tessera_scheduling_cycle_");
    const bool commit = s.name.starts_with("tessera_store_commit_");
    const auto label = [&](const char* key) {
      return s.labels.contains(key) ? s.labels.at(key) : std::string();
    };
    ServerTimes& t = out[cycle    ? std::string("cycle")
                         : commit ? std::string("store commit")
                                  : label("method") + " " + label("route")];
    if (s.name.ends_with("_count")) t.count = s.value;
    if (s.name.ends_with("duration_seconds_sum")) t.seconds = s.value;
    if (s.name.ends_with("lock_wait_seconds_sum") || s.name.ends_with("locked_seconds_sum"))
      t.lock_seconds = s.value;
  }
  return out;
}

// What the window added to each route's sums: mean time and mean lock wait (hold) in ms.
Json ServerTimesJson(const ServerTimesByRoute& before, const ServerTimesByRoute& after) {
  Json out = Json::object();
  for (const auto& [route, a] : after) {
    const ServerTimes b = before.contains(route) ? before.at(route) : ServerTimes{};
    const double n = a.count - b.count;
    if (n <= 0) continue;
    const bool cycle = route == "cycle";
    if (route == "store commit") {
      out[route] = {{"commits", n}, {"mean_ms", 1000 * (a.seconds - b.seconds) / n}};
      continue;
    }
    out[route] = {{cycle ? "cycles" : "requests", n},
                  {"mean_ms", 1000 * (a.seconds - b.seconds) / n},
                  {cycle ? "lock_held_mean_ms" : "lock_wait_mean_ms",
                   1000 * (a.lock_seconds - b.lock_seconds) / n}};
  }
  return out;
}

// The cycles tesserad timed itself (tessera_scheduling_cycle_recent_seconds).
Result<Json> CycleTimes(const std::string& url) {
  ApiClient api(url, 30);
  auto res = api.Get("/metrics");
  if (!res) return std::unexpected(res.error());
  Json out = {{"p50", 0.0}, {"p99", 0.0}, {"cycles", 0}};
  for (const auto& s : ParseMetricsText(res->body, {"tessera_scheduling_cycle_recent_seconds",
                                                    "tessera_scheduling_cycle_recent_cycles"})) {
    const std::string q = s.labels.contains("percentile") ? s.labels.at("percentile") : "";
    if (q == "50") out["p50"] = s.value * 1000;
    if (q == "99") out["p99"] = s.value * 1000;
    if (s.name == "tessera_scheduling_cycle_recent_cycles") out["cycles"] = s.value;
  }
  return out;
}

Json P50P99(const std::vector<double>& v) {
  return {{"p50", Percentile(v, 50)}, {"p99", Percentile(v, 99)}, {"samples", v.size()}};
}

}  // namespace

Result<Json> RunLiveScale(const LiveScaleOptions& o) {
  if (o.nodes < 1 || o.nodes > 100000) return InvalidArgument("--nodes: must be 1..100000");
  if (o.gpus_per_node < 1 || o.gpus_per_node > 16) {
    return InvalidArgument("--gpus-per-node: must be 1..16");
  }
  if (o.pending < 1) return InvalidArgument("--pending: must be at least 1");
  if (o.seconds < 1) return InvalidArgument("--seconds: must be at least 1");
  const std::int64_t gpus = std::int64_t{o.nodes} * o.gpus_per_node;
  std::filesystem::create_directories(o.dir);
  std::cerr << "bench live: writing " << o.pending << " pending jobs into the store\n";
  if (auto s = WritePendingStore(o.dir + "/tesserad.db", o.pending); !s)
    return std::unexpected(s.error());
  ScaleCluster cluster(o.dir, o.bin);
  if (auto s = cluster.Start(o); !s) return std::unexpected(s.error());
  ApiClient api(cluster.url(), 30);
  std::cerr << "bench live: " << o.nodes << " emulated nodes registering (simulated tasks)\n";
  const auto t_start = Clock::now();
  auto ready = WaitForStatus(api, 600, "the nodes did not register",
                             [&](const Json& s) { return s.value("readyNodes", 0) == o.nodes; });
  if (!ready) return std::unexpected(ready.error());
  const double register_s = MsSince(t_start) / 1000;
  const auto want_running = std::min<std::int64_t>(gpus, o.pending);
  auto full = WaitForStatus(api, 600, "the cluster did not fill", [&](const Json& s) {
    return JobsIn(s, "Running") >= want_running * 99 / 100;
  });
  if (!full) return std::unexpected(full.error());
  const double fill_s = MsSince(t_start) / 1000 - register_s;
  std::cerr << "bench live: cluster full; waiting for jobs to end and start\n";
  auto churning = WaitForStatus(api, 600, "no job ended", [&](const Json& s) {
    return JobsIn(s, "Succeeded") >= std::max<std::int64_t>(1, want_running / 100);
  });
  if (!churning) return std::unexpected(churning.error());

  std::cerr << "bench live: measuring for " << o.seconds << " s\n";
  const ProcessUse controller0 = UseOf(cluster.controller());
  const ProcessUse agent0 = UseOf(cluster.agent());
  const auto before = JsonOf(api.Get("/v1/status"));
  auto server_before = ServerTimesOf(cluster.url());
  if (!server_before) return std::unexpected(server_before.error());
  std::atomic<bool> stop{false};
  Result<std::vector<double>> probes = std::vector<double>{};
  Result<Listing> listings = Listing{};
  Result<std::vector<double>> scrapes = std::vector<double>{};
  std::thread probe_thread([&] { probes = RunProbes(cluster.url(), o.probes, stop); });
  std::thread list_thread([&] { listings = RunListings(cluster.url(), stop); });
  std::thread scrape_thread([&] { scrapes = RunScrapes(cluster.url(), stop); });
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  stop = true;
  probe_thread.join();
  list_thread.join();
  scrape_thread.join();
  if (!probes) return std::unexpected(probes.error());
  if (!listings) return std::unexpected(listings.error());
  if (!scrapes) return std::unexpected(scrapes.error());
  auto server_after = ServerTimesOf(cluster.url());
  if (!server_after) return std::unexpected(server_after.error());
  auto cycles = CycleTimes(cluster.url());
  if (!cycles) return std::unexpected(cycles.error());
  const auto after = JsonOf(api.Get("/v1/status"));
  const ProcessUse controller1 = UseOf(cluster.controller());
  const ProcessUse agent1 = UseOf(cluster.agent());

  Json out;
  out["machine"] = {{"cpus", std::thread::hardware_concurrency()},
                    {"gpus", "simulated " + std::to_string(o.gpus_per_node) + "xH100 x " +
                                 std::to_string(o.nodes) + " emulated nodes"},
                    {"tasks", "simulated (tessera-agent --simulate-tasks): no processes"}};
  out["nodes"] = o.nodes;
  out["gpus_per_node"] = o.gpus_per_node;
  out["pending"] = o.pending;
  out["window_seconds"] = o.seconds;
  out["cycle_ms"] = *cycles;
  out["submit_to_bind_ms"] = P50P99(*probes);
  out["get_jobs_ms"] = P50P99(listings->request_ms);
  out["get_jobs"] = {{"request", "GET /v1/jobs?phase=Running&limit=500, paged with continue"},
                     {"complete_listings", listings->listings},
                     {"running_listed", listings->last_running}};
  out["metrics_ms"] = P50P99(*scrapes);
  // Where the time goes, as tesserad measured it over the window: each route's mean answer and
  // its mean wait for the controller's lock; the cycle's mean duration and lock hold.
  out["server_times"] = ServerTimesJson(*server_before, *server_after);
  out["controller_rss_mib"] = controller1.rss_mib;
  out["controller_peak_rss_mib"] = controller1.peak_rss_mib;
  out["controller_cpu_cores"] = (controller1.cpu_seconds - controller0.cpu_seconds) / o.seconds;
  out["agent"] = {{"rss_mib", agent1.rss_mib},
                  {"cpu_cores", (agent1.cpu_seconds - agent0.cpu_seconds) / o.seconds},
                  {"emulates", std::to_string(o.nodes) + " nodes, simulated tasks"}};
  out["startup"] = {{"register_s", register_s},
                    {"fill_s", fill_s},
                    {"heartbeat_timeout_s", HeartbeatTimeoutSeconds(o.nodes)}};
  if (before && after) {
    out["window"] = {
        {"jobs_started", JobsIn(*after, "Succeeded") + JobsIn(*after, "Running") -
                             JobsIn(*before, "Succeeded") - JobsIn(*before, "Running")},
        {"pending_at_end", JobsIn(*after, "Pending")},
        {"cycles", after->value("cycles", 0) - before->value("cycles", 0)}};
  }
  const double cycle_p50 = out["cycle_ms"]["p50"].get<double>();
  const double bind_p99 = out["submit_to_bind_ms"]["p99"].get<double>();
  const double list_p99 = out["get_jobs_ms"]["p99"].get<double>();
  const double metrics_p99 = out["metrics_ms"]["p99"].get<double>();
  out["targets"] = {{"cycle_ms_p50", 50},
                    {"submit_to_bind_ms_p99", 100},
                    {"get_jobs_ms_p99", 50},
                    {"metrics_ms_p99", 100},
                    {"controller_rss_mib", 1024},
                    {"met", cycle_p50 <= 50 && bind_p99 <= 100 && list_p99 <= 50 &&
                                metrics_p99 <= 100 && controller1.rss_mib <= 1024}};
  return out;
}

void PrintLiveScale(const Json& r) {
  auto ms = [&](const char* key) {
    return Number(r[key]["p50"].get<double>()) + " / " + Number(r[key]["p99"].get<double>()) +
           " ms";
  };
  std::vector<std::vector<std::string>> rows = {
      {"scheduling cycle with pending work, p50 / p99", ms("cycle_ms"), "target p50 <= 50 ms"},
      {"submit to bind (priority 100 probes), p50 / p99", ms("submit_to_bind_ms"),
       "target p99 <= 100 ms"},
      {"GET /v1/jobs?phase=Running&limit=500, p50 / p99", ms("get_jobs_ms"), "target p99 <= 50 ms"},
      {"GET /metrics (every 500 ms), p50 / p99", ms("metrics_ms"), "target p99 <= 100 ms"},
      {"controller RSS", Number(r["controller_rss_mib"].get<double>()) + " MiB",
       "target <= 1024 MiB"},
      {"agent RSS, CPU",
       Number(r["agent"]["rss_mib"].get<double>()) + " MiB, " +
           Number(r["agent"]["cpu_cores"].get<double>()) + " cores",
       r["agent"]["emulates"].get<std::string>()}};
  PrintTable({"MEASURE", "RESULT", "TARGET"}, rows);
  std::cout << "nodes " << r["nodes"] << " x " << r["gpus_per_node"] << " simulated GPUs, "
            << r["pending"]
            << " pending jobs; targets met: " << (r["targets"]["met"] ? "yes" : "no") << "\n";
}

}  // namespace tessera::cli
