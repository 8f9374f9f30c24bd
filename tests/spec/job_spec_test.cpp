// Job spec parsing and validation: every example kind parses, the canonical JSON round-trips,
// and bad specs are refused with errors that name the field and the reason.
#include "spec/job_spec.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "spec/document.h"
#include "spec/submission_body.h"
#include "spec/text.h"

namespace tessera {
namespace {

constexpr const char* kTraining = R"(apiVersion: tessera/v1
kind: TrainingJob
metadata: {name: llama-8b-sft, queue: nlp/sft}
spec:
  priority: 100
  workers: 16
  gpusPerWorker: 8
  gpuModels: [H100, H200]
  topology: {require: spine, prefer: leaf}
  elastic: {minWorkers: 8, maxWorkers: 16}
  checkpoint: {intervalSeconds: 1800, dir: /ckpt/llama-8b-sft}
  gracePeriodSeconds: 120
  maxRestarts: 10
  command: [torchrun, --nproc-per-node=8, train.py]
  env: {WANDB_MODE: offline}
)";

// The reasons of a spec that must fail, joined.
std::string ErrorsOf(const std::string& text) {
  auto spec = ParseJobSpec(text);
  EXPECT_FALSE(spec.has_value()) << text;
  return spec ? std::string() : spec.error().message;
}

std::string Training(const std::string& spec_lines) {
  return "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: t}\nspec:\n" + spec_lines;
}

TEST(JobSpecTest, ParsesTheDesignExample) {
  auto spec = ParseJobSpec(kTraining);
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  EXPECT_EQ(spec->kind, WorkloadKind::kTraining);
  EXPECT_EQ(spec->name, "llama-8b-sft");
  EXPECT_EQ(spec->queue, "nlp/sft");
  EXPECT_EQ(spec->priority, 100);
  ASSERT_EQ(spec->roles.size(), 1u);
  EXPECT_EQ(spec->roles[0].count, 16);
  EXPECT_EQ(spec->roles[0].shape.gpus, 8);
  EXPECT_EQ(spec->roles[0].shape.gpu_milli, 1000);
  EXPECT_EQ(spec->min_workers, 8);
  EXPECT_EQ(spec->max_workers, 16);
  EXPECT_EQ(spec->grace_period_seconds, 120);
  EXPECT_EQ(spec->max_restarts, 10);
  EXPECT_EQ(spec->checkpoint_dir, "/ckpt/llama-8b-sft");
  EXPECT_EQ(spec->roles[0].command,
            (std::vector<std::string>{"torchrun", "--nproc-per-node=8", "train.py"}));
  EXPECT_EQ(spec->env.at("WANDB_MODE"), "offline");
  EXPECT_EQ(spec->gpu_models, (std::vector<std::string>{"H100", "H200"}));
  const Workload w = spec->ToWorkload();
  EXPECT_EQ(w.TaskCount(), 16);
  EXPECT_EQ(w.TotalGpuMilli(), 16 * 8 * 1000);
  EXPECT_EQ(w.checkpoint_interval, 1800 * kSecond);
  EXPECT_TRUE(w.preemptible);
}

TEST(JobSpecTest, CanonicalJsonRoundTrips) {
  auto spec = ParseJobSpec(kTraining);
  ASSERT_TRUE(spec.has_value());
  const std::string canonical = DumpJson(JobSpecToJson(*spec));
  auto again = ParseJobSpec(canonical);
  ASSERT_TRUE(again.has_value()) << again.error().message << "\n" << canonical;
  EXPECT_EQ(*again, *spec);
  // And through YAML, as `-o yaml` prints it.
  auto from_yaml = ParseJobSpec(ToYaml(JobSpecToJson(*spec)));
  ASSERT_TRUE(from_yaml.has_value()) << from_yaml.error().message;
  EXPECT_EQ(*from_yaml, *spec);
}

// metadata.labels: kept, printed back, compared; values must be strings, keys valid.
TEST(JobSpecTest, LabelsRoundTripAndAreChecked) {
  auto spec = ParseJobSpec(
      "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: eval, labels: {team: nlp, "
      "example.com/tier: prod}}\nspec: {tasks: 1, gpusPerTask: 1, command: [true]}\n");
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  EXPECT_EQ(spec->labels,
            (std::map<std::string, std::string>{{"team", "nlp"}, {"example.com/tier", "prod"}}));
  auto again = ParseJobSpec(DumpJson(JobSpecToJson(*spec)));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, *spec);
  auto other = *spec;
  other.labels["team"] = "vision";
  EXPECT_FALSE(other == *spec);
  auto bad = ParseJobSpec(
      "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: eval, labels: {tier: 1, "
      "'a b': x, ok: 'not ok'}}\nspec: {tasks: 1, gpusPerTask: 1, command: [true]}\n");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("metadata.labels.tier: must be a string"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("metadata.labels.a b: not a label key"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("metadata.labels.ok: not a label value"), std::string::npos)
      << bad.error().message;
}

TEST(JobSpecTest, JsonAndYamlGiveTheSameSpec) {
  const std::string json = R"({"apiVersion":"tessera/v1","kind":"BatchJob",
    "metadata":{"name":"eval"},"spec":{"tasks":4,"gpusPerTask":"0.5","command":["python3","eval.py"]}})";
  const std::string yaml =
      "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: eval}\n"
      "spec: {tasks: 4, gpusPerTask: \"0.5\", command: [python3, eval.py]}\n";
  auto a = ParseJobSpec(json);
  auto b = ParseJobSpec(yaml);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->queue, "default");
  EXPECT_TRUE(a->IndependentTasks());
  EXPECT_EQ(a->roles[0].shape.gpus, 1);
  EXPECT_EQ(a->roles[0].shape.gpu_milli, 500);
  EXPECT_TRUE(a->roles[0].shape.IsShare());
}

