#include "gateway/service_routes.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <msgpack.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "gateway/controller_watcher.h"
#include "gateway/replica_monitor.h"
#include "gateway/service_registry.h"
#include "gateway/vllm_kv_events.h"
#include "gateway/zmq_kv_feed.h"

namespace tessera::gateway {
namespace {

ServiceConfig Config(std::vector<std::string> backends, std::string policy = "round-robin") {
  ServiceConfig c;
  c.name = "default";
  c.policy = std::move(policy);
  c.backends = std::move(backends);
  c.assume_ready = true;
  return c;
}

std::unique_ptr<ServiceRoutes> Make(const ServiceConfig& c) {
  auto s = ServiceRoutes::Make(c, EngineProfile{});
  EXPECT_TRUE(s.has_value());
  return s ? std::move(*s) : nullptr;
}

TEST(ServiceRoutes, RoundRobinSkipsExcludedAndDeadReplicas) {
  auto s = Make(Config({"http://a", "http://b", "http://c"}));
  ASSERT_TRUE(s);
  std::vector<serve::BlockHash> blocks = {1, 2};
  const int b_slot = 1;
  auto p = s->Route(blocks, 32, 4, std::span<const int>(&b_slot, 1));
  EXPECT_NE(p.url, "http://b");
  s->Finished(p, false);
  s->MarkDead("http://a", "refused");
  for (int i = 0; i < 4; ++i) {
    auto q = s->Route(blocks, 32, 4, {});
    EXPECT_NE(q.url, "http://a");
    ASSERT_GE(q.slot, 0);
    s->Finished(q, false);
  }
  s->MarkDead("http://b", "refused");
  s->MarkDead("http://c", "refused");
  auto none = s->Route(blocks, 32, 4, {});
  EXPECT_EQ(none.slot, -1);
  EXPECT_EQ(none.reason, serve::RejectReason::kNoReadyReplica);
  s->MarkHealthy("http://c");
  EXPECT_EQ(s->Route(blocks, 32, 4, {}).url, "http://c");
}

TEST(ServiceRoutes, LeastRequestCountsTheGatewaysOwnRequestsInFlight) {
  auto s = Make(Config({"http://a", "http://b"}, "least-request"));
  ASSERT_TRUE(s);
  std::vector<serve::BlockHash> blocks = {7};
  auto first = s->Route(blocks, 16, 4, {});
  auto second = s->Route(blocks, 16, 4, {});
  EXPECT_NE(first.url, second.url);  // the first is still in flight
  s->FirstToken(first);
  s->Finished(first, true);
  auto third = s->Route(blocks, 16, 4, {});
  EXPECT_EQ(third.url, first.url);  // now idle again
  auto views = s->Replicas();
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].in_flight + views[1].in_flight, 2);
}

TEST(ServiceRoutes, PrefixRoutingFollowsKvEvents) {
  auto s = Make(Config({"http://a", "http://b"}, "prefix"));
  ASSERT_TRUE(s);
  std::vector<serve::BlockHash> blocks = {11, 12, 13};
  std::vector<serve::KvEvent> stored = {{serve::KvEvent::Kind::kStored, 11},
                                        {serve::KvEvent::Kind::kStored, 12},
                                        {serve::KvEvent::Kind::kStored, 13}};
  s->ApplyKvEvents("http://b", stored);
  auto p = s->Route(blocks, 48, 4, {});
  EXPECT_EQ(p.url, "http://b");
  EXPECT_EQ(p.matched_tokens, 48);
  s->Finished(p, false);
}

TEST(ServiceRoutes, UpdateKeepsSlotsOfUrlsThatStayAndRejectsUnknownPolicies) {
  auto s = Make(Config({"http://a", "http://b"}));
  ASSERT_TRUE(s);
  s->MarkDead("http://a", "refused");
  ServiceConfig next = Config({"http://a", "http://c"});
  s->Update(next);
  auto views = s->Replicas();
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].url, "http://a");
  EXPECT_FALSE(views[0].ready);  // kept its state
  EXPECT_EQ(views[1].url, "http://c");
  EXPECT_FALSE(ServiceRoutes::Make(Config({"http://a"}, "fastest"), EngineProfile{}).has_value());
}

