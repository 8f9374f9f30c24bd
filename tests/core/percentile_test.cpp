// Percentile interpolates between the nearest ranks and is 0 for an empty sample.
#include "core/percentile.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(PercentileTest, InterpolatesBetweenRanks) {
  EXPECT_EQ(Percentile({}, 50), 0);
  EXPECT_EQ(Percentile({4, 1, 3, 2}, 0), 1);
  EXPECT_EQ(Percentile({4, 1, 3, 2}, 100), 4);
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({10, 20}, 99), 19.9);
}

}  // namespace
}  // namespace tessera