TEST(JobSpecTest, EveryKindParses) {
  const char* specs[] = {
      "apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: chat}\nspec:\n"
      "  replicas: {min: 2, max: 8}\n  gpusPerReplica: 1\n  slo: {latencyMs: 200, percentile: 99}\n"
      "  command: [python3, -m, http.server]\n",
      "apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: dev}\nspec: {gpuMemory: 20Gi}\n",
      "apiVersion: tessera/v1\nkind: RLJob\nmetadata: {name: ppo}\nspec:\n  roles:\n"
      "  - {name: trainer, workers: 2, gpusPerWorker: 4, command: [python3, train.py]}\n"
      "  - {name: rollout, workers: 4, gpusPerWorker: 1, command: [python3, rollout.py]}\n",
  };
  for (const char* text : specs) {
    auto spec = ParseJobSpec(text);
    ASSERT_TRUE(spec.has_value()) << text << "\n" << spec.error().message;
    auto again = ParseJobSpec(DumpJson(JobSpecToJson(*spec)));
    ASSERT_TRUE(again.has_value()) << again.error().message;
    EXPECT_EQ(*again, *spec);
  }
  auto inf = ParseJobSpec(specs[0]);
  EXPECT_EQ(inf->roles[0].count, 2);
  EXPECT_FALSE(inf->preemptible);  // inference is never evicted for offline work by default
  auto dev = ParseJobSpec(specs[1]);
  // 20 GiB of an 80 GiB H100 = 250 milli.
  EXPECT_EQ(dev->roles[0].shape.gpu_milli, 250);
  EXPECT_EQ(dev->roles[0].command, (std::vector<std::string>{"sleep", "infinity"}));
  auto rl = ParseJobSpec(specs[2]);
  EXPECT_EQ(rl->TaskCount(), 6);
  EXPECT_EQ(rl->RoleOfRank(3).first->name, "rollout");
  EXPECT_EQ(rl->RoleOfRank(3).second, 1);
}

TEST(JobSpecTest, ExamplesDirectoryParses) {
  for (const char* file : {"examples/jobs/training-job.yaml", "examples/jobs/batch-job.yaml",
                           "examples/jobs/inference-service.yaml", "examples/jobs/dev-session.yaml",
                           "examples/jobs/rl-job.yaml", "examples/jobs/pytorch-ddp.yaml"}) {
    std::ifstream in(file);
    ASSERT_TRUE(in.good()) << file;
    std::stringstream ss;
    ss << in.rdbuf();
    // As `tessera submit` sends them from the repository root (pytorch-ddp.yaml: `workingDir: .`).
    auto spec = ParseJobSpec(WithAbsoluteWorkingDir(ss.str(), "/srv/tessera"));
    EXPECT_TRUE(spec.has_value()) << file << ": " << (spec ? "" : spec.error().message);
  }
}

