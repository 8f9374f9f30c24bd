#include "server/cycle_record.h"

#include <nlohmann/json.hpp>

#include "core/task_place_text.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

// Appends entries to one JSON array's text while the whole message stays under a budget;
// once one did not fit the rest are only counted (not even built: full()).
class BoundedList {
 public:
  explicit BoundedList(std::size_t* budget) : budget_(budget) {}
  bool full() const { return omitted_ > 0; }
  void Omit() { ++omitted_; }
  void Add(const Json& entry) {
    std::string text = entry.dump();
    if (text.size() + 1 > *budget_) {
      ++omitted_;
      return;
    }
    *budget_ -= text.size() + 1;
    if (!text_.empty()) text_ += ',';
    text_ += text;
  }
  std::string Text() const { return "[" + text_ + "]"; }
  int omitted() const { return omitted_; }

 private:
  std::size_t* budget_;
  std::string text_;
  int omitted_ = 0;
};

std::string JobName(const ControllerState& state, std::int64_t id) {
  auto it = state.jobs.find(id);
  return it == state.jobs.end() ? std::to_string(id)
                                : it->second.rec.queue + "/" + it->second.rec.name;
}

Json Places(const Placement& placement, const CycleCluster& cluster) {
  Json on = Json::array();
  for (const TaskPlacement& tp : placement) {
    const std::string& node = tp.node.value < cluster.node_names.size()
                                  ? cluster.node_names[tp.node.value]
                                  : std::to_string(tp.node.value);
    on.push_back(TaskPlaceText(node, tp.gpu_mask, tp.gpu_milli));
  }
  return on;
}

}  // namespace

std::string CycleRecordMessage(const CycleClock& at, const AppliedDecisions& a,
                               const ControllerState& state, const CycleCluster& cluster,
                               std::size_t max_bytes) {
  Json head = {{"clock", at.clock},
               {"seed", at.seed},
               {"cycle", at.cycle},
               {"bound", a.bound},
               {"preempted", a.preempted},
               {"resized", a.resized},
               {"unschedulable", a.unschedulable},
               {"deferred", a.deferred},
               {"dropped", a.dropped}};
  std::string text = head.dump();
  // What the lists may take: the budget less the head and the keys around them.
  constexpr std::size_t kFrame = 160;
  std::size_t budget = max_bytes > text.size() + kFrame ? max_bytes - text.size() - kFrame : 0;
  BoundedList binds(&budget), preemptions(&budget), resizes(&budget);
  for (const AppliedBind& b : a.binds) {
    if (binds.full()) {
      binds.Omit();
      continue;
    }
    binds.Add({{"job", JobName(state, b.job_id)},
               {"unit", b.unit},
               {"attempt", b.attempt},
               {"on", Places(b.placement, cluster)}});
  }
  for (const AppliedPreemption& p : a.preemptions) {
    Json entry = {{"job", JobName(state, p.job_id)}, {"unit", p.unit}};
    if (p.by_job != 0) entry["by"] = JobName(state, p.by_job);
    preemptions.Add(entry);
  }
  for (const auto& [job_id, target] : a.resizes) {
    if (resizes.full()) {
      resizes.Omit();
      continue;
    }
    resizes.Add({{"job", JobName(state, job_id)},
                 {"unit", target.unit},
                 {"workers", target.placement.size()},
                 {"on", Places(target.placement, cluster)}});
  }
  const int omitted = binds.omitted() + preemptions.omitted() + resizes.omitted();
  text.pop_back();  // the head's closing brace
  text += ",\"binds\":" + binds.Text() + ",\"preemptions\":" + preemptions.Text() +
          ",\"resizes\":" + resizes.Text() + ",\"truncated\":" + (omitted > 0 ? "true" : "false");
  if (omitted > 0) {
    text += ",\"omitted\":" + Json{{"binds", binds.omitted()},
                                   {"preemptions", preemptions.omitted()},
                                   {"resizes", resizes.omitted()}}
                                  .dump();
  }
  return text + "}";
}

}  // namespace tessera
