#include "sim/event_loop.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera {
namespace {

TEST(EventLoop, DispatchesByTimeThenSequenceAndRunsTheHookOncePerInstant) {
  EventLoop<std::string> loop;
  std::vector<std::string> log;
  loop.AddObserver([&](std::int64_t t, const std::string& e) {
    log.push_back("saw " + e + "@" + std::to_string(t));
  });
  loop.Schedule(5, "b");
  loop.Schedule(2, "a");
  loop.Schedule(5, "c");
  loop.Run(
      [&](std::int64_t t, const std::string& e) {
        log.push_back(e);
        if (e == "a") loop.Schedule(t, "a2");  // same instant: after a, before the hook
      },
      [&](std::int64_t t) { log.push_back("hook@" + std::to_string(t)); });
  EXPECT_EQ(log, (std::vector<std::string>{"saw a@2", "a", "saw a2@2", "a2", "hook@2", "saw b@5",
                                           "b", "saw c@5", "c", "hook@5"}));
  EXPECT_EQ(loop.dispatched(), 4u);
  EXPECT_EQ(loop.now(), 5);
}

TEST(EventLoop, StopsAtTheHorizon) {
  EventLoop<int> loop;
  loop.Schedule(1, 1);
  loop.Schedule(10, 2);
  int seen = 0;
  loop.Run([&](std::int64_t, int) { ++seen; }, [](std::int64_t) {}, 5);
  EXPECT_EQ(seen, 1);
  EXPECT_FALSE(loop.empty());
}

}  // namespace
}  // namespace tessera
