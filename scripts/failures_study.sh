#!/usr/bin/env bash
# The failures study of docs/results.md §4: a 16,384-GPU pretraining job on 2,100 nodes
# of 8 GPUs under Llama-3-like failure rates, 30 days, 10 failure draws per point. Writes
# OUT/<run>/summary.json and report.html, then the tables (OUT/tables.md) and the SVG figures
# (docs/img/failures-*.svg) with scripts/failures_plots.py. Takes about a minute.
#   scripts/failures_study.sh [TESSERA_BINARY] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/tessera}
out=${2:-out/failures}
mkdir -p "$out"
common=(sim --experiment failures --cluster 2100x8 --job-gpus 16384 --days 30 --seeds 10)
sweep=0.25,0.35,0.5,0.71,0.85,1,1.2,1.41,2,2.83,4

# 1. The four policies with the default recovery stack (docs/failures.md).
"$bin" "${common[@]}" --failures llama3 --recovery requeue,replace,spares,shrink \
  --checkpoint-sweep "$sweep" --out "$out/default" > "$out/default.txt"
# 2. The same with a fast stack: 0.5 s checkpoint stall, 15 s detection, 60 s restart.
fast=(--checkpoint-cost 0.5 --detect-seconds 15 --restart-seconds 60)
"$bin" "${common[@]}" --failures llama3 --recovery requeue,replace,spares,shrink "${fast[@]}" \
  --checkpoint-sweep "$sweep" --out "$out/fast" > "$out/fast.txt"
# 3. How many hot spares: the pool capped at N nodes (0 = the spares policy with no pool).
for n in 0 1 2 4 8 16 32 52; do
  for stack in default fast; do
    extra=()
    [[ $stack == fast ]] && extra=("${fast[@]}")
    "$bin" "${common[@]}" --failures llama3 --recovery spares --max-spares "$n" "${extra[@]}" \
      --checkpoint-sweep 1 --out "$out/spares-$stack-$n" > "$out/spares-$stack-$n.txt"
  done
done
# 4. What the 0.98 target needs: checkpoint stall × (detection, restart), spares policy.
for cost in 0.5 1 2 5 10 30; do
  for dr in 60,180 30,120 15,60; do
    "$bin" "${common[@]}" --failures llama3 --recovery spares --checkpoint-cost "$cost" \
      --detect-seconds "${dr%,*}" --restart-seconds "${dr#*,}" --checkpoint-sweep 1 \
      --out "$out/grid-$cost-${dr/,/-}" > "$out/grid-$cost-${dr/,/-}.txt"
  done
done
# 5. No headroom: the job fills all 2,048 nodes.
"$bin" sim --experiment failures --cluster 2048x8 --job-gpus 16384 --days 30 --seeds 3 \
  --failures llama3 --recovery requeue,replace,spares,shrink --checkpoint-sweep 1 \
  --out "$out/full" > "$out/full.txt"
# 6. Lemon nodes and the drain rule.
"$bin" "${common[@]}" --failures llama3-lemons \
  --recovery replace,replace+drain,spares,spares+drain --checkpoint-sweep 1 \
  --out "$out/lemons" > "$out/lemons.txt"

python3 scripts/failures_plots.py "$out" docs/img
