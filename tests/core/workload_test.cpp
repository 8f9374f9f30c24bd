#include "core/workload.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

// The simulator and the live controller estimate a run's last checkpoint alike: the last whole
// interval of the run, the start itself before the first one.
TEST(LastCheckpointAtTest, TheLastWholeIntervalOfTheRun) {
  const Tick started = 10 * kSecond, interval = 30 * kSecond;
  EXPECT_EQ(LastCheckpointAt(started, started, interval), started);
  EXPECT_EQ(LastCheckpointAt(started, started + 29 * kSecond, interval), started);
  EXPECT_EQ(LastCheckpointAt(started, started + 30 * kSecond, interval), started + interval);
  EXPECT_EQ(LastCheckpointAt(started, started + 95 * kSecond, interval), started + 3 * interval);
  // A clock read before the start (a restart's stamps) never yields a checkpoint before it.
  EXPECT_EQ(LastCheckpointAt(started, started - kSecond, interval), started);
}

}  // namespace
}  // namespace tessera
