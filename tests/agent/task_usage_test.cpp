// The agent's reading of its tasks' usage files (agent/task_usage.h): one report per GPU the
// task holds, nothing before the file exists, and a bad file ignored with its reason logged
// once until the reason changes.
#include "agent/task_usage.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tessera {
namespace {

TEST(TaskUsageTest, ReportsPerGpuAndLogsABadFileOnce) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tessera-task-usage-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "usage");
  const std::string path = TaskUsagePath(dir.string(), 7);
  EXPECT_EQ(path, (dir / "usage" / "task-7.json").string());
  std::vector<std::string> logged;
  TaskUsageReader reader([&](const std::string& node, const std::string& msg) {
    logged.push_back(node + ": " + msg);
  });
  std::vector<GpuUsageReport> out;
  reader.Read(7, "n0", path, {2, 3}, 1000, out);
  EXPECT_TRUE(out.empty());  // not written yet
  std::ofstream(path) << R"({"utilization": 0.5, "memoryUsedBytes": 100})";
  reader.Read(7, "n0", path, {2, 3}, 1000, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (GpuUsageReport{7, 2, 0.5, 100}));
  EXPECT_EQ(out[1], (GpuUsageReport{7, 3, 0.5, 100}));
  out.clear();
  std::ofstream(path) << R"({"utilization": 3})";
  reader.Read(7, "n0", path, {2}, 1000, out);
  reader.Read(7, "n0", path, {2}, 1000, out);
  EXPECT_TRUE(out.empty());
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("n0: task 7: usage file"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("ignored: utilization: must be within [0, 1], got 3"), std::string::npos)
      << logged[0];
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
