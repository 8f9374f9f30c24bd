#include "server/etcd_serving.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include "server/standby_server.h"
#include "server/tls_socket.h"
#include "store/etcd_election.h"
#include "store/etcd_store.h"
#include "store/etcd_watch.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

bool WriteEndpoint(const std::string& path, const std::string& url) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << url << "\n";
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// Waits `ms`, or until a signal or an interrupt (Wake, for good), or a change of the leader
// key (Nudge, once).
class Sleeper {
 public:
  void Sleep(int ms) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return woken_ || nudged_; });
    nudged_ = false;
  }
  void Nudge() {
    {
      std::lock_guard lock(mu_);
      nudged_ = true;
    }
    cv_.notify_all();
  }
  void Wake() {
    {
      std::lock_guard lock(mu_);
      woken_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
  bool nudged_ = false;
};

// A standby campaigns when the leader key changes (the watch), and at least this often.
constexpr int kCampaignFallbackMs = 1000;

}  // namespace

Result<int> BindRetrying(const std::function<Result<int>()>& bind) {
  auto bound = bind();
  for (int i = 0; !bound && i < 60; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    bound = bind();
  }
  return bound;
}

EtcdServing::EtcdServing(Options options, ProcessSignals& signals)
    : options_(std::move(options)), signals_(signals) {}

EtcdServing::Outcome EtcdServing::Run(const ServeLeader& serve, ControllerOptions options) {
  std::unique_ptr<LeaderElection> election;
  std::mutex election_mu;  // guards `election` for the standby's /v1/controllers
  auto controllers = [&]() -> Result<Json> {
    std::lock_guard lock(election_mu);
    if (!election) return IoError("etcd unreachable: this controller is not registered yet");
    return election->Controllers();
  };
  std::unique_ptr<TlsContext> tls;
  if (!options_.tls_cert_file.empty()) {
    auto loaded = TlsContext::Load(options_.tls_cert_file, options_.tls_key_file);
    if (!loaded) {
      spdlog::error("{}", loaded.error().message);
      return Outcome::kFailed;
    }
    tls = std::move(*loaded);
  }
  StandbyServer standby(controllers, tls.get());
  auto port = BindRetrying([&] { return standby.Bind(options_.listen, options_.port); });
  if (!port) {
    spdlog::error("{}", port.error().message);
    return Outcome::kFailed;
  }
  const std::string host = options_.listen == "0.0.0.0" ? "127.0.0.1" : options_.listen;
  const std::string url =
      std::string(tls ? "https://" : "http://") + host + ":" + std::to_string(*port);
  if (!options_.endpoint_file.empty() && !WriteEndpoint(options_.endpoint_file, url)) {
    spdlog::error("cannot write {}", options_.endpoint_file);
    return Outcome::kFailed;
  }
  std::thread standby_thread([&] { standby.Serve(); });
  Sleeper sleeper;
  std::unique_ptr<EtcdKeyWatch> watch;  // of the leader key, once registered
  signals_.SetStopper([&] { sleeper.Wake(); });
  std::string last_problem;
  // Campaign until this controller leads.
  while (!signals_.stop_requested()) {
    if (!election) {
      LeaderElection::Options eo{options_.endpoints,
                                 options_.etcd_tls,
                                 options_.prefix,
                                 options_.lease_ttl_s,
                                 url,
                                 static_cast<int>(::getpid())};
      auto started = LeaderElection::Start(std::move(eo));
      if (!started) {
        standby.SetLeader("", started.error().message);
        if (started.error().message != last_problem)
          spdlog::warn("standby at {}: {}", url, started.error().message);
        last_problem = started.error().message;
        sleeper.Sleep(500);
        continue;
      }
      std::lock_guard lock(election_mu);
      election = std::move(*started);
      spdlog::info("standby at {} (etcd {}, lease {}; watching {})", url,
                   options_.endpoints.front(), election->lease(), election->leader_key());
      watch =
          std::make_unique<EtcdKeyWatch>(options_.endpoints, options_.etcd_tls,
                                         election->leader_key(), [&sleeper] { sleeper.Nudge(); });
    }
    election->set_on_lost([this](const std::string& why) {
      spdlog::error("leadership lost: {}", why);
      signals_.Interrupt();
    });
    auto won = election->TryLead();
    if (won && *won) break;
    auto leader = election->Leader();
    const std::string problem = election->problem();
    standby.SetLeader(leader && leader->is_object() ? leader->value("url", "") : "", problem);
    if (!problem.empty() && problem != last_problem) spdlog::warn("standby: etcd: {}", problem);
    last_problem = problem;
    sleeper.Sleep(kCampaignFallbackMs);
  }
  // The watch stays until Run returns: stopping it may wait for its stream's read, and a new
  // leader has better things to do first.
  signals_.SetStopper(nullptr);
  standby.Stop();
  standby_thread.join();
  standby.Close();
  if (signals_.stop_requested()) {
    std::lock_guard lock(election_mu);
    election.reset();  // revokes the lease: a standby takes over at once
    return signals_.signalled() ? Outcome::kStopped : Outcome::kTermEnded;
  }
  spdlog::info("leading (etcd lease {}); loading the state from etcd", election->lease());
  EtcdStore::Options so;
  so.endpoints = options_.endpoints;
  so.tls = options_.etcd_tls;
  so.prefix = options_.prefix;
  so.fence = {election->leader_key(), election->lease()};
  so.on_term_end = [this](const std::string& why) {
    spdlog::error("{}", why);
    signals_.Interrupt();
  };
  auto store = EtcdStore::Open(std::move(so));
  if (!store) {
    spdlog::error("{}", store.error().message);
    ::setenv(kReexecPortVariable, std::to_string(*port).c_str(), 1);
    return Outcome::kTermEnded;
  }
  options.controllers = [&]() -> Json {
    auto list = controllers();
    return list ? *list : Json::array();
  };
  std::string name = "etcd";
  for (const auto& e : options_.endpoints) name += " " + e;
  const int rc = serve(**store, name, *port, std::move(options));
  if (signals_.signalled()) {
    std::lock_guard lock(election_mu);
    election.reset();
    return rc == 0 ? Outcome::kStopped : Outcome::kFailed;
  }
  // Not by a signal: the term ended, or the leader could not start (etcd failing mid-load).
  spdlog::info("the term at {} ended; re-executing as a standby", url);
  ::setenv(kReexecPortVariable, std::to_string(*port).c_str(), 1);  // the same port again
  return Outcome::kTermEnded;
}

}  // namespace tessera
