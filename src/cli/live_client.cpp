#include "cli/live_client.h"

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "cli/context_file.h"
#include "spec/controller_urls.h"
#include "spec/document.h"
#include "spec/job_spec.h"
#include "spec/protocol.h"

namespace tessera::cli {

using Json = nlohmann::json;

void AddClusterFlags(CLI::App* cmd, ClusterFlags* flags) {
  cmd->add_option("--state", flags->state,
                  "State directory of a cluster started by `tessera up` (default: $TESSERA_STATE)");
  cmd->add_option("--server", flags->server,
                  "Controller URL, or several comma-separated: the CLI follows the leader "
                  "(default: $TESSERA_SERVER)");
  cmd->add_option("--token", flags->token,
                  "Bearer token (default: $TESSERA_TOKEN, else the context file's user)");
  cmd->add_option("--ca-file", flags->ca_file, "CA certificate of an https controller");
  cmd->add_option("--context-file", flags->context_file,
                  "Context file, kubeconfig-like (default: $TESSERA_CONFIG, else "
                  "DIR/tessera.config of --state)");
}

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// The credentials ResolveServer found, by URL, for the ApiClients of this process.
std::mutex access_mu;
std::map<std::string, ClusterAccess>& AccessByUrl() {
  static std::map<std::string, ClusterAccess> m;
  return m;
}

// The URL from --server, TESSERA_SERVER or the state's endpoint file; empty when none is
// given; an error when a state directory has no running cluster.
Result<std::string> ServerOf(const ClusterFlags& flags, const std::string& state);

}  // namespace

Result<std::string> ResolveServer(const ClusterFlags& flags) {
  std::string state = flags.state.empty() ? Env("TESSERA_STATE") : flags.state;
  std::string context_file =
      flags.context_file.empty() ? Env("TESSERA_CONFIG") : flags.context_file;
  if (context_file.empty() && !state.empty() && std::ifstream(state + "/tessera.config").good()) {
    context_file = state + "/tessera.config";
  }
  ClusterAccess access;
  if (!context_file.empty()) {
    auto ctx = ReadContextFile(context_file);
    if (!ctx) return std::unexpected(ctx.error());
    access = *ctx;
  }
  const bool explicit_server = !flags.server.empty() || !Env("TESSERA_SERVER").empty();
  if (explicit_server || access.server.empty() || !state.empty()) {
    auto url = ServerOf(flags, state);
    if (!url) return std::unexpected(url.error());
    access.server = *url;
  }
  if (!flags.token.empty()) {
    access.token = flags.token;
  } else if (const std::string env = Env("TESSERA_TOKEN"); !env.empty()) {
    access.token = env;
  }
  if (!flags.ca_file.empty()) access.ca_file = flags.ca_file;
  RememberAccess(access.server, access.token, access.ca_file);
  return access.server;
}

void RememberAccess(const std::string& url, const std::string& token, const std::string& ca_file) {
  std::lock_guard lock(access_mu);
  AccessByUrl()[url] = ClusterAccess{url, token, ca_file};
}

namespace {

Result<std::string> ServerOf(const ClusterFlags& flags, const std::string& state_dir) {
  if (!flags.server.empty()) return flags.server;
  std::string state = flags.state;
  if (state.empty()) {
    if (const char* env = std::getenv("TESSERA_SERVER"); env != nullptr && *env != '\0')
      return std::string(env);
    state = state_dir;
  }
  if (state.empty()) {
    return InvalidArgument(
        "no cluster given: pass --state DIR (of `tessera up`) or --server URL, "
        "or set TESSERA_STATE or TESSERA_SERVER");
  }
  std::ifstream in(state + "/endpoint");
  std::string url;
  if (!in || !std::getline(in, url) || url.empty()) {
    return FailedPrecondition("no running cluster in " + state +
                              " (no endpoint file); start one "
                              "with `tessera up --state " +
                              state + "`");
  }
  return url;
}

}  // namespace

ApiClient::ApiClient(const std::string& url, int read_timeout_s) : read_timeout_s_(read_timeout_s) {
  {
    std::lock_guard lock(access_mu);
    if (auto it = AccessByUrl().find(url); it != AccessByUrl().end()) {
      token_ = it->second.token;
      ca_file_ = it->second.ca_file;
    }
  }
  if (token_.empty()) token_ = Env("TESSERA_TOKEN");
  if (auto list = ControllerUrls::Parse(url); list && list->size() > 1) {
    urls_ = list->all();
  } else {
    urls_ = {url};
  }
  Connect(urls_.front());
}

void ApiClient::Connect(const std::string& url) {
  url_ = url;
  client_ = std::make_unique<httplib::Client>(url);
  if (!token_.empty()) client_->set_bearer_token_auth(token_);
  if (!ca_file_.empty()) {
    client_->set_ca_cert_path(ca_file_);
    client_->enable_server_certificate_verification(true);
  }
  client_->set_connection_timeout(3, 0);
  client_->set_read_timeout(read_timeout_s_, 0);
  client_->set_write_timeout(30, 0);
  client_->set_keep_alive(true);
  client_->set_tcp_nodelay(true);  // no Nagle delay between headers and body
}

ApiClient::~ApiClient() = default;

namespace {

Result<HttpResponse> Convert(const httplib::Result& r, const std::string& url) {
  if (!r) {
    return IoError("cannot reach the controller at " + url + " (" + httplib::to_string(r.error()) +
                   "); is the cluster up?");
  }
  HttpResponse out;
  out.status = r->status;
  out.body = r->body;
  for (const auto& [k, v] : r->headers) out.headers[k] = v;
  return out;
}

}  // namespace

