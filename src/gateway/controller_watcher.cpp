#include "gateway/controller_watcher.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "spec/protocol.h"

namespace tessera::gateway {

namespace {

using Json = nlohmann::json;

template <typename T>
T Field(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const Json::exception&) {
    return fallback;
  }
}

}  // namespace

std::optional<ServiceConfig> ServiceFromJobDetail(
    const Json& job, const std::map<std::string, std::string>& node_addresses,
    const DiscoveryDefaults& defaults) {
  if (Field<std::string>(job, "kind", "") != "InferenceService") return std::nullopt;
  if (Field<std::int64_t>(job, "finishTimeMs", 0) != 0) return std::nullopt;
  ServiceConfig c;
  const std::string name = Field<std::string>(job, "name", "");
  c.name = Field<std::string>(job, "queue", "default") + "/" + name;
  c.models = {name, c.name};
  c.policy = defaults.policy;
  const Json spec =
      job.contains("spec") && job["spec"].contains("spec") ? job["spec"]["spec"] : Json::object();
  if (auto r = spec.find("routing"); r != spec.end() && r->is_object()) {
    c.policy = Field<std::string>(*r, "policy", c.policy);
    c.block_tokens = Field<int>(*r, "blockTokens", c.block_tokens);
  }
  if (auto s = spec.find("slo"); s != spec.end() && s->is_object()) {
    c.slo_ttft_ms = Field<double>(*s, "ttftMs", Field<double>(*s, "latencyMs", 0));
    c.slo_tbt_ms = Field<double>(*s, "tbtMs", 0);
  }
  if (auto tasks = job.find("taskList"); tasks != job.end() && tasks->is_array()) {
    for (const Json& t : *tasks) {
      if (Field<std::string>(t, "state", "") != "Running") continue;
      // A replica the autoscaler is removing takes no new requests; it finishes its own.
      if (Field<bool>(t, "draining", false)) continue;
      std::string address = Field<std::string>(t, "masterAddr", "127.0.0.1");
      if (auto a = node_addresses.find(Field<std::string>(t, "node", ""));
          a != node_addresses.end() && !a->second.empty()) {
        address = a->second;
      }
      const int port =
          InferenceReplicaPort(Field<int>(t, "masterPort", 0), Field<int>(t, "rank", 0));
      c.backends.push_back("http://" + address + ":" + std::to_string(port));
    }
  }
  return c;
}

ControllerWatcher::ControllerWatcher(ControllerUrls controller_urls, ServiceRegistry& registry,
                                     DiscoveryDefaults defaults, int wait_seconds,
                                     std::string bearer_token, std::string ca_file)
    : urls_(std::move(controller_urls)),
      token_(std::move(bearer_token)),
      ca_file_(std::move(ca_file)),
      registry_(registry),
      defaults_(std::move(defaults)),
      wait_seconds_(wait_seconds) {
  thread_ = std::thread([this] { Loop(); });
}

ControllerWatcher::~ControllerWatcher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void ControllerWatcher::Configure(httplib::Client& client) const {
  if (!token_.empty()) client.set_bearer_token_auth(token_);
  if (!ca_file_.empty()) {
    client.set_ca_cert_path(ca_file_);
    client.enable_server_certificate_verification(true);
  }
}

std::string ControllerWatcher::current_url() const {
  std::lock_guard lock(urls_mu_);
  return urls_.current();
}

Result<Json> ControllerWatcher::GetFromLeader(const std::string& path, int read_timeout_s) {
  std::string problem = "no controller URL";
  std::size_t budget = 0;  // every URL once, and a leader a standby named
  {
    std::lock_guard lock(urls_mu_);
    budget = urls_.size() + 1;
  }
  for (std::size_t tries = 0; tries < budget; ++tries) {
    const std::string url = current_url();
    httplib::Client client(url);
    Configure(client);
    client.set_connection_timeout(2, 0);
    client.set_read_timeout(read_timeout_s, 0);
    auto res = client.Get(path);
    if (!res) {
      problem = "GET " + url + path + ": " + httplib::to_string(res.error());
      std::lock_guard lock(urls_mu_);
      urls_.Next();
      continue;
    }
    if (auto leader = StandbyLeader(res->status, res->body)) {
      problem = "GET " + url + path + ": a standby" +
                (leader->empty() ? std::string(" (no leader yet)") : ", the leader is " + *leader);
      std::lock_guard lock(urls_mu_);
      leader->empty() ? urls_.Next() : urls_.Follow(*leader);
      continue;
    }
    if (res->status != 200) return IoError("GET " + path + ": HTTP " + std::to_string(res->status));
    Json doc = Json::parse(res->body, nullptr, false);
    if (doc.is_discarded()) return IoError("GET " + path + ": not JSON");
    return doc;
  }
  return IoError(problem);
}

Status ControllerWatcher::Refresh() {
  auto nodes = GetFromLeader("/v1/nodes", 10);
  if (!nodes) return std::unexpected(nodes.error());
  std::map<std::string, std::string> addresses;
  for (const Json& n : Field<Json>(*nodes, "nodes", Json::array())) {
    addresses[Field<std::string>(n, "name", "")] = Field<std::string>(n, "address", "");
  }
  auto jobs = GetFromLeader("/v1/jobs", 10);
  if (!jobs) return std::unexpected(jobs.error());
  std::vector<ServiceConfig> services;
  for (const Json& j : Field<Json>(*jobs, "jobs", Json::array())) {
    if (Field<std::string>(j, "kind", "") != "InferenceService") continue;
    if (Field<std::int64_t>(j, "finishTimeMs", 0) != 0) continue;
    auto detail = GetFromLeader("/v1/jobs/" + Field<std::string>(j, "queue", "default") + "/" +
                                    Field<std::string>(j, "name", ""),
                                10);
    if (!detail) return std::unexpected(detail.error());
    if (auto c = ServiceFromJobDetail(*detail, addresses, defaults_)) {
      services.push_back(std::move(*c));
    }
  }
  for (const std::string& problem : registry_.Reconcile(services)) {
    spdlog::warn("service {}", problem);
  }
  return {};
}

void ControllerWatcher::Loop() {
  std::int64_t since = 0;
  bool first = true;
  while (!stop_) {
    if (auto s = Refresh(); !s) spdlog::warn("discovery: {}", s.error().message);
    // The first call only learns where the log ends; later ones wait for what comes next.
    const int wait = first ? 0 : wait_seconds_;
    auto events = GetFromLeader("/v1/events?since=" + std::to_string(since) +
                                    "&wait=" + std::to_string(wait) + "&limit=1000",
                                wait_seconds_ + 5);
    if (!events) {
      for (int i = 0; i < 20 && !stop_; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    since = first ? Field<std::int64_t>(*events, "lastSeq", 0)
                  : Field<std::int64_t>(*events, "next", since);
    first = false;
  }
}

}  // namespace tessera::gateway
