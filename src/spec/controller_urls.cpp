#include "spec/controller_urls.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tessera {

Result<ControllerUrls> ControllerUrls::Parse(std::string_view list) {
  ControllerUrls out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    std::string url(list.substr(start, comma - start));
    while (!url.empty() && url.back() == '/') url.pop_back();
    if (url.empty())
      return InvalidArgument("--server: an empty URL in '" + std::string(list) + "'");
    if (!url.starts_with("http://") && !url.starts_with("https://"))
      return InvalidArgument("--server: '" + url + "' must start with http:// or https://");
    if (std::find(out.urls_.begin(), out.urls_.end(), url) == out.urls_.end())
      out.urls_.push_back(std::move(url));
    start = comma + 1;
  }
  return out;
}

void ControllerUrls::Follow(const std::string& leader) {
  auto it = std::find(urls_.begin(), urls_.end(), leader);
  if (it == urls_.end()) {
    urls_.push_back(leader);
    it = urls_.end() - 1;
  }
  index_ = static_cast<std::size_t>(it - urls_.begin());
}

std::optional<std::string> StandbyLeader(int status, std::string_view body) {
  if (status != 503) return std::nullopt;
  const auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("error") || !doc["error"].is_object()) return std::nullopt;
  const auto& error = doc["error"];
  if (!error.contains("leader")) return std::nullopt;
  if (error["leader"].is_string()) return error["leader"].get<std::string>();
  return std::string();
}

}  // namespace tessera
