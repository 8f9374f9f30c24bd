// The durable-state interface of the controller. One implementation per backend: SqliteStore
// (embedded, the default) and EtcdStore (several controllers, one leads). A Commit that returns
// success is durable: it survives a kill -9 of the process and a power cut (as far as the
// disk honours fsync). Thread-safety: implementations serialise calls internally.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "store/records.h"

namespace tessera {

class Store {
 public:
  virtual ~Store() = default;

  // Reads everything back (after a restart).
  virtual Result<StoreContents> Load() = 0;

  // Applies `change` atomically. Returns the change's events with their sequence numbers.
  // Fails without applying anything when a constraint would break: kAlreadyExists for a job
  // name taken in its queue, kFailedPrecondition for a GPU claimed twice, kIo otherwise.
  virtual Result<std::vector<EventRecord>> Commit(const Change& change) = 0;

  // Every node's credential digest (Change::put_node_credentials), by node name.
  virtual Result<std::vector<NodeCredentialRecord>> LoadNodeCredentials() = 0;

  // Events with seq > `after`, oldest first, at most `limit`.
  virtual Result<std::vector<EventRecord>> EventsSince(std::int64_t after, int limit) = 0;

  // A small durable write, to learn whether the store commits again after a failure (the
  // controller is unready meanwhile). The default assumes it does.
  virtual Status Probe() { return {}; }
};

}  // namespace tessera
