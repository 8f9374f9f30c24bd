#include "spec/engine_profile_yaml.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(EngineProfileYaml, ReadsFieldsAndKeepsDefaultsForTheRest) {
  auto p = ParseEngineProfile(R"(apiVersion: tessera/v1
kind: EngineProfile
metadata: {name: llama3-70b-h100x4}
spec:
  model: meta-llama/Meta-Llama-3-70B
  gpu: 4xH100
  stepBaseUs: 9000
  prefillUsPerToken: 70.5
  kvCacheTokens: 900000
  hostCacheTokens: 4000000
)");
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_EQ(p->name, "llama3-70b-h100x4");
  EXPECT_EQ(p->gpu, "4xH100");
  EXPECT_DOUBLE_EQ(p->step_base_us, 9000);
  EXPECT_DOUBLE_EQ(p->prefill_us_per_token, 70.5);
  EXPECT_EQ(p->kv_cache_tokens, 900000);
  EXPECT_EQ(p->host_cache_tokens, 4000000);
  EXPECT_EQ(p->max_batched_tokens, EngineProfile{}.max_batched_tokens);
}

TEST(EngineProfileYaml, ErrorsNameTheField) {
  const auto error = [](const char* text) {
    auto p = ParseEngineProfile(text);
    return p ? std::string("accepted") : p.error().message;
  };
  const std::string head = "apiVersion: tessera/v1\nkind: EngineProfile\nmetadata: {name: x}\n";
  EXPECT_EQ(error((head + "spec: {stepBaseUs: -1}").c_str()), "spec.stepBaseUs: must be positive");
  EXPECT_EQ(error((head + "spec: {kvCacheTokens: 1.5}").c_str()),
            "spec.kvCacheTokens: must be a whole number");
  EXPECT_EQ(error((head + "spec: {prefilUsPerToken: 3}").c_str()),
            "spec.prefilUsPerToken: unknown field for EngineProfile");
  EXPECT_EQ(error((head + "spec: {maxBatchedTokens: 8}").c_str()),
            "spec.maxBatchedTokens: must exceed spec.maxBatchSequences");
  EXPECT_EQ(error("apiVersion: tessera/v1\nkind: Job\n"), "kind: must be EngineProfile");
  EXPECT_EQ(error("apiVersion: tessera/v1\nkind: EngineProfile\n"),
            "metadata.name: is required (a non-empty string)");
}

TEST(EngineProfileYaml, BuiltinByName) {
  auto p = LoadEngineProfile("llama3-8b-h100");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->kv_cache_tokens, EngineProfile{}.kv_cache_tokens);
  auto missing = LoadEngineProfile("/nonexistent/profile.yaml");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("neither a built-in profile"), std::string::npos);
}

}  // namespace
}  // namespace tessera
