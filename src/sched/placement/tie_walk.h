// The seeded tie-break's node order: each placement draws one permutation of the node ids
// from the job's stream (node (step * p + start) mod n at position p, step coprime to n), and
// a tie goes to the tied node earliest in it. Unlike "the r-th of the tied nodes", the winner
// stays the same when a node that would not have won joins or leaves the tie, so two clocks
// that see one node more or less free at an instant (a live process reported ended a few ms
// after the simulator ends it) still place alike.
#pragma once

#include <cstdint>
#include <utility>

#include "core/ids.h"
#include "core/rng.h"

namespace tessera {

class TieWalk {
 public:
  // REQUIRES: nodes >= 1. Draws twice from `rng`.
  TieWalk(Rng& rng, std::uint32_t nodes) : n_(nodes) {
    start_ = rng.Uniform(n_);
    step_ = n_ > 1 ? 1 + rng.Uniform(n_ - 1) : 1;
    while (Gcd(step_, n_) != 1) step_ = step_ + 1 < n_ ? step_ + 1 : 1;
    inverse_ = Inverse(step_, n_);
  }
  // Where node `id` comes in the order (0 first).
  std::uint64_t PositionOf(NodeId id) const {
    return inverse_ * ((id.value + n_ - start_) % n_) % n_;
  }
  // The node at `position` (< nodes).
  NodeId At(std::uint64_t position) const {
    return NodeId(static_cast<std::uint32_t>((step_ * position + start_) % n_));
  }

 private:
  static std::uint64_t Gcd(std::uint64_t a, std::uint64_t b) {
    while (b != 0) {
      const std::uint64_t t = a % b;
      a = b;
      b = t;
    }
    return a;
  }
  // x with a * x = 1 (mod n), for a coprime to n (extended Euclid).
  static std::uint64_t Inverse(std::uint64_t a, std::uint64_t n) {
    std::int64_t t = 0, new_t = 1;
    auto r = static_cast<std::int64_t>(n), new_r = static_cast<std::int64_t>(a % n);
    while (new_r != 0) {
      const std::int64_t q = r / new_r;
      t -= q * new_t;
      std::swap(t, new_t);
      r -= q * new_r;
      std::swap(r, new_r);
    }
    return static_cast<std::uint64_t>(t < 0 ? t + static_cast<std::int64_t>(n) : t) % n;
  }
  std::uint64_t n_, step_, start_, inverse_;
};

}  // namespace tessera
