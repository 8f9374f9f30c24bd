#include "server/published_status.h"

namespace tessera {

std::shared_ptr<const StatusFigures> StatusFiguresOfLocked(const ControllerState& state) {
  auto f = std::make_shared<StatusFigures>();
  f->started_ms = state.started_ms;
  f->load_ms = state.load_ms;
  f->loaded_jobs = state.loaded_jobs;
  f->first_decision_ms = state.first_decision_ms;
  for (int p = 0; p < api::kJobPhaseCount; ++p)
    f->jobs_by_phase[static_cast<std::size_t>(p)] =
        static_cast<int>(state.index.ids(static_cast<api::JobPhase>(p)).size());
  f->job_counts = state.index.counts();
  f->queues = state.index.usage();
  for (const auto& [name, q] : state.queues) f->queues[name];
  f->queue_tree = state.queue_tree;
  f->nodes = state.nodes.size();
  f->node_generation = state.node_generation;
  for (const auto& [name, ns] : state.nodes) f->ready_nodes += ns.rec.status == NodeStatus::kReady;
  f->cycles = state.cycles;
  f->last_event_seq = state.last_seq;
  f->free_gpu_milli = state.last_free_gpu_milli;
  f->scheduler_problem = state.scheduler_problem;
  return f;
}

void PublishedStatus::Publish(std::shared_ptr<const StatusFigures> figures) {
  std::lock_guard lock(mu_);
  figures_ = std::move(figures);
}

std::shared_ptr<const StatusFigures> PublishedStatus::Get() const {
  std::lock_guard lock(mu_);
  return figures_;
}

}  // namespace tessera
