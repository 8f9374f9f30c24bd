#!/usr/bin/env python3
"""Markdown tables for docs/results.md from out/queues-results/*/summary.json: per policy
(JCT, queueing, allocation, preemptions, GPU-hours lost) and, for trees of at most 12 leaves,
per queue (entitlement, share received, JCT and queueing under each policy)."""
import json
import os
import sys

out = sys.argv[1]
for run in sorted(os.listdir(out)):
    path = os.path.join(out, run, "summary.json")
    if not os.path.isfile(path):
        continue
    s = json.load(open(path))
    results = s["results"]
    print(f"\n**{run}** ({s['trace']['jobs']} jobs, {s['cluster']['gpus']} GPUs, "
          f"queues: {s['queues']['file'] or 'one per user'}, {s['queues']['leaves']} leaves)\n")
    print("| policy | mean JCT (s) | p95 JCT (s) | mean queueing (s) | GPU alloc | preemptions | GPU-h lost to preemption | sim time (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['policy']} | {r['jct_seconds']['mean']:,.0f} | {r['jct_seconds']['p95']:,.0f} | "
              f"{r['queue_seconds']['mean']:,.0f} | {100*r['gpu_allocation_ratio']:.1f}% | "
              f"{r['preemptions']} | {r['gpu_hours_lost_to_preemption']:,.1f} | {r['sim_wall_seconds']:.1f} |")
    leaves = [q for q, v in results[0]["queues"].items() if v["leaf"]]
    if len(leaves) > 12:
        # Many queues: how far below its entitlement the median and worst queue with demand
        # stayed, and the spread of mean queueing delay across queues.
        print("\n| policy | queues | mean queueing, median queue (s) | mean queueing, worst queue (s) |")
        print("|---|---:|---:|---:|")
        for r in results:
            qs = sorted(v["queue_seconds"]["mean"] for v in r["queues"].values() if v["leaf"] and v["jobs"] > 0)
            print(f"| {r['policy']} | {len(qs)} | {qs[len(qs)//2]:,.0f} | {qs[-1]:,.0f} |")
        continue
    print("\n| queue | entitled | " + " | ".join(f"share {r['policy']}" for r in results) + " | " +
          " | ".join(f"JCT {r['policy']} (s)" for r in results) + " | " +
          " | ".join(f"queueing {r['policy']} (s)" for r in results) + " | " +
          " | ".join(f"GPU-h lost {r['policy']}" for r in results) + " |")
    print("|---|---:|" + "---:|" * (4 * len(results)))
    for q in sorted(results[0]["queues"]):
        v = [r["queues"][q] for r in results]
        print(f"| {q} | {100*v[0]['entitlement']:.1f}% | " +
              " | ".join(f"{100*x['share_mean']:.1f}%" for x in v) + " | " +
              " | ".join(f"{x['jct_seconds']['mean']:,.0f}" for x in v) + " | " +
              " | ".join(f"{x['queue_seconds']['mean']:,.0f}" for x in v) + " | " +
              " | ".join(f"{x['gpu_hours_lost_to_preemption']:,.1f}" for x in v) + " |")
