// The GPU-usage file a task may write (spec/gpu_usage_file.h): it round-trips, and a value out
// of range is refused naming the field and the reason.
#include "spec/gpu_usage_file.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(GpuUsageFileTest, RoundTrips) {
  const GpuUsageReading r{0.42, 2147483648};
  auto back = ParseGpuUsageFile(GpuUsageFileText(r), 80LL << 30);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, r);
  auto no_memory = ParseGpuUsageFile(R"({"utilization": 1})", 0);
  ASSERT_TRUE(no_memory);
  EXPECT_EQ(no_memory->memory_used_bytes, 0);
}

TEST(GpuUsageFileTest, OutOfRangeIsRefusedNamingTheField) {
  auto error = [](const char* text) {
    auto r = ParseGpuUsageFile(text, 1000);
    EXPECT_FALSE(r) << text;
    return r ? std::string() : r.error().message;
  };
  EXPECT_EQ(error(R"({"utilization": 1.5})"), "utilization: must be within [0, 1], got 1.5");
  EXPECT_EQ(error(R"({"utilization": -0.5})"), "utilization: must be within [0, 1], got -0.5");
  EXPECT_EQ(error(R"({"memoryUsedBytes": 5})"), "utilization: required, a number within [0, 1]");
  EXPECT_EQ(error(R"({"utilization": 0.5, "memoryUsedBytes": 5000})"),
            "memoryUsedBytes: must be an integer within [0, 1000] (the GPU's memory), got 5000");
  EXPECT_EQ(error(R"({"utilization": 0.5, "memoryUsedBytes": -1})"),
            "memoryUsedBytes: must be an integer within [0, 1000] (the GPU's memory), got -1");
  EXPECT_EQ(error("half a fi"), "not a JSON object");
}

}  // namespace
}  // namespace tessera
