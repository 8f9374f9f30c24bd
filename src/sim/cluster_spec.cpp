// LoadCluster: tells a short form ("128x8:H100") from a file, and a CSV node list from a YAML
// spec, then hands over to the reader of that form.
#include "sim/cluster_spec.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <exception>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "sim/cluster_formats.h"

namespace tessera {
namespace {

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// nullopt when `spec` does not have the shape of a short form ("<digits>x<digits>[:...]"),
// so that it is taken for a file name; otherwise the cluster or why the short form is wrong.
std::optional<Result<Cluster>> FromShortForm(std::string_view spec) {
  const std::size_t x = spec.find_first_of("xX");
  if (x == std::string_view::npos) return std::nullopt;
  const std::size_t colon = spec.find(':', x);
  const std::string_view nodes_text = spec.substr(0, x);
  const std::string_view gpus_text =
      spec.substr(x + 1, colon == std::string_view::npos ? std::string_view::npos : colon - x - 1);
  if (!IsDigits(nodes_text) || !IsDigits(gpus_text)) return std::nullopt;
  const std::string model(colon == std::string_view::npos ? kDefaultGpuModel
                                                          : spec.substr(colon + 1));
  const std::string where = "cluster '" + std::string(spec) + "'";

  std::int64_t nodes = 0;
  std::int64_t gpus = 0;
  auto n_res = std::from_chars(nodes_text.data(), nodes_text.data() + nodes_text.size(), nodes);
  auto g_res = std::from_chars(gpus_text.data(), gpus_text.data() + gpus_text.size(), gpus);
  if (n_res.ec != std::errc() || nodes < 1 || nodes > kMaxClusterNodes) {
    return InvalidArgument(where + ": node count must be 1.." + std::to_string(kMaxClusterNodes));
  }
  if (g_res.ec != std::errc() || gpus < 1 || gpus > kMaxGpusPerNode) {
    return InvalidArgument(where + ": GPUs per node must be 1.." + std::to_string(kMaxGpusPerNode));
  }
  if (!IsValidClusterName(model)) {
    return InvalidArgument(where + ": GPU model '" + model +
                           "' must be 1-63 letters, digits or . _ + - (e.g. 128x8:H100)");
  }
  Cluster cluster;
  for (std::int64_t i = 0; i < nodes; ++i) {
    auto added = cluster.AddNode(NumberedName("node", i, nodes), model, static_cast<int>(gpus),
                                 gpus * kDefaultCpuMilliPerGpu, gpus * kDefaultMemoryMibPerGpu);
    if (!added)
      return std::unexpected(Error{added.error().code, where + ": " + added.error().message});
  }
  return cluster;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Result<Cluster> LoadClusterOrError(const std::string& spec) {
  if (spec.empty()) {
    return InvalidArgument("no cluster given: pass a short form like 128x8:H100 or a file");
  }
  if (auto short_form = FromShortForm(spec)) return std::move(*short_form);

  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(spec, ec);
  if (st.type() == fs::file_type::not_found) {
    return NotFound(spec + ": no such file, and not a short form like 128x8 or 128x8:H100");
  }
  if (ec) return IoError(spec + ": " + ec.message());
  if (fs::is_directory(st)) return InvalidArgument(spec + ": is a directory, not a cluster spec");

  const std::string ext = Lower(fs::path(spec).extension().string());
  if (ext == ".csv") return LoadClusterCsv(spec);
  if (ext == ".yaml" || ext == ".yml" || ext == ".json") return LoadClusterYaml(spec);
  // No telling extension: a file whose first line is a known CSV header is CSV, else YAML.
  std::ifstream in(spec, std::ios::binary);
  std::string first;
  std::getline(in, first);
  if (IsClusterCsvHeader(first)) return LoadClusterCsv(spec);
  return LoadClusterYaml(spec);
}

}  // namespace

bool IsValidClusterName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '+' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string NumberedName(std::string_view prefix, std::int64_t index, std::int64_t count) {
  std::string digits = std::to_string(index);
  const std::size_t width =
      std::max<std::size_t>(4, std::to_string(std::max<std::int64_t>(count - 1, 0)).size());
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return std::string(prefix) + "-" + digits;
}

Result<Cluster> LoadCluster(const std::string& spec) {
  // The loaders return errors as values; this guard only keeps the unforeseeable (an
  // allocation failure, a library throwing where it documents none) from crossing the API.
  try {
    return LoadClusterOrError(spec);
  } catch (const std::exception& e) {
    return Internal(spec + ": loading the cluster failed: " + e.what());
  }
}

}  // namespace tessera
