#include "engine/engine_runner.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "serve/block_hash.h"

namespace tessera::engine {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

RequestStream::Progress RequestStream::WaitPast(std::int64_t seen, int timeout_ms) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
               [&] { return progress_.tokens > seen || progress_.finished || progress_.aborted; });
  return progress_;
}

std::int64_t RequestStream::cached_tokens() const {
  std::lock_guard lock(mu_);
  return cached_tokens_;
}

void RequestStream::Release(bool last) {
  {
    std::lock_guard lock(mu_);
    ++progress_.tokens;
    progress_.finished = progress_.finished || last;
  }
  cv_.notify_all();
}

void RequestStream::SetCached(std::int64_t tokens) {
  std::lock_guard lock(mu_);
  cached_tokens_ = tokens;
}

void RequestStream::Abort() {
  {
    std::lock_guard lock(mu_);
    progress_.aborted = true;
  }
  cv_.notify_all();
}

bool KvEventFeed::Next(std::vector<std::string>* out, int timeout_ms) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
               [&] { return closed_ || !queue_.empty(); });
  while (!queue_.empty()) {
    out->push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return !closed_;
}

void KvEventFeed::Push(std::string message) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    if (queue_.size() >= kMaxQueued) {
      closed_ = true;  // too far behind: it reconnects and gets a fresh snapshot
    } else {
      queue_.push_back(std::move(message));
    }
  }
  cv_.notify_all();
}

void KvEventFeed::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

namespace {

EngineOptions Normalised(EngineOptions o) {
  o.block_tokens = std::max(1, o.block_tokens);
  if (o.gpu_blocks <= 0)
    o.gpu_blocks = std::max<std::int64_t>(1, o.profile.kv_cache_tokens / o.block_tokens);
  if (o.host_blocks <= 0) o.host_blocks = o.profile.host_cache_tokens / o.block_tokens;
  if (!(o.time_scale > 0)) o.time_scale = 1.0;
  return o;
}

}  // namespace

EngineRunner::EngineRunner(EngineOptions options, std::unique_ptr<ZmqKvPublisher> zmq)
    : options_(Normalised(std::move(options))),
      replica_(options_.profile, options_.block_tokens, options_.gpu_blocks, options_.host_blocks),
      zmq_(std::move(zmq)),
      thread_([this] { Loop(); }) {}

EngineRunner::~EngineRunner() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    for (auto& [id, s] : streams_) s->Abort();
    for (auto& f : feeds_) {
      if (auto feed = f.lock()) feed->Close();
    }
  }
  cv_.notify_all();
  thread_.join();
}

EngineRunner::Submitted EngineRunner::Submit(const std::vector<std::int32_t>& prompt,
                                             std::int64_t output_tokens) {
  serve::EngineRequest r;
  r.prompt_tokens = static_cast<std::int64_t>(prompt.size());
  r.output_tokens = output_tokens;
  r.blocks = serve::ChainBlockHashes(prompt, options_.block_tokens);
  std::lock_guard lock(mu_);
  if (replica_.Load().waiting >= options_.max_waiting) {
    ++counters_.rejected_queue_full;
    return {Refusal::kQueueFull, nullptr};
  }
  if (zmq_) RememberOriginsLocked(prompt, r.blocks);
  r.id = next_id_++;
  const std::int64_t id = r.id;
  if (!replica_.Enqueue(std::move(r))) {
    ++counters_.rejected_too_long;
    return {Refusal::kTooLong, nullptr};
  }
  auto stream = std::make_shared<RequestStream>();
  streams_[id] = stream;
  counters_.prompt_tokens += static_cast<std::int64_t>(prompt.size());
  counters_.prefix_queries_tokens += static_cast<std::int64_t>(prompt.size());
  cv_.notify_all();
  return {Refusal::kNone, stream};
}

std::shared_ptr<KvEventFeed> EngineRunner::SubscribeKvEvents() {
  auto feed = std::make_shared<KvEventFeed>();
  std::lock_guard lock(mu_);
  feed->Push(SnapshotMessageLocked());
  std::erase_if(feeds_, [](const std::weak_ptr<KvEventFeed>& f) { return f.expired(); });
  feeds_.push_back(feed);
  return feed;
}

EngineCounters EngineRunner::Counters() const {
  std::lock_guard lock(mu_);
  EngineCounters c = counters_;
  const serve::ReplicaLoad load = replica_.Load();
  c.running = load.running;
  c.waiting = load.waiting;
  c.kv_usage = load.kv_utilisation;
  return c;
}

void EngineRunner::Loop() {
  std::unique_lock lock(mu_);
  // Steps run back to back on the modelled timeline: a step starts when the one before was due
  // to end, not when this thread got round to it, so wake-up latency and the bookkeeping between
  // steps do not add up over a request's many steps (a busy machine would otherwise slow every
  // request by its scheduling delay per step). Only a step that is more than kMaxLag late
  // restarts the timeline from now.
  constexpr auto kMaxLag = std::chrono::milliseconds(50);
  Clock::time_point due{};   // when the step just finished was due to end
  bool on_timeline = false;  // due is the end of the step just finished
  while (!stop_) {
    if (replica_.idle()) {
      on_timeline = false;
      cv_.wait(lock, [&] { return stop_ || !replica_.idle(); });
      continue;
    }
    const auto now = Clock::now();
    const auto start = on_timeline && now - due < kMaxLag ? due : now;
    if (on_timeline && start == now) {  // the modelled timeline slipped by now - due
      ++counters_.timeline_restarts;
      counters_.timeline_lost_seconds += std::chrono::duration<double>(now - due).count();
    }
    const std::int64_t micros = replica_.BeginStep();
    if (micros <= 0) {  // nothing admissible now; wait for a change
      on_timeline = false;
      cv_.wait_for(lock, std::chrono::milliseconds(1));
      continue;
    }
    const auto wake = start + std::chrono::microseconds(static_cast<std::int64_t>(
                                  static_cast<double>(micros) * options_.time_scale));
    due = wake;
    on_timeline = true;
    lock.unlock();
    std::this_thread::sleep_until(wake);
    lock.lock();
    serve::StepOutcome out = replica_.FinishStep();
    ++counters_.steps;
    counters_.busy_seconds += static_cast<double>(micros) * options_.time_scale / 1e6;
    for (const serve::Admission& a : out.admitted) {
      counters_.prefix_hits_tokens += a.gpu_hit_tokens + a.host_hit_tokens;
      if (auto it = streams_.find(a.id); it != streams_.end()) {
        it->second->SetCached(a.gpu_hit_tokens + a.host_hit_tokens);
      }
    }
    for (const serve::TokenOutput& t : out.tokens) {
      ++counters_.generation_tokens;
      auto it = streams_.find(t.id);
      if (it == streams_.end()) continue;
      it->second->Release(t.last);
      if (t.last) {
        ++counters_.successes;
        streams_.erase(it);
      }
    }
    PublishKvEventsLocked();
  }
}