TEST(JobSpecTest, ARelativeWorkingDirIsTheSubmittersDirectory) {
  const std::string rel = Training(
      "  workers: 1\n  gpusPerWorker: 1\n  workingDir: ../src/./app/\n"
      "  command: [x]\n");
  // The controller refuses it, and says who resolves it.
  EXPECT_EQ(ErrorsOf(rel),
            "spec.workingDir: must be an absolute path, got \"../src/./app/\" (`tessera submit` "
            "resolves a relative one against the directory it runs in)");
  auto spec = ParseJobSpec(WithAbsoluteWorkingDir(rel, "/home/ana/runs"));
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  EXPECT_EQ(spec->working_dir, "/home/ana/src/app");
  auto dot = ParseJobSpec(WithAbsoluteWorkingDir(
      Training("  workers: 1\n  gpusPerWorker: 1\n  workingDir: .\n  command: [x]\n"), "/w"));
  ASSERT_TRUE(dot.has_value()) << dot.error().message;
  EXPECT_EQ(dot->working_dir, "/w");
  // Absolute paths, no workingDir and unparsable text pass through untouched.
  const std::string abs = Training(
      "  workers: 1\n  gpusPerWorker: 1\n  workingDir: /x\n"
      "  command: [x]\n");
  EXPECT_EQ(WithAbsoluteWorkingDir(abs, "/w"), abs);
  EXPECT_EQ(WithAbsoluteWorkingDir("spec: [unclosed", "/w"), "spec: [unclosed");
}

TEST(JobSpecTest, TheSubmittedBodyIsTheSameTreeAsJsonOrTheTextItself) {
  const std::string yaml = Training(
      "  workers: 2\n  gpusPerWorker: 1\n  workingDir: app\n  command: [x]\n  env: {A: \"1\"}\n");
  const std::string body = SubmissionBody(yaml, "/w");
  ASSERT_TRUE(body.starts_with('{')) << body;
  auto from_yaml = ParseJobSpec(WithAbsoluteWorkingDir(yaml, "/w"));
  auto from_body = ParseJobSpec(body);
  ASSERT_TRUE(from_yaml.has_value() && from_body.has_value()) << body;
  EXPECT_EQ(JobSpecToJson(*from_body), JobSpecToJson(*from_yaml));
  // Invalid input reaches the controller as it was written, for its error with line and column.
  EXPECT_EQ(SubmissionBody("spec: [unclosed", "/w"), "spec: [unclosed");
  EXPECT_EQ(SubmissionBody("kind: \xff\n", "/w"), "kind: \xff\n");
  // A spec that parses but is invalid gets the same error either way.
  const std::string bad = Training("  workers: -3\n  gpusPerWorker: 1\n  command: [x]\n");
  EXPECT_EQ(ErrorsOf(SubmissionBody(bad, "/w")), ErrorsOf(bad));
}

TEST(JobSpecTest, NegativeAndAbsurdSizesNameTheField) {
  EXPECT_EQ(ErrorsOf(Training("  workers: -3\n  gpusPerWorker: 1\n  command: [x]\n")),
            "spec.workers: must be between 1 and 100000, got -3");
  EXPECT_EQ(ErrorsOf(Training("  workers: 100000000000\n  gpusPerWorker: 1\n  command: [x]\n")),
            "spec.workers: must be between 1 and 100000, got 100000000000");
  EXPECT_EQ(ErrorsOf(Training("  workers: 1e40\n  gpusPerWorker: 1\n  command: [x]\n")),
            "spec.workers: must be between 1 and 100000, got 1e+40");
  EXPECT_EQ(ErrorsOf(Training("  workers: 2\n  gpusPerWorker: 64\n  command: [x]\n")),
            "spec.gpusPerWorker: must be between 0 and 16 (a task runs on one node), got 64");
  EXPECT_EQ(ErrorsOf(Training("  workers: 2\n  gpusPerWorker: -1\n  command: [x]\n")),
            "spec.gpusPerWorker: must be between 0 and 16, got -1");
  EXPECT_EQ(ErrorsOf(Training("  workers: 2\n  gpusPerWorker: 1\n  gracePeriodSeconds: 999999999\n"
                              "  command: [x]\n")),
            "spec.gracePeriodSeconds: must be between 0 and 86400, got 999999999");
  EXPECT_EQ(
      ErrorsOf(Training("  workers: 2\n  gpusPerWorker: 1\n  memory: 900Ti\n  command: [x]\n")),
      "spec.memory: must be at most 64Ti, got string \"900Ti\"");
}

