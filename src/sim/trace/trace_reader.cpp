// ReadTrace: opens the file, recognises the format from the header, checks every row's shape
// (field count, UTF-8, control bytes) and hands the row to the format's parser. The
// per-format parsing lives in the *_reader.cpp files next to this one.
#include "sim/trace/trace_reader.h"

#include <exception>

#include "sim/trace/csv_table.h"
#include "sim/trace/trace_format.h"

namespace tessera {
namespace {

const TraceFormat* FindFormat(std::string_view name) {
  for (const TraceFormat* f : AllTraceFormats()) {
    if (f->name == name) return f;
  }
  return nullptr;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

// "openb-pods (name,cpu_milli,...), itp (job_id,...), ..." for error messages.
std::string DescribeFormats() {
  std::string out;
  for (const TraceFormat* f : AllTraceFormats()) {
    if (!out.empty()) out += "; ";
    out += f->name + " [" + f->title + "]: " + Join(f->required, ",");
  }
  return out;
}

bool HasAll(const CsvHeader& header, const std::vector<std::string>& columns) {
  for (const auto& c : columns) {
    if (!header.Has(c)) return false;
  }
  return true;
}

// Finds the format for `header` (or checks the forced one) and that the header suits it.
Result<const TraceFormat*> ChooseFormat(const std::string& path, const CsvHeader& header,
                                        std::int64_t line, const TraceFormat* forced) {
  if (auto dup = header.Duplicate()) {
    return InvalidArgument(
        FieldErrorText(path, line, header.Find(*dup) + 1, *dup, "appears twice in the header"));
  }
  const TraceFormat* format = forced;
  if (format == nullptr) {
    for (const TraceFormat* f : AllTraceFormats()) {
      if (HasAll(header, f->required)) {
        format = f;
        break;
      }
    }
    if (format == nullptr) {
      return InvalidArgument(path + ":" + std::to_string(line) +
                             ": unknown trace format: the header '" + header.Joined() +
                             "' has the columns of none of the known formats (" +
                             DescribeFormats() + ")");
    }
  }
  for (const auto& c : format->required) {
    if (!header.Has(c)) {
      return InvalidArgument(path + ":" + std::to_string(line) + ": the header '" +
                             header.Joined() + "' lacks column '" + c + "', which format '" +
                             format->name + "' requires (" + Join(format->required, ",") + ")");
    }
  }
  if (format->strict_columns) {
    for (int i = 0; i < header.size(); ++i) {
      const std::string& name = header.names()[static_cast<std::size_t>(i)];
      if (name.empty()) continue;  // pandas' unnamed index column
      bool known = false;
      for (const auto* list : {&format->required, &format->optional}) {
        for (const auto& c : *list) known = known || c == name;
      }
      if (!known) {
        return InvalidArgument(FieldErrorText(path, line, i + 1, name,
                                              "not a column of format '" + format->name +
                                                  "' (known: " + Join(format->required, ",") + "," +
                                                  Join(format->optional, ",") + ")"));
      }
    }
  }
  return format;
}

Result<Trace> ReadTraceOrError(const std::string& path, const TraceReadOptions& options) {
  const TraceFormat* forced = nullptr;
  if (!options.format.empty()) {
    forced = FindFormat(options.format);
    if (forced == nullptr) {
      return InvalidArgument("unknown trace format '" + Printable(options.format) +
                             "'; known formats: " + Join(TraceFormats(), ", "));
    }
  }
  auto file = CsvFile::Open(path);
  if (!file) return std::unexpected(file.error());

  CsvRecord record;
  auto got = file->Next(&record);
  if (!got) return std::unexpected(got.error());
  if (!*got) {
    return InvalidArgument(path +
                           ": empty file: expected a header line naming the columns of "
                           "one of the known formats (" +
                           DescribeFormats() + ")");
  }
  if (record.malformed) {
    return InvalidArgument(path + ":" + std::to_string(record.line) +
                           ": unknown trace format: the first line is not a CSV header (" +
                           record.malformed->reason + " in column " +
                           std::to_string(record.malformed->column) +
                           "); known formats: " + DescribeFormats());
  }
  const CsvHeader header(record.fields);
  auto format = ChooseFormat(path, header, record.line, forced);
  if (!format) return std::unexpected(format.error());

  Trace trace;
  trace.path = path;
  trace.format = (*format)->name;
  TraceRowParser parse = (*format)->make_parser();
  while (true) {
    got = file->Next(&record);
    if (!got) return std::unexpected(got.error());
    if (!*got) break;
    // nullopt: a row that is not a job.
    Result<std::optional<TraceJob>> job = [&]() -> Result<std::optional<TraceJob>> {
      if (auto shape = CheckCsvRowShape(path, header, record); !shape) {
        return std::unexpected(shape.error());
      }
      const CsvRow row(path, header, record);
      if ((*format)->is_not_a_job && (*format)->is_not_a_job(row)) return std::nullopt;
      return parse(row);
    }();
    if (job) {
      if (*job) trace.jobs.push_back(std::move(**job));
      continue;
    }
    if (!options.skip_bad_rows) return std::unexpected(job.error());
    ++trace.skipped_rows;
    if (static_cast<int>(trace.skip_reasons.size()) < Trace::kMaxSkipReasons) {
      trace.skip_reasons.push_back(job.error().message);
    }
  }
  if ((*format)->finish) (*format)->finish(trace);
  return trace;
}

}  // namespace

std::vector<std::string> TraceFormats() {
  std::vector<std::string> names;
  for (const TraceFormat* f : AllTraceFormats()) names.push_back(f->name);
  return names;
}

const std::vector<const TraceFormat*>& AllTraceFormats() {
  static const auto* const formats =
      new std::vector<const TraceFormat*>{&OpenbPodFormat(), &ItpFormat(),   &MuriFormat(),
                                          &PhillyFormat(),   &SacctFormat(), &GenericCsvFormat()};
  return *formats;
}

Result<Trace> ReadTrace(const std::string& path, const TraceReadOptions& options) {
  // The readers return errors as values; this guard only turns what cannot be foreseen (an
  // allocation failure on a huge file) into an Error instead of letting it cross the API.
  try {
    return ReadTraceOrError(path, options);
  } catch (const std::exception& e) {
    return Internal(path + ": reading the trace failed: " + e.what());
  }
}

}  // namespace tessera