TEST(ServiceRoutes, ManyReplicasGrowTheRouter) {
  std::vector<std::string> urls;
  for (int i = 0; i < 70; ++i) urls.push_back("http://r" + std::to_string(i));
  auto s = Make(Config({urls.begin(), urls.begin() + 10}));
  ASSERT_TRUE(s);
  s->Update(Config(urls));
  EXPECT_EQ(s->Replicas().size(), 70u);
  std::vector<serve::BlockHash> blocks = {1};
  std::set<std::string> seen;
  for (int i = 0; i < 70; ++i) seen.insert(s->Route(blocks, 16, 1, {}).url);
  EXPECT_EQ(seen.size(), 70u);
}

TEST(ServiceRegistry, FindsServicesByModelName) {
  ServiceRegistry reg{EngineProfile{}};
  ServiceConfig a = Config({"http://a"});
  a.name = "nlp/chat";
  a.models = {"chat", "nlp/chat"};
  ServiceConfig b = Config({"http://b"});
  b.name = "nlp/code";
  EXPECT_TRUE(reg.Reconcile({a, b}).empty());
  ASSERT_TRUE(reg.Find("chat"));
  EXPECT_EQ(reg.Find("chat")->config().name, "nlp/chat");
  ASSERT_TRUE(reg.Find("code"));
  EXPECT_EQ(reg.Find("code")->config().name, "nlp/code");
  EXPECT_FALSE(reg.Find("other"));
  ServiceConfig bad = Config({"http://c"}, "nope");
  bad.name = "x/y";
  auto problems = reg.Reconcile({a, bad});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("x/y"), std::string::npos);
  EXPECT_EQ(reg.All().size(), 1u);
}

TEST(ControllerDiscovery, ServiceFromJobDetail) {
  const nlohmann::json job = nlohmann::json::parse(R"({
    "kind": "InferenceService", "name": "chat", "queue": "nlp", "finishTimeMs": 0,
    "spec": {"spec": {"routing": {"policy": "tessera", "blockTokens": 32},
                      "slo": {"ttftMs": 500, "tbtMs": 50}}},
    "taskList": [
      {"rank": 0, "node": "node-0", "state": "Running", "masterAddr": "10.0.0.1", "masterPort": 20100},
      {"rank": 1, "node": "node-1", "state": "Running", "masterAddr": "10.0.0.1", "masterPort": 20100},
      {"rank": 2, "node": "node-1", "state": "Assigned", "masterAddr": "10.0.0.1", "masterPort": 20100}
    ]})");
  auto c = ServiceFromJobDetail(job, {{"node-0", "10.0.0.1"}, {"node-1", "10.0.0.2"}}, {});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->name, "nlp/chat");
  EXPECT_EQ(c->policy, "tessera");
  EXPECT_EQ(c->block_tokens, 32);
  EXPECT_EQ(c->slo_ttft_ms, 500);
  EXPECT_EQ(c->slo_tbt_ms, 50);
  // Running replicas only, each at its node's address and master port + rank.
  EXPECT_EQ(c->backends,
            (std::vector<std::string>{"http://10.0.0.1:20100", "http://10.0.0.2:20101"}));
  nlohmann::json training = job;
  training["kind"] = "TrainingJob";
  EXPECT_FALSE(ServiceFromJobDetail(training, {}, {}).has_value());
  nlohmann::json old = job;
  old["spec"]["spec"]["slo"] = {{"latencyMs", 800}};
  old["spec"]["spec"].erase("routing");
  auto o = ServiceFromJobDetail(old, {}, DiscoveryDefaults{"prefix"});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->slo_ttft_ms, 800);  // the older name of ttftMs
  EXPECT_EQ(o->policy, "prefix");
  EXPECT_EQ(o->block_tokens, 16);
}

TEST(KvEventMessages, ParseTheEnginesStream) {
  auto events = ParseKvEventMessage(
      R"({"seq":3,"events":[{"type":"AllBlocksCleared","block_hashes":[]},
          {"type":"BlockStored","block_hashes":[18446744073709551615,2]},
          {"type":"Mystery","block_hashes":[9]},
          {"type":"BlockRemoved","block_hashes":[2]}]})");
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, serve::KvEvent::Kind::kCleared);
  EXPECT_EQ(events[1].kind, serve::KvEvent::Kind::kStored);
  EXPECT_EQ(events[1].block, 18446744073709551615ull);
  EXPECT_EQ(events[3].kind, serve::KvEvent::Kind::kRemoved);
  EXPECT_TRUE(ParseKvEventMessage("not json").empty());
}

