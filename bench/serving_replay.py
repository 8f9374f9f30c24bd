#!/usr/bin/python3
"""The live serving replay side by side for each router (issue 16, part 5; docs/serving.md).

Runs `tessera bench serving` RUNS times per router, one at a time, and prints the markdown table
docs/serving.md carries: mean TTFT and prefix hit rate live and simulated, their differences,
the live figures against the mean of the simulator's jittered runs, how many requests hit
differently, and the load average at the start and the end of each run. tessera and prefix
replay requests 2,400-3,899 of the Mooncake conversation trace (600 warm-up + 900 measured) at
--time-scale 0.5; least-request and round-robin, whose figures only average out over more
requests (count-driven decisions; long prefixes at the edge of the LRU), 1,200-5,999 (1,200 +
3,600) at --time-scale 0.25. About 65 minutes for 3 runs each.

Standard library only; run with Debian's /usr/bin/python3.
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import log  # noqa: E402

TRACE = "../shared/traces/mooncake-2025/conversation_trace.jsonl"
# router: (skip, warm-up, measured, time scale)
SLICES = {
    "tessera": (2400, 600, 900, 0.5),
    "prefix": (2400, 600, 900, 0.5),
    "round-robin": (1200, 1200, 3600, 0.25),
    "least-request": (1200, 1200, 3600, 0.25),
}


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_once(args, router, run):
    skip, warmup, requests, time_scale = SLICES[router]
    out = os.path.join(args.out, f"{router}-{run}.json")
    cmd = [os.path.join(args.bin_dir, "tessera"), "bench", "serving", "--trace", args.trace,
           "--bin-dir", args.bin_dir, "--skip", str(skip), "--warmup", str(warmup),
           "--requests", str(requests), "--replicas", "4", "--kv-blocks-per-replica", "7900",
           "--router", router, "--time-scale", str(time_scale), "--sim-jitter-runs", "8",
           "--out", out]
    before = load_average()
    log(f"{router} run {run}: {' '.join(cmd)}")
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
    if rc not in (0, 3):  # 3: ran, but did not agree within 5%
        log(f"{router} run {run}: exit status {rc}")
        return None
    with open(out) as f:
        result = json.load(f)
    result["load_average"] = [before, load_average()]
    return result


def row(router, run, d):
    t, live, sim, jit = d["trace"], d["live"], d["sim"], d["sim_jitter"]
    mark = lambda x: "✔" if abs(x) <= 0.05 else "✘"  # noqa: E731
    lt, lh = live["ttft_ms"]["mean"], live["prefix_hit_rate"]
    vs = d.get("live_vs_jitter_mean", {})
    return (f"| {router} | {t['skip']}–{t['skip'] + t['warmup'] + t['requests'] - 1} "
            f"({t['warmup']:,} + {t['requests']:,}) | {d['time_scale']} | {run} | "
            f"{lt:,.0f} / {sim['ttft_ms']['mean']:,.0f} | {100 * d['ttft_mean_rel_diff']:+.1f}% "
            f"{mark(d['ttft_mean_rel_diff'])} | {100 * lh:.2f}% / {100 * sim['prefix_hit_rate']:.2f}% "
            f"| {100 * d['hit_rate_rel_diff']:+.1f}% {mark(d['hit_rate_rel_diff'])} | "
            f"{100 * vs.get('ttft_mean_rel_diff', 0):+.1f}%, {100 * vs.get('hit_rate_rel_diff', 0):+.1f}% | "
            f"{d['per_request']['requests_hit_differently']:,} | "
            f"{d['load_average'][0]:.1f} → {d['load_average'][1]:.1f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin-dir", default="build")
    p.add_argument("--trace", default=TRACE)
    p.add_argument("--out", default="out/serving-replay")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--routers", default=",".join(SLICES))
    args = p.parse_args()
    routers = args.routers.split(",")
    for r in routers:
        if r not in SLICES:
            p.error(f"--routers: '{r}' is not one of {', '.join(SLICES)}")
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for run in range(1, args.runs + 1):
        for router in routers:
            d = run_once(args, router, run)
            if d is not None:
                rows.append((list(SLICES).index(router), run, row(router, run, d)))
    print("| router | requests (warm-up + measured) | time scale | run | mean TTFT live / sim (ms) "
          "| diff | hit rate live / sim | diff | vs the 8 jittered runs' mean: TTFT, hit rate "
          "| requests hit differently | load average |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for _, _, line in sorted(rows):
        print(line)


if __name__ == "__main__":
    main()
