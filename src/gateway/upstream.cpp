#include "gateway/upstream.h"

#include <httplib.h>

#include <chrono>
#include <unordered_map>

namespace tessera::gateway {

namespace {

// Above the kernel's 1 s SYN retransmission, so one dropped SYN is not a dead replica.
constexpr int kConnectTimeoutMs = 3000;
constexpr int kReadTimeoutS = 600;  // a long generation may take minutes
constexpr std::size_t kMaxPendingBytes = 1 << 20;

void Configure(httplib::Client& c) {
  c.set_connection_timeout(0, kConnectTimeoutMs * 1000);
  c.set_read_timeout(kReadTimeoutS, 0);
  c.set_write_timeout(10, 0);
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);
}

httplib::Headers HeadersOf(const std::string& authorization) {
  httplib::Headers h;
  if (!authorization.empty()) h.emplace("Authorization", authorization);
  return h;
}

}  // namespace

UpstreamReply PostUpstream(const std::string& base_url, const std::string& path,
                           const std::string& body, const std::string& authorization) {
  thread_local std::unordered_map<std::string, std::unique_ptr<httplib::Client>> clients;
  auto& client = clients[base_url];
  const bool reused = client != nullptr;
  if (!client) {
    client = std::make_unique<httplib::Client>(base_url);
    Configure(*client);
  }
  UpstreamReply out;
  auto r = client->Post(path, HeadersOf(authorization), body, "application/json");
  if (!r && reused) {
    // A kept-alive connection the replica had closed: once more on a fresh one, as nginx's
    // proxy_next_upstream does, before calling the replica dead.
    client = std::make_unique<httplib::Client>(base_url);
    Configure(*client);
    r = client->Post(path, HeadersOf(authorization), body, "application/json");
  }
  if (!r) {
    out.error = httplib::to_string(r.error());
    client.reset();  // a fresh connection next time
    return out;
  }
  out.connected = true;
  out.status = r->status;
  out.body = std::move(r->body);
  out.content_type = r->get_header_value("Content-Type");
  return out;
}

std::shared_ptr<UpstreamStream> UpstreamStream::Start(const std::string& base_url,
                                                      const std::string& path,
                                                      const std::string& body,
                                                      const std::string& authorization) {
  std::shared_ptr<UpstreamStream> s(new UpstreamStream());
  // The thread holds the stream too, so a handler that gives up never waits for the replica.
  std::thread([s, base_url, path, body, authorization] {
    s->Run(base_url, path, body, authorization);
  }).detach();
  return s;
}

void UpstreamStream::Run(std::string base_url, std::string path, std::string body,
                         std::string authorization) {
  httplib::Client client(base_url);
  Configure(client);
  client.set_keep_alive(false);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = HeadersOf(authorization);
  req.headers.emplace("Content-Type", "application/json");
  req.headers.emplace("Accept", "text/event-stream");
  req.body = std::move(body);
  req.response_handler = [this](const httplib::Response& r) {
    std::lock_guard lock(mu_);
    status_ = r.status;
    content_type_ = r.get_header_value("Content-Type");
    return !cancelled_;
  };
  req.content_receiver = [this](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    {
      std::unique_lock lock(mu_);
      // Bounded: a slow client holds the replica back rather than the gateway's memory.
      cv_.wait(lock, [&] { return cancelled_ || pending_.size() < kMaxPendingBytes; });
      if (cancelled_) return false;
      pending_.append(data, n);
      state_ = State::kStreaming;
    }
    cv_.notify_all();
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  const bool ok = client.send(req, res, error);
  {
    std::lock_guard lock(mu_);
    if (ok) {
      state_ = State::kDone;
    } else {
      state_ = State::kFailed;
      error_ = httplib::to_string(error);
    }
  }
  cv_.notify_all();
}

UpstreamStream::State UpstreamStream::Wait(std::string* out, int timeout_ms) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
    return !pending_.empty() || state_ == State::kDone || state_ == State::kFailed;
  });
  out->append(pending_);
  pending_.clear();
  const State state = state_;
  lock.unlock();
  cv_.notify_all();  // room again for a receiver waiting on kMaxPendingBytes
  return state;
}

int UpstreamStream::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

std::string UpstreamStream::content_type() const {
  std::lock_guard lock(mu_);
  return content_type_;
}

std::string UpstreamStream::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

void UpstreamStream::Cancel() {
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
}

}  // namespace tessera::gateway
