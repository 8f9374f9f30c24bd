// What a standby controller (tesserad --store etcd, not the leader) serves on its port until it
// leads: GET /v1/healthz 503 {"ok": false, "role": "standby", "leader": URL|null, "storeError"
// when etcd cannot be reached}, GET /v1/controllers (every controller and which leads), and to
// every other request a 503 whose error names the leader (also in the X-Tessera-Leader header),
// so that agents and the CLI, given several controller URLs, go to it.
//
// Thread-safety: Set* and Stop may be called from any thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace httplib {
class Server;
}

namespace tessera {

class StandbyServer {
 public:
  // `controllers` answers GET /v1/controllers (a JSON array, or an error).
  explicit StandbyServer(std::function<Result<nlohmann::json>()> controllers);
  ~StandbyServer();

  // The leader's URL ("" when there is none) and why etcd fails ("" when it does not).
  void SetLeader(const std::string& url, const std::string& problem);
  Result<int> Bind(const std::string& host, int port);
  void Serve();
  void Stop();

 private:
  std::function<Result<nlohmann::json>()> controllers_;
  std::unique_ptr<httplib::Server> http_;
  std::mutex mu_;
  std::string leader_;   // under mu_
  std::string problem_;  // under mu_
};

// The 503 body a standby answers: {"error": {code, message, details, leader}}.
nlohmann::json StandbyError(const std::string& leader, const std::string& problem);

}  // namespace tessera
