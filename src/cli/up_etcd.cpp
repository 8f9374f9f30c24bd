#include "cli/up_etcd.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/daemon.h"
#include "store/etcd_client.h"

namespace tessera::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kEtcd = "/usr/bin/etcd";

std::string Member(int i) { return "m" + std::to_string(i); }

// The members' (client, peer) ports: kept from the first start, else picked and written down.
Result<std::vector<std::pair<int, int>>> MemberPorts(const std::string& dir) {
  std::vector<std::pair<int, int>> ports;
  std::ifstream in(dir + "/ports");
  int client = 0, peer = 0;
  while (in >> client >> peer) ports.emplace_back(client, peer);
  if (static_cast<int>(ports.size()) == kEtcdMembers) return ports;
  ports.clear();
  std::ostringstream text;
  for (int i = 0; i < kEtcdMembers; ++i) {
    auto c = PickFreePort();
    auto p = PickFreePort();
    if (!c || !p) return IoError("no free port for etcd");
    ports.emplace_back(*c, *p);
    text << *c << " " << *p << "\n";
  }
  if (!WriteText(dir + "/ports", text.str())) return IoError("cannot write " + dir + "/ports");
  return ports;
}

// What the controllers are given to reach the members over HTTPS: the CA and their client
// certificate.
EtcdTls ControllerEtcdTls(const UpTls& tls) {
  return {tls.ca_file, tls.client_cert_file, tls.client_key_file};
}

bool MemberHealthy(const std::string& url, const EtcdTls& tls) {
  auto c = EtcdHttpClient(url, tls);
  c->set_connection_timeout(0, 200'000);
  c->set_read_timeout(1, 0);
  auto r = c->Get("/health");
  return r && r->status == 200 && r->body.find("\"true\"") != std::string::npos;
}

// "https" or "http": what the cluster in `dir` was created with (written then); a cluster
// made before TLS has data but no scheme file and stays on plain HTTP.
Result<std::string> ClusterScheme(const std::string& dir, const UpTls* tls) {
  std::ifstream in(dir + "/scheme");
  std::string scheme;
  in >> scheme;
  if (scheme.empty()) {
    scheme = tls != nullptr && !fs::exists(dir + "/" + Member(0)) ? "https" : "http";
    if (!WriteText(dir + "/scheme", scheme + "\n"))
      return IoError("cannot write " + dir + "/scheme");
  }
  if (scheme == "https" && tls == nullptr)
    return FailedPrecondition("the etcd cluster in " + dir +
                              " serves HTTPS with client certificates; start it without "
                              "--insecure");
  if (scheme != "https" && scheme != "http")
    return FailedPrecondition(dir + "/scheme: '" + scheme + "' is not http or https");
  return scheme;
}

// The members' TLS flags: HTTPS for clients and peers, each required to present a
// certificate signed by the cluster's CA.
std::vector<std::string> MemberTlsArgs(const UpTls& tls) {
  return {"--cert-file",
          tls.etcd_cert_file,
          "--key-file",
          tls.etcd_key_file,
          "--client-cert-auth",
          "--trusted-ca-file",
          tls.ca_file,
          "--peer-cert-file",
          tls.etcd_cert_file,
          "--peer-key-file",
          tls.etcd_key_file,
          "--peer-client-cert-auth",
          "--peer-trusted-ca-file",
          tls.ca_file};
}

// Member `i`'s command line: `client` and `peer` its URLs, `initial` the whole membership.
std::vector<std::string> MemberArgv(const std::string& dir, int i, const std::string& client,
                                    const std::string& peer, const std::string& initial,
                                    const UpTls* tls) {
  // Short heartbeats and elections: loopback, and a failover budget of seconds. Large txns:
  // a gang's bind is one txn of a few operations per rank. Old revisions compacted past the
  // last 100,000, so the database does not grow with every heartbeat's commit.
  std::vector<std::string> argv = {kEtcd,
                                   "--name",
                                   Member(i),
                                   "--data-dir",
                                   dir + "/" + Member(i),
                                   "--listen-client-urls",
                                   client,
                                   "--advertise-client-urls",
                                   client,
                                   "--listen-peer-urls",
                                   peer,
                                   "--initial-advertise-peer-urls",
                                   peer,
                                   "--initial-cluster",
                                   initial,
                                   "--initial-cluster-state",
                                   "new",
                                   "--initial-cluster-token",
                                   "tessera-up",
                                   "--heartbeat-interval",
                                   "50",
                                   "--election-timeout",
                                   "500",
                                   "--max-txn-ops",
                                   "100000",
                                   "--max-request-bytes",
                                   "33554432",
                                   "--quota-backend-bytes",
                                   "8589934592",
                                   "--auto-compaction-mode",
                                   "revision",
                                   "--auto-compaction-retention",
                                   "100000",
                                   "--logger",
                                   "zap",
                                   "--log-outputs",
                                   "stderr"};
  if (tls != nullptr) {
    const auto flags = MemberTlsArgs(*tls);
    argv.insert(argv.end(), flags.begin(), flags.end());
  }
  return argv;
}

}  // namespace

Result<int> PickFreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return IoError("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) return IoError("cannot bind 127.0.0.1:0");
  return static_cast<int>(ntohs(addr.sin_port));
}

