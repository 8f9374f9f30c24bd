#include "server/event_feed.h"

#include <algorithm>

namespace tessera {

void EventFeed::Reset(const std::deque<EventRecord>& events, std::int64_t last_seq) {
  std::lock_guard lock(mu_);
  events_.assign(events.end() - static_cast<std::ptrdiff_t>(std::min(capacity_, events.size())),
                 events.end());
  last_seq_ = last_seq;
}

void EventFeed::AppendNew(const std::deque<EventRecord>& events, std::int64_t last_seq) {
  std::lock_guard lock(mu_);
  auto first_new = events.end();
  while (first_new != events.begin() && std::prev(first_new)->seq > last_seq_) --first_new;
  events_.insert(events_.end(), first_new, events.end());
  while (events_.size() > capacity_) events_.pop_front();
  last_seq_ = std::max(last_seq_, last_seq);
}

std::optional<EventFeed::Page> EventFeed::Since(std::int64_t since, int limit) const {
  std::lock_guard lock(mu_);
  Page page;
  page.last_seq = last_seq_;
  if (since >= last_seq_) return page;
  if (events_.empty() || events_.front().seq > since + 1) return std::nullopt;
  auto it = std::upper_bound(events_.begin(), events_.end(), since,
                             [](std::int64_t s, const EventRecord& e) { return s < e.seq; });
  for (; it != events_.end() && std::ssize(page.events) < limit; ++it) page.events.push_back(*it);
  return page;
}

std::int64_t EventFeed::last_seq() const {
  std::lock_guard lock(mu_);
  return last_seq_;
}

}  // namespace tessera
