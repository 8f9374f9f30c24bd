// `tessera gen`: write a synthetic job trace (generic CSV with topology columns) from a preset,
// e.g. `tessera gen --preset llm-10k --jobs 20000 --days 7 --seed 1 --out llm-10k.csv`, and
// print the mix it measured (jobs and GPU-time per class, offered load). See
// docs/workload-generator.md.
#include <fmt/core.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "sim/workload_generator.h"

namespace tessera::cli {

namespace {

struct GenFlags {
  WorkloadGenOptions options;
  std::string out;
  bool list = false;
};

int Fail(const std::string& message) {
  std::cerr << "tessera gen: " << message << "\n";
  return 2;
}

int RunGen(const GenFlags& flags) {
  if (flags.list) {
    for (const auto& name : WorkloadPresetNames()) {
      std::cout << name << "  " << FindWorkloadPreset(name)->description << "\n";
    }
    return 0;
  }
  if (flags.out.empty()) return Fail("--out: is required");
  auto jobs = GenerateWorkload(flags.options);
  if (!jobs) return Fail(jobs.error().message);
  {
    std::ofstream f(flags.out, std::ios::binary);
    f << ToGenericCsv(*jobs);
    if (!f) return Fail("--out: cannot write " + flags.out);
  }
  const auto preset = FindWorkloadPreset(flags.options.preset);
  // The preset's cluster: llm-10k is 1,250 nodes x 8 GPUs.
  const std::int64_t cluster_gpus = preset->name == "llm-10k" ? 10'000 : 0;
  const WorkloadMix mix = MeasureWorkloadMix(*jobs, cluster_gpus, flags.options.days);
  std::cerr << fmt::format("{:<10} {:>8} {:>8} {:>10} {:>10} {:>10}\n", "class", "jobs", "jobs%",
                           "GPU-time%", "med GPUs", "med hours");
  for (const auto& c : mix.classes) {
    std::cerr << fmt::format("{:<10} {:>8} {:>7.1f}% {:>9.1f}% {:>10.0f} {:>10.2f}\n", c.name,
                             c.jobs, 100 * c.job_share, 100 * c.gpu_time_share, c.median_gpus,
                             c.median_hours);
  }
  std::cerr << fmt::format(
      "{} jobs over {} days, {:.0f} GPU-hours: offered load {:.2f} of {} GPUs\n", jobs->size(),
      flags.options.days, mix.gpu_hours, mix.offered_load, cluster_gpus);
  std::cerr << "wrote " << flags.out << "\n";
  return 0;
}

}  // namespace

void RegisterGenCommand(CLI::App& app) {
  auto flags = std::make_shared<GenFlags>();
  auto* gen =
      app.add_subcommand("gen", "Generate a synthetic job trace (generic CSV) from a preset");
  gen->add_option("--preset", flags->options.preset, "workload preset (see --list-presets)")
      ->capture_default_str();
  gen->add_option("--jobs", flags->options.jobs, "jobs in the trace")->capture_default_str();
  gen->add_option("--days", flags->options.days, "arrivals spread over this many days")
      ->capture_default_str();
  gen->add_option("--seed", flags->options.seed, "seed; the same seed gives the same trace")
      ->capture_default_str();
  gen->add_option("--out", flags->out, "output CSV file");
  gen->add_flag("--list-presets", flags->list, "list presets, one per line, and exit");
  gen->callback([flags] { SetExitCode(RunGen(*flags)); });
}

}  // namespace tessera::cli
