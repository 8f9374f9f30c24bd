// The HTTP front end's request-head parsing: where a head ends, the body's length, the class of
// route, Expect and chunked bodies, and the query rewriting of a released long-poll.
#include "server/request_head.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(RequestHeadTest, IncompleteUntilTheBlankLine) {
  EXPECT_FALSE(ParseRequestHead("GET /v1/healthz HTTP/1.1\r\nHost: x\r\n").head);
  EXPECT_TRUE(ParseRequestHead("GET /v1/healthz HTTP/1.1\r\nHost: x\r\n").error.empty());
  auto p = ParseRequestHead("GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\nrest");
  ASSERT_TRUE(p.head);
  EXPECT_EQ(p.head->head_bytes, 37u);  // 26 + 9 + 2
  EXPECT_EQ(p.head->content_length, 0u);
  EXPECT_EQ(p.head->path, "/v1/healthz");
  EXPECT_EQ(p.head->route, RouteClass::kUser);
}

TEST(RequestHeadTest, BodyLengthClassAndFlags) {
  auto p = ParseRequestHead(
      "POST /v1/agents/node-0/heartbeat?waitMs=1000 HTTP/1.1\r\ncontent-length:  42 \r\n"
      "Expect: 100-continue\r\n\r\n");
  ASSERT_TRUE(p.head) << p.error;
  EXPECT_EQ(p.head->content_length, 42u);
  EXPECT_TRUE(p.head->expects_continue);
  EXPECT_EQ(p.head->route, RouteClass::kAgent);
  EXPECT_EQ(p.head->query, "waitMs=1000");
  EXPECT_EQ(ClassOf("/v1/events"), RouteClass::kLongPoll);
  EXPECT_EQ(ClassOf("/v1/exec/nlp/dev"), RouteClass::kLongPoll);  // reads wait for output
  EXPECT_EQ(ClassOf("/v1/agentsX"), RouteClass::kUser);
  auto chunked = ParseRequestHead("POST /v1/jobs HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  ASSERT_TRUE(chunked.head);
  EXPECT_TRUE(chunked.head->chunked);
}

TEST(RequestHeadTest, MalformedHeadsAreErrors) {
  EXPECT_EQ(ParseRequestHead("NONSENSE\r\n\r\n").error, "malformed request line");
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nno colon\r\n\r\n").error, "malformed header line");
  EXPECT_EQ(ParseRequestHead("POST / HTTP/1.1\r\nContent-Length: 1e9\r\n\r\n").error,
            "Content-Length: not a number");
  EXPECT_EQ(ParseRequestHead("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n").error,
            "Content-Length: not a number");
}

TEST(RequestHeadTest, ExpectRemovedAndQueryRewritten) {
  const std::string req = "POST /v1/jobs HTTP/1.1\r\nExpect: 100-continue\r\nHost: x\r\n\r\nbody";
  auto p = ParseRequestHead(req);
  ASSERT_TRUE(p.head);
  EXPECT_EQ(WithoutExpect(req, *p.head), "POST /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\nbody");
  EXPECT_EQ(WithQueryValue("GET /v1/events?since=5&wait=20&limit=3 HTTP/1.1\r\n\r\n", "wait", "0"),
            "GET /v1/events?since=5&limit=3&wait=0 HTTP/1.1\r\n\r\n");
  EXPECT_EQ(WithQueryValue("GET /v1/events HTTP/1.1\r\n\r\n", "wait", "0"),
            "GET /v1/events?wait=0 HTTP/1.1\r\n\r\n");
  EXPECT_EQ(QueryValue("since=5&wait=20", "wait"), "20");
  EXPECT_EQ(QueryValue("since=5&waiting=20", "wait"), std::nullopt);
}

}  // namespace
}  // namespace tessera
