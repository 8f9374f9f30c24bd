// ControllerUrls (several --server URLs) and StandbyLeader (the leader a standby's 503 names).
#include "spec/controller_urls.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(ControllerUrlsTest, ParsesAListAndMovesOnAfterAFailure) {
  auto urls = ControllerUrls::Parse("http://a:1,http://b:2/,http://a:1");
  ASSERT_TRUE(urls.has_value()) << urls.error().message;
  EXPECT_EQ(urls->all(), (std::vector<std::string>{"http://a:1", "http://b:2"}));
  EXPECT_EQ(urls->current(), "http://a:1");
  urls->Next();
  EXPECT_EQ(urls->current(), "http://b:2");
  urls->Next();
  EXPECT_EQ(urls->current(), "http://a:1");
}

TEST(ControllerUrlsTest, FollowsTheLeaderANamedStandbyNames) {
  auto urls = ControllerUrls::Parse("http://a:1,http://b:2");
  ASSERT_TRUE(urls.has_value());
  urls->Follow("http://b:2");
  EXPECT_EQ(urls->current(), "http://b:2");
  urls->Follow("http://c:3");  // not given: added
  EXPECT_EQ(urls->current(), "http://c:3");
  EXPECT_EQ(urls->size(), 3u);
}

TEST(ControllerUrlsTest, RefusesEmptyAndSchemelessEntries) {
  auto empty = ControllerUrls::Parse("http://a:1,,http://b:2");
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("empty URL"), std::string::npos);
  auto bare = ControllerUrls::Parse("a:1");
  ASSERT_FALSE(bare.has_value());
  EXPECT_NE(bare.error().message.find("must start with http://"), std::string::npos);
}

TEST(StandbyLeaderTest, ReadsTheLeaderOnlyFromAStandbysRefusal) {
  EXPECT_EQ(StandbyLeader(503, R"({"error":{"code":"Unavailable","leader":"http://b:2"}})"),
            "http://b:2");
  EXPECT_EQ(StandbyLeader(503, R"({"error":{"code":"Unavailable","leader":null}})"), "");
  // A leader's own 503 (its store failing) names nobody: not a standby's.
  EXPECT_EQ(StandbyLeader(503, R"({"error":{"code":"Unavailable","message":"store"}})"),
            std::nullopt);
  EXPECT_EQ(StandbyLeader(200, R"({"error":{"leader":"http://b:2"}})"), std::nullopt);
  EXPECT_EQ(StandbyLeader(503, "not json"), std::nullopt);
}

}  // namespace
}  // namespace tessera
