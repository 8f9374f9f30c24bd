// Requests from the gateway to one replica. Plain requests go through a keep-alive connection
// per (worker thread, replica); a streamed request runs on its own thread and hands the bytes
// it receives to the gateway's handler through an UpstreamStream, so the handler can wait for
// the first token (and retry elsewhere if none comes) before it answers its client.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

namespace tessera::gateway {

struct UpstreamReply {
  bool connected = false;  // false: no HTTP answer at all (refused, reset, timed out)
  int status = 0;
  std::string body;
  std::string content_type;
  std::string error;  // when !connected
};

// POSTs `body` to `base_url` + `path` on this thread's keep-alive connection to that replica.
UpstreamReply PostUpstream(const std::string& base_url, const std::string& path,
                           const std::string& body, const std::string& authorization);

class UpstreamStream {
 public:
  enum class State { kWaiting, kStreaming, kDone, kFailed };
  // Starts POSTing on a new thread.
  static std::shared_ptr<UpstreamStream> Start(const std::string& base_url, const std::string& path,
                                               const std::string& body,
                                               const std::string& authorization);
  // Waits up to `timeout_ms` for bytes or the end; moves what arrived into `out`.
  State Wait(std::string* out, int timeout_ms);
  int status() const;
  std::string content_type() const;
  std::string error() const;
  // The client went away: the upstream request is dropped at its next bytes.
  void Cancel();

 private:
  UpstreamStream() = default;
  void Run(std::string base_url, std::string path, std::string body, std::string authorization);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kWaiting;
  int status_ = 0;
  std::string content_type_;
  std::string pending_;
  std::string error_;
  bool cancelled_ = false;
};

}  // namespace tessera::gateway
