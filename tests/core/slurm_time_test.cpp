// Slurm's duration formats (sbatch --time, sacct Elapsed) and sacct's timestamps.
#include "core/slurm_time.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(SlurmTimeTest, EveryDurationFormatOfSbatchTime) {
  EXPECT_EQ(ParseSlurmDuration("30").value(), 30 * 60);          // minutes
  EXPECT_EQ(ParseSlurmDuration("30:15").value(), 30 * 60 + 15);  // minutes:seconds
  EXPECT_EQ(ParseSlurmDuration("2:30:15").value(), 9015);        // hours:minutes:seconds
  EXPECT_EQ(ParseSlurmDuration("1-12").value(), 36 * 3600);      // days-hours
  EXPECT_EQ(ParseSlurmDuration("1-12:30").value(), 36 * 3600 + 1800);
  EXPECT_EQ(ParseSlurmDuration("1-02:00:30").value(), 26 * 3600 + 30);
  EXPECT_EQ(ParseSlurmDuration("00:00:00").value(), 0);
  EXPECT_EQ(ParseSlurmDuration("UNLIMITED").value(), 0);
  EXPECT_EQ(ParseSlurmDuration("INFINITE").value(), 0);
}

TEST(SlurmTimeTest, MalformedDurationsAreRefused) {
  for (const char* bad : {"", "1:2:3:4", "ab", "1-", "-5", "1h", "1--2", "10:xx"}) {
    auto d = ParseSlurmDuration(bad);
    EXPECT_FALSE(d.has_value()) << bad;
    if (!d) {
      EXPECT_NE(d.error().find("is not a Slurm time"), std::string::npos) << d.error();
    }
  }
}

TEST(SlurmTimeTest, TimestampsAreSecondsSinceTheEpoch) {
  EXPECT_EQ(ParseSlurmTimestamp("1970-01-01T00:00:00").value(), 0);
  EXPECT_EQ(ParseSlurmTimestamp("2024-03-01T09:00:00").value(), 1709283600);
  // Leap day and the turn of a year.
  EXPECT_EQ(ParseSlurmTimestamp("2024-03-01T00:00:00").value() -
                ParseSlurmTimestamp("2024-02-28T00:00:00").value(),
            2 * 86400);
  EXPECT_EQ(ParseSlurmTimestamp("2025-01-01T00:00:00").value() -
                ParseSlurmTimestamp("2024-12-31T23:59:59").value(),
            1);
  for (const char* bad : {"Unknown", "2024-03-01 09:00:00", "2024-13-01T00:00:00",
                          "2024-03-01T25:00:00", "2024-03-01T09:00"}) {
    EXPECT_FALSE(ParseSlurmTimestamp(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace tessera
