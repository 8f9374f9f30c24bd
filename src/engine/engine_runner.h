// The simulated engine's clock: runs the serving core's engine model (serve::EngineReplica) on
// the wall clock. One scheduling thread plans a step (continuous batching), sleeps for the
// step's modelled duration (times time_scale), applies it, and hands each request's tokens to
// its RequestStream at that moment; HTTP threads submit requests and wait on their streams.
// The KV cache's events are kept as the set of cached blocks and fanned out to subscribers
// (the gateway), and, given a ZmqKvPublisher, published in vLLM's format as well (each block
// named by its engine hash, with its parent and token ids, which the runner remembers from the
// prompts it was given). Thread-safe: every public method may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/engine_profile.h"
#include "engine/zmq_kv_publisher.h"
#include "serve/engine_model.h"

namespace tessera::engine {

// One request's tokens as the engine releases them.
class RequestStream {
 public:
  struct Progress {
    std::int64_t tokens = 0;  // output tokens released so far
    bool finished = false;
    bool aborted = false;  // the engine stopped before finishing it
  };
  // Waits until more than `seen` tokens are out, the request ended, or `timeout_ms` passed.
  Progress WaitPast(std::int64_t seen, int timeout_ms);
  std::int64_t cached_tokens() const;

 private:
  friend class EngineRunner;
  void Release(bool last);
  void SetCached(std::int64_t tokens);
  void Abort();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Progress progress_;
  std::int64_t cached_tokens_ = 0;
};

// A subscriber's queue of KV event messages (JSON text, one SSE `data:` each). Bounded: a
// subscriber that falls too far behind is closed and must reconnect for a fresh snapshot.
class KvEventFeed {
 public:
  // Waits up to `timeout_ms` for messages; false once the feed is closed.
  bool Next(std::vector<std::string>* out, int timeout_ms);

 private:
  friend class EngineRunner;
  static constexpr std::size_t kMaxQueued = 4096;
  void Push(std::string message);
  void Close();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  bool closed_ = false;
};

struct EngineOptions {
  EngineProfile profile;
  int block_tokens = 16;
  std::int64_t gpu_blocks = 0;     // 0: profile.kv_cache_tokens / block_tokens
  std::int64_t host_blocks = 0;    // 0: profile.host_cache_tokens / block_tokens
  double time_scale = 1.0;         // wall time per modelled time (0.1 runs 10x faster)
  std::int32_t max_waiting = 256;  // queued requests beyond this are refused (503)
};

struct EngineCounters {
  std::int32_t running = 0, waiting = 0;
  double kv_usage = 0;
  std::int64_t prefix_queries_tokens = 0, prefix_hits_tokens = 0;
  std::int64_t prompt_tokens = 0, generation_tokens = 0, successes = 0;
  std::int64_t rejected_queue_full = 0, rejected_too_long = 0;
  std::int64_t steps = 0;
  double busy_seconds = 0;  // wall time spent in modelled steps (the GPU's busy time)
  // Steps that woke more than the allowed lag after their due time, so that the modelled
  // timeline restarted from then, and the wall time so lost (a loaded machine's delay).
  std::int64_t timeline_restarts = 0;
  double timeline_lost_seconds = 0;
};

class EngineRunner {
 public:
  explicit EngineRunner(EngineOptions options, std::unique_ptr<ZmqKvPublisher> zmq = nullptr);
  ~EngineRunner();
  EngineRunner(const EngineRunner&) = delete;
  EngineRunner& operator=(const EngineRunner&) = delete;

  enum class Refusal { kNone, kTooLong, kQueueFull };
  struct Submitted {
    Refusal refusal = Refusal::kNone;
    std::shared_ptr<RequestStream> stream;  // null when refused
  };
  Submitted Submit(const std::vector<std::int32_t>& prompt, std::int64_t output_tokens);

  std::shared_ptr<KvEventFeed> SubscribeKvEvents();
  EngineCounters Counters() const;
  const EngineOptions& options() const { return options_; }

 private:
  void Loop();
  void PublishKvEventsLocked();
  void PublishZmqLocked(const std::vector<serve::KvEvent>& events);
  void RememberOriginsLocked(const std::vector<std::int32_t>& prompt,
                             const std::vector<serve::BlockHash>& blocks);
  std::string SnapshotMessageLocked() const;

  EngineOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  serve::EngineReplica replica_;
  std::map<std::int64_t, std::shared_ptr<RequestStream>> streams_;
  std::int64_t next_id_ = 1;
  std::set<serve::BlockHash> cached_blocks_;  // what the GPU tier holds, from the KV events
  std::vector<std::weak_ptr<KvEventFeed>> feeds_;
  std::int64_t kv_seq_ = 0;
  // vLLM's format: what each block is made of, for BlockStored's parent and token ids.
  struct BlockOrigin {
    serve::BlockHash parent = 0;  // 0: the prompt's first block
    std::vector<std::int32_t> tokens;
  };
  std::unique_ptr<ZmqKvPublisher> zmq_;
  std::unordered_map<serve::BlockHash, BlockOrigin> origins_;
  EngineCounters counters_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tessera::engine
