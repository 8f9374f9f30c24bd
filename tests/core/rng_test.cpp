#include "core/rng.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera {
namespace {

TEST(RngTest, SameSeedSameSequence) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const auto x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= x != c.Next();
  }
  EXPECT_TRUE(differs);
}

TEST(RngTest, UniformStaysInRangeAndCoversIt) {
  Rng r(1);
  std::vector<int> seen(7);
  for (int i = 0; i < 7000; ++i) {
    const auto v = r.Uniform(7);
    ASSERT_LT(v, 7U);
    ++seen[v];
  }
  for (int n : seen) EXPECT_GT(n, 800);  // 1000 expected each
}

}  // namespace
}  // namespace tessera
