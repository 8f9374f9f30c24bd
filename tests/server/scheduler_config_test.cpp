// The controller's scheduler YAML: the backfill, GPU-model and elastic keys, and errors that
// name the file and the key.
#include "server/scheduler_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace tessera {
namespace {

std::string Write(const std::string& text) {
  const std::string path = "/tmp/tessera-scheduler-config-" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(SchedulerConfigTest, BackfillAndGpuModelKeys) {
  const std::string path = Write(
      "queuePolicy: backfill\nbackfillReservation: gpu-count\ngpuModelChoice: blind\n"
      "elastic: false\n");
  auto c = LoadSchedulerConfig(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->backfill_reservation, "gpu-count");
  EXPECT_EQ(c->gpu_model_choice, "blind");
  EXPECT_FALSE(c->elastic);
  std::remove(path.c_str());
}

TEST(SchedulerConfigTest, BadValuesNameTheFileAndTheKey) {
  struct Case {
    const char* text;
    const char* want;
  };
  for (const Case& k : {Case{"backfillReservation: nearest\n", "backfillReservation: 'nearest'"},
                        Case{"gpuModelChoice: gavel\n", "gpuModelChoice: 'gavel'"},
                        Case{"elastic: true\n", "elastic: resizing running jobs is not supported"},
                        Case{"backfilReservation: domain\n", "backfilReservation: unknown key"}}) {
    const std::string path = Write(k.text);
    auto c = LoadSchedulerConfig(path);
    ASSERT_FALSE(c) << k.text;
    EXPECT_NE(c.error().message.find(path + ": " + k.want), std::string::npos) << c.error().message;
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace tessera
