// What the REST routes share (http_api.cpp, exec_routes.cpp): JSON answers and errors in the
// API's shape ({"error": {code, message, details}}), query parameters, "{queue...}/{name}" paths
// and POST routes whose body is a document.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/api_error.h"

namespace tessera {

// With a charset, which cpp-httplib 0.11 does not match as compressible: it would otherwise
// brotli-compress (at its slowest quality) every answer to a browser, which asks for br on
// every fetch: 0.1 s for 46 KB of /v1/nodes, seconds at a thousand nodes.
void SendJson(httplib::Response& res, int status, const nlohmann::json& body);
void SendError(httplib::Response& res, const ApiError& e);
void SendError(httplib::Response& res, Error::Code code, const std::string& message);
// An integer query parameter; nullopt (and a 400 sent) when malformed.
std::optional<std::int64_t> IntParam(const httplib::Request& req, httplib::Response& res,
                                     const char* name, std::int64_t fallback, std::int64_t lo,
                                     std::int64_t hi);
bool TruthyParam(const httplib::Request& req, const char* name);
// Splits "{queue...}/{name}" captured from a path.
bool SplitQueueName(const std::string& path, std::string* queue, std::string* name);
// Registers a POST route whose body is a document (a spec, a protocol message), read whatever
// its Content-Type: `curl --data-binary @spec.yaml` sends application/x-www-form-urlencoded,
// which httplib would cap at 8 KiB (answering a misleading 413) and parse into query
// parameters, so that a body could set ?hold= or ?waitMs=. Read here, the body is capped only
// at the payload limit and never becomes parameters.
void PostDocument(httplib::Server& h, const std::string& pattern, httplib::Server::Handler handler);

}  // namespace tessera
