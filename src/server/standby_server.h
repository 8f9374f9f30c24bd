// What a standby controller (tesserad --store etcd, not the leader) serves on its port until it
// leads: GET /v1/healthz 503 {"ok": false, "role": "standby", "leader": URL|null, "storeError"
// when etcd cannot be reached}, GET /v1/controllers (every controller and which leads), and to
// every other request a 503 whose error names the leader (also in the X-Tessera-Leader header),
// so that agents and the CLI, given several controller URLs, go to it.
//
// It is served by the controller's own front end (http_frontend.h), with TLS when the leader
// has it: a standby speaks HTTPS like the leader it may become, with the same deadlines and
// connection cap, so that clients and agents keep one scheme and one CA across a failover.
//
// Thread-safety: SetLeader and Stop may be called from any thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace tessera {

class RoutedServer;
class HttpFrontend;
class TlsContext;

class StandbyServer {
 public:
  // `controllers` answers GET /v1/controllers (a JSON array, or an error). With `tls`
  // (outliving the server) it serves HTTPS only.
  StandbyServer(std::function<Result<nlohmann::json>()> controllers, const TlsContext* tls);
  ~StandbyServer();

  // The leader's URL ("" when there is none) and why etcd fails ("" when it does not).
  void SetLeader(const std::string& url, const std::string& problem);
  Result<int> Bind(const std::string& host, int port);
  void Serve();
  void Stop();
  // After Serve() returned: closes every connection still open (a client kept alive on the
  // standby reconnects, to the new leader).
  void Close();

 private:
  std::function<Result<nlohmann::json>()> controllers_;
  const TlsContext* tls_;
  std::unique_ptr<RoutedServer> http_;
  std::unique_ptr<HttpFrontend> front_;
  std::mutex mu_;
  std::string leader_;   // under mu_
  std::string problem_;  // under mu_
};

// The 503 body a standby answers: {"error": {code, message, details, leader}}.
nlohmann::json StandbyError(const std::string& leader, const std::string& problem);

}  // namespace tessera
