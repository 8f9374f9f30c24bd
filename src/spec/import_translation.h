// Shared by the importers (imported_spec.h): a Translation collects the note for every field it
// maps or ignores and the error for every field it refuses, and finally validates the Tessera
// document it built. Kubernetes pieces every format shares (object metadata, a pod template's
// one container, priority classes) are read here once.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "spec/imported_spec.h"

namespace tessera::import {

using Json = nlohmann::json;

class Translation {
 public:
  explicit Translation(std::string source) : source_(std::move(source)) {}

  void Map(const std::string& field, const std::string& action) {
    notes_.push_back({field, action, false});
  }
  void Ignore(const std::string& field, const std::string& why) {
    notes_.push_back({field, why, true});
  }
  void Refuse(const std::string& field, const std::string& reason) {
    errors_.push_back({field, reason});
  }
  bool ok() const { return errors_.empty(); }

  // Every key of `obj` must be handled by the caller or listed in `ignored` (key -> why, noted
  // here); any other key is refused as not supported.
  void Keys(const Json& obj, const std::string& path, const std::set<std::string>& handled,
            const std::map<std::string, std::string>& ignored = {});

  // Typed reads that refuse a wrong type with the field's path; nullptr / nullopt when absent.
  const Json* Object(const Json& obj, const std::string& path, const std::string& key);
  const Json* List(const Json& obj, const std::string& path, const std::string& key);
  std::optional<std::int64_t> Int(const Json& obj, const std::string& path, const std::string& key,
                                  std::int64_t lo, std::int64_t hi);
  std::optional<std::string> String(const Json& obj, const std::string& path,
                                    const std::string& key);
  std::optional<bool> Bool(const Json& obj, const std::string& path, const std::string& key);

  // Validates `document` (a tessera/v1 spec) and returns it with the notes, or every refusal.
  // Problems the Tessera validator finds are reported as "translated FIELD: reason".
  Result<ImportedJob> Finish(Json document, bool hold);

 private:
  std::string source_;
  std::vector<ImportNote> notes_;
  std::vector<FieldError> errors_;
};

inline std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// metadata.name -> metadata.name; metadata.namespace -> metadata.queue when
// `namespace_is_queue`; labels, annotations and the like ignored with a note.
Json TranslateMetadata(const Json& doc, bool namespace_is_queue, Translation& t);

// One task's process as a pod template describes it.
struct PodTask {
  std::vector<std::string> command;  // container command + args
  Json env = Json::object();         // name -> value
  Json gpus;                         // whole GPUs from resources limits (null: none asked)
  Json cpu, memory;                  // Kubernetes quantities, passed on ("500m", "16Gi")
  std::string working_dir;
  std::optional<std::int64_t> grace_period_seconds;
  std::string restart_policy;
  // Equal tasks can share one Tessera role.
  bool SameAs(const PodTask& o) const {
    return command == o.command && env == o.env && gpus == o.gpus && cpu == o.cpu &&
           memory == o.memory && working_dir == o.working_dir;
  }
};

// A pod template (`template:` of a replica spec, task or Job): exactly one container whose
// command is given. Container-only fields (image, volumeMounts, ...) are ignored with a note.
std::optional<PodTask> TranslatePodTemplate(const Json& tmpl, const std::string& path,
                                            Translation& t);
// A container's env list (-> task.env) and resources `key` (GPUs, cpu, memory), as a container
// or Kubeflow Trainer's trainer (resourcesPerNode) gives them.
void ReadEnv(const Json& c, const std::string& path, PodTask& task, Translation& t);
void ReadResources(const Json& c, const std::string& path, const std::string& key, PodTask& task,
                   Translation& t);
// Writes a task's fields into a Tessera spec (command, env, cpu, memory, workingDir,
// gracePeriodSeconds); `gpus_key` names the GPU field of the kind (gpusPerWorker, ...).
void PutPodTask(const PodTask& task, const std::string& gpus_key, const ImportOptions& options,
                Json& spec);

// The priority of a PriorityClass name, refused when unknown or out of Tessera's range.
std::optional<int> PriorityOfClass(const std::string& name, const std::string& field,
                                   const ImportOptions& options, Translation& t);

// The document's apiVersion and kind, "" when missing.
std::string ApiVersionOf(const Json& doc);
std::string KindOf(const Json& doc);

}  // namespace tessera::import