Result<EtcdCluster> StartEtcdCluster(const std::string& state, double timeout_s,
                                     const UpTls* up_tls) {
  if (::access(kEtcd, X_OK) != 0)
    return FailedPrecondition(std::string(kEtcd) +
                              " not found: install etcd-server (scripts/install-deps.sh)");
  const std::string dir = state + "/etcd";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("cannot create " + dir + ": " + ec.message());
  auto ports = MemberPorts(dir);
  if (!ports) return std::unexpected(ports.error());
  auto scheme = ClusterScheme(dir, up_tls);
  if (!scheme) return std::unexpected(scheme.error());
  const bool https = *scheme == "https";
  std::optional<UpTls> tls;
  if (https) {
    tls = *up_tls;
    if (auto s = EnsureEtcdTls(state, *tls); !s) return std::unexpected(s.error());
  }
  const EtcdTls client_tls = https ? ControllerEtcdTls(*tls) : EtcdTls{};
  const std::string base = *scheme + "://127.0.0.1:";
  std::string initial, endpoints;
  for (int i = 0; i < kEtcdMembers; ++i) {
    initial += (i ? "," : "") + Member(i) + "=" + base +
               std::to_string((*ports)[static_cast<std::size_t>(i)].second);
    endpoints +=
        (i ? "," : "") + base + std::to_string((*ports)[static_cast<std::size_t>(i)].first);
  }
  for (int i = 0; i < kEtcdMembers; ++i) {
    const std::string pid_file = dir + "/" + Member(i) + ".pid";
    if (LivePid(pid_file, "etcd")) continue;
    const auto [client_port, peer_port] = (*ports)[static_cast<std::size_t>(i)];
    auto argv = MemberArgv(dir, i, base + std::to_string(client_port),
                           base + std::to_string(peer_port), initial, tls ? &*tls : nullptr);
    auto pid = SpawnDetached(argv, state + "/logs/etcd-" + Member(i) + ".log");
    if (!pid) return std::unexpected(pid.error());
    WriteText(pid_file, std::to_string(*pid) + "\n");
  }
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  while (true) {
    bool all = true;
    for (const auto& [client_port, peer_port] : *ports)
      all = all && MemberHealthy(base + std::to_string(client_port), client_tls);
    if (all) {
      EtcdCluster out{endpoints, {"--store", "etcd", "--etcd-endpoints", endpoints}};
      if (https) {
        out.tesserad_args.insert(out.tesserad_args.end(),
                                 {"--etcd-ca-file", client_tls.ca_file, "--etcd-cert-file",
                                  client_tls.cert_file, "--etcd-key-file", client_tls.key_file});
      }
      return out;
    }
    if (Clock::now() > deadline)
      return FailedPrecondition("etcd did not become healthy within the timeout; see " + state +
                                "/logs/etcd-m*.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int StopEtcdCluster(const std::string& state) {
  int stopped = 0;
  std::error_code ec;
  for (int i = 0; i < kEtcdMembers; ++i) {
    const std::string pid_file = state + "/etcd/" + Member(i) + ".pid";
    if (auto pid = LivePid(pid_file, "etcd")) {
      if (Terminate(*pid, "etcd", 10000)) ++stopped;
    }
    fs::remove(pid_file, ec);
  }
  return stopped;
}

Result<std::vector<std::string>> StartMoreControllers(std::vector<std::string> argv,
                                                      const std::string& state, int count,
                                                      double timeout_s) {
  std::error_code ec;
  fs::create_directories(state + "/controllers", ec);
  std::vector<std::string> urls;
  for (int i = 1; i < count; ++i) {
    auto port = PickFreePort();
    if (!port) return std::unexpected(port.error());
    const std::string endpoint = state + "/controllers/c" + std::to_string(i) + ".endpoint";
    fs::remove(endpoint, ec);
    for (std::size_t a = 0; a + 1 < argv.size(); ++a) {
      if (argv[a] == "--port") argv[a + 1] = std::to_string(*port);
      if (argv[a] == "--endpoint-file") argv[a + 1] = endpoint;
    }
    const std::string log = state + "/logs/tesserad-" + std::to_string(i) + ".log";
    auto pid = SpawnDetached(argv, log);
    if (!pid) return std::unexpected(pid.error());
    WriteText(state + "/controllers/c" + std::to_string(i) + ".pid", std::to_string(*pid) + "\n");
    const auto deadline =
        Clock::now() + std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
    std::string url;
    while (url.empty()) {
      std::ifstream in(endpoint);
      std::getline(in, url);
      if (!url.empty()) break;
      if (!ProcessIs(*pid, "tesserad"))
        return FailedPrecondition("controller " + std::to_string(i) +
                                  " exited during start-up; see " + log);
      if (Clock::now() > deadline)
        return FailedPrecondition("controller " + std::to_string(i) + " did not start; see " + log);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    urls.push_back(url);
  }
  return urls;
}

int StopMoreControllers(const std::string& state) {
  int stopped = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(state + "/controllers", ec)) {
    if (entry.path().extension() != ".pid") continue;
    if (auto pid = LivePid(entry.path().string(), "tesserad")) {
      if (Terminate(*pid, "tesserad", 10000)) ++stopped;
    }
    fs::remove(entry.path(), ec);
  }
  return stopped;
}

}  // namespace tessera::cli
