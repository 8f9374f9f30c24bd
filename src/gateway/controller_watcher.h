// Discovery from the controller: the InferenceServices and their replicas' endpoints. A thread
// long-polls the controller's event log (GET /v1/events?since=N&wait=S); after any event, and
// at least every wait period, it re-reads the services (GET /v1/jobs, /v1/jobs/{queue}/{name})
// and the nodes' addresses (GET /v1/nodes) and hands the whole set to the registry. Requests
// never wait on the controller. A replica's endpoint is http://<its node's address>:<master
// port + rank> (spec/protocol.h InferenceReplicaPort, the TESSERA_PORT its agent sets). A
// replica the controller drains ("draining": true, scaling down) leaves the set.
//
// Several controller URLs (the controllers of an etcd cluster, `--server URL,URL`) are
// followed as the agents and the CLI follow them (spec/controller_urls.h): a refused
// connection moves to the next URL, a standby's 503 to the leader it names.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gateway/service_registry.h"
#include "spec/controller_urls.h"

namespace httplib {
class Client;
}

namespace tessera::gateway {

struct DiscoveryDefaults {
  std::string policy = "least-request";  // for services whose spec names none
};

// The service one job's detail (GET /v1/jobs/{queue}/{name}) describes, with its Running
// replicas' URLs; nullopt for other kinds and finished jobs. `node_addresses`: node -> address.
std::optional<ServiceConfig> ServiceFromJobDetail(
    const nlohmann::json& job, const std::map<std::string, std::string>& node_addresses,
    const DiscoveryDefaults& defaults);

class ControllerWatcher {
 public:
  // `controller_urls`: one URL or several, comma-separated (ControllerUrls::Parse, checked by
  // the caller). `bearer_token`: the gateway's service identity (group tessera:gateway) on a
  // controller with authentication; empty for an --insecure one.
  ControllerWatcher(ControllerUrls controller_urls, ServiceRegistry& registry,
                    DiscoveryDefaults defaults, int wait_seconds = 10,
                    std::string bearer_token = "", std::string ca_file = "");
  ~ControllerWatcher();
  ControllerWatcher(const ControllerWatcher&) = delete;
  ControllerWatcher& operator=(const ControllerWatcher&) = delete;

  // Reads the services once, now (also what the thread does after each event).
  Status Refresh();
  // The controller last answered by (the leader, once found).
  std::string current_url() const;

 private:
  void Loop();
  // GET `path` from the leader: each URL at most once (and the leader a standby names).
  Result<nlohmann::json> GetFromLeader(const std::string& path, int read_timeout_s);

  mutable std::mutex urls_mu_;
  ControllerUrls urls_;  // under urls_mu_
  std::string token_;
  std::string ca_file_;  // the CA of an https controller
  ServiceRegistry& registry_;
  // Sets the token and the CA on a client for the controller.
  void Configure(httplib::Client& client) const;
  DiscoveryDefaults defaults_;
  int wait_seconds_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tessera::gateway
