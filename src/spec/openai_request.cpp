#include "spec/openai_request.h"

#include <limits>

#include "spec/strict_json.h"

namespace tessera {

namespace {

using Json = nlohmann::json;
using Failure = std::unexpected<OpenAiError>;

Failure Bad(std::string param, std::string message) {
  return Failure(
      OpenAiError{400, "invalid_request_error", std::move(param), std::move(message), ""});
}

std::string TypeName(const Json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

// The prompt of /v1/completions: a string, a list of one string, or a list of token ids.
std::optional<OpenAiError> ReadPrompt(const Json& prompt, OpenAiRequest& out) {
  if (prompt.is_string()) {
    out.prompt_text = prompt.get<std::string>();
    return std::nullopt;
  }
  if (!prompt.is_array() || prompt.empty()) {
    return Bad("prompt", "must be a string or a non-empty array, got " + TypeName(prompt)).error();
  }
  if (prompt[0].is_string()) {
    if (prompt.size() != 1) {
      return Bad("prompt", "a batch of several prompts is not supported; send one per request")
          .error();
    }
    out.prompt_text = prompt[0].get<std::string>();
    return std::nullopt;
  }
  out.has_token_ids = true;
  out.prompt_token_ids.reserve(prompt.size());
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    const Json& t = prompt[i];
    if (!t.is_number_integer() || t.get<std::int64_t>() < 0 ||
        t.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max()) {
      return Bad("prompt[" + std::to_string(i) + "]", "must be a token id (an integer >= 0)")
          .error();
    }
    out.prompt_token_ids.push_back(static_cast<std::int32_t>(t.get<std::int64_t>()));
  }
  return std::nullopt;
}

std::optional<OpenAiError> ReadMessages(const Json& messages, OpenAiRequest& out) {
  if (!messages.is_array() || messages.empty()) {
    return Bad("messages", "must be a non-empty array of {role, content}").error();
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const Json& m = messages[i];
    if (!m.is_object()) return Bad(at, "must be an object, got " + TypeName(m)).error();
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      return Bad(at + ".role", "is required and must be a string").error();
    }
    auto content = m.find("content");
    std::string text;
    if (content == m.end() || content->is_null()) {
      return Bad(at + ".content", "is required").error();
    } else if (content->is_string()) {
      text = content->get<std::string>();
    } else if (content->is_array()) {  // [{type: "text", text}] parts
      for (std::size_t k = 0; k < content->size(); ++k) {
        const Json& part = (*content)[k];
        auto t = part.is_object() ? part.find("text") : part.end();
        if (!part.is_object() || t == part.end() || !t->is_string()) {
          return Bad(at + ".content[" + std::to_string(k) + "]", "must be {type: text, text}")
              .error();
        }
        if (!text.empty()) text += ' ';
        text += t->get<std::string>();
      }
    } else {
      return Bad(at + ".content",
                 "must be a string or an array of text parts, got " + TypeName(*content))
          .error();
    }
    if (!out.prompt_text.empty()) out.prompt_text += '\n';
    out.prompt_text += role->get<std::string>() + ": " + text;
  }
  return std::nullopt;
}

// Known optional fields and the JSON type each must have; unknown fields are ignored.
std::optional<OpenAiError> CheckOptionalTypes(const Json& doc) {
  struct Field {
    const char* name;
    bool (*ok)(const Json&);
    const char* expected;
  };
  static const Field fields[] = {
      {"temperature", [](const Json& v) { return v.is_number(); }, "a number"},
      {"top_p", [](const Json& v) { return v.is_number(); }, "a number"},
      {"n", [](const Json& v) { return v.is_number_integer() && v.get<std::int64_t>() == 1; },
       "1 (one choice per request)"},
      {"stop", [](const Json& v) { return v.is_string() || v.is_array(); }, "a string or an array"},
      {"user", [](const Json& v) { return v.is_string(); }, "a string"},
      {"stream_options", [](const Json& v) { return v.is_object(); }, "an object"},
  };
  for (const Field& f : fields) {
    auto it = doc.find(f.name);
    if (it != doc.end() && !it->is_null() && !f.ok(*it)) {
      return Bad(f.name, std::string("must be ") + f.expected + ", got " + TypeName(*it)).error();
    }
  }
  return std::nullopt;
}

}  // namespace

Json OpenAiErrorJson(const OpenAiError& e) {
  return {{"error",
           {{"message", e.message},
            {"type", e.type},
            {"param", e.param.empty() ? Json(nullptr) : Json(e.param)},
            {"code", e.code.empty() ? Json(nullptr) : Json(e.code)}}}};
}

std::expected<OpenAiRequest, OpenAiError> ParseOpenAiRequest(std::string_view body,
                                                             OpenAiEndpoint endpoint) {
  if (body.size() > kMaxOpenAiBodyBytes) {
    return Bad("", "request body too large (at most 8 MiB)");
  }
  auto parsed = ParseStrictJson(body);
  if (!parsed) {
    // A duplicate key or an absurd number names its field; a syntax error does not.
    const std::string& why = parsed.error().message;
    if (why.starts_with("invalid JSON")) return Bad("", "request body is not valid JSON");
    return Bad(why.substr(0, why.find(':')), why);
  }
  const Json& doc = *parsed;
  if (!doc.is_object()) return Bad("", "request body must be a JSON object");
  OpenAiRequest out;
  out.endpoint = endpoint;
  auto model = doc.find("model");
  if (model == doc.end() || !model->is_string() || model->get<std::string>().empty()) {
    return Bad("model", "is required and must be a non-empty string");
  }
  out.model = model->get<std::string>();
  if (endpoint == OpenAiEndpoint::kCompletions) {
    auto prompt = doc.find("prompt");
    if (prompt == doc.end() || prompt->is_null()) return Bad("prompt", "is required");
    if (auto e = ReadPrompt(*prompt, out)) return Failure(*e);
  } else {
    auto messages = doc.find("messages");
    if (messages == doc.end() || messages->is_null()) return Bad("messages", "is required");
    if (auto e = ReadMessages(*messages, out)) return Failure(*e);
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) continue;
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1 ||
        it->get<std::int64_t>() > kMaxOpenAiOutputTokens) {
      return Bad(key, "must be an integer between 1 and " + std::to_string(kMaxOpenAiOutputTokens));
    }
    out.max_tokens = it->get<std::int64_t>();
  }
  if (auto it = doc.find("stream"); it != doc.end() && !it->is_null()) {
    if (!it->is_boolean()) return Bad("stream", "must be a boolean, got " + TypeName(*it));
    out.stream = it->get<bool>();
  }
  if (auto e = CheckOptionalTypes(doc)) return Failure(*e);
  if (auto so = doc.find("stream_options"); so != doc.end() && so->is_object()) {
    if (auto u = so->find("include_usage"); u != so->end() && !u->is_null()) {
      if (!u->is_boolean()) return Bad("stream_options.include_usage", "must be a boolean");
      out.include_usage = u->get<bool>();
    }
  }
  return out;
}

}  // namespace tessera
