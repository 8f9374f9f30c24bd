#include "server/ui_routes.h"

#include <httplib.h>

#include <map>
#include <memory>
#include <string>

#include "server/controller.h"
#include "server/gpu_usage.h"
#include "server/http_helpers.h"
#include "server/node_changes.h"
#include "server/queue_history.h"
#include "spec/document.h"
#include "web/chart_js.h"
#include "web/dashboard_files.h"

namespace tessera {

namespace {

constexpr std::chrono::milliseconds kQueueSampleInterval{5000};
// Without an event, a node's row changes only with its GPUs' use (heartbeats).
constexpr std::chrono::milliseconds kNodeListingMaxAge{1000};

// The ring and the thread that feeds it, alive as long as the route that reads them.
struct QueueHistory {
  explicit QueueHistory(Controller& controller)
      : sampler(
            ring, [&controller] { return controller.ListQueues(); }, kQueueSampleInterval) {}
  QueueShareHistory ring;
  QueueHistorySampler sampler;
};

struct UiFile {
  std::string content_type;
  std::string body;
};

// The embedded files by their path under /ui/, Chart.js among them as chart.js.
std::map<std::string, UiFile> UiFiles() {
  std::map<std::string, UiFile> files;
  for (const auto& f : web::kDashboardFiles) {
    UiFile& file = files[f.path];
    file.content_type = f.content_type;
    for (std::size_t i = 0; i < f.chunk_count; ++i) file.body += f.chunks[i];
  }
  UiFile& chart = files["chart.js"];
  // Not text/javascript: cpp-httplib 0.11 brotli-compresses text/* for a browser at its
  // slowest quality (0.6 s for Chart.js); on loopback or a LAN the plain bytes are faster.
  chart.content_type = "application/javascript; charset=utf-8";
  for (const char* chunk : web::kChartJsChunks) chart.body += chunk;
  return files;
}

void SendFile(httplib::Response& res, const UiFile& file) {
  // Revalidated on every load: a tesserad upgrade brings its own page at once.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'");
  res.set_content(file.body, file.content_type);
}

}  // namespace

void AddUiRoutes(httplib::Server& server, Controller& controller, const AgentClientTls* agent_tls) {
  auto files = std::make_shared<const std::map<std::string, UiFile>>(UiFiles());
  server.Get("/ui",
             [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/ui/"); });
  server.Get("/ui/", [files](const httplib::Request&, httplib::Response& res) {
    SendFile(res, files->at("index.html"));
  });
  server.Get(R"(/ui/([A-Za-z0-9_.-]+))",
             [files](const httplib::Request& req, httplib::Response& res) {
               auto it = files->find(req.matches[1]);
               if (it == files->end()) {
                 res.status = 404;
                 res.set_content("no such dashboard file: " + std::string(req.matches[1]) + "\n",
                                 "text/plain");
                 return;
               }
               SendFile(res, it->second);
             });
  // One scrape of the agents per 2 s, however many dashboards are open.
  auto usage = std::make_shared<GpuUsageCache>(std::chrono::milliseconds(2000), agent_tls);
  server.Get("/v1/usage", [&controller, usage](const httplib::Request&, httplib::Response& res) {
    res.set_content(DumpJson(usage->Get(controller.ListNodes())) + "\n",
                    "application/json; charset=utf-8");
  });
  auto history = std::make_shared<QueueHistory>(controller);
  server.Get("/v1/queues/history", [history](const httplib::Request& req, httplib::Response& res) {
    auto since = IntParam(req, res, "sinceMs", 0, 0, INT64_MAX);
    if (!since) return;
    SendJson(res, 200, history->ring.Since(*since, history->sampler.interval()));
  });
  auto nodes = std::make_shared<NodeChanges>(
      [&controller] { return controller.users().DashboardNodes(); },
      [&controller] { return controller.users().PublishedEventSeq(); }, kNodeListingMaxAge);
  server.Get("/v1/nodes/changes", [nodes](const httplib::Request& req, httplib::Response& res) {
    auto since = IntParam(req, res, "since", 0, 0, INT64_MAX);
    if (!since) return;
    res.set_content(nodes->Since(*since) + "\n", "application/json; charset=utf-8");
  });
}

}  // namespace tessera
