// The simulator's event queue: events ordered by (time, sequence number), so that events at
// the same instant run in the order they were scheduled, on every run.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "core/time.h"

namespace tessera {

template <typename Payload>
class EventQueue {
 public:
  struct Event {
    Tick time;
    std::uint64_t seq;
    Payload payload;
  };

  void Push(Tick time, Payload payload) { heap_.push(Event{time, next_seq_++, std::move(payload)}); }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.top(); }
  Event Pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace tessera
