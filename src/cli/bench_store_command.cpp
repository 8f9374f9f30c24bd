// `tessera bench store`: durable submissions acknowledged per second, SQLite and etcd side by
// side. For each store, a fresh tesserad (SQLite: WAL, synchronous=FULL; etcd: a real 3-member
// cluster on loopback, the controller its fenced leader), started as `tessera up` starts it
// (HTTPS, bearer tokens; --insecure: neither), takes a burst of held BatchJobs from several
// keep-alive clients (held: stored, not scheduled, so the store is what is measured). Each
// submission is one POST /v1/jobs whose body was made before the clock started, answered 201
// only once its commit is durable. Concurrent
// submissions share one commit (the controller's group commit: one SQLite transaction, one etcd
// txn); the mean group size comes from tesserad's tessera_store_commit_duration_seconds count.
#include <httplib.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <latch>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli/bench_group.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "cli/up_credentials.h"
#include "cli/up_etcd.h"
#include "cli/up_tls.h"
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
  std::string body = "json";  // the specs' text: json or yaml
  bool insecure = false;      // plain HTTP, no tokens (the default is as `tessera up` runs it)
};

// How the bench reaches its tesserad: as `tessera up` runs it by default (HTTPS with the local
// CA's certificate, every request with the admin's bearer token), or --insecure.
struct BenchAccess {
  std::vector<std::string> tesserad_args;
  std::string token;
  std::string ca_file;
};

Result<BenchAccess> PrepareAccess(const std::string& dir, bool insecure) {
  if (insecure) return BenchAccess{{"--insecure"}, "", ""};
  auto creds = EnsureUpCredentials(dir);
  if (!creds) return std::unexpected(creds.error());
  auto tls = EnsureUpTls(dir);
  if (!tls) return std::unexpected(tls.error());
  return BenchAccess{
      {"--token-auth-file", creds->token_file, "--bootstrap-token-file", creds->bootstrap_file,
       "--tls-cert-file", tls->cert_file, "--tls-private-key-file", tls->key_file},
      creds->admin_token,
      tls->ca_file};
}

// A keep-alive client of the bench's tesserad, presenting the access it was started with.
std::unique_ptr<httplib::Client> ClientOf(const std::string& url, const BenchAccess& access) {
  auto c = std::make_unique<httplib::Client>(url);
  if (!access.token.empty()) c->set_bearer_token_auth(access.token);
  if (!access.ca_file.empty()) {
    c->set_ca_cert_path(access.ca_file);
    c->enable_server_certificate_verification(true);
  }
  c->set_tcp_nodelay(true);
  c->set_keep_alive(true);
  c->set_read_timeout(30, 0);
  return c;
}

// tesserad's tessera_store_commit_duration_seconds so far: how many commits, how long in all.
struct CommitTotals {
  double count = 0;
  double seconds = 0;
};

CommitTotals CommitsOf(const std::string& url, const BenchAccess& access) {
  CommitTotals out;
  auto r = ClientOf(url, access)->Get("/metrics");
  if (!r) return out;
  std::istringstream in(r->body);
  const auto value = [](const std::string& line) {
    return std::stod(line.substr(line.rfind(' ') + 1));
  };
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("tessera_store_commit_duration_seconds_count")) out.count = value(line);
    if (line.starts_with("tessera_store_commit_duration_seconds_sum")) out.seconds = value(line);
  }
  return out;
}

// A tesserad on one store, stopped at the end of its scope.
class BenchController {
 public:
  ~BenchController() {
    if (pid_ > 0) Terminate(pid_, "tesserad", 10000);
  }
  Status Start(const std::string& bin, const std::string& dir, const BenchAccess& access,
               std::vector<std::string> extra) {
    std::vector<std::string> argv = {bin + "/tesserad", "--state",        dir, "--port", "0",
                                     "--endpoint-file", dir + "/endpoint"};
    argv.insert(argv.end(), access.tesserad_args.begin(), access.tesserad_args.end());
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
        auto r = ClientOf(url_, access)->Get("/v1/healthz");
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

// The bodies of every submission, made before the clock starts so that the clients' CPU is
// the requests' own: held one-GPU BatchJobs s-0, s-1, ... as JSON (what a program posts) or
// as the YAML a person writes.
std::vector<std::string> SubmissionBodies(int submissions, bool yaml) {
  std::vector<std::string> bodies;
  bodies.reserve(submissions);
  for (int i = 0; i < submissions; ++i) {
    const std::string name = "s-" + std::to_string(i);
    bodies.push_back(
        yaml ? "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name +
                   ", queue: bench-store}\nspec: {tasks: 1, gpusPerTask: 1, command: [sleep, "
                   "\"60\"]}\n"
             : "{\"apiVersion\":\"tessera/v1\",\"kind\":\"BatchJob\",\"metadata\":{\"name\":\"" +
                   name +
                   "\",\"queue\":\"bench-store\"},\"spec\":{\"tasks\":1,\"gpusPerTask\":1,"
                   "\"command\":[\"sleep\",\"60\"]}}");
  }
  return bodies;
}

// CPU seconds this process (the clients) has used so far.
double SelfCpuSeconds() {
  rusage use{};
  ::getrusage(RUSAGE_SELF, &use);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(use.ru_utime) + seconds(use.ru_stime);
}

// Context switches of every thread of `pid` so far (each is a wake-up the request path paid).
double ContextSwitchesOf(pid_t pid) {
  double total = 0;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("voluntary_ctxt_switches:") ||
          line.starts_with("nonvoluntary_ctxt_switches:"))
        total += std::stod(line.substr(line.find(':') + 1));
    }
  }
  return total;
}