TEST(JobSpecTest, WrongTypes) {
  EXPECT_EQ(ErrorsOf(Training("  workers: two\n  gpusPerWorker: 1\n  command: [x]\n")),
            "spec.workers: must be an integer, got string \"two\"");
  EXPECT_EQ(ErrorsOf(Training("  workers: \"2\"\n  gpusPerWorker: 1\n  command: [x]\n")),
            "spec.workers: must be an integer, got string \"2\"");
  EXPECT_EQ(ErrorsOf(Training("  workers: 2.5\n  gpusPerWorker: 1\n  command: [x]\n")),
            "spec.workers: must be an integer, got 2.5");
  EXPECT_EQ(ErrorsOf(Training("  workers: 2\n  gpusPerWorker: 1\n  command: python3 train.py\n")),
            "spec.command: must be a list of arguments (argv), got a string; no shell is used "
            "unless `shell: true` is set");
  EXPECT_EQ(ErrorsOf(Training("  workers: 2\n  gpusPerWorker: 1\n  preemptible: maybe\n"
                              "  command: [x]\n")),
            "spec.preemptible: must be true or false, got string \"maybe\"");
  EXPECT_EQ(ErrorsOf("[1, 2, 3]"),
            "a job spec must be a mapping with apiVersion, kind, metadata and spec, got a list");
  EXPECT_EQ(ErrorsOf(Training("  workers: [1]\n  gpusPerWorker: {a: 1}\n  command: [x]\n")),
            "spec.workers: must be an integer, got a list; spec.gpusPerWorker: must be a number of "
            "GPUs, got a mapping");
}

TEST(JobSpecTest, UnknownKindsAndFields) {
  EXPECT_EQ(ErrorsOf("apiVersion: tessera/v1\nkind: PyTorchJob\nmetadata: {name: a}\nspec: {}\n"),
            "kind: unknown kind \"PyTorchJob\"; expected one of TrainingJob, InferenceService, "
            "BatchJob, DevSession, RLJob");
  EXPECT_EQ(ErrorsOf(Training("  wrokers: 2\n  workers: 2\n  gpusPerWorker: 1\n  command: [x]\n")),
            "spec.wrokers: unknown field for TrainingJob");
  EXPECT_EQ(ErrorsOf(Training("  workers: 2\n  gpusPerWorker: 1\n  replicas: 3\n  command: [x]\n")),
            "spec.replicas: unknown field for TrainingJob");
  EXPECT_EQ(ErrorsOf("apiVersion: tessera/v2\nkind: DevSession\nmetadata: {name: a}\nspec: {}\n"),
            "apiVersion: must be \"tessera/v1\", got \"tessera/v2\"");
  EXPECT_EQ(ErrorsOf("kind: DevSession\nspec: {}\n"), "apiVersion: required; metadata: required");
}

TEST(JobSpecTest, Names) {
  const std::string long_name(64, 'a');
  EXPECT_EQ(ErrorsOf("apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: " + long_name +
                     "}\nspec: {}\n"),
            "metadata.name: must be at most 63 characters, got 64");
  EXPECT_TRUE(ParseJobSpec("apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: " +
                           std::string(63, 'a') + "}\nspec: {}\n"));
  EXPECT_EQ(
      ErrorsOf("apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: My_Job}\nspec: {}\n"),
      "metadata.name: must consist of lower-case letters, digits and '-', and start and end "
      "with a letter or digit, got \"My_Job\"");
  EXPECT_NE(ErrorsOf("apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: a, queue: "
                     "\"../etc\"}\nspec: {}\n")
                .find("metadata.queue: must be a path"),
            std::string::npos);
  EXPECT_TRUE(ValidQueuePath("org/team/project"));
  EXPECT_FALSE(ValidQueuePath("org//team"));
  EXPECT_FALSE(ValidQueuePath("/org"));
  EXPECT_FALSE(ValidJobName("-a"));
  EXPECT_FALSE(ValidJobName(""));
}