// msgpack built by hand, as vLLM's msgspec encoder lays it out.
class Pack {
 public:
  Pack() {
    msgpack_sbuffer_init(&buf_);
    msgpack_packer_init(&pk_, &buf_, msgpack_sbuffer_write);
  }
  ~Pack() { msgpack_sbuffer_destroy(&buf_); }
  Pack& Array(std::size_t n) { return msgpack_pack_array(&pk_, n), *this; }
  Pack& Map(std::size_t n) { return msgpack_pack_map(&pk_, n), *this; }
  Pack& Str(std::string_view s) {
    msgpack_pack_str(&pk_, s.size());
    msgpack_pack_str_body(&pk_, s.data(), s.size());
    return *this;
  }
  Pack& Int(std::int64_t v) { return msgpack_pack_int64(&pk_, v), *this; }
  Pack& Uint(std::uint64_t v) { return msgpack_pack_uint64(&pk_, v), *this; }
  Pack& Double(double v) { return msgpack_pack_double(&pk_, v), *this; }
  Pack& Nil() { return msgpack_pack_nil(&pk_), *this; }
  Pack& Bin(const std::vector<unsigned char>& b) {
    msgpack_pack_bin(&pk_, b.size());
    msgpack_pack_bin_body(&pk_, b.data(), b.size());
    return *this;
  }
  std::span<const std::byte> bytes() const {
    return std::as_bytes(std::span(buf_.data, buf_.size));
  }

 private:
  msgpack_sbuffer buf_;
  msgpack_packer pk_;
};

TEST(VllmKvEvents, DecodesTheArrayLayoutWithIntegerAndByteHashes) {
  // [ts, [BlockStored, BlockRemoved, a newer tag, AllBlocksCleared], dp rank]
  Pack p;
  p.Array(3).Double(1.5).Array(4);
  p.Array(7).Str("BlockStored").Array(2).Uint(18446744073709551615ull).Int(-2);
  p.Int(-7).Array(8);
  for (int t = 1; t <= 8; ++t) p.Int(t);
  p.Int(4).Nil().Str("GPU");
  std::vector<unsigned char> sha(32, 0);
  sha[24] = 0x01;  // last 8 bytes 01 00 .. 00 05, big endian
  sha[31] = 0x05;
  p.Array(3).Str("BlockRemoved").Array(1).Bin(sha).Str("CPU");
  p.Array(2).Str("SomethingNew").Int(1);
  p.Array(1).Str("AllBlocksCleared");
  p.Int(0);
  auto events = DecodeVllmKvEventBatch(p.bytes());
  ASSERT_TRUE(events.has_value()) << events.error().message;
  ASSERT_EQ(events->size(), 3u);
  const serve::EngineKvEvent& stored = (*events)[0];
  EXPECT_EQ(stored.kind, serve::EngineKvEvent::Kind::kStored);
  EXPECT_EQ(stored.block_hashes,
            (std::vector<std::uint64_t>{18446744073709551615ull, 18446744073709551614ull}));
  EXPECT_EQ(stored.parent_hash, static_cast<std::uint64_t>(-7));
  EXPECT_EQ(stored.token_ids.size(), 8u);
  EXPECT_EQ(stored.block_size, 4);
  EXPECT_TRUE(stored.gpu_tier);
  EXPECT_FALSE(stored.adapter);
  const serve::EngineKvEvent& removed = (*events)[1];
  EXPECT_EQ(removed.kind, serve::EngineKvEvent::Kind::kRemoved);
  EXPECT_EQ(removed.block_hashes, (std::vector<std::uint64_t>{0x0100000000000005ull}));
  EXPECT_FALSE(removed.gpu_tier);
  EXPECT_EQ((*events)[2].kind, serve::EngineKvEvent::Kind::kCleared);
}

TEST(VllmKvEvents, DecodesTheMapLayoutAndNamesWhatIsMalformed) {
  Pack m;
  m.Map(2).Str("ts").Double(2).Str("events").Array(1);
  m.Map(6).Str("type").Str("BlockStored").Str("block_hashes").Array(1).Uint(9);
  m.Str("parent_block_hash").Nil().Str("token_ids").Array(2).Int(5).Int(6);
  m.Str("block_size").Int(2).Str("lora_name").Str("adapter-a");
  auto events = DecodeVllmKvEventBatch(m.bytes());
  ASSERT_TRUE(events.has_value()) << events.error().message;
  ASSERT_EQ(events->size(), 1u);
  EXPECT_FALSE((*events)[0].parent_hash.has_value());
  EXPECT_TRUE((*events)[0].adapter);

  Pack bad;
  bad.Array(2)
      .Double(0)
      .Array(1)
      .Array(4)
      .Str("BlockStored")
      .Array(1)
      .Uint(1)
      .Nil()
      .Array(1)
      .Int(-3);
  auto refused = DecodeVllmKvEventBatch(bad.bytes());
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("events[0].token_ids[0]"), std::string::npos)
      << refused.error().message;
  Pack no_events;
  no_events.Array(1).Double(0);
  EXPECT_NE(DecodeVllmKvEventBatch(no_events.bytes()).error().message.find("events"),
            std::string::npos);
  const std::byte junk[] = {std::byte{0xc1}};
  EXPECT_FALSE(DecodeVllmKvEventBatch(junk).has_value());
}

