// The llm-10k preset and the generator: a class per job by share, a size by weight, a
// log-normal run time, a Zipf team, a (diurnal) Poisson arrival. Sources of each number are in
// docs/workload-generator.md.
#include "sim/workload_generator.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

#include "core/rng.h"

namespace tessera {

namespace {

WorkloadPreset Llm10k() {
  WorkloadPreset p;
  p.name = "llm-10k";
  p.description =
      "10,000-GPU LLM cluster (1,250 nodes x 8 GPUs, leaves of 32 nodes, spines of 8 leaves): "
      "pretraining gangs of 256-4,096 GPUs, fine-tuning of 8-64, evaluation and batch "
      "inference of 1-8, across 20 teams";
  p.gpus_per_node = 8;
  p.teams = 20;
  p.team_zipf = 1.0;
  // Pretraining: few jobs, most of the GPU time (Acme, NSDI'24).
  // Up to one spine (2,048 GPUs) the gang must stay in a spine and prefers a leaf; a 4,096-GPU
  // gang cannot fit a spine and prefers as few spines as possible.
  p.classes.push_back(JobClassSpec{.name = "pretrain",
                                   .share = 0.015,
                                   .gpus = {256, 512, 1024, 2048, 4096},
                                   .gpu_weights = {0.30, 0.30, 0.22, 0.13, 0.05},
                                   .median_duration = 12 * kHour,
                                   .sigma = 1.0,
                                   .min_duration = 1 * kHour,
                                   .max_duration = 7 * kDay,
                                   .diurnal = false,
                                   .teams = 4,
                                   .require = "spine",
                                   .require_up_to = 2048,
                                   .prefer = "leaf",
                                   .prefer_beyond = "spine"});
  // Fine-tuning (SFT, RLHF-sized): tens of GPUs for hours; prefers one leaf.
  p.classes.push_back(JobClassSpec{.name = "finetune",
                                   .share = 0.185,
                                   .gpus = {8, 16, 32, 64},
                                   .gpu_weights = {0.40, 0.30, 0.20, 0.10},
                                   .median_duration = 2 * kHour,
                                   .sigma = 1.0,
                                   .min_duration = 5 * kMinute,
                                   .max_duration = 2 * kDay,
                                   .prefer = "leaf"});
  // Evaluation: most jobs, little GPU time (Acme, NSDI'24).
  p.classes.push_back(JobClassSpec{.name = "eval",
                                   .share = 0.60,
                                   .gpus = {1, 2, 4, 8},
                                   .gpu_weights = {0.55, 0.15, 0.15, 0.15},
                                   .median_duration = 12 * kMinute,
                                   .sigma = 1.0,
                                   .min_duration = 1 * kMinute,
                                   .max_duration = 12 * kHour});
  // Offline batch inference (data generation, scoring): one node or less, about an hour.
  p.classes.push_back(JobClassSpec{.name = "infer",
                                   .share = 0.20,
                                   .gpus = {1, 2, 4, 8},
                                   .gpu_weights = {0.30, 0.20, 0.20, 0.30},
                                   .median_duration = 45 * kMinute,
                                   .sigma = 1.2,
                                   .min_duration = 2 * kMinute,
                                   .max_duration = 1 * kDay});
  return p;
}

std::size_t Draw(Rng& rng, const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w;
  double x = rng.Real() * total;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (x < weights[i]) return i;
    x -= weights[i];
  }
  return weights.size() - 1;
}

// A standard normal draw (Box-Muller), from two uniform draws.
double Normal(Rng& rng) {
  const double u = 1.0 - rng.Real();  // (0, 1]: log(u) is finite
  const double v = rng.Real();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
}

// Arrival rate over the day relative to its mean: a peak in the afternoon and a trough at night,
// as Helios reports; amplitude 0.3 (peak/trough 1.9) matches ITP cluster04's hourly
// submissions (peak 1.25, trough 0.65 of the mean). docs/workload-generator.md.
constexpr double kDiurnalAmplitude = 0.3;
double Diurnal(Tick t) {
  const double hour = static_cast<double>(t % kDay) / kHour;
  return 1.0 + kDiurnalAmplitude * std::sin(2.0 * std::numbers::pi * (hour - 8.0) / 24.0);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::vector<std::string> WorkloadPresetNames() { return {"llm-10k"}; }

Result<WorkloadPreset> FindWorkloadPreset(const std::string& name) {
  if (name == "llm-10k") return Llm10k();
  std::string known;
  for (const auto& n : WorkloadPresetNames()) known += (known.empty() ? "" : ", ") + n;
  return InvalidArgument("--preset: '" + name + "' is unknown (known: " + known + ")");
}

Result<std::vector<TraceJob>> GenerateWorkload(const WorkloadGenOptions& options) {
  auto preset = FindWorkloadPreset(options.preset);
  if (!preset) return std::unexpected(preset.error());
  if (options.jobs < 1 || options.jobs > 10'000'000) {
    return InvalidArgument("--jobs: must be 1..10000000, got " + std::to_string(options.jobs));
  }
  if (!(options.days > 0) || options.days > 3650) {
    return InvalidArgument("--days: must be in (0, 3650], got " + fmt::format("{}", options.days));
  }
  const Tick horizon = FromSeconds(options.days * 86400);
  if (horizon < 1) return InvalidArgument("--days: shorter than a millisecond");

  Rng rng(Rng::Mix(options.seed, 0x6E6C6C6D31306BULL));
  std::vector<double> class_weights;
  for (const auto& c : preset->classes) class_weights.push_back(c.share);
  std::vector<double> team_weights;
  for (int k = 0; k < preset->teams; ++k) {
    team_weights.push_back(1.0 / std::pow(k + 1.0, preset->team_zipf));
  }

  struct Draft {
    Tick submit;
    std::size_t cls;
    TraceJob job;
  };
  std::vector<Draft> drafts;
  drafts.reserve(static_cast<std::size_t>(options.jobs));
  for (int i = 0; i < options.jobs; ++i) {
    const std::size_t ci = Draw(rng, class_weights);
    const JobClassSpec& c = preset->classes[ci];
    TraceJob j;
    j.gpus = c.gpus[Draw(rng, c.gpu_weights)];
    j.gpu_milli = 1000;
    const double ln = std::log(static_cast<double>(c.median_duration)) + c.sigma * Normal(rng);
    const double d = std::clamp(std::exp(ln), static_cast<double>(c.min_duration),
                                static_cast<double>(c.max_duration));
    j.duration = std::max<Tick>(kSecond, static_cast<Tick>(d) / kSecond * kSecond);
    // Teams: the class draws from its first `teams` teams, weights Zipf.
    const std::vector<double> teams(team_weights.begin(),
                                    team_weights.begin() + std::min<long>(c.teams, preset->teams));
    j.user = fmt::format("team-{:02}", Draw(rng, teams));
    if (j.gpus > preset->gpus_per_node) {
      if (!c.require.empty() && j.gpus <= c.require_up_to) j.require = c.require;
      j.prefer = !c.prefer_beyond.empty() && c.require_up_to > 0 && j.gpus > c.require_up_to
                     ? c.prefer_beyond
                     : c.prefer;
    }
    // Arrival: uniform over the horizon, thinned by the diurnal rate for interactive classes
    // (rejection sampling keeps the draw count per job bounded by the peak/mean ratio).
    Tick t = 0;
    for (;;) {
      t = static_cast<Tick>(rng.Uniform(static_cast<std::uint64_t>(horizon))) / kSecond * kSecond;
      if (!c.diurnal || rng.Real() * (1 + kDiurnalAmplitude) < Diurnal(t)) break;
    }
    drafts.push_back(Draft{t, ci, std::move(j)});
  }
  std::stable_sort(drafts.begin(), drafts.end(),
                   [](const Draft& a, const Draft& b) { return a.submit < b.submit; });
  std::vector<std::int64_t> counters(preset->classes.size(), 0);
  std::vector<TraceJob> jobs;
  jobs.reserve(drafts.size());
  for (auto& d : drafts) {
    d.job.submit = d.submit;
    d.job.id = fmt::format("{}-{:06}", preset->classes[d.cls].name, counters[d.cls]++);
    jobs.push_back(std::move(d.job));
  }
  return jobs;
}

std::string ToGenericCsv(const std::vector<TraceJob>& jobs) {
  std::string out = "id,submit_time,gpus,duration,user,gpu_model,require,prefer\n";
  for (const auto& j : jobs) {
    std::string models;
    for (const auto& m : j.gpu_models) models += (models.empty() ? "" : "|") + m;
    out += fmt::format("{},{},{},{},{},{},{},{}\n", j.id, j.submit / kSecond, j.gpus,
                       j.duration / kSecond, j.user, models, j.require, j.prefer);
  }
  return out;
}

WorkloadMix MeasureWorkloadMix(const std::vector<TraceJob>& jobs, std::int64_t cluster_gpus,
                               double days) {
  WorkloadMix mix;
  std::map<std::string, std::size_t> index;  // class name -> position, in first-seen order
  std::vector<std::vector<double>> gpus, hours;
  std::vector<double> gpu_hours;
  for (const auto& j : jobs) {
    const std::string cls = j.id.substr(0, j.id.rfind('-'));
    auto [it, fresh] = index.try_emplace(cls, mix.classes.size());
    if (fresh) {
      mix.classes.push_back({cls});
      gpus.emplace_back();
      hours.emplace_back();
      gpu_hours.push_back(0);
    }
    const std::size_t k = it->second;
    ++mix.classes[k].jobs;
    const double h = static_cast<double>(j.duration) / kHour;
    gpus[k].push_back(j.gpus);
    hours[k].push_back(h);
    gpu_hours[k] += j.gpus * h;
    mix.gpu_hours += j.gpus * h;
  }
  for (std::size_t k = 0; k < mix.classes.size(); ++k) {
    auto& c = mix.classes[k];
    c.job_share = jobs.empty() ? 0 : static_cast<double>(c.jobs) / static_cast<double>(jobs.size());
    c.gpu_time_share = mix.gpu_hours > 0 ? gpu_hours[k] / mix.gpu_hours : 0;
    c.median_gpus = Median(gpus[k]);
    c.median_hours = Median(hours[k]);
  }
  if (cluster_gpus > 0 && days > 0) {
    mix.offered_load = mix.gpu_hours / (static_cast<double>(cluster_gpus) * 24 * days);
  }
  return mix;
}

}  // namespace tessera