TEST(JobSpecTest, NonUtf8AndNulBytesAreRefused) {
  std::string text = Training("  workers: 1\n  gpusPerWorker: 1\n  command: [x]\n");
  text.insert(text.find("[x]") + 1, "\xff\xfe");
  EXPECT_EQ(ErrorsOf(text), "the spec is not valid UTF-8: byte 111 (line 7, column 13)");
  // In JSON escapes too: \u0000 decodes to a NUL.
  EXPECT_EQ(ErrorsOf(R"({"apiVersion":"tessera/v1","kind":"DevSession","metadata":{"name":"a"},
      "spec":{"command":["a\u0000b"]}})"),
            "spec.command[0]: must not contain NUL bytes");
  // Overlong encoding of '/', and a lone surrogate.
  EXPECT_TRUE(FirstInvalidUtf8("\xc0\xaf").has_value());
  EXPECT_TRUE(FirstInvalidUtf8("\xed\xa0\x80").has_value());
  EXPECT_FALSE(FirstInvalidUtf8("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80").has_value());
}

TEST(JobSpecTest, GangsTakeWholeGpusOnly) {
  EXPECT_EQ(ErrorsOf(Training("  workers: 2\n  gpusPerWorker: \"0.5\"\n  command: [x]\n")),
            "spec.gpusPerWorker: fractional GPUs are not allowed for gangs, got 0.5");
  EXPECT_EQ(ErrorsOf(Training("  workers: 2\n  gpusPerWorker: 1.5\n  command: [x]\n")),
            "spec.gpusPerWorker: a share of a GPU must be below 1; more than one GPU must be "
            "whole, got 1.5");
}

TEST(JobSpecTest, ReservedEnvAndElastic) {
  EXPECT_EQ(ErrorsOf(Training("  workers: 2\n  gpusPerWorker: 1\n  env: {RANK: \"3\"}\n"
                              "  command: [x]\n")),
            "spec.env.RANK: is set by Tessera on every task and cannot be overridden");
  EXPECT_EQ(ErrorsOf(Training("  workers: 20\n  gpusPerWorker: 1\n  elastic: {minWorkers: 2, "
                              "maxWorkers: 8}\n  command: [x]\n")),
            "spec.workers: must be within elastic [2, 8], got 20");
  auto spec =
      ParseJobSpec(Training("  gpusPerWorker: 1\n  elastic: {minWorkers: 2, maxWorkers: 8}\n"
                            "  command: [x]\n  env: {OMP_NUM_THREADS: 4}\n"));
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  EXPECT_EQ(spec->roles[0].count, 8);
  EXPECT_EQ(spec->env.at("OMP_NUM_THREADS"), "4");
}

TEST(JobSpecTest, YamlHazards) {
  // Duplicate keys, anchors that expand without bound, deep nesting, syntax errors.
  EXPECT_NE(ErrorsOf("apiVersion: tessera/v1\napiVersion: tessera/v1\n").find("duplicate key"),
            std::string::npos);
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [*" + static_cast<char>(c - 1) + ", *" +
            static_cast<char>(c - 1) + ", *" + static_cast<char>(c - 1) + ", *" +
            static_cast<char>(c - 1) + ", *" + static_cast<char>(c - 1) + ", *" +
            static_cast<char>(c - 1) + ", *" + static_cast<char>(c - 1) + ", *" +
            static_cast<char>(c - 1) + ", *" + static_cast<char>(c - 1) + ", *" +
            static_cast<char>(c - 1) + "]\n";
  }
  EXPECT_NE(ErrorsOf(bomb).find("more than 100000 values"), std::string::npos);
  EXPECT_NE(ErrorsOf(std::string(5000, '[') + std::string(5000, ']')).size(), 0u);
  EXPECT_NE(ErrorsOf(std::string(5000, '[')).size(), 0u);
  EXPECT_NE(ErrorsOf("a: [1, 2\nb: }").find("line"), std::string::npos);
  EXPECT_NE(ErrorsOf("{\"a\": }").find("invalid JSON"), std::string::npos);
  EXPECT_EQ(ErrorsOf(""), "document: empty");
  EXPECT_NE(ErrorsOf(std::string(kMaxSpecBytes + 1, ' ')).find("at most 1048576"),
            std::string::npos);
}

TEST(JobSpecTest, ShellMustBeExplicit) {
  auto spec =
      ParseJobSpec(Training("  workers: 1\n  gpusPerWorker: 0\n  shell: true\n"
                            "  command: [\"echo $RANK && sleep 1\"]\n"));
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  EXPECT_TRUE(spec->shell);
  EXPECT_EQ(spec->roles[0].command.size(), 1u);
}

