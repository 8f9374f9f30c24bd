// The operator's node operations: cordon (no new work lands on the node; what runs there goes
// on), uncordon, and drain (cordon, then every gang or task running there is stopped with its
// grace period and recovered elsewhere by its recovery policy, as after a lost node, without
// counting a restart). Each is one commit with a NodeCordoned / NodeUncordoned / NodeDrained
// event; the cordon is durable (nodes.cordoned) and survives re-registration and restarts.
//
// Thread-safety: every method is thread-safe (it takes the core's mutex).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/api_error.h"
#include "server/controller_core.h"

namespace tessera {

enum class NodeOperation { kCordon, kUncordon, kDrain };

class NodeOperations {
 public:
  explicit NodeOperations(ControllerCore& core) : core_(core) {}

  // {"node", "cordoned", "stopped": [job...]} or NotFound for a node never registered.
  ApiResult<nlohmann::json> Apply(const std::string& node, NodeOperation op);

 private:
  ControllerCore& core_;
};

}  // namespace tessera
