// Slurm's time formats, shared by the sbatch importer (--time) and the sacct trace reader
// (Elapsed, Timelimit, Submit/Start/End).
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace tessera {

// A duration in seconds: "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
// "days-hours:minutes", "days-hours:minutes:seconds" (sbatch --time; sacct's Elapsed is the
// last two). "UNLIMITED", "INFINITE" and "Partition_Limit" give 0 (no limit).
std::expected<std::int64_t, std::string> ParseSlurmDuration(std::string_view text);

// "YYYY-MM-DDTHH:MM:SS" (sacct's Submit, Start, End) as seconds since 1970-01-01T00:00:00,
// the clock read as UTC: sacct prints local time without a zone, and a replay only uses
// differences.
std::expected<std::int64_t, std::string> ParseSlurmTimestamp(std::string_view text);

}  // namespace tessera