TEST(DocumentTest, SplitsYamlStreams) {
  auto docs = SplitYamlDocuments("# c\n---\na: 1\n---\n\n---\nb: 2\n...\n");
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0], "a: 1\n");
  EXPECT_EQ(docs[1], "b: 2\n");
}

TEST(DocumentTest, YamlScalarsAreTyped) {
  auto doc = ParseDocument("a: 1\nb: '1'\nc: true\nd: ~\ne: 1.5\nf: hello\ng: !!str 7\n");
  ASSERT_TRUE(doc.has_value());
  EXPECT_TRUE((*doc)["a"].is_number_integer());
  EXPECT_TRUE((*doc)["b"].is_string());
  EXPECT_TRUE((*doc)["c"].is_boolean());
  EXPECT_TRUE((*doc)["d"].is_null());
  EXPECT_TRUE((*doc)["e"].is_number_float());
  EXPECT_TRUE((*doc)["f"].is_string());
  EXPECT_TRUE((*doc)["g"].is_string());
}

TEST(JobSpecTest, GpuModelSpeeds) {
  auto spec =
      ParseJobSpec(Training("  workers: 2\n  gpusPerWorker: 8\n  command: [x]\n"
                            "  gpuModels: {H100: 1.0, A100: 0.55}\n"));
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  ASSERT_EQ(spec->gpu_models.size(), 2U);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(spec->gpu_model_speeds[i], spec->gpu_models[i] == "H100" ? 1.0 : 0.55);
  }
  const Workload w = spec->ToWorkload();
  EXPECT_EQ(w.gpu_model_speeds, spec->gpu_model_speeds);
  auto again = ParseJobSpec(DumpJson(JobSpecToJson(*spec)));
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(*again, *spec);
  EXPECT_NE(ErrorsOf(Training("  workers: 2\n  gpusPerWorker: 8\n  command: [x]\n"
                              "  gpuModels: {H100: 1.0, A100: -1}\n"))
                .find("spec.gpuModels.A100: must be a relative speed"),
            std::string::npos);
  EXPECT_NE(ErrorsOf(Training("  workers: 2\n  gpusPerWorker: 8\n  command: [x]\n"
                              "  gpuModels: {H100: fast}\n"))
                .find("spec.gpuModels.H100"),
            std::string::npos);
}

constexpr const char* kRl = R"(apiVersion: tessera/v1
kind: RLJob
metadata: {name: ppo}
spec:
  roles:
    - {name: trainer, workers: 2, gpusPerWorker: 8, command: [t]}
    - {name: rollout, workers: 4, gpusPerWorker: 2, command: [r], affinity: {trainer: leaf}}
    - {name: reference, workers: 1, gpusPerWorker: 8, command: [f], affinity: {trainer: spine}}
)";

TEST(JobSpecTest, RlRoleAffinity) {
  auto spec = ParseJobSpec(kRl);
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  ASSERT_EQ(spec->roles.size(), 3U);
  EXPECT_TRUE(spec->roles[0].affinity.empty());
  ASSERT_EQ(spec->roles[1].affinity.size(), 1U);
  EXPECT_EQ(spec->roles[1].affinity[0], (RoleAffinity{"trainer", "leaf"}));
  const Workload w = spec->ToWorkload();
  ASSERT_EQ(w.groups.size(), 3U);
  EXPECT_EQ(w.groups[2].affinity[0], (RoleAffinity{"trainer", "spine"}));
  auto again = ParseJobSpec(DumpJson(JobSpecToJson(*spec)));
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(*again, *spec);
  std::string bad = kRl;
  bad.replace(bad.find("{trainer: leaf}"), 15, "{critic: leaf}");
  EXPECT_EQ(ErrorsOf(bad), "spec.roles[1].affinity.critic: must name another role of this job");
  std::string self = kRl;
  self.replace(self.find("{trainer: leaf}"), 15, "{rollout: leaf}");
  EXPECT_EQ(ErrorsOf(self), "spec.roles[1].affinity.rollout: must name another role of this job");
  std::string level = kRl;
  level.replace(level.find("{trainer: leaf}"), 15, "{trainer: [leaf]}");
  EXPECT_NE(ErrorsOf(level).find("spec.roles[1].affinity.trainer: must name a topology level"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera
