// Real tessera-engine-sim and tessera-gateway processes on 127.0.0.1 for the serving tests:
// each started with --port 0 and a port file, stopped (and never left behind) by the harness.
#pragma once

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/process_harness.h"

namespace tessera::testing {

struct ServingProcess {
  pid_t pid = 0;
  int port = 0;
  std::string url;
  std::string log;
};

// A port free on 127.0.0.1 now (bound and released): for a process started later on it.
inline int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

inline bool GetHealth(const std::string& url) {
  httplib::Client c(url);
  c.set_connection_timeout(1, 0);
  auto r = c.Get("/health");
  return r && r->status == 200;
}

class ServingHarness {
 public:
  ServingHarness() : dir_("tessera-serving") {}
  ~ServingHarness() {
    for (auto& p : processes_) Stop(p.pid, SIGKILL, 2000);
  }

  ServingProcess StartEngine(const std::vector<std::string>& args = {}) {
    std::vector<std::string> argv = {BinDir() + "/tessera-engine-sim", "--model", "sim-model"};
    argv.insert(argv.end(), args.begin(), args.end());
    return Start(argv);
  }
  ServingProcess StartGateway(const std::vector<std::string>& backends,
                              const std::vector<std::string>& args = {}) {
    std::vector<std::string> argv = {BinDir() + "/tessera-gateway"};
    for (const auto& b : backends) argv.insert(argv.end(), {"--backend", b});
    argv.insert(argv.end(), args.begin(), args.end());
    if (std::find(args.begin(), args.end(), "--health-interval-ms") == args.end()) {
      argv.insert(argv.end(), {"--health-interval-ms", "200"});
    }
    return Start(argv);
  }
  // A gateway on a port chosen beforehand (FreeLoopbackPort), for a controller started with
  // --gateway before it.
  ServingProcess StartGatewayAt(int port, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {BinDir() + "/tessera-gateway", "--health-interval-ms", "200"};
    argv.insert(argv.end(), args.begin(), args.end());
    ServingProcess p;
    p.log = dir() + "/process-" + std::to_string(processes_.size()) + ".log";
    argv.insert(argv.end(), {"--port", std::to_string(port)});
    p.pid = Spawn(argv, p.log);
    p.port = port;
    p.url = "http://127.0.0.1:" + std::to_string(port);
    processes_.push_back(p);
    WaitFor([&] { return GetHealth(p.url) || !ProcessAlive(p.pid); }, 20);
    return p;
  }
  void Kill(ServingProcess& p) {
    Stop(p.pid, SIGKILL, 2000);
    p.pid = 0;
  }
  std::string Logs() const {
    std::string all;
    for (const auto& p : processes_) all += "--- " + p.log + "\n" + ReadFile(p.log);
    return all;
  }
  const std::string& dir() const { return dir_.path(); }

 private:
  ServingProcess Start(std::vector<std::string> argv) {
    ServingProcess p;
    const std::string n = std::to_string(processes_.size());
    const std::string port_file = dir() + "/port-" + n;
    p.log = dir() + "/process-" + n + ".log";
    argv.insert(argv.end(), {"--port", "0", "--port-file", port_file});
    p.pid = Spawn(argv, p.log);
    WaitFor([&] { return !ReadFile(port_file).empty() || !ProcessAlive(p.pid); }, 20);
    const std::string text = ReadFile(port_file);
    p.port = text.empty() ? 0 : std::stoi(text);
    p.url = "http://127.0.0.1:" + std::to_string(p.port);
    processes_.push_back(p);
    return p;
  }

  TempDir dir_;
  std::vector<ServingProcess> processes_;
};

struct Reply {
  int status = 0;
  std::string body;
  nlohmann::json json;
};

inline Reply PostJson(const std::string& url, const std::string& path, const std::string& body,
                      int timeout_s = 30) {
  httplib::Client c(url);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(timeout_s, 0);
  Reply out;
  auto r = c.Post(path, body, "application/json");
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.json = nlohmann::json::parse(r->body, nullptr, false);
  return out;
}

inline Reply GetPath(const std::string& url, const std::string& path) {
  httplib::Client c(url);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(10, 0);
  Reply out;
  auto r = c.Get(path);
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.json = nlohmann::json::parse(r->body, nullptr, false);
  return out;
}

// The `data:` payloads of an SSE body, in order.
inline std::vector<std::string> SseData(const std::string& body) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < body.size()) {
    std::size_t end = body.find('\n', at);
    if (end == std::string::npos) end = body.size();
    std::string_view line(body.data() + at, end - at);
    if (line.starts_with("data: ")) out.emplace_back(line.substr(6));
    at = end + 1;
  }
  return out;
}

// A prompt of `n` words ("p0 p1 ...", offset by `first`).
inline std::string Words(int n, int first = 0) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " p" : "p") + std::to_string(first + i);
  return s;
}

inline std::string CompletionBody(const std::string& prompt, int max_tokens, bool stream) {
  return nlohmann::json{
      {"model", "sim-model"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"stream", stream}}
      .dump();
}

}  // namespace tessera::testing
