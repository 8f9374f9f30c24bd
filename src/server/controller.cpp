#include "server/controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "server/job_limits.h"
#include "server/live_export.h"
#include "server/recovery_step.h"
#include "server/service_scaling.h"

namespace tessera {

Controller::Controller(Store* store, ControllerOptions options, std::set<std::string> leaf_queues)
    : core_(store, std::move(options)),
      users_(core_, std::move(leaf_queues)),
      agents_(core_),
      node_ops_(core_),
      cycle_(core_, std::random_device{}()),
      metrics_view_(core_, std::chrono::milliseconds(core_.options().metrics_gather_interval_ms)) {
  core_.metrics.set_enabled(core_.options().metrics);
}

Controller::~Controller() { Stop(); }

ApiResult<nlohmann::json> Controller::Export() { return ExportLiveState(core_); }

Result<std::unique_ptr<Controller>> Controller::Create(Store* store, ControllerOptions options) {
  auto leaves = CheckControllerOptions(options);
  if (!leaves) return std::unexpected(leaves.error());
  std::unique_ptr<Controller> c(new Controller(store, std::move(options), std::move(*leaves)));
  ControllerCore& core = c->core_;
  std::lock_guard lock(core.mu);
  core.state.started_ms = core.Now();
  if (auto s = core.LoadLocked(); !s) return std::unexpected(s.error());
  if (auto s = CheckSparesFitLocked(core.state, core.options()); !s)
    return std::unexpected(s.error());
  core.state.load_ms = core.Now() - core.state.started_ms;
  core.state.loaded_jobs = core.state.jobs.size();
  core.PublishLocked();
  return c;
}

void Controller::Start() {
  metrics_view_.Refresh();  // the node gauges before the liveness loop's first refresh
  std::lock_guard lock(core_.mu);
  if (scheduler_thread_.joinable()) return;
  core_.stopping = false;
  scheduler_thread_ = std::thread([this] { SchedulerLoop(); });
  liveness_thread_ = std::thread([this] { LivenessLoop(); });
  autoscale_thread_ = std::thread([this] { AutoscaleLoop(); });
}

void Controller::Stop() {
  {
    std::lock_guard lock(core_.mu);
    core_.stopping = true;
  }
  core_.wake_scheduler.notify_all();
  core_.wake_liveness.notify_all();
  core_.changed.notify_all();
  if (scheduler_thread_.joinable()) scheduler_thread_.join();
  if (liveness_thread_.joinable()) liveness_thread_.join();
  if (autoscale_thread_.joinable()) autoscale_thread_.join();
}

nlohmann::json Controller::Health() {
  std::lock_guard lock(core_.mu);
  nlohmann::json health = {{"ok", core_.store_error.empty()}};
  if (!core_.store_error.empty()) health["storeError"] = core_.store_error;
  if (!core_.state.scheduler_problem.empty())
    health["schedulerError"] = core_.state.scheduler_problem;
  return health;
}

// The event feed's, not the state's: the front end's event thread asks on every long-poll and
// every commit, and must not wait for a scheduling cycle's lock (event_feed.h).
std::int64_t Controller::LastEventSeq() { return core_.event_feed.last_seq(); }

void Controller::SetCommitListener(std::function<void()> listener) {
  std::lock_guard lock(core_.mu);
  core_.on_commit = std::move(listener);
}

void Controller::SchedulerLoop() {
  const auto gap = std::chrono::milliseconds(core_.options().min_cycle_gap_ms);
  while (true) {
    {
      std::unique_lock lock(core_.mu);
      core_.wake_scheduler.wait_for(lock,
                                    std::chrono::milliseconds(core_.options().schedule_interval_ms),
                                    [this] { return core_.stopping || core_.schedule_requested; });
      if (core_.stopping) return;
      core_.schedule_requested = false;
      core_.urgent_schedule = false;
    }
    cycle_.Run();
    // Bursts of changes share the next cycle; the lock is left to submissions and agents at
    // least as long as the cycle held it, unless a job came in that outranks everything
    // pending: then only the short gap, so that it binds in the next cycle, not a pause later.
    const auto pause = std::max<std::chrono::steady_clock::duration>(cycle_.last_locked(), gap);
    std::unique_lock lock(core_.mu);
    core_.wake_scheduler.wait_for(lock, pause,
                                  [this] { return core_.stopping || core_.urgent_schedule; });
    if (core_.urgent_schedule) {
      lock.unlock();
      std::this_thread::sleep_for(gap);  // urgent submissions arriving together share a cycle
    }
  }
}

void Controller::LivenessLoop() {
  const auto period = std::chrono::milliseconds(
      std::clamp<Tick>(core_.options().heartbeat_timeout_ms / 10, 50, 1000));
  while (true) {
    {
      std::unique_lock lock(core_.mu);
      core_.wake_liveness.wait_for(lock, period, [this] { return core_.stopping; });
      if (core_.stopping) return;
    }
    core_.ProbeStoreIfFailing();
    agents_.CheckLiveness();
    EnforceTimeLimits(core_);
    metrics_view_.RefreshIfDue();
  }
}

void Controller::RunAutoscaleTick(SignalReader& reader) {
  std::vector<ScaleTarget> targets;
  {
    std::lock_guard lock(core_.mu);
    targets = ScaleTargets(core_.state);
  }
  if (targets.empty()) return;
  // Replicas and the gateway are asked without the lock: a slow replica holds up no one else.
  const auto signals = reader.Read(ReplicaUrls(targets));
  {
    std::lock_guard lock(core_.mu);
    const DrainOptions drain{core_.options().drain_min_ms, core_.options().drain_timeout_ms};
    if (auto s = ApplyScalingLocked(core_, targets, signals, drain); !s)
      spdlog::warn("autoscaling: {}", s.error().message);
    if (core_.schedule_requested) core_.wake_scheduler.notify_all();
  }
  // /metrics shows the services' new replica counts from this tick on (metrics_view.h).
  metrics_view_.Refresh();
}

void Controller::AutoscaleLoop() {
  const auto period = std::chrono::milliseconds(core_.options().autoscale_interval_ms);
  // A replica that does not answer within half the period is left out of this tick's sample.
  SignalReader reader(
      core_.options().gateway_url,
      static_cast<int>(std::clamp<Tick>(core_.options().autoscale_interval_ms / 2, 100, 2000)));
  while (true) {
    {
      std::unique_lock lock(core_.mu);
      core_.wake_liveness.wait_for(lock, period, [this] { return core_.stopping; });
      if (core_.stopping) return;
    }
    RunAutoscaleTick(reader);
  }
}

}  // namespace tessera