double SelfContextSwitches() {
  rusage use{};
  ::getrusage(RUSAGE_SELF, &use);
  return static_cast<double>(use.ru_nvcsw + use.ru_nivcsw);
}

// The 1-minute load average: the machine is shared, so a figure comes with its load.
double LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  in >> load;
  return load;
}

Result<Json> Burst(const std::string& url, const BenchAccess& access, pid_t controller,
                   const std::vector<std::string>& bodies, int clients) {
  const int submissions = static_cast<int>(bodies.size());
  const char* content_type =
      !bodies.empty() && bodies[0].starts_with('{') ? "application/json" : "application/yaml";
  std::atomic<int> next{0}, failures{0};
  std::mutex mu;
  std::vector<double> request_ms;
  // Every client connects (TLS handshake included) before the clock starts.
  std::latch connected(clients + 1);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      auto http = ClientOf(url, access);
      if (auto r = http->Get("/v1/healthz"); !r || r->status != 200) ++failures;
      connected.count_down();
      go.wait(false);
      std::vector<double> mine;
      for (int i = next++; i < submissions && failures == 0; i = next++) {
        const auto s = Clock::now();
        auto r = http->Post("/v1/jobs?hold=true", bodies[i], content_type);
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
  connected.arrive_and_wait();
  const CommitTotals commits_before = CommitsOf(url, access);
  const double controller_cpu_before = UseOf(controller).cpu_seconds;
  const double client_cpu_before = SelfCpuSeconds();
  const double controller_switches_before = ContextSwitchesOf(controller);
  const double client_switches_before = SelfContextSwitches();
  const auto t0 = Clock::now();
  go = true;
  go.notify_all();
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const double controller_cpu = UseOf(controller).cpu_seconds - controller_cpu_before;
  const double client_cpu = SelfCpuSeconds() - client_cpu_before;
  const double controller_switches = ContextSwitchesOf(controller) - controller_switches_before;
  const double client_switches = SelfContextSwitches() - client_switches_before;
  if (failures > 0) return Internal(std::to_string(failures.load()) + " submissions failed");
  const CommitTotals commits_after = CommitsOf(url, access);
  const double commits = commits_after.count - commits_before.count;
  const double commit_seconds = commits_after.seconds - commits_before.seconds;
  return Json{{"submissions", submissions},
              {"clients", clients},
              {"seconds", seconds},
              {"perSecond", submissions / seconds},
              {"requestMedianMs", Percentile(request_ms, 50)},
              {"requestP99Ms", Percentile(request_ms, 99)},
              {"commits", commits},
              {"submissionsPerCommit", commits > 0 ? submissions / commits : 0.0},
              // The store's own time per commit (SQLite: the transaction with its fdatasync;
              // etcd: the txn's round trip to a quorum): a client waits for about two of them
              // (the one in flight when it arrives, then its own), so `clients` clients
              // acknowledge at most about clients / (2 x this) per second.
              {"commitMeanMs", commits > 0 ? commit_seconds * 1e3 / commits : 0.0},
              // CPU per submission: what the rate is on a machine with cores to spare.
              {"controllerCpuMicrosPerSubmission", controller_cpu * 1e6 / submissions},
              {"clientCpuMicrosPerSubmission", client_cpu * 1e6 / submissions},
              {"controllerContextSwitchesPerSubmission", controller_switches / submissions},
              {"clientContextSwitchesPerSubmission", client_switches / submissions},
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
  auto access = PrepareAccess(dir, f.insecure);
  if (!access) {
    StopEtcdCluster(dir);
    return std::unexpected(access.error());
  }
  const auto bodies = SubmissionBodies(f.submissions, f.body == "yaml");
  Result<Json> out = Internal("not run");
  {
    BenchController controller;
    if (auto s = controller.Start(bin, dir, *access, extra); !s) {
      StopEtcdCluster(dir);
      return std::unexpected(s.error());
    }
    std::cerr << "bench store: " << f.submissions << " submissions from " << f.clients
              << " clients on " << store << "\n";
    out = Burst(controller.url(), *access, controller.pid(), bodies, f.clients);
  }
  StopEtcdCluster(dir);
  if (!out) return out;
  (*out)["store"] = store;
  (*out)["detail"] = detail;
  (*out)["body"] = f.body;
  (*out)["api"] = f.insecure ? "plain HTTP, no authentication (--insecure)"
                             : "HTTPS, bearer token (as tessera up runs it)";
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
    rows.push_back(
        {s["store"].get<std::string>(), Number(s["perSecond"].get<double>()),
         Number(s["requestMedianMs"].get<double>()), Number(s["requestP99Ms"].get<double>()),
         Number(s["submissionsPerCommit"].get<double>()), Number(s["commitMeanMs"].get<double>()),
         Number(s["controllerCpuMicrosPerSubmission"].get<double>()),
         Number(s["clientCpuMicrosPerSubmission"].get<double>()),
         Number(s["loadAverage"].get<double>()), s["detail"].get<std::string>()});
  }
  PrintTable({"STORE", "SUBMISSIONS/S", "P50 MS", "P99 MS", "PER COMMIT", "COMMIT MS",
              "CONTROLLER CPU US", "CLIENT CPU US", "LOAD", "STORE SETUP"},
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
  cmd->add_option("--body", flags->body, "The specs' text: json (what a program posts) or yaml")
      ->capture_default_str()
      ->check(CLI::IsMember({"json", "yaml"}));
  cmd->add_flag("--insecure", flags->insecure,
                "Plain HTTP without tokens (the default: HTTPS and a bearer token, as tessera up)");
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunStoreBench(*flags); })); });
}

}  // namespace tessera::cli
