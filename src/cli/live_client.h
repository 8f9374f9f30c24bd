// What the live-cluster subcommands share: finding the cluster (--server URL, or --state DIR
// whose endpoint file tesserad wrote; TESSERA_SERVER and TESSERA_STATE as defaults) and how to
// prove who we are to it (--token, $TESSERA_TOKEN, or the context file: --context-file,
// $TESSERA_CONFIG, or DIR/tessera.config of --state), a small HTTP client for the
// controller's API, and output as tables, JSON or YAML.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace httplib {
class Client;
}

namespace tessera::cli {

struct ClusterFlags {
  std::string state;         // --state DIR
  std::string server;        // --server URL
  std::string token;         // --token
  std::string ca_file;       // --ca-file
  std::string context_file;  // --context-file
};

// Adds --state, --server, --token, --ca-file and --context-file to `cmd`.
void AddClusterFlags(CLI::App* cmd, ClusterFlags* flags);
// The controller URL: --server, else TESSERA_SERVER, else the endpoint file of --state or
// TESSERA_STATE, else the context file's server. Errors say how to point at a cluster. The
// token and CA found on the way are remembered for that URL: every ApiClient made for it
// presents them (so a command needs nothing beyond ResolveServer and ApiClient).
Result<std::string> ResolveServer(const ClusterFlags& flags);
// Remembers `token` and `ca_file` for the ApiClients of `url` (as ResolveServer does).
void RememberAccess(const std::string& url, const std::string& token, const std::string& ca_file);

struct HttpResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
};

// `url` may list several controllers ("URL,URL": an etcd cluster's): a request that finds one
// down, or a standby (whose 503 names the leader), goes to the leader or the next one, for up
// to 15 s (a failover). A request sent and unanswered is not sent again, except a GET.
class ApiClient {
 public:
  // Presents the token (and checks TLS against the CA) ResolveServer found for `url`, else
  // $TESSERA_TOKEN.
  explicit ApiClient(const std::string& url, int read_timeout_s = 30);
  ~ApiClient();
  Result<HttpResponse> Get(const std::string& path);
  Result<HttpResponse> Post(const std::string& path, const std::string& body,
                            const std::string& content_type = "application/yaml");
  Result<HttpResponse> Delete(const std::string& path);
  const std::string& url() const { return url_; }
  const std::string& ca_file() const { return ca_file_; }  // of the controller (and its agents)

 private:
  template <typename Request>
  Result<HttpResponse> Send(bool resend_unanswered, const Request& request);
  void Connect(const std::string& url);

  std::string url_;  // the one talked to
  std::vector<std::string> urls_;
  std::size_t next_ = 0;  // into urls_: tried after url_ fails
  int read_timeout_s_;
  std::string token_;    // presented to every controller of urls_
  std::string ca_file_;  // their TLS certificates' CA; empty: the system's
  std::unique_ptr<httplib::Client> client_;
};

// The JSON body of a 2xx response, or an error built from the API's error body.
Result<nlohmann::json> JsonOf(const Result<HttpResponse>& response);
// Prints an error ("error: ..." plus one line per field detail) to stderr.
void PrintError(const Error& e);

// Finds the queue of job `name`: `queue` when given, else the only queue that has it.
Result<std::string> ResolveJobQueue(ApiClient& api, const std::string& name,
                                    const std::string& queue);
// Percent-encodes each segment of a queue path for a URL.
std::string PathOf(const std::string& queue, const std::string& name);

enum class OutputFormat { kTable, kJson, kYaml };
void AddOutputFlag(CLI::App* cmd, std::string* output);
Result<OutputFormat> ParseOutput(const std::string& output);
void PrintStructured(const nlohmann::json& value, OutputFormat format);
// Columns as wide as their widest cell; `with_header` false leaves the header line out (a
// watch prints its later rows under the first one's header). Flushes.
void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows, bool with_header = true);

// "42s", "3m", "5h", "2d" since `ms` (epoch milliseconds); "-" for 0.
std::string Age(std::int64_t ms);
// Local time "2026-11-29 20:10:01" of epoch milliseconds; "-" for 0.
std::string Clock(std::int64_t ms);
std::int64_t NowMs();
// "8", "0.5".
std::string Number(double v);

// Runs `fn`, turning an error into a message and exit code 1.
int RunOrReport(const std::function<Status()>& fn);

}  // namespace tessera::cli
