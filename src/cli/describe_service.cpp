#include "cli/describe_service.h"

#include <httplib.h>

#include <iostream>
#include <optional>
#include <string>

#include "cli/live_client.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;

std::optional<std::string> GetBody(const std::string& base, const std::string& path,
                                   std::string* error) {
  httplib::Client c(base);
  c.set_connection_timeout(1, 0);
  c.set_read_timeout(1, 0);
  auto r = c.Get(path);
  if (!r) {
    *error = "unreachable (" + httplib::to_string(r.error()) + ")";
    return std::nullopt;
  }
  if (r->status != 200) {
    *error = "HTTP " + std::to_string(r->status);
    return std::nullopt;
  }
  return r->body;
}

// The gateway's replicas of `service` (queue/name) by URL; nullopt when it cannot say.
std::optional<std::map<std::string, Json>> GatewayReplicas(const std::string& gateway,
                                                           const std::string& service,
                                                           std::string* error) {
  auto body = GetBody(gateway, "/v1/services", error);
  if (!body) return std::nullopt;
  const Json doc = Json::parse(*body, nullptr, false);
  if (!doc.is_object() || !doc.contains("services") || !doc["services"].is_array()) {
    *error = "its /v1/services is not a services list";
    return std::nullopt;
  }
  std::map<std::string, Json> out;
  for (const auto& s : doc["services"]) {
    if (s.value("name", "") != service || !s.contains("replicas")) continue;
    for (const auto& r : s["replicas"]) out[r.value("url", "")] = r;
  }
  return out;
}

}  // namespace

Json ServingView(const Json& job) {
  Json view = {{"replicas", Json::array()}};
  const std::string service = job.value("queue", "") + "/" + job.value("name", "");
  std::optional<std::map<std::string, Json>> from_gateway;
  if (job.contains("gateway")) {
    const std::string gateway = job.value("gateway", "");
    view["gateway"] = gateway;
    std::string error;
    from_gateway = GatewayReplicas(gateway, service, &error);
    if (!from_gateway) view["gatewayError"] = error;
  }
  view["readinessFrom"] = from_gateway ? "gateway" : "health";
  for (const auto& t : job["taskList"]) {
    if (t.value("state", "") != "Running" || !t.contains("endpoint")) continue;
    const std::string endpoint = t.value("endpoint", "");
    Json r = {{"rank", t.value("rank", 0)},
              {"endpoint", endpoint},
              {"state", t.value("draining", false) ? "draining" : "running"}};
    if (from_gateway) {
      auto it = from_gateway->find(endpoint);
      r["ready"] = it != from_gateway->end() && it->second.value("ready", false);
      if (it == from_gateway->end()) {
        r["lastError"] = "not in the gateway's set (yet)";
      } else {
        r["inFlight"] = it->second.value("inFlight", 0);
        if (it->second.contains("lastError")) r["lastError"] = it->second["lastError"];
      }
    } else {
      std::string error;
      r["ready"] = GetBody(endpoint, "/health", &error).has_value();
      if (!error.empty()) r["lastError"] = "/health: " + error;
    }
    view["replicas"].push_back(std::move(r));
  }
  return view;
}

void PrintServingView(const Json& view) {
  std::cout << "\nServing:\n";
  if (view.contains("gateway")) {
    std::cout << "  Gateway:  " << view.value("gateway", "")
              << (view.contains("gatewayError")
                      ? " (" + view.value("gatewayError", "") + "; readiness from /health)"
                      : "")
              << "\n";
  } else {
    std::cout << "  Gateway:  none known to the controller (tesserad --gateway URL); readiness "
                 "from each replica's /health\n";
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : view["replicas"]) {
    rows.push_back({"  " + std::to_string(r.value("rank", 0)), r.value("endpoint", ""),
                    r.value("ready", false) ? "yes" : "no", r.value("state", ""),
                    r.contains("inFlight") ? std::to_string(r.value("inFlight", 0)) : "-",
                    r.value("lastError", "")});
  }
  if (rows.empty()) {
    std::cout << "  (no replica running)\n";
  } else {
    PrintTable({"  RANK", "ENDPOINT", "READY", "STATE", "IN FLIGHT", "NOTE"}, rows);
  }
}

}  // namespace tessera::cli
