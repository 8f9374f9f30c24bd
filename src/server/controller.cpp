#include "server/controller.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "server/job_limits.h"
#include "server/recovery_step.h"

namespace tessera {

Controller::Controller(Store* store, ControllerOptions options, std::set<std::string> leaf_queues)
    : core_(store, std::move(options)),
      users_(core_, std::move(leaf_queues)),
      agents_(core_),
      node_ops_(core_),
      cycle_(core_, std::random_device{}()) {}

Controller::~Controller() { Stop(); }

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
  return c;
}

void Controller::Start() {
  std::lock_guard lock(core_.mu);
  if (scheduler_thread_.joinable()) return;
  core_.stopping = false;
  scheduler_thread_ = std::thread([this] { SchedulerLoop(); });
  liveness_thread_ = std::thread([this] { LivenessLoop(); });
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
}

nlohmann::json Controller::Health() {
  std::lock_guard lock(core_.mu);
  nlohmann::json health = {{"ok", true}};
  if (!core_.state.scheduler_problem.empty())
    health["schedulerError"] = core_.state.scheduler_problem;
  return health;
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
    }
    cycle_.Run();
    // Bursts of changes share the next cycle; the lock is left to submissions and agents at
    // least as long as the cycle held it.
    std::this_thread::sleep_for(
        std::max<std::chrono::steady_clock::duration>(cycle_.last_locked(), gap));
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
    agents_.CheckLiveness();
    EnforceTimeLimits(core_);
  }
}

}  // namespace tessera
