// The controller's REST API as a client reaches it: the input is the raw bytes of an HTTP
// request (or several), sent over loopback to a real ApiServer in front of a real Controller
// on an SQLite store with two simulated nodes, so cpp-httplib's request parsing, the routes'
// path, query and body parsing and the job spec and agent protocol readers all see it.
// Properties: the server never crashes; it answers every complete request with an HTTP
// status line and never with a 5xx other than 503 (a 500 is an exception that escaped a
// handler, or an internal error). Long-polls (`wait`, `waitMs`) are skipped: they block by
// design, for up to a minute.
// fuzz-links: tessera_server
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "fuzz/fuzz_support.h"
#include "server/controller.h"
#include "server/http_api.h"
#include "store/sqlite_store.h"

namespace {

using namespace tessera;

// The controller and its HTTP server, started once per process and kept for every input.
struct Server {
  std::string dir;
  std::unique_ptr<SqliteStore> store;
  std::unique_ptr<Controller> controller;
  std::unique_ptr<ApiServer> api;
  int port = 0;

  Server() {
    // /dev/shm where there is one: every submission is a commit, and fsync there is cheap.
    const std::filesystem::path base =
        std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    dir = (base / ("tessera-rest-fuzz-" + std::to_string(static_cast<long>(getpid())))).string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    store = Must(SqliteStore::Open(dir + "/state.db"), "open the store");
    ControllerOptions options;
    options.heartbeat_timeout_ms = 3'600'000;  // nodes stay Ready for the whole run
    controller = Must(Controller::Create(store.get(), options), "create the controller");
    for (int n = 0; n < 2; ++n) {
      NodeRegistration reg;
      reg.node = "node-" + std::to_string(n);
      reg.address = "127.0.0.1";
      reg.simulated = true;
      reg.cpu_milli = 64000;
      reg.memory_mib = 512 * 1024;
      for (int g = 0; g < 4; ++g) reg.gpus.push_back({g, "H100", "simulated H100", "SIM", 81920});
      if (auto r = controller->Register(reg); !r) Die("register a node", r.error().error.message);
    }
    api = std::make_unique<ApiServer>(*controller, 8);
    port = Must(api->Bind("127.0.0.1", 0), "bind");
    std::thread([this] { api->Serve(); }).detach();
  }

  template <typename T>
  static T Must(Result<T> r, const char* what) {
    if (!r) Die(what, r.error().message);
    return std::move(*r);
  }
  [[noreturn]] static void Die(const char* what, const std::string& why) {
    std::fprintf(stderr, "rest fuzz harness: cannot %s: %s\n", what, why.c_str());
    std::abort();
  }
};

// Never destroyed (its threads are detached); the state directory goes at exit.
Server& TheServer() {
  static Server* const server = [] {
    auto* s = new Server();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(TheServer().dir, ec);
    });
    return s;
  }();
  return *server;
}

// The request target of the first line with %XX decoded, to spot long-polls however spelt.
std::string DecodedFirstLine(std::string_view bytes) {
  const std::string_view line = bytes.substr(0, bytes.find('\n'));
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '%' && i + 2 < line.size()) {
      out +=
          static_cast<char>(std::strtol(std::string(line.substr(i + 1, 2)).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += line[i];
    }
  }
  return out;
}

// Sends `bytes` and returns what the server answers. The sending side stays open (httplib
// writes no response to a client that has half-closed), so the answer ends when the server
// closes, or when nothing more comes: 500 ms for the first byte (an incomplete request gets
// none), 50 ms between later ones.
std::string Exchange(int port, std::string_view bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  FUZZ_CHECK(fd >= 0, "socket");
  timeval send_timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  FUZZ_CHECK(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0,
             "the server does not accept connections");
  for (std::size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close early on a request it refuses
    sent += static_cast<std::size_t>(n);
  }
  std::string answer;
  char buf[8192];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, answer.empty() ? 500 : 50) <= 0) break;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return answer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = tessera::fuzz::Text(data, size);
  if (DecodedFirstLine(bytes).find("wait") != std::string::npos) return 0;
  const std::string answer = Exchange(TheServer().port, bytes);
  // The first answer's status (an incomplete request may get none).
  if (answer.empty()) return 0;
  FUZZ_CHECK(answer.starts_with("HTTP/1.1 ") && answer.size() >= 12, "not HTTP: " + answer);
  const std::string status = answer.substr(9, 3);
  FUZZ_CHECK(status[0] != '5' || status == "503",
             "the server answered " + status + ":\n" + answer.substr(0, 2000));
  return 0;
}