void EngineRunner::PublishKvEventsLocked() {
  std::vector<serve::KvEvent> events = replica_.TakeKvEvents();
  if (events.empty()) return;
  // Consecutive events of one kind go out as one entry, as vLLM batches BlockStored hashes.
  Json list = Json::array();
  for (const serve::KvEvent& e : events) {
    const char* type = e.kind == serve::KvEvent::Kind::kStored    ? "BlockStored"
                       : e.kind == serve::KvEvent::Kind::kRemoved ? "BlockRemoved"
                                                                  : "AllBlocksCleared";
    if (e.kind == serve::KvEvent::Kind::kStored) cached_blocks_.insert(e.block);
    if (e.kind == serve::KvEvent::Kind::kRemoved) cached_blocks_.erase(e.block);
    if (e.kind == serve::KvEvent::Kind::kCleared) cached_blocks_.clear();
    if (list.empty() || list.back()["type"] != type) {
      list.push_back({{"type", type}, {"block_hashes", Json::array()}});
    }
    if (e.kind != serve::KvEvent::Kind::kCleared) list.back()["block_hashes"].push_back(e.block);
  }
  if (zmq_) PublishZmqLocked(events);
  const std::string message = Json{{"seq", ++kv_seq_}, {"events", list}}.dump();
  std::erase_if(feeds_, [](const std::weak_ptr<KvEventFeed>& f) { return f.expired(); });
  for (auto& f : feeds_) {
    if (auto feed = f.lock()) feed->Push(message);
  }
}

void EngineRunner::RememberOriginsLocked(const std::vector<std::int32_t>& prompt,
                                         const std::vector<serve::BlockHash>& blocks) {
  const auto size = static_cast<std::size_t>(options_.block_tokens);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    auto [it, added] = origins_.try_emplace(blocks[i]);
    if (!added) continue;
    it->second.parent = i == 0 ? 0 : blocks[i - 1];
    it->second.tokens.assign(prompt.begin() + static_cast<std::ptrdiff_t>(i * size),
                             prompt.begin() + static_cast<std::ptrdiff_t>((i + 1) * size));
  }
}

void EngineRunner::PublishZmqLocked(const std::vector<serve::KvEvent>& events) {
  using Kind = serve::EngineKvEvent::Kind;
  std::vector<serve::EngineKvEvent> out;
  serve::BlockHash chain_end = 0;  // the last block of out.back() while it is an open chain
  bool chain_open = false;
  for (const serve::KvEvent& e : events) {
    if (e.kind == serve::KvEvent::Kind::kCleared) {
      out.push_back({Kind::kCleared});
      chain_open = false;
    } else if (e.kind == serve::KvEvent::Kind::kRemoved) {
      if (out.empty() || out.back().kind != Kind::kRemoved) out.push_back({Kind::kRemoved});
      out.back().block_hashes.push_back(EngineHash(e.block));
      chain_open = false;
    } else if (auto it = origins_.find(e.block); it != origins_.end()) {
      const BlockOrigin& o = it->second;
      // vLLM sends one BlockStored per chain of consecutive blocks: extend the open one.
      if (!chain_open || o.parent != chain_end) {
        serve::EngineKvEvent stored{Kind::kStored};
        if (o.parent != 0) stored.parent_hash = EngineHash(o.parent);
        stored.block_size = options_.block_tokens;
        out.push_back(std::move(stored));
      }
      out.back().block_hashes.push_back(EngineHash(e.block));
      out.back().token_ids.insert(out.back().token_ids.end(), o.tokens.begin(), o.tokens.end());
      chain_end = e.block;
      chain_open = true;
    }
  }
  const double ts =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (!out.empty()) zmq_->Publish(ts, out);
  // Blocks neither cached nor queued for long are forgotten once the table outgrows the cache.
  const auto bound =
      static_cast<std::size_t>(4 * (options_.gpu_blocks + options_.host_blocks) + 4096);
  if (origins_.size() > bound) {
    std::erase_if(origins_, [&](const auto& kv) { return !cached_blocks_.contains(kv.first); });
  }
}

std::string EngineRunner::SnapshotMessageLocked() const {
  Json stored = Json::array();
  for (serve::BlockHash b : cached_blocks_) stored.push_back(b);
  Json list = Json::array({Json{{"type", "AllBlocksCleared"}, {"block_hashes", Json::array()}}});
  if (!stored.empty()) list.push_back({{"type", "BlockStored"}, {"block_hashes", stored}});
  return Json{{"seq", kv_seq_}, {"events", list}}.dump();
}

}  // namespace tessera::engine
