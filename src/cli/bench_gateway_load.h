// The pieces `tessera bench gateway` measures with (docs/benchmarks.md): a trivial OpenAI-shaped
// backend (fixed JSON answer; a timed SSE stream whose chunks carry their send time), a
// closed-loop HTTP/1.1 load generator on keep-alive connections, bounded in requests and time,
// and a reader of timed streams. Loopback only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::cli {

// A backend on 127.0.0.1 (its own threads) until destroyed. POST /v1/completions answers a
// fixed completion, or with "stream":true, `stream_tokens` SSE chunks `stream_interval_us`
// apart, each with "t_ns" (steady clock) of its sending.
class TrivialBackend {
 public:
  TrivialBackend(int stream_tokens, int stream_interval_us);
  ~TrivialBackend();
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

struct LoadResult {
  std::int64_t ok = 0, failed = 0;
  double seconds = 0;
  double rps() const { return seconds > 0 ? static_cast<double>(ok) / seconds : 0; }
};

// `connections` keep-alive connections each send `body` to POST `path` and wait for the
// answer, until `max_requests` answers or `max_seconds` pass.
LoadResult RunClosedLoop(int port, const std::string& path, const std::string& body,
                         int connections, std::int64_t max_requests, double max_seconds);

// Streams `streams` requests at once (each `body`, "stream":true) from 127.0.0.1:`port` and
// returns every chunk's delay in ms: arrival minus the backend's t_ns.
std::vector<double> StreamChunkDelaysMs(int port, const std::string& body, int streams);

std::int64_t SteadyNanos();
// A loopback port free now (for a child to listen on).
int FreeLoopbackPort();
// True when something accepts connections on 127.0.0.1:`port`.
bool CanConnect(int port);

}  // namespace tessera::cli
