// The trace formats behind ReadTrace, one per file (openb_pod_reader.cpp, itp_reader.cpp, ...),
// each described by the columns that identify it and a parser that turns one row into a
// TraceJob. Internal to src/sim/trace; the public API is trace_reader.h.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sim/trace/csv_row.h"
#include "sim/trace/trace_job.h"

namespace tessera {

// Parses one row. A fresh parser is made for every read, so a format that carries state from
// row to row (Philly's running submit clock) keeps it in the parser.
using TraceRowParser = std::function<Result<TraceJob>(const CsvRow& row)>;

struct TraceFormat {
  std::string name;                   // as in TraceReadOptions::format
  std::string title;                  // for messages, e.g. "Alibaba openb pod list"
  std::vector<std::string> required;  // present in every file of the format; detection uses them
  std::vector<std::string> optional;  // read when present
  // True: a column outside required+optional is an error. For the generic format, whose
  // files people write by hand, so that a misspelt "gpu_modle" does not pass silently.
  bool strict_columns = false;
  std::function<TraceRowParser()> make_parser;
  // Rows that are not jobs (sacct's job steps), passed over without counting as bad.
  std::function<bool(const CsvRow& row)> is_not_a_job;
  // Run once every row is read (sacct: times from the earliest submission).
  std::function<void(Trace& trace)> finish;
};

const TraceFormat& OpenbPodFormat();
const TraceFormat& ItpFormat();
const TraceFormat& MuriFormat();
const TraceFormat& PhillyFormat();
const TraceFormat& GenericCsvFormat();
const TraceFormat& SacctFormat();

// All formats, in the order detection tries them.
const std::vector<const TraceFormat*>& AllTraceFormats();

// A gpu_spec / gpu_model field: models separated by '|', blanks and empty names dropped;
// "nan" (how pandas writes an empty cell) means no constraint.
std::vector<std::string> SplitGpuModels(std::string_view field);

// gpu_milli for a job of `gpus` whole GPUs: 1000, or 0 for a job without GPUs.
inline std::int32_t WholeGpuMilli(std::int64_t gpus) { return gpus > 0 ? 1000 : 0; }

}  // namespace tessera
