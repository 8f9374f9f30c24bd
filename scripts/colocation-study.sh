#!/bin/bash
# The co-location study of docs/results.md §10: openb (LS online, BE offline) and the LLM fleet
# on the 10,000-GPU cluster, 24 simulated hours each, every setup; then tables and figures.
#   scripts/colocation-study.sh [OUT] [BUILD]      (defaults: out/colocation, build)
set -euo pipefail
out=${1:-out/colocation}
bin=${2:-build}/tessera
traces=${TESSERA_TRACES:-../shared/traces}
az=$traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv
openb=$traces/alibaba-openb-2023
mkdir -p "$out"
"$bin" sim --experiment colocation --workload openb \
  --trace "$openb/openb_pod_list_default.csv" --cluster "$openb/openb_node_list_gpu_node.csv" \
  --placement fgd --hours 24 --load-trace "$az" --out "$out/openb" &
"$bin" sim --experiment colocation --workload fleet --cluster examples/config/clusters/llm-10k.yaml \
  --placement fgd --hours 24 --load-trace "$az" --out "$out/fleet" &
wait
python3 scripts/colocation_plots.py "$out/colocation-openb.svg" openb "$out/openb/summary.json" > "$out/openb.md"
python3 scripts/colocation_plots.py "$out/colocation-fleet.svg" "LLM fleet, 10,000 GPUs" "$out/fleet/summary.json" > "$out/fleet.md"
cat "$out/openb.md" "$out/fleet.md"
