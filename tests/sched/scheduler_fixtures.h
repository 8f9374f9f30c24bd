// What the scheduler's tests share: a scheduler from a config the test expects to be valid,
// and a pending job's view.
#pragma once

#include <gtest/gtest.h>

#include "sched/scheduler.h"

namespace tessera {

inline Scheduler ValidScheduler(const SchedulerConfig& config) {
  auto s = Scheduler::Create(config);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  return *s;
}

// `w` waiting, with `remaining` run time left (0 = unknown).
inline JobView Pending(const Workload& w, Tick remaining = 0) {
  JobView v;
  v.job = &w;
  v.remaining = remaining;
  return v;
}

}  // namespace tessera
