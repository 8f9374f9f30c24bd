// Queue tree files (`tesserad --queues FILE`, `tessera sim --queues FILE`): YAML read into a
// QueueTreeSpec. The format is documented in docs/quotas.md; examples/config/queues.yaml is one.
// Errors name the file, the key and the reason: "FILE: key 'queues[2].guaranteed.gpu': negative".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/queue_tree_spec.h"
#include "core/status.h"

namespace tessera {

// Parses the YAML text of a queue file; `source` names it in errors.
Result<QueueTreeSpec> ParseQueueFile(const std::string& text, const std::string& source);
// Reads and parses a queue file (at most 16 MiB); errors name `path`.
Result<QueueTreeSpec> ReadQueueFile(const std::string& path);
// The tree as a queue file in JSON (which is YAML): ParseQueueFile reads it back the same
// (a live export's "queueTree", live_export.h).
nlohmann::json QueueFileJson(const QueueTreeSpec& spec);

}  // namespace tessera
