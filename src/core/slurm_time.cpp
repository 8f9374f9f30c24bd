#include "core/slurm_time.h"

#include <vector>

namespace tessera {

namespace {

// Digits only, at most 9 of them.
std::expected<std::int64_t, std::string> Number(std::string_view s, std::string_view whole) {
  if (s.empty() || s.size() > 9)
    return std::unexpected("'" + std::string(whole) + "' is not a Slurm time");
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') {
      return std::unexpected("'" + std::string(whole) + "' is not a Slurm time");
    }
    v = v * 10 + (c - '0');
  }
  return v;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

}  // namespace

std::expected<std::int64_t, std::string> ParseSlurmDuration(std::string_view text) {
  if (text == "UNLIMITED" || text == "INFINITE" || text == "Partition_Limit") return 0;
  std::int64_t days = 0;
  std::string_view clock = text;
  const bool has_days = text.find('-') != std::string_view::npos;
  if (has_days) {
    const auto dash = text.find('-');
    auto d = Number(text.substr(0, dash), text);
    if (!d) return std::unexpected(d.error());
    days = *d;
    clock = text.substr(dash + 1);
  }
  const auto parts = Split(clock, ':');
  if (parts.size() > 3) return std::unexpected("'" + std::string(text) + "' is not a Slurm time");
  std::vector<std::int64_t> v;
  for (auto p : parts) {
    auto n = Number(p, text);
    if (!n) return std::unexpected(n.error());
    v.push_back(*n);
  }
  std::int64_t seconds = 0;
  if (has_days) {  // days-hours[:minutes[:seconds]]
    seconds = v[0] * 3600 + (v.size() > 1 ? v[1] * 60 : 0) + (v.size() > 2 ? v[2] : 0);
  } else if (v.size() == 1) {  // minutes
    seconds = v[0] * 60;
  } else if (v.size() == 2) {  // minutes:seconds
    seconds = v[0] * 60 + v[1];
  } else {  // hours:minutes:seconds
    seconds = v[0] * 3600 + v[1] * 60 + v[2];
  }
  return days * 86400 + seconds;
}

std::expected<std::int64_t, std::string> ParseSlurmTimestamp(std::string_view text) {
  auto bad = [&] {
    return std::unexpected("'" + std::string(text) +
                           "' is not a time of the form YYYY-MM-DDTHH:MM:SS");
  };
  if (text.size() != 19 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':') {
    return bad();
  }
  auto field = [&](std::size_t at, std::size_t n) { return Number(text.substr(at, n), text); };
  auto y = field(0, 4), mo = field(5, 2), d = field(8, 2), h = field(11, 2), mi = field(14, 2),
       s = field(17, 2);
  if (!y || !mo || !d || !h || !mi || !s) return bad();
  if (*mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 || *s > 60) return bad();
  // Days from the civil date (proleptic Gregorian), as in Howard Hinnant's days_from_civil.
  const std::int64_t yy = *y - (*mo <= 2 ? 1 : 0);
  const std::int64_t era = yy / 400;
  const std::int64_t yoe = yy - era * 400;
  const std::int64_t doy = (153 * (*mo + (*mo > 2 ? -3 : 9)) + 2) / 5 + *d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = era * 146097 + doe - 719468;
  return days * 86400 + *h * 3600 + *mi * 60 + *s;
}

}  // namespace tessera
