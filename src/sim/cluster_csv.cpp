// Cluster specs as CSV: the openb node list (one node per row, the FGD paper's cluster) and
// Muri's cluster spec (one row: switches × nodes per switch × GPUs per node).
#include <unordered_map>

#include "sim/cluster_formats.h"
#include "sim/trace/csv_row.h"
#include "sim/trace/csv_table.h"

namespace tessera {
namespace {

const std::vector<std::string>& OpenbNodeColumns() {
  static const auto* const c =
      new std::vector<std::string>{"sn", "cpu_milli", "memory_mib", "gpu", "model"};
  return *c;
}

const std::vector<std::string>& MuriColumns() {
  static const auto* const c = new std::vector<std::string>{
      "num_switch", "num_node_p_switch", "num_gpu_p_node", "num_cpu_p_node", "mem_p_node"};
  return *c;
}

bool HasAll(const CsvHeader& header, const std::vector<std::string>& columns) {
  for (const auto& c : columns) {
    if (!header.Has(c)) return false;
  }
  return true;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

// Runs `row_fn` on every data row after checking its shape.
template <typename RowFn>
Status ForEachRow(CsvFile& file, const CsvHeader& header, RowFn row_fn) {
  CsvRecord record;
  while (true) {
    auto got = file.Next(&record);
    if (!got) return std::unexpected(got.error());
    if (!*got) return {};
    if (auto shape = CheckCsvRowShape(file.path(), header, record); !shape) return shape;
    if (auto done = row_fn(CsvRow(file.path(), header, record)); !done) return done;
  }
}

Result<Cluster> LoadOpenbNodes(CsvFile& file, const CsvHeader& header) {
  Cluster cluster;
  std::unordered_map<std::string, std::int64_t> first_line;  // node name -> line
  auto status = ForEachRow(file, header, [&](const CsvRow& row) -> Status {
    TRACE_ASSIGN_OR_RETURN(std::string name, row.RequiredText("sn"));
    if (auto [it, fresh] = first_line.emplace(name, row.line()); !fresh) {
      return row.Fail("sn", "node '" + Printable(name) + "' appears twice (first on line " +
                                std::to_string(it->second) + ")");
    }
    TRACE_ASSIGN_OR_RETURN(const auto cpu, row.Int("cpu_milli", 0, kMaxTraceCpuMilli));
    TRACE_ASSIGN_OR_RETURN(const auto mem, row.Int("memory_mib", 0, kMaxTraceMemoryMib));
    TRACE_ASSIGN_OR_RETURN(const auto gpus, row.Int("gpu", 0, kMaxGpusPerNode));
    std::string model(row.Text("model"));
    if (model == "nan" || model == "NaN") model.clear();  // pandas' empty cell
    if (gpus > 0 && model.empty()) return row.Fail("model", "required for a node with GPUs");
    if (!model.empty() && !IsValidClusterName(model)) {
      return row.Fail("model",
                      "'" + Printable(model) + "' must be 1-63 letters, digits or . _ + -");
    }
    if (static_cast<std::int64_t>(cluster.node_count()) >= kMaxClusterNodes) {
      return row.Fail("sn", "more than " + std::to_string(kMaxClusterNodes) + " nodes");
    }
    auto added = cluster.AddNode(std::move(name), model, static_cast<int>(gpus), cpu, mem);
    if (!added) return row.Fail("model", added.error().message);
    return {};
  });
  if (!status) return std::unexpected(status.error());
  if (cluster.node_count() == 0) return InvalidArgument(file.path() + ": no nodes in the file");
  return cluster;
}

Result<Cluster> LoadMuriSpec(CsvFile& file, const CsvHeader& header) {
  Cluster cluster;
  int rows = 0;
  auto status = ForEachRow(file, header, [&](const CsvRow& row) -> Status {
    if (++rows > 1) {
      return InvalidArgument(file.path() + ":" + std::to_string(row.line()) +
                             ": a Muri cluster spec has one row; this is the second");
    }
    TRACE_ASSIGN_OR_RETURN(const auto switches, row.Int("num_switch", 1, kMaxClusterNodes));
    TRACE_ASSIGN_OR_RETURN(const auto per_switch,
                           row.Int("num_node_p_switch", 1, kMaxClusterNodes));
    TRACE_ASSIGN_OR_RETURN(const auto gpus, row.Int("num_gpu_p_node", 1, kMaxGpusPerNode));
    TRACE_ASSIGN_OR_RETURN(const auto cpus, row.Int("num_cpu_p_node", 1, kMaxTraceCpuMilli / 1000));
    TRACE_ASSIGN_OR_RETURN(const auto mem_gb, row.Int("mem_p_node", 1, kMaxTraceMemoryMib / 1024));
    if (switches * per_switch > kMaxClusterNodes) {
      return row.Fail("num_node_p_switch", std::to_string(switches) + " switches × " +
                                               std::to_string(per_switch) + " nodes is more than " +
                                               std::to_string(kMaxClusterNodes) + " nodes");
    }
    const std::int64_t nodes = switches * per_switch;
    Topology topology;
    topology.levels = {"switch"};
    topology.domain_names.emplace_back();
    for (std::int64_t s = 0; s < switches; ++s) {
      topology.domain_names[0].push_back("switch-" + std::to_string(s));
    }
    for (std::int64_t i = 0; i < nodes; ++i) {
      // Muri's simulator reads mem_p_node as GB; Tessera takes it as GiB (1024 MiB).
      auto added =
          cluster.AddNode(NumberedName("node", i, nodes), kDefaultGpuModel, static_cast<int>(gpus),
                          cpus * 1000, mem_gb * 1024, {static_cast<std::uint32_t>(i / per_switch)});
      if (!added) return row.Fail("num_gpu_p_node", added.error().message);
    }
    cluster.set_topology(std::move(topology));
    return {};
  });
  if (!status) return std::unexpected(status.error());
  if (rows == 0) return InvalidArgument(file.path() + ": no data row after the header");
  return cluster;
}

}  // namespace

bool IsClusterCsvHeader(std::string_view header_line) {
  std::vector<std::string> fields;
  if (!header_line.empty() && header_line.back() == '\r') header_line.remove_suffix(1);
  if (header_line.starts_with("\xEF\xBB\xBF")) header_line.remove_prefix(3);
  if (SplitCsvLine(header_line, &fields)) return false;
  const CsvHeader header(fields);
  return HasAll(header, OpenbNodeColumns()) || HasAll(header, MuriColumns());
}

Result<Cluster> LoadClusterCsv(const std::string& path) {
  auto file = CsvFile::Open(path);
  if (!file) return std::unexpected(file.error());
  CsvRecord record;
  auto got = file->Next(&record);
  if (!got) return std::unexpected(got.error());
  if (!*got) return InvalidArgument(path + ": empty file: expected a header line");
  const CsvHeader header(record.fields);
  if (!record.malformed) {
    if (auto dup = header.Duplicate()) {
      return InvalidArgument(FieldErrorText(path, record.line, header.Find(*dup) + 1, *dup,
                                            "appears twice in the header"));
    }
    if (HasAll(header, OpenbNodeColumns())) return LoadOpenbNodes(*file, header);
    if (HasAll(header, MuriColumns())) return LoadMuriSpec(*file, header);
  }
  return InvalidArgument(path + ":" + std::to_string(record.line) +
                         ": unknown cluster CSV format: the header '" + header.Joined() +
                         "' is none of: openb node list (" + Join(OpenbNodeColumns()) +
                         "); Muri cluster spec (" + Join(MuriColumns()) + ")");
}

}  // namespace tessera
