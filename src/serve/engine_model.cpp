#include "serve/engine_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tessera::serve {

double StepMicros(const EngineProfile& p, std::int64_t decode_sequences,
                  std::int64_t context_tokens, std::int64_t prefill_tokens,
                  double prefill_attention_ktoken_tokens, std::int64_t reload_bytes) {
  return p.step_base_us + static_cast<double>(prefill_tokens) * p.prefill_us_per_token +
         prefill_attention_ktoken_tokens * p.prefill_attention_us_per_ktoken +
         static_cast<double>(decode_sequences) * p.decode_us_per_sequence +
         static_cast<double>(context_tokens) * p.decode_us_per_context_token +
         static_cast<double>(reload_bytes) / (p.pcie_gb_per_s * 1e3);
}

EngineReplica::EngineReplica(const EngineProfile& profile, int block_tokens,
                             std::int64_t gpu_blocks, std::int64_t host_blocks)
    : profile_(profile), block_tokens_(block_tokens), cache_(gpu_blocks, host_blocks) {}

bool EngineReplica::Enqueue(EngineRequest request) {
  request.prompt_tokens = std::max<std::int64_t>(1, request.prompt_tokens);
  request.output_tokens = std::max<std::int64_t>(1, request.output_tokens);
  const std::int64_t sequence = request.prompt_tokens + request.output_tokens;
  if (sequence > profile_.max_context_tokens || BlocksFor(sequence) > cache_.capacity()) {
    return false;
  }
  const KvCache::Match m = cache_.Find(request.blocks);
  const std::int64_t cached = std::min(request.prompt_tokens - 1,
                                       static_cast<std::int64_t>(m.gpu + m.host) * block_tokens_);
  const std::int64_t uncached = request.prompt_tokens - std::max<std::int64_t>(0, cached);
  waiting_prefill_tokens_ += uncached;
  waiting_.push_back(Waiting{std::move(request), uncached});
  return true;
}

bool EngineReplica::Admit(Waiting& w, StepOutcome* outcome, std::int64_t* reload_bytes) {
  const EngineRequest& r = w.request;
  const KvCache::Match m = cache_.Find(r.blocks);
  const std::int64_t total = BlocksFor(r.prompt_tokens + r.output_tokens);
  const std::int64_t hits = m.gpu + m.host;
  const std::int64_t fresh = total - hits;
  if (cache_.available() < m.host + fresh) return false;  // first come, first served
  Sequence s;
  const std::span<const BlockHash> blocks(r.blocks);
  cache_.Acquire(blocks.first(static_cast<std::size_t>(m.gpu)),
                 blocks.subspan(static_cast<std::size_t>(m.gpu), static_cast<std::size_t>(m.host)),
                 fresh, &s.pinned);
  const std::int64_t gpu_tokens = std::min(r.prompt_tokens, std::int64_t{m.gpu} * block_tokens_);
  const std::int64_t hit_tokens = std::min(r.prompt_tokens, hits * block_tokens_);
  outcome->admitted.push_back({r.id, gpu_tokens, hit_tokens - gpu_tokens});
  *reload_bytes += static_cast<std::int64_t>(static_cast<double>(m.host) * block_tokens_ *
                                             profile_.kv_bytes_per_token);
  // The last prompt token is always computed: its logits give the first output token.
  s.computed = std::min(hit_tokens, r.prompt_tokens - 1);
  s.hit_blocks = hits;
  s.fresh = fresh;
  waiting_prefill_tokens_ -= w.estimated_uncached;
  s.request = std::move(w.request);
  running_.push_back(std::move(s));
  waiting_.pop_front();
  return true;
}

std::int64_t EngineReplica::BeginStep() {
  planned_ = {};
  std::int64_t budget = profile_.max_batched_tokens;
  std::int64_t decodes = 0, context = 0, prefill = 0, reload_bytes = 0;
  double attention = 0;
  const auto plan_prefill = [&](Sequence& s) {
    if (budget <= 0) return;
    s.chunk = std::min(s.request.prompt_tokens - s.computed, budget);
    budget -= s.chunk;
    prefill += s.chunk;
    attention += static_cast<double>(s.chunk) *
                 (static_cast<double>(s.computed) + static_cast<double>(s.chunk) / 2) / 1000;
  };
  // Running requests first (decodes, then unfinished prefills), then admissions: vLLM v1.
  for (Sequence& s : running_) {
    s.chunk = 0;
    s.decoding = s.computed >= s.request.prompt_tokens;
    if (!s.decoding) continue;
    ++decodes;
    context += s.request.prompt_tokens + s.generated;
    --budget;
  }
  for (Sequence& s : running_) {
    if (!s.decoding) plan_prefill(s);
  }
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int>(running_.size()) < profile_.max_batch_sequences) {
    if (!Admit(waiting_.front(), &planned_, &reload_bytes)) break;
    plan_prefill(running_.back());
  }
  if (decodes == 0 && prefill == 0) return 0;
  stepping_ = true;
  const double us = StepMicros(profile_, decodes, context, prefill, attention, reload_bytes);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(us)));
}

StepOutcome EngineReplica::FinishStep() {
  stepping_ = false;
  std::vector<Sequence> still;
  still.reserve(running_.size());
  for (Sequence& s : running_) {
    bool emitted = false, first = false;
    if (s.decoding) {
      ++s.generated;
      emitted = true;
    } else if (s.chunk > 0) {
      s.computed += s.chunk;
      if (s.computed >= s.request.prompt_tokens) {
        const std::span<const BlockHash> blocks(s.request.blocks);
        const auto from = static_cast<std::size_t>(
            std::min<std::int64_t>(s.hit_blocks, static_cast<std::int64_t>(blocks.size())));
        s.fresh -= cache_.Publish(blocks.subspan(from), &s.pinned);
        s.generated = 1;
        emitted = first = true;
      }
    }
    const bool last = emitted && s.generated >= s.request.output_tokens;
    if (emitted) planned_.tokens.push_back({s.request.id, first, last});
    if (last) {
      cache_.Release(s.pinned, s.fresh);
    } else {
      still.push_back(std::move(s));
    }
  }
  running_ = std::move(still);
  return std::exchange(planned_, {});
}

ReplicaLoad EngineReplica::Load() const {
  ReplicaLoad l;
  l.running = static_cast<std::int32_t>(running_.size());
  l.waiting = static_cast<std::int32_t>(waiting_.size());
  l.queued_prefill_tokens = waiting_prefill_tokens_;
  for (const Sequence& s : running_) {
    l.queued_prefill_tokens += s.request.prompt_tokens - s.computed;
    l.context_tokens += s.computed + s.generated;
  }
  l.kv_utilisation = static_cast<double>(cache_.used()) / static_cast<double>(cache_.capacity());
  return l;
}

}  // namespace tessera::serve
