#include "sim/serving/global_lru.h"

#include <algorithm>
#include <list>
#include <unordered_map>
#include <unordered_set>

namespace tessera {

double GlobalLruHitRate(const std::vector<LlmRequest>& requests, int block_tokens,
                        std::int64_t capacity_blocks) {
  std::list<std::uint64_t> lru;  // most recent first
  std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator> at;
  double hit = 0, total = 0;
  for (const LlmRequest& r : requests) {
    std::int64_t matched = 0;
    while (matched < static_cast<std::int64_t>(r.block_hashes.size()) &&
           at.contains(r.block_hashes[static_cast<std::size_t>(matched)])) {
      ++matched;
    }
    hit += static_cast<double>(std::min(r.prompt_tokens, matched * block_tokens));
    total += static_cast<double>(r.prompt_tokens);
    for (std::uint64_t b : r.block_hashes) {
      if (auto it = at.find(b); it != at.end()) {
        lru.splice(lru.begin(), lru, it->second);
        continue;
      }
      lru.push_front(b);
      at.emplace(b, lru.begin());
      if (capacity_blocks > 0 && static_cast<std::int64_t>(lru.size()) > capacity_blocks) {
        at.erase(lru.back());
        lru.pop_back();
      }
    }
  }
  return total > 0 ? hit / total : 0;
}

std::int64_t CapacityForHitRateFraction(const std::vector<LlmRequest>& requests, int block_tokens,
                                        double fraction) {
  std::unordered_set<std::uint64_t> distinct;
  for (const LlmRequest& r : requests)
    distinct.insert(r.block_hashes.begin(), r.block_hashes.end());
  const double goal = fraction * GlobalLruHitRate(requests, block_tokens, 0);
  std::int64_t lo = 1, hi = std::max<std::int64_t>(1, static_cast<std::int64_t>(distinct.size()));
  // The hit rate grows with capacity (LRU has the stack property): bisect for the smallest.
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (GlobalLruHitRate(requests, block_tokens, mid) >= goal) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

}  // namespace tessera
