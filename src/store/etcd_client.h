// A client of etcd's v3 API through its JSON gateway (grpc-gateway), over HTTPS with a client
// certificate (EtcdTls: etcd's --client-cert-auth, as kube-apiserver's --etcd-cafile,
// --etcd-certfile, --etcd-keyfile) or plain HTTP: the same cpp-httplib (with OpenSSL) and
// nlohmann-json as the rest of Tessera, no gRPC stack (docs/dependencies.md).
// Keys and values travel base64-encoded; 64-bit integers come back as JSON strings.
//
// Several endpoints (the members of one cluster): a request that could not be sent to one (its
// connection refused) goes to the next, and so does a read or a renewal that got no answer (a
// hung member). A txn that was sent and got no answer is *ambiguous* (etcd may have applied
// it): the caller decides (EtcdStore resolves it by reading back its commit token).
//
// Thread-safety: calls are serialised by a mutex; use one client per thread that must not wait
// behind another's call (the lease keep-alive, the commits).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace httplib {
class Client;
}

namespace tessera {

std::string Base64Encode(std::string_view bytes);
// Fails on characters outside the standard alphabet.
Result<std::string> Base64Decode(std::string_view text);
// The range_end that makes a range cover every key starting with `prefix`.
std::string PrefixEnd(std::string_view prefix);

// How the controller reaches etcd over HTTPS (https:// endpoints): the CA that signed the
// members' certificates and this client's certificate and key. Empty: plain HTTP, or the
// system's CAs and no client certificate for an https:// endpoint.
struct EtcdTls {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

// A cpp-httplib client for one member, with `tls` applied (server certificate verified).
std::unique_ptr<httplib::Client> EtcdHttpClient(const std::string& endpoint, const EtcdTls& tls);

struct EtcdKeyValue {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t lease = 0;
};

// Operations of a txn, as the gateway's JSON.
nlohmann::json EtcdPut(std::string_view key, std::string_view value, std::int64_t lease = 0);
nlohmann::json EtcdDeleteRange(std::string_view key, std::string_view range_end = {});
nlohmann::json EtcdRangeOp(std::string_view key);
// Compares: the key's lease is `lease` (false for a missing key); the key does not exist.
nlohmann::json EtcdLeaseIs(std::string_view key, std::int64_t lease);
nlohmann::json EtcdMissing(std::string_view key);

struct EtcdTxnResult {
  bool succeeded = false;
  nlohmann::json responses;  // the branch's responses, in order
  std::int64_t revision = 0;
};

class EtcdClient {
 public:
  // `endpoints`: http(s)://HOST:PORT of each member. `timeout_ms` bounds one request to one
  // member.
  explicit EtcdClient(std::vector<std::string> endpoints, int timeout_ms = 1500, EtcdTls tls = {});
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // Every key in [key, range_end) (range_end empty: `key` alone), paged, at one revision.
  Result<std::vector<EtcdKeyValue>> Range(std::string_view key, std::string_view range_end,
                                          std::int64_t limit = 0);
  // The greatest key in [key, range_end), if any.
  Result<std::vector<EtcdKeyValue>> Last(std::string_view key, std::string_view range_end);
  Result<EtcdTxnResult> Txn(const nlohmann::json& compare, const nlohmann::json& success,
                            const nlohmann::json& failure = nlohmann::json::array());
  Status Put(std::string_view key, std::string_view value, std::int64_t lease = 0);
  Result<std::int64_t> LeaseGrant(int ttl_seconds);
  // The TTL left after renewing; 0 when the lease has expired (or never existed).
  Result<std::int64_t> LeaseKeepAlive(std::int64_t lease);
  Status LeaseRevoke(std::int64_t lease);
  // GET-like status of every member: {endpoint: status JSON or {"error": why}}.
  nlohmann::json MemberStatuses();

  const std::vector<std::string>& endpoints() const { return endpoints_; }

  // Whether the last failed call was ambiguous (sent, no answer). Under the caller's own order.
  bool last_failure_ambiguous() const { return last_ambiguous_; }

 private:
  // POSTs `body` to `path`, starting with the member that answered last. An `idempotent`
  // request (a read, a put of the same value, a renewal) goes to the next member on any
  // failure; another only when it was not sent (else it is ambiguous).
  Result<nlohmann::json> Call(const std::string& path, const nlohmann::json& body,
                              bool idempotent = true);
  std::unexpected<Error> Ambiguous(std::size_t member, const std::string& why);

  std::mutex mu_;
  std::vector<std::string> endpoints_;
  EtcdTls tls_;
  std::vector<std::unique_ptr<httplib::Client>> clients_;
  std::size_t current_ = 0;
  int timeout_ms_;
  bool last_ambiguous_ = false;
};

}  // namespace tessera
