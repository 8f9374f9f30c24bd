// The drf queue policy's scheduling cycle: hierarchical weighted dominant-resource fairness
// over a QueueTree, with quota limits, reclaim of borrowed capacity and priority preemption.
//
//  1. Order: repeatedly pick the leaf queue to serve next by walking down the tree; at each
//     level the child with pending work and the smallest weighted dominant share wins
//     (higher queue priority first; ties by path). Dominant share: the largest, over GPUs, CPU
//     and memory, of the queue's usage ÷ the cluster's capacity (DRF, Ghodsi et al., NSDI'11),
//     divided by the queue's weight; an inner queue's usage is its subtree's (hierarchical DRF,
//     Bhattacharya et al., SoCC'13). Within a queue: priority, then submit time, then id.
//  2. Admission: the queue's head job starts only if it keeps the queue and every ancestor
//     within guaranteed + borrowLimit; otherwise the queue waits this cycle (strict FIFO
//     inside a queue, so a large head job is not starved by small ones behind it).
//  3. Reclaim and preemption: a head job that is admitted but does not fit may evict
//       - jobs of its own queue with a lower priority (priority preemption), and,
//       - when its queue stays within its guarantee with the job (GPUs; CPU and memory where
//         the queue is guaranteed some), jobs of queues using more
//         than their guarantee that have run at least the tree's reclaim grace (reclaim).
//     InferenceService replicas are evicted only for a higher-priority InferenceService, and
//     jobs marked not preemptible never. The victim set comes from FindVictims
//     (victim_search.h): gang- and topology-consistent, minimal, checkpoint-aware or naive.
//  With elastic jobs (`elastic` given, sched/elastic/elastic_cycle.h): a head job that does
//  not fit at its nominal size starts at its minimum; before evicting anyone, the elastic jobs
//  among the candidates are shrunk to their minimum; at the end elastic jobs grow into idle
//  GPUs as far as their queue's guarantee + borrowLimit allow. A queue is charged what its
//  elastic jobs hold at their current size.
// Pure and deterministic (docs/quotas.md).
#pragma once

#include "core/cluster_state.h"
#include "core/rng.h"
#include "sched/decision.h"
#include "sched/elastic/elastic_cycle.h"
#include "sched/placement/task_placer.h"
#include "sched/preemption/victim_search.h"
#include "sched/quota/queue_tree.h"
#include "sched/snapshot.h"

namespace tessera {

struct FairShareLimits {
  std::size_t max_victim_searches = 16;  // per cycle: reclaim is tried for at most this many jobs
  VictimSearchLimits search;
};

void ScheduleFairShare(const Snapshot& snap, const QueueTree& tree, VictimOrder victims,
                       ClusterState& working, const TaskPlacer& placer, Rng& rng, Decisions& out,
                       const FairShareLimits& limits = {}, ElasticCycle* elastic = nullptr);

// The weighted dominant share of `usage` against `capacity` for a queue of `weight`.
double WeightedDominantShare(const Resources& usage, const Resources& capacity, double weight);

}  // namespace tessera
