// Alibaba openb pod lists (openb_pod_list_*.csv, the FGD paper's trace): one pod per row with
// its CPU, memory and GPU request, accepted GPU models, QoS class and life-cycle times.
#include <algorithm>

#include "sim/trace/trace_format.h"

namespace tessera {
namespace {

Result<TraceJob> ParseOpenbPod(const CsvRow& row) {
  TraceJob job;
  TRACE_ASSIGN_OR_RETURN(job.id, row.RequiredText("name"));
  TRACE_ASSIGN_OR_RETURN(job.cpu_milli, row.Int("cpu_milli", 0, kMaxTraceCpuMilli));
  TRACE_ASSIGN_OR_RETURN(job.memory_mib, row.Int("memory_mib", 0, kMaxTraceMemoryMib));
  TRACE_ASSIGN_OR_RETURN(const std::int64_t num_gpu, row.Int("num_gpu", 0, kMaxTraceGpus));
  TRACE_ASSIGN_OR_RETURN(const std::int64_t gpu_milli, row.Int("gpu_milli", 0, 1000));
  if (num_gpu == 0) {
    // A CPU-only pod; its gpu_milli (0 in the published lists) means nothing without GPUs.
    job.gpus = 0;
    job.gpu_milli = 0;
  } else {
    if (gpu_milli == 0) {
      return row.Fail("gpu_milli", "must be 1..1000 for a pod with GPUs, got '0'");
    }
    job.gpus = static_cast<int>(num_gpu);
    job.gpu_milli = static_cast<std::int32_t>(gpu_milli);  // per GPU
  }
  job.gpu_models = SplitGpuModels(row.Text("gpu_spec"));
  job.qos = std::string(row.Text("qos"));
  job.status = std::string(row.Text("pod_phase"));

  // The multigpuNN variants carry no times at all: every pod then arrives at 0 with an
  // unknown duration, which is what the paper's allocation experiment assumes anyway.
  if (row.Has("creation_time")) {
    TRACE_ASSIGN_OR_RETURN(job.submit, row.Seconds("creation_time"));
  }
  TRACE_ASSIGN_OR_RETURN(const auto scheduled, row.OptionalSeconds("scheduled_time"));
  TRACE_ASSIGN_OR_RETURN(const auto deleted, row.OptionalSeconds("deletion_time"));
  // Pending pods were never scheduled (no scheduled_time): they never ran, so no run time.
  if (scheduled && deleted && *deleted >= *scheduled) job.duration = *deleted - *scheduled;
  return job;
}

}  // namespace

const TraceFormat& OpenbPodFormat() {
  static const TraceFormat* const format = new TraceFormat{
      .name = "openb-pods",
      .title = "Alibaba openb pod list",
      .required = {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"},
      .optional = {"gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time",
                   "scheduled_time"},
      .strict_columns = false,
      .make_parser = [] { return TraceRowParser(ParseOpenbPod); },
  };
  return *format;
}

std::vector<std::string> SplitGpuModels(std::string_view field) {
  std::vector<std::string> models;
  while (true) {
    const std::size_t bar = field.find('|');
    std::string_view part = field.substr(0, bar);
    while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.remove_prefix(1);
    while (!part.empty() && (part.back() == ' ' || part.back() == '\t')) part.remove_suffix(1);
    if (!part.empty() && part != "nan" && part != "NaN" &&
        std::find(models.begin(), models.end(), part) == models.end()) {
      models.emplace_back(part);
    }
    if (bar == std::string_view::npos) break;
    field.remove_prefix(bar + 1);
  }
  return models;
}

}  // namespace tessera
