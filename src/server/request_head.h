// The head of an HTTP/1.1 request as the front end needs it before any worker sees the request:
// where the headers end, how long the body is, which class of route it is for. Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

// Who a request is for; each class has its own workers, so one cannot starve another.
enum class RouteClass {
  kAgent,     // /v1/agents/...: registration, heartbeats, task reports
  kLongPoll,  // /v1/events (may wait up to 60 s), /v1/exec/ (reads wait for output)
  kUser,      // everything else
};
const char* RouteClassName(RouteClass c);

struct RequestHead {
  std::size_t head_bytes = 0;      // request line and headers, up to and including CRLFCRLF
  std::size_t content_length = 0;  // 0 without Content-Length
  bool chunked = false;            // Transfer-Encoding other than identity
  bool expects_continue = false;   // Expect: 100-continue
  RouteClass route = RouteClass::kUser;
  std::string method;
  std::string path;           // the target without its query
  std::string query;          // after '?', undecoded; empty without one
  std::string authorization;  // the Authorization header's value; empty without one
};

// nullopt while the head is incomplete; a head with an error message when it is malformed.
struct HeadParse {
  std::optional<RequestHead> head;
  std::string error;  // non-empty: answer 400 with it and close
};
HeadParse ParseRequestHead(std::string_view buffer);

RouteClass ClassOf(std::string_view path);

// The request with its Expect header removed (the front end answered 100 Continue itself).
std::string WithoutExpect(std::string_view request, const RequestHead& head);

// The value of `name` in a query string ("a=1&b=2"), undecoded; nullopt when absent.
std::optional<std::string> QueryValue(std::string_view query, std::string_view name);

// The request with query parameter `name` set to `value` in its request line (e.g. a parked
// long-poll's wait set to 0 once it can be answered).
std::string WithQueryValue(std::string_view request, std::string_view name, std::string_view value);

}  // namespace tessera
