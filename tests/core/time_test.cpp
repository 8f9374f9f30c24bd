// FromSeconds rounds to the millisecond and saturates instead of overflowing: a duration read
// from a file (1e117 seconds, found by the queue_file fuzzer) must not be undefined behaviour.
#include "core/time.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tessera {
namespace {

TEST(TimeTest, FromSecondsRoundsAndSaturates) {
  EXPECT_EQ(FromSeconds(1.5), 1500);
  EXPECT_EQ(FromSeconds(0.0004), 0);
  EXPECT_EQ(FromSeconds(-2.0006), -2001);
  EXPECT_EQ(FromSeconds(7e117), kNever);
  EXPECT_EQ(FromSeconds(-7e117), -kNever);
  EXPECT_EQ(FromSeconds(std::numeric_limits<double>::infinity()), kNever);
  EXPECT_EQ(FromSeconds(std::nan("")), 0);
}

}  // namespace
}  // namespace tessera
