#include "sim/trace/llm_trace.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/trace/csv_table.h"

namespace tessera {

namespace {

std::string At(const std::string& path, std::int64_t line) {
  return path + ":" + std::to_string(line) + ": ";
}

Result<std::int64_t> WholeField(const nlohmann::json& row, const char* key, const std::string& at) {
  if (!row.contains(key)) return InvalidArgument(at + key + ": is missing");
  const auto& v = row[key];
  if (!v.is_number_integer() && !v.is_number_unsigned()) {
    return InvalidArgument(at + key + ": must be a whole number");
  }
  const auto x = v.get<std::int64_t>();
  if (x < 0) return InvalidArgument(at + key + ": must be >= 0");
  return x;
}

Status ReadMooncake(std::ifstream& in, const std::string& path, std::int64_t limit,
                    LlmTrace* trace) {
  std::string text;
  std::int64_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string at = At(path, line);
    const auto row = nlohmann::json::parse(text, nullptr, false);
    if (row.is_discarded() || !row.is_object()) return InvalidArgument(at + "not a JSON object");
    LlmRequest r;
    auto ts = WholeField(row, "timestamp", at);
    auto in_len = WholeField(row, "input_length", at);
    auto out_len = WholeField(row, "output_length", at);
    if (!ts) return std::unexpected(ts.error());
    if (!in_len) return std::unexpected(in_len.error());
    if (!out_len) return std::unexpected(out_len.error());
    r.arrival_us = *ts * 1000;
    r.prompt_tokens = *in_len;
    r.output_tokens = *out_len;
    const auto ids = row.find("hash_ids");
    if (ids == row.end() || !ids->is_array())
      return InvalidArgument(at + "hash_ids: must be a list");
    for (const auto& id : *ids) {
      if (!id.is_number_integer() && !id.is_number_unsigned()) {
        return InvalidArgument(at + "hash_ids: must hold whole numbers");
      }
      r.block_hashes.push_back(id.get<std::uint64_t>());
    }
    trace->requests.push_back(std::move(r));
    if (limit > 0 && static_cast<std::int64_t>(trace->requests.size()) >= limit) break;
  }
  return {};
}

// "2023-11-16 18:17:03.9799600" as microseconds since 1970 (UTC; only differences matter).
std::optional<std::int64_t> DateTimeMicros(std::string_view s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  const auto num = [&](std::size_t at, std::size_t len, int* out) {
    auto [p, ec] = std::from_chars(s.data() + at, s.data() + at + len, *out);
    return ec == std::errc() && p == s.data() + at + len;
  };
  if (!num(0, 4, &y) || !num(5, 2, &mo) || !num(8, 2, &d) || !num(11, 2, &h) || !num(14, 2, &mi) ||
      !num(17, 2, &sec)) {
    return std::nullopt;
  }
  // Days from civil (H. Hinnant's algorithm).
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = std::int64_t{era} * 146097 + doe - 719468;
  std::int64_t micros = ((days * 24 + h) * 60 + mi) * 60 + sec;
  micros *= 1'000'000;
  if (s.size() > 19) {
    if (s[19] != '.') return std::nullopt;
    std::int64_t frac = 0, scale = 100'000;
    for (std::size_t i = 20; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      frac += (s[i] - '0') * scale;
      scale /= 10;
    }
    micros += frac;
  }
  return micros;
}

Status ReadAzure(const std::string& path, std::int64_t limit, LlmTrace* trace) {
  auto file = CsvFile::Open(path);
  if (!file) return std::unexpected(file.error());
  CsvRecord rec;
  auto more = file->Next(&rec);
  if (!more) return std::unexpected(more.error());
  const CsvHeader header(rec.fields);
  const int ts = header.Find("timestamp"), ctx = header.Find("contexttokens"),
            gen = header.Find("generatedtokens");
  if (ts < 0 || ctx < 0 || gen < 0) {
    return InvalidArgument(path + ": header must name TIMESTAMP,ContextTokens,GeneratedTokens");
  }
  while (true) {
    more = file->Next(&rec);
    if (!more) return std::unexpected(more.error());
    if (!*more) break;
    const auto field = [&](int col) {
      return col < static_cast<int>(rec.fields.size()) ? rec.fields[col] : std::string();
    };
    if (rec.malformed) {
      return InvalidArgument(
          FieldErrorText(path, rec.line, rec.malformed->column, "", rec.malformed->reason));
    }
    LlmRequest r;
    const auto when = DateTimeMicros(field(ts));
    if (!when)
      return InvalidArgument(
          FieldErrorText(path, rec.line, ts + 1, "TIMESTAMP", "not a date and time"));
    r.arrival_us = *when;
    for (auto [col, out, name] : {std::tuple{ctx, &r.prompt_tokens, "ContextTokens"},
                                  std::tuple{gen, &r.output_tokens, "GeneratedTokens"}}) {
      const std::string v = field(col);
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
      if (ec != std::errc() || p != v.data() + v.size() || *out < 0) {
        return InvalidArgument(
            FieldErrorText(path, rec.line, col + 1, name, "not a whole number >= 0"));
      }
    }
    trace->requests.push_back(std::move(r));
    if (limit > 0 && static_cast<std::int64_t>(trace->requests.size()) >= limit) break;
  }
  return {};
}

}  // namespace

Result<LlmTrace> ReadLlmTrace(const std::string& path, std::int64_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open");
  char first = 0;
  while (in.get(first) && (first == ' ' || first == '\n' || first == '\r' || first == '\t')) {
  }
  LlmTrace trace;
  if (first == '{') {
    in.clear();
    in.seekg(0);
    trace.format = "mooncake";
    trace.block_tokens = 512;
    if (auto ok = ReadMooncake(in, path, limit, &trace); !ok) return std::unexpected(ok.error());
  } else {
    in.close();
    trace.format = "azure";
    if (auto ok = ReadAzure(path, limit, &trace); !ok) return std::unexpected(ok.error());
  }
  if (trace.requests.empty()) return InvalidArgument(path + ": no requests");
  std::stable_sort(
      trace.requests.begin(), trace.requests.end(),
      [](const LlmRequest& a, const LlmRequest& b) { return a.arrival_us < b.arrival_us; });
  const std::int64_t t0 = trace.requests.front().arrival_us;
  for (LlmRequest& r : trace.requests) r.arrival_us -= t0;
  return trace;
}

}  // namespace tessera
