#include "server/http_helpers.h"

#include <charconv>

#include "spec/document.h"
#include "spec/job_spec.h"
#include "spec/text.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

const char* CodeName(Error::Code c) {
  switch (c) {
    case Error::Code::kInvalidArgument:
      return "InvalidArgument";
    case Error::Code::kNotFound:
      return "NotFound";
    case Error::Code::kAlreadyExists:
      return "AlreadyExists";
    case Error::Code::kFailedPrecondition:
      return "FailedPrecondition";
    case Error::Code::kIo:
      return "Unavailable";
    case Error::Code::kInternal:
      return "Internal";
  }
  return "Internal";
}

int HttpStatusOf(Error::Code c) {
  switch (c) {
    case Error::Code::kInvalidArgument:
      return 400;
    case Error::Code::kNotFound:
      return 404;
    case Error::Code::kAlreadyExists:
    case Error::Code::kFailedPrecondition:
      return 409;
    case Error::Code::kIo:
      return 503;
    case Error::Code::kInternal:
      return 500;
  }
  return 500;
}

}  // namespace

void SendJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(DumpJson(body) + "\n", "application/json; charset=utf-8");
}

void SendError(httplib::Response& res, const ApiError& e) {
  Json details = Json::array();
  for (const auto& f : e.fields) details.push_back({{"field", f.field}, {"reason", f.reason}});
  SendJson(
      res, HttpStatusOf(e.error.code),
      {{"error",
        {{"code", CodeName(e.error.code)}, {"message", e.error.message}, {"details", details}}}});
}

void SendError(httplib::Response& res, Error::Code code, const std::string& message) {
  SendError(res, ApiError{Error{code, message}, {}});
}

std::optional<std::int64_t> IntParam(const httplib::Request& req, httplib::Response& res,
                                     const char* name, std::int64_t fallback, std::int64_t lo,
                                     std::int64_t hi) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.get_param_value(name);
  std::int64_t out = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || out < lo || out > hi) {
    SendError(res, Error::Code::kInvalidArgument,
              std::string(name) + ": must be an integer between " + std::to_string(lo) + " and " +
                  std::to_string(hi));
    return std::nullopt;
  }
  return out;
}

bool TruthyParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return false;
  const std::string v = req.get_param_value(name);
  return v == "true" || v == "1" || v == "yes";
}

bool SplitQueueName(const std::string& path, std::string* queue, std::string* name) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return false;
  *queue = path.substr(0, slash);
  *name = path.substr(slash + 1);
  return ValidQueuePath(*queue) && ValidJobName(*name);
}

void PostDocument(httplib::Server& h, const std::string& pattern,
                  httplib::Server::Handler handler) {
  h.Post(pattern,
         [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                        const httplib::ContentReader& read) {
           if (req.is_multipart_form_data()) {
             SendError(res, Error::Code::kInvalidArgument,
                       "multipart/form-data bodies are not accepted: send the document itself "
                       "(curl --data-binary @FILE)");
             res.status = 415;
             return;
           }
           httplib::Request with_body = req;
           if (!read([&](const char* data, std::size_t n) {
                 with_body.body.append(data, n);
                 return true;
               })) {
             return;  // httplib set the status (413 past the payload limit, 400 when cut short)
           }
           handler(with_body, res);
         });
}

}  // namespace tessera
