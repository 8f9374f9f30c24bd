#include "store/etcd_client.h"

#include <httplib.h>

#include <array>
#include <charconv>

namespace tessera {

namespace {

using Json = nlohmann::json;

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The gateway writes int64 fields as strings; accepts numbers too.
std::int64_t Int64Of(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) return 0;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (!it->is_string()) return 0;
  const auto& s = it->get_ref<const std::string&>();
  std::int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

Result<Json> ParseReply(const std::string& text) {
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return IoError("etcd: a reply that is not JSON");
  return doc;
}

// Whether a failed request never reached the server: it cannot have been applied.
bool NotSent(httplib::Error e) {
  return e == httplib::Error::Connection || e == httplib::Error::ConnectionTimeout ||
         e == httplib::Error::BindIPAddress;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto n = (static_cast<unsigned char>(bytes[i]) << 16) |
                   (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                   static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < bytes.size()) {
    const bool two = i + 1 < bytes.size();
    const auto n = (static_cast<unsigned char>(bytes[i]) << 16) |
                   (two ? static_cast<unsigned char>(bytes[i + 1]) << 8 : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += two ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  std::array<int, 256> value{};
  value.fill(-1);
  for (std::size_t i = 0; i < kAlphabet.size(); ++i)
    value[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int>(i);
  std::string out;
  out.reserve(text.size() / 4 * 3);
  unsigned bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    const int v = value[static_cast<unsigned char>(c)];
    if (v < 0) return InvalidArgument("base64: unexpected character in etcd's reply");
    bits = (bits << 6) | static_cast<unsigned>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

Json EtcdPut(std::string_view key, std::string_view value, std::int64_t lease) {
  Json put = {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) put["lease"] = std::to_string(lease);
  return {{"request_put", put}};
}

Json EtcdDeleteRange(std::string_view key, std::string_view range_end) {
  Json del = {{"key", Base64Encode(key)}};
  if (!range_end.empty()) del["range_end"] = Base64Encode(range_end);
  return {{"request_delete_range", del}};
}

Json EtcdRangeOp(std::string_view key) { return {{"request_range", {{"key", Base64Encode(key)}}}}; }

Json EtcdLeaseIs(std::string_view key, std::int64_t lease) {
  return {{"key", Base64Encode(key)},
          {"target", "LEASE"},
          {"result", "EQUAL"},
          {"lease", std::to_string(lease)}};
}

Json EtcdMissing(std::string_view key) {
  return {{"key", Base64Encode(key)},
          {"target", "CREATE"},
          {"result", "EQUAL"},
          {"create_revision", "0"}};
}

std::unique_ptr<httplib::Client> EtcdHttpClient(const std::string& endpoint, const EtcdTls& tls) {
  auto c = tls.cert_file.empty()
               ? std::make_unique<httplib::Client>(endpoint)
               : std::make_unique<httplib::Client>(endpoint, tls.cert_file, tls.key_file);
  if (!tls.ca_file.empty()) {
    c->set_ca_cert_path(tls.ca_file.c_str());
    c->enable_server_certificate_verification(true);
  }
  return c;
}

EtcdClient::EtcdClient(std::vector<std::string> endpoints, int timeout_ms, EtcdTls tls)
    : endpoints_(std::move(endpoints)), tls_(std::move(tls)), timeout_ms_(timeout_ms) {
  for (const auto& e : endpoints_) {
    auto c = EtcdHttpClient(e, tls_);
    c->set_connection_timeout(0, timeout_ms_ * 1000);
    c->set_read_timeout(timeout_ms_ / 1000, (timeout_ms_ % 1000) * 1000);
    c->set_write_timeout(timeout_ms_ / 1000, (timeout_ms_ % 1000) * 1000);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);
    clients_.push_back(std::move(c));
  }
}

EtcdClient::~EtcdClient() = default;

Result<Json> EtcdClient::Call(const std::string& path, const Json& body, bool idempotent) {
  std::lock_guard lock(mu_);
  if (clients_.empty()) return InvalidArgument("--etcd-endpoints: no endpoint given");
  const std::string text = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string failures;
  last_ambiguous_ = false;
  for (std::size_t tries = 0; tries < clients_.size(); ++tries) {
    const std::size_t i = (current_ + tries) % clients_.size();
    auto res = clients_[i]->Post(path.c_str(), text, "application/json");
    if (!res) {
      failures +=
          (failures.empty() ? "" : "; ") + endpoints_[i] + ": " + httplib::to_string(res.error());
      if (NotSent(res.error()) || idempotent) continue;  // a hung member: ask the next
      return Ambiguous(i, "etcd " + path + ": no answer (" + failures + ")");
    }
    auto doc = ParseReply(res->body);
    if (res->status == 200 && doc && doc->is_object()) {
      current_ = i;
      return *doc;
    }
    std::string why = "HTTP " + std::to_string(res->status);
    if (doc && doc->is_object() && doc->contains("message") && (*doc)["message"].is_string())
      why = (*doc)["message"].get<std::string>();
    failures += (failures.empty() ? "" : "; ") + endpoints_[i] + ": " + why;
    // A member without a leader refuses at once; another may have one. Anything else that
    // etcd answered with an error (a txn too large, a bad request) is the same everywhere.
    if (why.find("timed out") != std::string::npos ||
        why.find("leader changed") != std::string::npos ||
        why.find("stopped") != std::string::npos) {
      if (idempotent) continue;
      return Ambiguous(i, "etcd " + path + ": " + failures);  // proposed, perhaps applied
    }
    if (why.find("no leader") != std::string::npos ||
        why.find("not capable") != std::string::npos || res->status == 503)
      continue;
    return IoError("etcd " + path + ": " + failures);
  }
  return IoError("etcd " + path + ": no member answered (" + failures + ")");
}

std::unexpected<Error> EtcdClient::Ambiguous(std::size_t member, const std::string& why) {
  last_ambiguous_ = true;                     // it may have been applied: no blind retry elsewhere
  current_ = (member + 1) % clients_.size();  // the next call starts with another member
  return std::unexpected(Error{Error::Code::kIo, why});
}

Result<std::vector<EtcdKeyValue>> EtcdClient::Range(std::string_view key,
                                                    std::string_view range_end,
                                                    std::int64_t limit) {
  std::vector<EtcdKeyValue> out;
  std::string from(key);
  std::int64_t revision = 0;
  constexpr std::int64_t kPage = 1000;
  while (true) {
    Json body = {{"key", Base64Encode(from)}};
    if (!range_end.empty()) body["range_end"] = Base64Encode(range_end);
    const std::int64_t want =
        limit > 0 ? std::min<std::int64_t>(kPage, limit - static_cast<std::int64_t>(out.size()))
                  : kPage;
    if (!range_end.empty()) body["limit"] = std::to_string(want);
    if (revision != 0) body["revision"] = std::to_string(revision);
    auto doc = Call("/v3/kv/range", body);
    if (!doc) return std::unexpected(doc.error());
    if (revision == 0 && doc->contains("header")) revision = Int64Of((*doc)["header"], "revision");
    const Json kvs = doc->value("kvs", Json::array());
    for (const auto& kv : kvs) {
      EtcdKeyValue rec;
      auto k = Base64Decode(kv.value("key", ""));
      auto v = Base64Decode(kv.value("value", ""));
      if (!k || !v) return IoError("etcd range: undecodable key or value");
      rec.key = std::move(*k);
      rec.value = std::move(*v);
      rec.create_revision = Int64Of(kv, "create_revision");
      rec.mod_revision = Int64Of(kv, "mod_revision");
      rec.lease = Int64Of(kv, "lease");
      out.push_back(std::move(rec));
    }
    const bool more = doc->value("more", false);
    if (!more || kvs.empty() || range_end.empty()) break;
    if (limit > 0 && static_cast<std::int64_t>(out.size()) >= limit) break;
    from = out.back().key + std::string(1, '\0');
  }
  return out;
}

Result<std::vector<EtcdKeyValue>> EtcdClient::Last(std::string_view key,
                                                   std::string_view range_end) {
  Json body = {{"key", Base64Encode(key)},
               {"range_end", Base64Encode(range_end)},
               {"limit", "1"},
               {"sort_order", "DESCEND"},
               {"sort_target", "KEY"}};
  auto doc = Call("/v3/kv/range", body);
  if (!doc) return std::unexpected(doc.error());
  std::vector<EtcdKeyValue> out;
  for (const auto& kv : doc->value("kvs", Json::array())) {
    auto k = Base64Decode(kv.value("key", ""));
    auto v = Base64Decode(kv.value("value", ""));
    if (!k || !v) return IoError("etcd range: undecodable key or value");
    out.push_back({std::move(*k), std::move(*v), Int64Of(kv, "create_revision"),
                   Int64Of(kv, "mod_revision"), Int64Of(kv, "lease")});
  }
  return out;
}

Result<EtcdTxnResult> EtcdClient::Txn(const Json& compare, const Json& success,
                                      const Json& failure) {
  auto doc = Call("/v3/kv/txn", {{"compare", compare}, {"success", success}, {"failure", failure}},
                  /*idempotent=*/false);
  if (!doc) return std::unexpected(doc.error());
  EtcdTxnResult r;
  r.succeeded = doc->value("succeeded", false);
  r.responses = doc->value("responses", Json::array());
  if (doc->contains("header")) r.revision = Int64Of((*doc)["header"], "revision");
  return r;
}

Status EtcdClient::Put(std::string_view key, std::string_view value, std::int64_t lease) {
  Json body = EtcdPut(key, value, lease)["request_put"];
  auto doc = Call("/v3/kv/put", body);
  if (!doc) return std::unexpected(doc.error());
  return {};
}

Result<std::int64_t> EtcdClient::LeaseGrant(int ttl_seconds) {
  auto doc = Call("/v3/lease/grant", {{"TTL", std::to_string(ttl_seconds)}, {"ID", "0"}});
  if (!doc) return std::unexpected(doc.error());
  if (doc->contains("error")) return IoError("etcd lease grant: " + doc->value("error", ""));
  const std::int64_t id = Int64Of(*doc, "ID");
  if (id == 0) return IoError("etcd lease grant: no lease in the reply");
  return id;
}

Result<std::int64_t> EtcdClient::LeaseKeepAlive(std::int64_t lease) {
  auto doc = Call("/v3/lease/keepalive", {{"ID", std::to_string(lease)}});
  if (!doc) return std::unexpected(doc.error());
  if (!doc->contains("result")) return IoError("etcd lease keepalive: " + doc->dump());
  return Int64Of((*doc)["result"], "TTL");
}

Status EtcdClient::LeaseRevoke(std::int64_t lease) {
  auto doc = Call("/v3/lease/revoke", {{"ID", std::to_string(lease)}});
  if (!doc) return std::unexpected(doc.error());
  return {};
}

Json EtcdClient::MemberStatuses() {
  Json out = Json::object();
  for (const auto& e : endpoints_) {
    auto c = EtcdHttpClient(e, tls_);
    c->set_connection_timeout(0, 300'000);
    c->set_read_timeout(1, 0);
    auto res = c->Post("/v3/maintenance/status", "{}", "application/json");
    auto doc = res ? ParseReply(res->body) : Result<Json>(IoError(httplib::to_string(res.error())));
    if (res && res->status == 200 && doc) {
      out[e] = *doc;
    } else {
      out[e] = {{"error", res ? "HTTP " + std::to_string(res->status) : doc.error().message}};
    }
  }
  return out;
}

}  // namespace tessera
