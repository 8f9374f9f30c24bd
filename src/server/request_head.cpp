#include "server/request_head.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace tessera {

namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

const char* RouteClassName(RouteClass c) {
  switch (c) {
    case RouteClass::kAgent:
      return "agent";
    case RouteClass::kLongPoll:
      return "long-poll";
    case RouteClass::kUser:
      return "user";
  }
  return "user";
}

RouteClass ClassOf(std::string_view path) {
  if (path.starts_with("/v1/agents/")) return RouteClass::kAgent;
  if (path == "/v1/events" || path.starts_with("/v1/exec/")) return RouteClass::kLongPoll;
  return RouteClass::kUser;
}

HeadParse ParseRequestHead(std::string_view buffer) {
  HeadParse out;
  const auto end = buffer.find("\r\n\r\n");
  if (end == std::string_view::npos) return out;
  RequestHead head;
  head.head_bytes = end + 4;
  std::string_view rest = buffer.substr(0, end + 2);
  const auto line_end = rest.find("\r\n");
  const std::string_view line = rest.substr(0, line_end);
  rest.remove_prefix(line_end + 2);
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos) {
    out.error = "malformed request line";
    return out;
  }
  head.method = std::string(line.substr(0, sp1));
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const auto question = target.find('?');
  head.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) head.query = std::string(target.substr(question + 1));
  head.route = ClassOf(head.path);
  while (!rest.empty()) {
    const auto eol = rest.find("\r\n");
    const std::string_view header = rest.substr(0, eol);
    rest.remove_prefix(eol + 2);
    const auto colon = header.find(':');
    if (colon == std::string_view::npos) {
      out.error = "malformed header line";
      return out;
    }
    const std::string_view name = header.substr(0, colon);
    const std::string_view value = Trim(header.substr(colon + 1));
    if (EqualsIgnoreCase(name, "Content-Length")) {
      std::size_t n = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || ptr != value.data() + value.size()) {
        out.error = "Content-Length: not a number";
        return out;
      }
      head.content_length = n;
    } else if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
      head.chunked = !EqualsIgnoreCase(value, "identity");
    } else if (EqualsIgnoreCase(name, "Expect")) {
      head.expects_continue = EqualsIgnoreCase(value, "100-continue");
    } else if (EqualsIgnoreCase(name, "Authorization")) {
      head.authorization = std::string(value);
    }
  }
  out.head = std::move(head);
  return out;
}

std::string WithoutExpect(std::string_view request, const RequestHead& head) {
  std::string out;
  out.reserve(request.size());
  std::string_view rest = request.substr(0, head.head_bytes - 2);
  while (!rest.empty()) {
    const auto eol = rest.find("\r\n");
    const std::string_view line = rest.substr(0, eol + 2);
    rest.remove_prefix(eol + 2);
    const auto colon = line.find(':');
    if (colon != std::string_view::npos && EqualsIgnoreCase(line.substr(0, colon), "Expect")) {
      continue;
    }
    out += line;
  }
  out += "\r\n";
  out += request.substr(head.head_bytes);
  return out;
}

std::optional<std::string> QueryValue(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      return std::string(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::string WithQueryValue(std::string_view request, std::string_view name,
                           std::string_view value) {
  const auto line_end = request.find("\r\n");
  const std::string_view line = request.substr(0, line_end);
  const auto sp1 = line.find(' ');
  const auto sp2 = line.find(' ', sp1 + 1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const auto question = target.find('?');
  std::string query;
  if (question != std::string_view::npos) {
    std::string_view rest = target.substr(question + 1);
    while (!rest.empty()) {
      const auto amp = rest.find('&');
      const std::string_view pair = rest.substr(0, amp);
      if (pair.substr(0, pair.find('=')) != name)
        query += (query.empty() ? "" : "&") + std::string(pair);
      if (amp == std::string_view::npos) break;
      rest.remove_prefix(amp + 1);
    }
  }
  query += (query.empty() ? "" : "&") + std::string(name) + "=" + std::string(value);
  std::string out(line.substr(0, sp1 + 1));
  out += target.substr(0, question);
  out += "?" + query;
  out += request.substr(sp2);
  return out;
}

}  // namespace tessera
