#include "core/task_place_text.h"

#include <charconv>

namespace tessera {

namespace {

constexpr int kMaxGpuIndex = 15;

std::optional<int> Index(std::string_view s) {
  int v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0 || v > kMaxGpuIndex)
    return std::nullopt;
  return v;
}

}  // namespace

std::string TaskPlaceText(std::string_view node, std::uint16_t gpu_mask, std::int32_t gpu_milli) {
  std::string s(node);
  if (gpu_mask == 0) return s;
  s += ':';
  bool first = true;
  for (int g = 0; g <= kMaxGpuIndex;) {
    if (!(gpu_mask >> g & 1)) {
      ++g;
      continue;
    }
    int last = g;
    while (last + 1 <= kMaxGpuIndex && (gpu_mask >> (last + 1) & 1)) ++last;
    if (!first) s += ',';
    first = false;
    s += std::to_string(g);
    if (last > g) s += (last == g + 1 ? "," : "-") + std::to_string(last);
    g = last + 1;
  }
  if (gpu_milli > 0 && gpu_milli < 1000) s += "@" + std::to_string(gpu_milli);
  return s;
}

std::optional<TaskPlace> ParseTaskPlace(std::string_view text) {
  TaskPlace out;
  const auto colon = text.find(':');
  out.node = std::string(text.substr(0, colon));
  if (out.node.empty()) return std::nullopt;
  if (colon == std::string_view::npos) return out;
  std::string_view gpus = text.substr(colon + 1);
  out.gpu_milli = 1000;
  if (const auto at = gpus.find('@'); at != std::string_view::npos) {
    const std::string_view milli = gpus.substr(at + 1);
    auto [end, ec] = std::from_chars(milli.data(), milli.data() + milli.size(), out.gpu_milli);
    if (ec != std::errc() || end != milli.data() + milli.size() || out.gpu_milli <= 0 ||
        out.gpu_milli >= 1000)
      return std::nullopt;
    gpus = gpus.substr(0, at);
  }
  while (!gpus.empty()) {
    const auto comma = gpus.find(',');
    const std::string_view part = gpus.substr(0, comma);
    const auto dash = part.find('-');
    const auto from = Index(part.substr(0, dash));
    const auto to = dash == std::string_view::npos ? from : Index(part.substr(dash + 1));
    if (!from || !to || *to < *from) return std::nullopt;
    for (int g = *from; g <= *to; ++g) out.gpu_mask |= static_cast<std::uint16_t>(1u << g);
    gpus = comma == std::string_view::npos ? std::string_view() : gpus.substr(comma + 1);
  }
  if (out.gpu_mask == 0) return std::nullopt;
  return out;
}

}  // namespace tessera
