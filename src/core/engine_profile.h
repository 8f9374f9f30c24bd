// The performance figures of one inference engine serving one model on one GPU model: what the
// serving core's engine model (src/serve/engine_model.h) needs to time prefill and decode steps
// and to size the KV cache. A value type: the YAML form is read by src/spec/engine_profile_yaml.h,
// the default's figures and their sources are in docs/serving.md.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

struct EngineProfile {
  std::string name = "llama3-8b-h100";  // what --engine names
  std::string model = "meta-llama/Meta-Llama-3-8B";
  std::string gpu = "H100-SXM-80GB";

  // Step time = step_base_us + prefill + decode (+ host reloads), in microseconds:
  //   prefill: uncached tokens * prefill_us_per_token
  //            + uncached tokens * (their mean context / 1000) * prefill_attention_us_per_ktoken
  //   decode:  sequences * decode_us_per_sequence + context tokens * decode_us_per_context_token
  double step_base_us = 6200;  // reading the weights once per forward pass
  double prefill_us_per_token = 28;
  double prefill_attention_us_per_ktoken = 1.1;
  double decode_us_per_sequence = 32;
  double decode_us_per_context_token = 0.05;

  // Continuous batching limits (vLLM's max_num_seqs and max_num_batched_tokens).
  int max_batch_sequences = 256;
  int max_batched_tokens = 8192;
  std::int64_t max_context_tokens = 131072;

  // KV cache: GPU memory left for it, the host-memory tier, and the link between them.
  std::int64_t kv_cache_tokens = 400000;
  std::int64_t host_cache_tokens = 0;  // 0 = no host tier
  double kv_bytes_per_token = 131072;  // 32 layers * 8 KV heads * 128 dims * 2 (K, V) * 2 bytes
  double pcie_gb_per_s = 50;           // effective host-to-device copy rate
};

}  // namespace tessera
