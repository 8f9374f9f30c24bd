// The records as JSON objects, for stores that keep them as values (EtcdStore). Field names
// are the records' own in camelCase; every field is written, so a value is a whole record.
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "store/records.h"

namespace tessera {

nlohmann::json ToJson(const QueueRecord& r);
nlohmann::json ToJson(const JobRecord& r);
nlohmann::json ToJson(const UnitRecord& r);
nlohmann::json ToJson(const TaskRecord& r);
nlohmann::json ToJson(const NodeRecord& r);
nlohmann::json ToJson(const EventRecord& r);
nlohmann::json ToJson(const NodeCredentialRecord& r);

// Each fails with the field that is missing or of the wrong type.
Result<QueueRecord> QueueRecordFromJson(const nlohmann::json& j);
Result<JobRecord> JobRecordFromJson(const nlohmann::json& j);
Result<UnitRecord> UnitRecordFromJson(const nlohmann::json& j);
Result<TaskRecord> TaskRecordFromJson(const nlohmann::json& j);
Result<NodeRecord> NodeRecordFromJson(const nlohmann::json& j);
Result<EventRecord> EventRecordFromJson(const nlohmann::json& j);
Result<NodeCredentialRecord> NodeCredentialRecordFromJson(const nlohmann::json& j);

// Compact JSON text; invalid UTF-8 in a string is replaced rather than thrown on.
std::string RecordText(const nlohmann::json& j);

}  // namespace tessera
