// `tessera bench store`: durable submissions acknowledged per second, SQLite and etcd side by
// side. For each store, a fresh tesserad (SQLite: WAL, synchronous=FULL; etcd: a real 3-member
// cluster on loopback, the controller its fenced leader) takes a burst of held BatchJobs from
// several clients (held: stored, not scheduled, so the store is what is measured). Concurrent
// submissions share one commit (the controller's group commit: one SQLite transaction, one etcd
// txn); the mean group size comes from tesserad's tessera_store_commit_duration_seconds count.
#include <httplib.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli/bench_group.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "cli/up_etcd.h"
#include "core/percentile.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct StoreBenchFlags {
  int submissions = 4000;
  int clients = 8;
  std::string stores = "sqlite,etcd";
  std::string bin_dir;
  std::string output;
};

// The count of tessera_store_commit_duration_seconds in tesserad's /metrics.
double CommitCount(const std::string& url) {
  httplib::Client c(url);
  auto r = c.Get("/metrics");
  if (!r) return 0;
  std::istringstream in(r->body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("tessera_store_commit_duration_seconds_count"))
      return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return 0;
}

// A tesserad on one store, stopped at the end of its scope.
class BenchController {
 public:
  ~BenchController() {
    if (pid_ > 0) Terminate(pid_, "tesserad", 10000);
  }
  Status Start(const std::string& bin, const std::string& dir, std::vector<std::string> extra) {
    // --insecure: a throwaway controller on 127.0.0.1; the store is what is measured.
    std::vector<std::string> argv = {bin + "/tesserad", "--state",   dir,
                                     "--port",          "0",         "--endpoint-file",
                                     dir + "/endpoint", "--insecure"};
    if (!extra.empty()) {
      auto port = PickFreePort();
      if (!port) return std::unexpected(port.error());
      argv[4] = std::to_string(*port);
      argv.insert(argv.end(), extra.begin(), extra.end());
    }
    auto pid = SpawnDetached(argv, dir + "/tesserad.log");
    if (!pid) return std::unexpected(pid.error());
    pid_ = *pid;
    for (int i = 0; i < 1000; ++i) {
      std::ifstream in(dir + "/endpoint");
      std::getline(in, url_);
      if (!url_.empty()) {
        httplib::Client c(url_);
        auto r = c.Get("/v1/healthz");
        if (r && r->status == 200) return {};  // on etcd: once it leads
      }
      if (!ProcessIs(pid_, "tesserad")) return Internal("tesserad exited; see " + dir);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return Internal("tesserad did not become ready; see " + dir + "/tesserad.log");
  }
  const std::string& url() const { return url_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = 0;
  std::string url_;
};

// CPU seconds this process (the clients) has used so far.
double SelfCpuSeconds() {
  rusage use{};
  ::getrusage(RUSAGE_SELF, &use);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(use.ru_utime) + seconds(use.ru_stime);
}

// The 1-minute load average: the machine is shared, so a figure comes with its load.
double LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  in >> load;
  return load;
}

Result<Json> Burst(const std::string& url, pid_t controller, int submissions, int clients) {
  std::atomic<int> next{0}, failures{0};
  std::mutex mu;
  std::vector<double> request_ms;
  const double commits_before = CommitCount(url);
  const double controller_cpu_before = UseOf(controller).cpu_seconds;
  const double client_cpu_before = SelfCpuSeconds();
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      httplib::Client http(url);
      http.set_tcp_nodelay(true);
      http.set_keep_alive(true);
      http.set_read_timeout(30, 0);
      std::vector<double> mine;
      for (int i = next++; i < submissions; i = next++) {
        const std::string spec = "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: s-" +
                                 std::to_string(i) +
                                 ", queue: bench-store}\nspec: {tasks: 1, gpusPerTask: 1, "
                                 "command: [sleep, \"60\"]}\n";
        const auto s = Clock::now();
        auto r = http.Post("/v1/jobs?hold=true", spec, "application/yaml");
        if (!r || r->status != 201) {
          ++failures;
          continue;
        }
        mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
      }
      std::lock_guard lock(mu);
      request_ms.insert(request_ms.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const double controller_cpu = UseOf(controller).cpu_seconds - controller_cpu_before;
  const double client_cpu = SelfCpuSeconds() - client_cpu_before;
  if (failures > 0) return Internal(std::to_string(failures.load()) + " submissions failed");
  const double commits = CommitCount(url) - commits_before;
  return Json{{"submissions", submissions},
              {"clients", clients},
              {"seconds", seconds},
              {"perSecond", submissions / seconds},
              {"requestMedianMs", Percentile(request_ms, 50)},
              {"requestP99Ms", Percentile(request_ms, 99)},
              {"commits", commits},
              {"submissionsPerCommit", commits > 0 ? submissions / commits : 0.0},
              // CPU per submission: what the rate is on a machine with cores to spare.
              {"controllerCpuMicrosPerSubmission", controller_cpu * 1e6 / submissions},
              {"clientCpuMicrosPerSubmission", client_cpu * 1e6 / submissions},
              {"loadAverage", LoadAverage()}};
}

Result<Json> MeasureStore(const std::string& store, const std::string& dir, const std::string& bin,
                          const StoreBenchFlags& f) {
  std::filesystem::create_directories(dir + "/logs");
  std::vector<std::string> extra;
  std::string detail = "SQLite WAL, synchronous=FULL";
  if (store == "etcd") {
    // As `tessera up` runs it: HTTPS between the controller and the members, client
    // certificates required.
    auto tls = EnsureUpTls(dir);
    if (!tls) return std::unexpected(tls.error());
    auto etcd = StartEtcdCluster(dir, 30, &*tls);
    if (!etcd) return std::unexpected(etcd.error());
    extra = etcd->tesserad_args;
    detail = "etcd 3.4, 3 members on loopback, TLS with client certificates, fenced txn";
  }
  Result<Json> out = Internal("not run");
  {
    BenchController controller;
    if (auto s = controller.Start(bin, dir, extra); !s) {
      StopEtcdCluster(dir);
      return std::unexpected(s.error());
    }
    std::cerr << "bench store: " << f.submissions << " submissions from " << f.clients
              << " clients on " << store << "\n";
    out = Burst(controller.url(), controller.pid(), f.submissions, f.clients);
  }
  StopEtcdCluster(dir);
  if (out) (*out)["store"] = store, (*out)["detail"] = detail;
  return out;
}

Status RunStoreBench(const StoreBenchFlags& f) {
  auto format = ParseOutput(f.output);
  if (!format) return std::unexpected(format.error());
  char tmpl[] = "/tmp/tessera-bench-store-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return IoError("mkdtemp failed");
  const std::string dir = tmpl;
  const std::string bin = f.bin_dir.empty() ? SelfDirectory() : f.bin_dir;
  Json out = {{"machine", {{"cpus", std::thread::hardware_concurrency()}}},
              {"stores", Json::array()}};
  Status status;
  for (std::size_t start = 0; start < f.stores.size() && status;) {
    const std::size_t comma = std::min(f.stores.find(',', start), f.stores.size());
    const std::string store = f.stores.substr(start, comma - start);
    start = comma + 1;
    if (store != "sqlite" && store != "etcd") {
      status = InvalidArgument("--stores: '" + store + "' is not sqlite or etcd");
      break;
    }
    auto r = MeasureStore(store, dir + "/" + store, bin, f);
    if (!r) status = std::unexpected(r.error());
    if (r) out["stores"].push_back(*r);
  }
  std::filesystem::remove_all(dir);
  if (!status) return status;
  if (*format != OutputFormat::kTable) {
    PrintStructured(out, *format);
    return {};
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : out["stores"]) {
    rows.push_back({s["store"].get<std::string>(), Number(s["perSecond"].get<double>()),
                    Number(s["requestMedianMs"].get<double>()),
                    Number(s["requestP99Ms"].get<double>()),
                    Number(s["submissionsPerCommit"].get<double>()),
                    Number(s["controllerCpuMicrosPerSubmission"].get<double>()),
                    Number(s["loadAverage"].get<double>()), s["detail"].get<std::string>()});
  }
  PrintTable({"STORE", "SUBMISSIONS/S", "P50 MS", "P99 MS", "PER COMMIT", "CONTROLLER CPU US",
              "LOAD", "STORE SETUP"},
             rows);
  std::cout << f.submissions << " durable submissions from " << f.clients << " clients each, "
            << std::thread::hardware_concurrency() << " CPUs\n";
  return {};
}

}  // namespace

void RegisterBenchStoreCommand(CLI::App& app) {
  CLI::App* bench = &BenchGroup(app);
  auto flags = std::make_shared<StoreBenchFlags>();
  auto* cmd = bench->add_subcommand(
      "store", "Durable submissions per second on SQLite and on etcd, side by side");
  cmd->add_option("--submissions", flags->submissions, "Jobs submitted to each store")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  cmd->add_option("--clients", flags->clients, "Concurrent submitting clients")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--stores", flags->stores, "Which stores, comma-separated")
      ->capture_default_str();
  cmd->add_option("--bin-dir", flags->bin_dir, "Where tesserad is");
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunStoreBench(*flags); })); });
}

}  // namespace tessera::cli