TEST(VllmKvEvents, EndpointsByReplicaOrPortOffset) {
  KvEventSources sources;
  EXPECT_FALSE(AddKvEventEndpoint("http://a:8000", &sources).has_value());
  EXPECT_NE(AddKvEventEndpoint("http://a:8000=udp://x", &sources)
                .error()
                .message.find("--kv-events-endpoint"),
            std::string::npos);
  ASSERT_TRUE(AddKvEventEndpoint("http://a:8000=tcp://a:5557", &sources).has_value());
  EXPECT_EQ(ZmqEndpointFor(sources, "http://a:8000"), "tcp://a:5557");
  EXPECT_FALSE(ZmqEndpointFor(sources, "http://b:8000").has_value());
  sources.port_offset = 100;
  EXPECT_EQ(ZmqEndpointFor(sources, "http://10.0.0.2:8001"), "tcp://10.0.0.2:8101");
  EXPECT_EQ(ZmqEndpointFor(sources, "http://a:8000"), "tcp://a:5557");
  EXPECT_FALSE(ZmqEndpointFor(sources, "http://no-port").has_value());
}

// A controller for discovery on 127.0.0.1: a leader with one InferenceService, or a standby
// refusing with 503 and naming the leader (server/standby_server.h's answer).
class FakeController {
 public:
  explicit FakeController(std::string leader = "") : leader_(std::move(leader)) {
    if (!leader_.empty()) {
      server_.Get(R"(/.*)", [this](const httplib::Request&, httplib::Response& res) {
        ++requests;
        res.status = 503;
        res.set_content(R"({"error": {"code": "Unavailable", "message": "a standby", "leader": ")" +
                            leader_ + R"("}})",
                        "application/json");
      });
    } else {
      server_.Get("/v1/nodes", [this](const httplib::Request&, httplib::Response& res) {
        ++requests;
        res.set_content(R"({"nodes": [{"name": "node-0", "address": "10.0.0.1"}]})",
                        "application/json");
      });
      server_.Get("/v1/jobs", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(
            R"({"jobs": [{"kind": "InferenceService", "queue": "nlp", "name": "chat"}]})",
            "application/json");
      });
      server_.Get("/v1/jobs/nlp/chat", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"kind": "InferenceService", "queue": "nlp", "name": "chat",
                            "taskList": [{"state": "Running", "node": "node-0", "rank": 0,
                                          "masterPort": 20100}]})",
                        "application/json");
      });
      server_.Get("/v1/events", [](const httplib::Request&, httplib::Response& res) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        res.set_content(R"({"events": [], "lastSeq": 1, "next": 1})", "application/json");
      });
    }
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeController() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::atomic<int> requests{0};

 private:
  std::string leader_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(ControllerWatcher, FollowsTheLeaderAStandbyNamesPastADeadUrl) {
  FakeController leader;
  FakeController standby(leader.url());
  // A URL nobody listens on, then the standby: the leader is known only from its answer.
  const int dead = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(dead, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);  // never listens
  socklen_t len = sizeof addr;
  ::getsockname(dead, reinterpret_cast<sockaddr*>(&addr), &len);
  const int dead_port = ntohs(addr.sin_port);
  auto urls =
      ControllerUrls::Parse("http://127.0.0.1:" + std::to_string(dead_port) + "," + standby.url());
  ASSERT_TRUE(urls.has_value());
  ServiceRegistry registry{EngineProfile{}};
  ControllerWatcher watcher(std::move(*urls), registry, {}, 1);
  for (int i = 0; i < 100 && registry.All().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(registry.All().size(), 1u);
  EXPECT_EQ(registry.All()[0]->config().name, "nlp/chat");
  EXPECT_EQ(registry.All()[0]->config().backends,
            std::vector<std::string>{"http://10.0.0.1:20100"});
  EXPECT_EQ(watcher.current_url(), leader.url());
  EXPECT_GE(standby.requests.load(), 1);
  EXPECT_GE(leader.requests.load(), 1);
  ::close(dead);
}

}  // namespace
}  // namespace tessera::gateway
