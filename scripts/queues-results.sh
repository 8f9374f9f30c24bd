#!/usr/bin/env bash
# Fair share and preemption on real traces (docs/results.md section 7): Philly-15k on 64×8
# GPUs with examples/config/queues.yaml and with one queue per user, and every ITP cluster with the
# synthetic teams of examples/config/queues-itp.yaml, each on the smallest cluster of 8-GPU nodes above
# its mean GPU demand that holds its largest job (cluster04: 64×8 as in section 2); each under
# fifo, drf (checkpoint-aware victims) and drf-naive (Kueue/Volcano victim order), checkpoints
# every 30 minutes. Also the synthetic 10,000-GPU LLM workload (tessera gen --preset llm-10k)
# with its 20 teams as queues (examples/config/queues-llm-10k.yaml).
# Prints Markdown tables for docs/results.md; the reports are under out/queues-results/.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TESSERA_BIN:-./build/tessera}
traces=${TESSERA_TRACES:-../shared/traces}
out=out/queues-results
mkdir -p "$out"
run() {  # name trace cluster [queue file]
  local queues=()
  if [[ $# -ge 4 ]]; then queues=(--queues "$4"); fi
  "$bin" sim --experiment replay --trace "$2" --cluster "$3" "${queues[@]}" \
    --policy fifo,drf,drf-naive --checkpoint-interval 1800 --out "$out/$1" >/dev/null 2>"$out/$1.log"
}
run philly-queues "$traces/philly-15k/philly_data_training.csv" 64x8 examples/config/queues.yaml
run philly-per-user "$traces/philly-15k/philly_data_training.csv" 64x8
for c in 01:8x8 02:11x8 04:64x8 05:2x8 07:32x8 09:4x8 10:2x8; do
  run "itp-cluster${c%%:*}-teams" "$traces/microsoft-itp-2021/cluster${c%%:*}.csv" "${c#*:}" \
    examples/config/queues-itp.yaml
done
"$bin" gen --preset llm-10k --jobs 6000 --days 7 --seed 1 --out "$out/llm-10k.csv" >/dev/null 2>&1
run llm-10k-teams "$out/llm-10k.csv" examples/config/clusters/llm-10k.yaml examples/config/queues-llm-10k.yaml
python3 scripts/queues_table.py "$out"
python3 scripts/queues_plots.py "$out" docs/img itp-cluster04-teams philly-queues
