// ctest-labels: integration
// The dashboard's routes on a real ApiServer over loopback (in process, a real SqliteStore):
// /ui/ serves the page, every file it and its modules load is embedded and served with a type a
// browser accepts for it; JSON is not brotli-compressed for a browser (it would cost seconds at
// a thousand nodes); /v1/nodes gives each GPU's allocation; /v1/usage reads the agents' /metrics
// (one fake agent here) and names the agent that does not answer; /v1/nodes/changes answers only
// what changed and /v1/queues/history the queues' dominant share over time, in bounded memory.
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "server/controller.h"
#include "server/event_feed.h"
#include "server/http_api.h"
#include "server/node_changes.h"
#include "server/queue_history.h"
#include "store/sqlite_store.h"

namespace tessera {
namespace {

using Json = nlohmann::json;

class UiRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-ui-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = SqliteStore::Open(dir_ + "/state.db");
    ASSERT_TRUE(store.has_value()) << store.error().message;
    store_ = std::move(*store);
    ControllerOptions options;
    options.now = [] { return Tick{1'000'000}; };
    auto c = Controller::Create(store_.get(), options);
    ASSERT_TRUE(c.has_value()) << c.error().message;
    controller_ = std::move(*c);
    api_ = std::make_unique<ApiServer>(*controller_, 4);
    auto port = api_->Bind("127.0.0.1", 0);
    ASSERT_TRUE(port.has_value());
    serving_ = std::thread([this] { api_->Serve(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
    client_->set_read_timeout(20, 0);
  }
  void TearDown() override {
    if (api_) api_->Stop();
    if (serving_.joinable()) serving_.join();
    if (agent_) agent_->stop();
    if (agent_thread_.joinable()) agent_thread_.join();
    api_.reset();
    controller_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Register(const std::string& node, const std::string& agent_url) {
    NodeRegistration reg;
    reg.node = node;
    reg.address = "127.0.0.1";
    reg.agent_url = agent_url;
    reg.simulated = true;
    reg.cpu_milli = 64000;
    reg.memory_mib = 512 * 1024;
    for (int i = 0; i < 4; ++i) reg.gpus.push_back({i, "H100", "simulated H100", "SIM", 81920});
    ASSERT_TRUE(controller_->Register(reg).has_value());
  }
  // A stand-in agent whose /metrics reports GPU 1 of node-a half busy.
  std::string StartFakeAgent() {
    agent_ = std::make_unique<httplib::Server>();
    agent_->Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(
          "# TYPE tessera_gpu_utilization_ratio gauge\n"
          "tessera_gpu_utilization_ratio{node=\"node-a\",gpu=\"1\",simulated=\"true\"} 0.5\n"
          "tessera_gpu_memory_used_bytes{node=\"node-a\",gpu=\"1\",simulated=\"true\"} 1024\n",
          "text/plain; version=0.0.4");
    });
    const int port = agent_->bind_to_any_port("127.0.0.1");
    agent_thread_ = std::thread([this] { agent_->listen_after_bind(); });
    return "http://127.0.0.1:" + std::to_string(port);
  }

  std::string dir_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<ApiServer> api_;
  std::thread serving_;
  std::unique_ptr<httplib::Client> client_;
  std::unique_ptr<httplib::Server> agent_;
  std::thread agent_thread_;
};

TEST_F(UiRoutesTest, ThePageAndEveryFileItLoadsAreServed) {
  auto bare = client_->Get("/ui");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->status, 302);
  EXPECT_EQ(bare->get_header_value("Location"), "/ui/");
  auto page = client_->Get("/ui/");
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<script type=\"module\" src=\"app.js\">"), std::string::npos);

  // Every src= and href= of the page, then every module imported, transitively.
  std::set<std::string> seen;
  std::vector<std::string> todo;
  const std::regex ref(R"re((?:src|href)="([a-z_]+\.(?:js|css))")re");
  for (std::sregex_iterator it(page->body.begin(), page->body.end(), ref), end; it != end; ++it)
    todo.push_back((*it)[1]);
  const std::regex import(R"re(from '\./([a-z_]+\.js)')re");
  while (!todo.empty()) {
    const std::string file = todo.back();
    todo.pop_back();
    if (!seen.insert(file).second) continue;
    auto r = client_->Get("/ui/" + file);
    ASSERT_TRUE(r) << file;
    ASSERT_EQ(r->status, 200) << file;
    EXPECT_FALSE(r->body.empty()) << file;
    const std::string type = r->get_header_value("Content-Type");
    if (file.ends_with(".js")) {
      // A module script is refused unless its type is a JavaScript MIME type.
      EXPECT_EQ(type, "application/javascript; charset=utf-8") << file;
      for (std::sregex_iterator it(r->body.begin(), r->body.end(), import), end; it != end; ++it)
        todo.push_back((*it)[1]);
    } else {
      EXPECT_EQ(type, "text/css; charset=utf-8") << file;
    }
  }
  // The page, its style, Chart.js and the modules: app, api, util and the views.
  EXPECT_TRUE(seen.contains("chart.js"));
  EXPECT_TRUE(seen.contains("cluster.js"));
  EXPECT_TRUE(seen.contains("job_page.js"));
  EXPECT_GE(seen.size(), 9u);

  auto missing = client_->Get("/ui/nothing.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(UiRoutesTest, JsonIsNotBrotliCompressedForABrowser) {
  Register("node-a", "http://127.0.0.1:1");
  auto r = client_->Get("/v1/nodes", {{"Accept-Encoding", "gzip, deflate, br"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json; charset=utf-8");
  EXPECT_TRUE(Json::accept(r->body));
}

TEST_F(UiRoutesTest, NodesGiveEachGpusAllocationAndUsageComesFromTheAgents) {
  const std::string agent = StartFakeAgent();
  Register("node-a", agent);
  Register("node-b", "http://127.0.0.1:1");  // nothing listens there
  auto job = controller_->Submit(
      "apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: dev, queue: team}\n"
      "spec: {gpus: 1, command: [sleep, '60']}\n");
  ASSERT_TRUE(job.has_value()) << job.error().error.message;
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);

  auto nodes = client_->Get("/v1/nodes");
  ASSERT_TRUE(nodes);
  const Json doc = Json::parse(nodes->body);
  std::int64_t allocated = 0;
  for (const auto& n : doc["nodes"]) {
    ASSERT_EQ(n["gpuAllocatedMilli"].size(), 4u) << n.dump();
    std::int64_t on_node = 0;
    for (const auto& milli : n["gpuAllocatedMilli"]) on_node += milli.get<std::int64_t>();
    EXPECT_EQ(n["gpusAllocated"].get<double>() * 1000, static_cast<double>(on_node)) << n.dump();
    allocated += on_node;
  }
  EXPECT_EQ(allocated, 1000);  // the one GPU of the DevSession, whole

  auto usage = client_->Get("/v1/usage");
  ASSERT_TRUE(usage);
  ASSERT_EQ(usage->status, 200);
  const Json u = Json::parse(usage->body);
  ASSERT_EQ(u["gpus"].size(), 1u) << u.dump();
  EXPECT_EQ(u["gpus"][0]["node"], "node-a");
  EXPECT_EQ(u["gpus"][0]["gpu"], 1);
  EXPECT_EQ(u["gpus"][0]["utilization"], 0.5);
  EXPECT_EQ(u["gpus"][0]["memoryUsedBytes"], 1024);
  EXPECT_EQ(u["unreachable"], Json::array({"http://127.0.0.1:1"}));
}

// The jobs table asks for the newest: with order=newest a limit keeps the last submitted.
TEST_F(UiRoutesTest, JobsNewestFirstKeepTheNewestUnderALimit) {
  for (const char* name : {"first", "second", "third"}) {
    auto job = controller_->Submit(std::string("apiVersion: tessera/v1\nkind: DevSession\n") +
                                       "metadata: {name: " + name + ", queue: team}\n" +
                                       "spec: {gpus: 1, command: [sleep, '60']}\n",
                                   /*hold=*/true);
    ASSERT_TRUE(job.has_value()) << job.error().error.message;
  }
  auto names = [&](const std::string& query) {
    auto r = client_->Get("/v1/jobs?" + query);
    std::vector<std::string> out;
    if (!r || r->status != 200) {
      ADD_FAILURE() << query << ": " << (r ? r->body : "no answer");
      return out;
    }
    const Json doc = Json::parse(r->body);
    for (const auto& j : doc["jobs"]) out.push_back(j["name"]);
    return out;
  };
  EXPECT_EQ(names("limit=2"), (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(names("limit=2&order=newest"), (std::vector<std::string>{"third", "second"}));
  EXPECT_EQ(names("order=oldest").size(), 3u);
  auto bad = client_->Get("/v1/jobs?order=latest");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("order: expected oldest or newest"), std::string::npos) << bad->body;
}

// Rows are read again when the version moved (or they are max_age old); an allocation, a
// cordon, a new node and a removed one are changes, the same rows read again are not.
TEST(NodeChangesTest, AnswersOnlyWhatChangedSinceAGeneration) {
  auto node = [](std::string name) {
    DashboardNode n;
    n.name = std::move(name);
    n.gpu_count = 2;
    n.gpu_allocated_milli = {0, 0};
    n.gpu_oversold_milli = {0, 0};
    return n;
  };
  std::vector<DashboardNode> listing = {node("a"), node("b")};
  std::int64_t version = 1;
  int reads = 0;
  NodeChanges changes([&] { return ++reads, listing; }, [&] { return version; },
                      std::chrono::hours(1));
  const Json first = Json::parse(changes.Since(0));
  EXPECT_TRUE(first["full"]);
  ASSERT_EQ(first["nodes"].size(), 2u);
  EXPECT_EQ(first["nodes"][0]["gpuOversoldMilli"], Json::array({0, 0}));
  const std::int64_t g1 = first["generation"];
  listing[0].gpu_allocated_milli = {1000, 0};
  // The version did not move: the rows read before answer (one read for any number of asks).
  EXPECT_TRUE(Json::parse(changes.Since(g1))["nodes"].empty());
  EXPECT_EQ(reads, 1);
  version = 2;
  listing[0].gpu_allocated_milli = {0, 0};
  const Json quiet = Json::parse(changes.Since(g1));
  EXPECT_EQ(reads, 2);
  EXPECT_FALSE(quiet["full"]);
  EXPECT_TRUE(quiet["nodes"].empty()) << quiet.dump();
  EXPECT_EQ(quiet["generation"], g1);
  version = 3;
  listing[1].cordoned = true;
  listing[1].gpu_oversold_milli = {0, 800};
  listing[1].oversold_milli = 800;
  listing.push_back(node("c"));
  listing.erase(listing.begin());
  const Json delta = Json::parse(changes.Since(g1));
  EXPECT_FALSE(delta["full"]);
  ASSERT_EQ(delta["nodes"].size(), 2u) << delta.dump();
  EXPECT_EQ(delta["nodes"][0]["name"], "b");
  EXPECT_EQ(delta["nodes"][0]["cordoned"], true);
  EXPECT_EQ(delta["nodes"][0]["oversold"], 0.8);
  EXPECT_EQ(delta["nodes"][0]["gpuOversoldMilli"], Json::array({0, 800}));
  EXPECT_EQ(delta["nodes"][1]["name"], "c");
  EXPECT_EQ(delta["removed"], Json::array({"a"}));
  EXPECT_GT(delta["generation"].get<std::int64_t>(), g1);
  // A generation this controller never gave (another's, or from before it started): in full.
  EXPECT_TRUE(Json::parse(changes.Since(g1 - 10'000'000))["full"]);
  EXPECT_TRUE(Json::parse(changes.Since(delta["generation"].get<std::int64_t>() + 1))["full"]);
}

// The events after a cursor, a page at a time; a cursor older than the feed holds is for the
// store (nullopt); one at or past the last event is answered empty, with the last sequence.
TEST(EventFeedTest, AnswersAfterACursorFromWhatItHolds) {
  auto event = [](std::int64_t seq) { return EventRecord{seq, seq * 10, "T", "job/q/j", ""}; };
  std::deque<EventRecord> state = {event(5), event(6), event(7)};
  EventFeed feed(4);
  feed.Reset(state, 7);
  EXPECT_FALSE(feed.Since(3, 10)) << "event 4 is not held";
  auto page = feed.Since(4, 2);
  ASSERT_TRUE(page);
  ASSERT_EQ(page->events.size(), 2u);
  EXPECT_EQ(page->events[0].seq, 5);
  EXPECT_EQ(page->events[1].seq, 6);
  EXPECT_EQ(page->last_seq, 7);
  state.push_back(event(8));
  state.push_back(event(9));
  state.pop_front();
  feed.AppendNew(state, 9);  // only 8 and 9 are new; the feed keeps 4: 6..9
  EXPECT_EQ(feed.last_seq(), 9);
  EXPECT_FALSE(feed.Since(4, 10));
  page = feed.Since(5, 10);
  ASSERT_TRUE(page);
  ASSERT_EQ(page->events.size(), 4u);
  EXPECT_EQ(page->events.front().seq, 6);
  EXPECT_EQ(page->events.back().seq, 9);
  page = feed.Since(9, 10);
  ASSERT_TRUE(page);
  EXPECT_TRUE(page->events.empty());
  EXPECT_EQ(page->last_seq, 9);
  EXPECT_TRUE(feed.Since(40, 10)->events.empty()) << "another controller's cursor";
}

TEST(QueueShareHistoryTest, SamplesAlignedPerQueueInABoundedRing) {
  QueueShareHistory history(3);
  history.Record(1000, Json::array({{{"name", "a"}, {"dominantShare", 0.25}}}));
  history.Record(2000, Json::array({{{"name", "a"}, {"dominantShare", 0.5}},
                                    {{"name", "b"}, {"leaf", false}, {"dominantShare", 0.1}}}));
  history.Record(3000, Json::array({{{"name", "b"}, {"leaf", false}, {"dominantShare", 0.2}}}));
  Json h = history.Since(0, std::chrono::milliseconds(5000));
  EXPECT_EQ(h["timesMs"], Json::array({1000, 2000, 3000}));
  ASSERT_EQ(h["queues"].size(), 2u);
  EXPECT_EQ(h["queues"][0]["name"], "a");
  EXPECT_EQ(h["queues"][0]["shares"], Json::parse("[0.25, 0.5, null]"));
  EXPECT_EQ(h["queues"][1]["leaf"], false);
  EXPECT_EQ(h["queues"][1]["shares"], Json::parse("[null, 0.1, 0.2]"));
  history.Record(4000, Json::array({{{"name", "a"}, {"dominantShare", 1.0}}}));
  h = history.Since(1500, std::chrono::milliseconds(5000));
  EXPECT_EQ(h["timesMs"], Json::array({2000, 3000, 4000}));  // the oldest fell out of the ring
  EXPECT_EQ(h["queues"][0]["shares"], Json::parse("[0.5, null, 1.0]"));
  EXPECT_EQ(history.Since(3000, std::chrono::milliseconds(5000))["timesMs"], Json::array({4000}));
  Json many = Json::array();
  for (std::size_t i = 0; i < QueueShareHistory::kMaxQueues + 5; ++i)
    many.push_back({{"name", "q" + std::to_string(i)}, {"dominantShare", 0.0}});
  history.Record(5000, many);
  h = history.Since(0, std::chrono::milliseconds(5000));
  EXPECT_EQ(h["queues"].size(), QueueShareHistory::kMaxQueues);
  EXPECT_EQ(h["queuesLeftOut"], 7);  // of the 261, 254 fit beside a and b
}

// The routes: the history has the sample taken when the server started, the changes a full
// listing first and nothing after; bad cursors are refused naming the parameter.
TEST_F(UiRoutesTest, QueueHistoryAndNodeChangesRoutes) {
  Register("node-a", "http://127.0.0.1:1");
  Json history;
  for (int i = 0; i < 50; ++i) {
    auto r = client_->Get("/v1/queues/history");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    history = Json::parse(r->body);
    if (!history["timesMs"].empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(history["intervalMs"], 5000);
  EXPECT_EQ(history["capacity"], 720);
  EXPECT_EQ(history["timesMs"].size(), 1u) << history.dump();
  auto full = client_->Get("/v1/nodes/changes?since=0");
  ASSERT_TRUE(full);
  const Json f = Json::parse(full->body);
  EXPECT_TRUE(f["full"]);
  ASSERT_EQ(f["nodes"].size(), 1u);
  EXPECT_EQ(f["nodes"][0]["name"], "node-a");
  EXPECT_EQ(f["nodes"][0]["gpuAllocatedMilli"].size(), 4u);
  EXPECT_EQ(f["nodes"][0]["gpuOversoldMilli"], Json::array({0, 0, 0, 0}));
  EXPECT_EQ(f["nodes"][0]["oversold"], 0.0);
  auto none = client_->Get(
      ("/v1/nodes/changes?since=" + std::to_string(f["generation"].get<std::int64_t>())).c_str());
  ASSERT_TRUE(none);
  EXPECT_EQ(Json::parse(none->body)["nodes"], Json::array());
  for (const char* bad : {"/v1/nodes/changes?since=x", "/v1/queues/history?sinceMs=-1"}) {
    auto r = client_->Get(bad);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad;
  }
}

}  // namespace
}  // namespace tessera
