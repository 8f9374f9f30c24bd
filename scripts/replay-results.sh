#!/usr/bin/env bash
# Replays Muri's four Philly traces on its 64-GPU cluster and ITP cluster04 on 64×8 GPUs under
# every queue policy; prints a Markdown table of mean JCT, mean queueing delay, makespan and
# GPU allocation for docs/results.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TESSERA_BIN:-./build/tessera}
traces=${TESSERA_TRACES:-../shared/traces}
out=out/replay-results
mkdir -p "$out"
run() {  # name trace cluster
  "$bin" sim --experiment replay --trace "$2" --cluster "$3" \
    --policy fifo,backfill,srtf,srsf,las --out "$out/$1" >/dev/null 2>"$out/$1.log"
}
for t in trace1 trace2 trace3 trace4; do
  run "muri-$t" "$traces/muri-philly-2022/$t.csv" "$traces/muri-philly-2022/n8g8.csv"
done
run itp-cluster04-64x8 "$traces/microsoft-itp-2021/cluster04.csv" 64x8
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
print("| run | policy | mean JCT (s) | p95 JCT (s) | mean queueing (s) | makespan (s) | GPU alloc | preemptions | sim time (s) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for run in sorted(os.listdir(out)):
    p = os.path.join(out, run, "summary.json")
    if not os.path.isfile(p):
        continue
    for r in json.load(open(p))["results"]:
        name = r["policy"] + (" (oracle)" if r["oracle"] else "")
        print(f"| {run} | {name} | {r['jct_seconds']['mean']:,.0f} | {r['jct_seconds']['p95']:,.0f} | "
              f"{r['queue_seconds']['mean']:,.0f} | {r['makespan_seconds']:,.0f} | "
              f"{100*r['gpu_allocation_ratio']:.1f}% | {r['preemptions']} | {r['sim_wall_seconds']:.2f} |")
PY
