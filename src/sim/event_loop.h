// The simulator's event loop: a virtual clock and an EventQueue. Run pops events in (time,
// sequence) order and dispatches each; after the last event of an instant it runs the
// experiment's hook once (a scheduling cycle, a metrics sample), and observers see every event
// before it is dispatched, so that metrics attach without changing the engine (ns-3 style).
// Time is an integer in the experiment's unit (Tick milliseconds for the cluster experiments,
// microseconds for serving). Single-threaded; deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "sim/event_queue.h"

namespace tessera {

template <typename Event>
class EventLoop {
 public:
  using Time = std::int64_t;
  using Observer = std::function<void(Time, const Event&)>;

  // REQUIRES: at >= now().
  void Schedule(Time at, Event event) { queue_.Push(at, std::move(event)); }
  void AddObserver(Observer observer) { observers_.push_back(std::move(observer)); }

  Time now() const { return now_; }
  std::uint64_t dispatched() const { return dispatched_; }
  bool empty() const { return queue_.empty(); }

  // Runs until no event is left or the next one lies past `until`. `dispatch(now, event)` may
  // schedule more events; `after_instant(now)` runs once after each instant's events.
  template <typename Dispatch, typename AfterInstant>
  void Run(Dispatch&& dispatch, AfterInstant&& after_instant, Time until = INT64_MAX) {
    while (!queue_.empty() && queue_.top().time <= until) {
      now_ = queue_.top().time;
      while (!queue_.empty() && queue_.top().time == now_) {
        auto e = queue_.Pop();
        for (const Observer& o : observers_) o(now_, e.payload);
        dispatch(now_, e.payload);
        ++dispatched_;
      }
      after_instant(now_);
    }
  }

 private:
  EventQueue<Event> queue_;
  std::vector<Observer> observers_;
  Time now_ = 0;
  std::uint64_t dispatched_ = 0;
};

}  // namespace tessera
