// The state every part of the controller works on (the user API, the agent service, the
// scheduling cycle), its one mutex, and the commit that makes a change durable before it is
// applied to memory and its waiters are woken: watchers and long-polling agents on `changed`,
// the scheduling loop on `wake_scheduler`. A failed commit leaves memory untouched.
//
// Thread-safety: members marked "under mu" are read and written with `mu` held.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

#include "core/status.h"
#include "server/change_builder.h"
#include "server/controller_metrics.h"
#include "server/controller_options.h"
#include "server/controller_state.h"
#include "server/event_feed.h"
#include "server/published_status.h"
#include "store/store.h"

namespace tessera {

class ControllerCore {
 public:
  // `store` is not owned and must outlive the core.
  ControllerCore(Store* store, ControllerOptions options);

  Store& store() { return *store_; }
  const ControllerOptions& options() const { return options_; }
  Tick Now() const { return options_.now(); }

  // Loads everything from the store. REQUIRES: mu held, nothing loaded yet.
  Status LoadLocked();

  // Commits `change` and applies it to memory; wakes waiters. REQUIRES: mu held, `change`
  // built over `state`.
  Status CommitLocked(ChangeBuilder& change);

  // Asks the scheduling loop for a cycle soon. REQUIRES: mu held.
  void RequestScheduleLocked();
  // Asks for a cycle as soon as the one running (if any) has ended, without the pause the loop
  // leaves between cycles: a job was submitted that outranks everything pending. REQUIRES: mu.
  void RequestUrgentScheduleLocked();

  // Publishes the state's figures for readers without the lock (published_status.h): after
  // every commit, and by the scheduling cycle. REQUIRES: mu held.
  void PublishLocked() { published.Publish(StatusFiguresOfLocked(state)); }

  // While the last commit failed for the store's sake (not a constraint), a probe write; a
  // success makes the controller ready again. REQUIRES: mu not held.
  void ProbeStoreIfFailing();

  std::mutex mu;
  std::condition_variable changed;         // any commit
  std::condition_variable wake_scheduler;  // a cycle is wanted, or stopping
  std::condition_variable wake_liveness;   // only on stopping
  ControllerState state;                   // under mu
  bool schedule_requested = true;          // under mu
  bool urgent_schedule = false;            // under mu; RequestUrgentScheduleLocked
  bool stopping = false;                   // under mu
  ControllerMetrics metrics;               // its own lock, never mu (controller_metrics.h)
  PublishedStatus published;               // its own lock, never mu
  EventFeed event_feed;                    // its own lock, never mu; the last events committed
  // Why the store last failed to commit (cleared by the next success): healthz is 503 meanwhile.
  std::string store_error;          // under mu
  std::function<void()> on_commit;  // under mu; after every commit (see Controller)

 private:
  Store* store_;
  ControllerOptions options_;
};

}  // namespace tessera
