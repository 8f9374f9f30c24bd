#include "cli/bench_gateway_load.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace tessera::cli {

std::int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct TrivialBackend::Impl {
  httplib::Server server;
  std::thread thread;
};

namespace {

constexpr const char* kCompletion =
    R"({"id":"cmpl-0","object":"text_completion","created":0,"model":"m","choices":[{"index":0,)"
    R"("text":" ok","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":2,)"
    R"("completion_tokens":1,"total_tokens":3}})";

void StreamTimedChunks(httplib::Response& res, int tokens, int interval_us) {
  res.set_chunked_content_provider(
      "text/event-stream", [tokens, interval_us](std::size_t, httplib::DataSink& sink) {
        for (int i = 0; i < tokens; ++i) {
          std::this_thread::sleep_for(std::chrono::microseconds(interval_us));
          const std::string chunk = "data: {\"choices\":[{\"index\":0,\"text\":\" x\"}],\"t_ns\":" +
                                    std::to_string(SteadyNanos()) + "}\n\n";
          if (!sink.write(chunk.data(), chunk.size())) return false;
        }
        sink.write("data: [DONE]\n\n", 14);
        sink.done();
        return true;
      });
}

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads one HTTP/1.1 response with a Content-Length body; false on a closed or bad stream.
// `close` is set when the server says it will close the connection.
bool ReadResponse(int fd, std::string& buf, bool* ok, bool* close) {
  std::size_t header_end;
  while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
    char tmp[16384];
    const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<std::size_t>(n));
  }
  std::string head = buf.substr(0, header_end);
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  *ok = head.rfind("http/1.1 200", 0) == 0;
  if (!*ok && std::getenv("TESSERA_BENCH_DEBUG") != nullptr) {
    std::fprintf(stderr, "%s\n%s\n", head.c_str(), buf.substr(header_end, 300).c_str());
  }
  *close = head.find("connection: close") != std::string::npos;
  const auto cl = head.find("content-length:");
  if (cl == std::string::npos) return false;
  const std::size_t length = std::stoul(head.substr(cl + 15));
  const std::size_t total = header_end + 4 + length;
  while (buf.size() < total) {
    char tmp[16384];
    const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<std::size_t>(n));
  }
  buf.erase(0, total);
  return true;
}

}  // namespace

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

bool CanConnect(int port) {
  const int fd = Connect(port);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

TrivialBackend::TrivialBackend(int stream_tokens, int stream_interval_us)
    : impl_(std::make_unique<Impl>()) {
  // Thread per connection: room for the gateway's and nginx's kept-alive connections at once.
  impl_->server.new_task_queue = [] { return new httplib::ThreadPool(512); };
  impl_->server.set_keep_alive_max_count(1'000'000);
  impl_->server.set_tcp_nodelay(true);
  impl_->server.Post("/v1/completions", [stream_tokens, stream_interval_us](
                                            const httplib::Request& req, httplib::Response& res) {
    if (req.body.find("\"stream\":true") != std::string::npos) {
      return StreamTimedChunks(res, stream_tokens, stream_interval_us);
    }
    res.set_content(kCompletion, "application/json");
  });
  impl_->server.Get("/health",
                    [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  int listen_fd = -1;  // cpp-httplib's backlog of 5 would drop a burst of connects
  impl_->server.set_socket_options([&listen_fd](int fd) {
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    listen_fd = fd;
  });
  port_ = impl_->server.bind_to_any_port("127.0.0.1");
  if (listen_fd >= 0) ::listen(listen_fd, 4096);
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
}

TrivialBackend::~TrivialBackend() {
  // stop() is a no-op until the listening thread runs; wait for it first.
  for (int i = 0; i < 500 && !impl_->server.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

LoadResult RunClosedLoop(int port, const std::string& path, const std::string& body,
                         int connections, std::int64_t max_requests, double max_seconds) {
  const std::string request = "POST " + path +
                              " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              "Content-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  std::atomic<std::int64_t> issued{0}, ok{0}, failed{0};
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(max_seconds));
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&] {
      int fd = -1;
      std::string buf;
      while (issued.fetch_add(1) < max_requests && std::chrono::steady_clock::now() < deadline) {
        if (fd < 0) {
          fd = Connect(port);
          buf.clear();
          if (fd < 0) {
            if (std::getenv("TESSERA_BENCH_DEBUG") != nullptr) {
              std::fprintf(stderr, "connect failed: errno %d\n", errno);
            }
            ++failed;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
          }
        }
        bool good = false, close = false;
        if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
                static_cast<ssize_t>(request.size()) ||
            !ReadResponse(fd, buf, &good, &close)) {
          if (std::getenv("TESSERA_BENCH_DEBUG") != nullptr) {
            std::fprintf(stderr, "connection failed: errno %d, buffered %zu\n", errno, buf.size());
          }
          ++failed;
          ::close(fd);
          fd = -1;
          continue;
        }
        ++(good ? ok : failed);
        if (close) {
          ::close(fd);
          fd = -1;
        }
      }
      if (fd >= 0) ::close(fd);
    });
  }
  for (auto& t : threads) t.join();
  LoadResult r;
  r.ok = ok;
  r.failed = failed;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::vector<double> StreamChunkDelaysMs(int port, const std::string& body, int streams) {
  std::mutex mu;
  std::vector<double> delays;
  std::vector<std::thread> threads;
  for (int s = 0; s < streams; ++s) {
    threads.emplace_back([&] {
      httplib::Client client("127.0.0.1", port);
      client.set_read_timeout(30, 0);
      client.set_tcp_nodelay(true);
      httplib::Request req;
      req.method = "POST";
      req.path = "/v1/completions";
      req.headers = {{"Content-Type", "application/json"}};
      req.body = body;
      std::string carry;
      std::vector<double> mine;
      req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
        const std::int64_t now = SteadyNanos();
        carry.append(data, n);
        std::size_t at;
        while ((at = carry.find("\"t_ns\":")) != std::string::npos) {
          const std::int64_t sent = std::stoll(carry.substr(at + 7));
          mine.push_back(static_cast<double>(now - sent) / 1e6);
          carry.erase(0, at + 7);
        }
        return true;
      };
      httplib::Response res;
      httplib::Error error;
      const bool sent = client.send(req, res, error);
      std::lock_guard lock(mu);
      if (!sent || res.status != 200) {
        std::fprintf(stderr, "stream from port %d: %s, HTTP %d, %zu chunks %s\n", port,
                     httplib::to_string(error).c_str(), res.status, mine.size(), carry.c_str());
      }
      delays.insert(delays.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  return delays;
}

}  // namespace tessera::cli
