#include "spec/openai_request.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(OpenAiRequest, CompletionsWithTextOrTokenIds) {
  auto r = ParseOpenAiRequest(R"({"model":"m","prompt":"a b","max_tokens":7,"stream":true,
                                  "temperature":0.5,"stream_options":{"include_usage":true}})",
                              OpenAiEndpoint::kCompletions);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->model, "m");
  EXPECT_EQ(r->prompt_text, "a b");
  EXPECT_EQ(r->max_tokens, 7);
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  auto ids = ParseOpenAiRequest(R"({"model":"m","prompt":[5,6,7]})", OpenAiEndpoint::kCompletions);
  ASSERT_TRUE(ids.has_value());
  EXPECT_TRUE(ids->has_token_ids);
  EXPECT_EQ(ids->prompt_token_ids, (std::vector<std::int32_t>{5, 6, 7}));
  EXPECT_EQ(ids->max_tokens, 16);  // OpenAI's default
}

TEST(OpenAiRequest, ChatJoinsMessagesOnePerLine) {
  auto r = ParseOpenAiRequest(
      R"({"model":"m","messages":[{"role":"system","content":"be brief"},
          {"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"there"}]}],
          "max_completion_tokens":3})",
      OpenAiEndpoint::kChatCompletions);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->prompt_text, "system: be brief\nuser: hi there");
  EXPECT_EQ(r->max_tokens, 3);
}

TEST(OpenAiRequest, ErrorsNameTheField) {
  struct Case {
    const char* body;
    OpenAiEndpoint endpoint;
    const char* param;
  };
  const Case cases[] = {
      {R"({"prompt":"x"})", OpenAiEndpoint::kCompletions, "model"},
      {R"({"model":"m","prompt":3})", OpenAiEndpoint::kCompletions, "prompt"},
      {R"({"model":"m","prompt":["a","b"]})", OpenAiEndpoint::kCompletions, "prompt"},
      {R"({"model":"m","prompt":[1,"x"]})", OpenAiEndpoint::kCompletions, "prompt[1]"},
      {R"({"model":"m","prompt":"x","max_tokens":-1})", OpenAiEndpoint::kCompletions, "max_tokens"},
      {R"({"model":"m","prompt":"x","n":2})", OpenAiEndpoint::kCompletions, "n"},
      {R"({"model":"m","prompt":"x","temperature":"hot"})", OpenAiEndpoint::kCompletions,
       "temperature"},
      {R"({"model":"m","messages":[]})", OpenAiEndpoint::kChatCompletions, "messages"},
      {R"({"model":"m","messages":[{"content":"x"}]})", OpenAiEndpoint::kChatCompletions,
       "messages[0].role"},
      {R"({"model":"m","messages":[{"role":"user"}]})", OpenAiEndpoint::kChatCompletions,
       "messages[0].content"},
  };
  for (const Case& c : cases) {
    auto r = ParseOpenAiRequest(c.body, c.endpoint);
    ASSERT_FALSE(r.has_value()) << c.body;
    EXPECT_EQ(r.error().http_status, 400);
    EXPECT_EQ(r.error().param, c.param) << c.body << ": " << r.error().message;
    EXPECT_FALSE(r.error().message.empty());
  }
  auto not_json = ParseOpenAiRequest("{", OpenAiEndpoint::kCompletions);
  ASSERT_FALSE(not_json.has_value());
  EXPECT_EQ(not_json.error().message, "request body is not valid JSON");
}

TEST(OpenAiRequest, ErrorObjectHasOpenAisShape) {
  const auto j = OpenAiErrorJson({400, "invalid_request_error", "prompt", "bad", ""});
  EXPECT_EQ(j["error"]["message"], "bad");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "prompt");
  EXPECT_TRUE(j["error"]["code"].is_null());
}

}  // namespace
}  // namespace tessera