template <typename Request>
Result<HttpResponse> ApiClient::Send(bool resend_unanswered, const Request& request) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (true) {
    httplib::Result r = request(*client_);
    if (urls_.size() == 1) return Convert(r, url_);
    std::string go_to;
    if (!r) {
      const bool unsent =
          r.error() == httplib::Error::Connection || r.error() == httplib::Error::ConnectionTimeout;
      if (!unsent && !resend_unanswered) return Convert(r, url_);
    } else if (auto leader = StandbyLeader(r->status, r->body)) {
      if (*leader != url_) go_to = *leader;
    } else {
      return Convert(r, url_);
    }
    if (std::chrono::steady_clock::now() > deadline) return Convert(r, url_);
    if (go_to.empty()) {
      // The next one; a short pause once every controller was tried (an election under way).
      go_to = urls_[next_ % urls_.size()];
      if (++next_ % urls_.size() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    Connect(go_to);
  }
}

Result<HttpResponse> ApiClient::Get(const std::string& path) {
  return Send(true, [&](httplib::Client& c) { return c.Get(path.c_str()); });
}
Result<HttpResponse> ApiClient::Post(const std::string& path, const std::string& body,
                                     const std::string& content_type) {
  return Send(false,
              [&](httplib::Client& c) { return c.Post(path.c_str(), body, content_type.c_str()); });
}
Result<HttpResponse> ApiClient::Delete(const std::string& path) {
  return Send(false, [&](httplib::Client& c) { return c.Delete(path.c_str()); });
}

Result<Json> JsonOf(const Result<HttpResponse>& response) {
  if (!response) return std::unexpected(response.error());
  auto doc = ParseJson(response->body);
  if (response->status >= 200 && response->status < 300) {
    if (!doc) return Internal("the controller sent a body that is not JSON");
    return *doc;
  }
  std::string message = "HTTP " + std::to_string(response->status);
  Error::Code code = Error::Code::kInternal;
  if (response->status == 400) code = Error::Code::kInvalidArgument;
  if (response->status == 404) code = Error::Code::kNotFound;
  if (response->status == 409) code = Error::Code::kAlreadyExists;
  if (doc && doc->is_object() && doc->contains("error") && (*doc)["error"].is_object()) {
    const Json& e = (*doc)["error"];
    if (e.contains("details") && e["details"].is_array() && !e["details"].empty()) {
      message.clear();
      for (const auto& d : e["details"]) {
        if (!message.empty()) message += "\n  ";
        const std::string field = d.value("field", "");
        message += (field.empty() ? "" : field + ": ") + d.value("reason", "");
      }
    } else {
      message = e.value("message", message);
    }
  }
  return std::unexpected(Error{code, message});
}

void PrintError(const Error& e) { std::fprintf(stderr, "error: %s\n", e.message.c_str()); }

std::string PathOf(const std::string& queue, const std::string& name) {
  // Queue and job names are [a-z0-9-] joined by '/': nothing to escape.
  return queue + "/" + name;
}

Result<std::string> ResolveJobQueue(ApiClient& api, const std::string& name,
                                    const std::string& queue) {
  if (!ValidJobName(name)) return InvalidArgument("job name " + name + " is not a valid name");
  if (!queue.empty()) {
    if (!ValidQueuePath(queue))
      return InvalidArgument("--queue " + queue + " is not a valid queue path");
    return queue;
  }
  auto list = JsonOf(api.Get("/v1/jobs?name=" + name));
  if (!list) return std::unexpected(list.error());
  std::vector<std::string> queues;
  for (const auto& j : (*list)["jobs"]) queues.push_back(j.value("queue", ""));
  if (queues.empty()) return NotFound("job " + name + " not found");
  if (queues.size() > 1) {
    std::string all;
    for (const auto& q : queues) all += (all.empty() ? "" : ", ") + q;
    return InvalidArgument("job " + name + " exists in several queues (" + all + "); pass --queue");
  }
  return queues[0];
}

void AddOutputFlag(CLI::App* cmd, std::string* output) {
  cmd->add_option("-o,--output", *output, "Output format: table, json or yaml")
      ->capture_default_str();
}

Result<OutputFormat> ParseOutput(const std::string& output) {
  if (output.empty() || output == "table" || output == "wide") return OutputFormat::kTable;
  if (output == "json") return OutputFormat::kJson;
  if (output == "yaml") return OutputFormat::kYaml;
  return InvalidArgument("-o " + output + ": expected table, json or yaml");
}

void PrintStructured(const Json& value, OutputFormat format) {
  if (format == OutputFormat::kYaml) {
    std::cout << ToYaml(value);
  } else {
    std::cout << DumpJson(value, 2) << "\n";
  }
  std::cout.flush();
}

void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows, bool with_header) {
  std::vector<std::size_t> width(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  };
  measure(header);
  for (const auto& r : rows) measure(r);
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 3, ' ');
    }
    std::cout << line << "\n";
  };
  if (with_header) print(header);
  for (const auto& r : rows) print(r);
  std::cout.flush();
}

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Age(std::int64_t ms) {
  if (ms <= 0) return "-";
  const std::int64_t s = std::max<std::int64_t>(0, (NowMs() - ms) / 1000);
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string Clock(std::int64_t ms) {
  if (ms <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

int RunOrReport(const std::function<Status()>& fn) {
  Status s;
  try {
    s = fn();
  } catch (const std::exception& e) {  // e.g. an answer of an unexpected shape
    s = Internal(std::string("unexpected: ") + e.what());
  }
  if (s) return 0;
  PrintError(s.error());
  return 1;
}

}  // namespace tessera::cli
