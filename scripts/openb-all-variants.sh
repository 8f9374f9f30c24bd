#!/usr/bin/env bash
# Runs the FGD allocation experiment on every openb pod-list variant with the six published
# policies (10 seeds each) and writes out/openb-variants/allocation_at_100.csv, a Markdown
# table (table.md), a chart (allocation_at_100.svg) and the comparison with the figures the FGD
# authors publish (vs-published.md, scripts/openb_vs_published.py) for docs/results.md.
# Usage: scripts/openb-all-variants.sh [POLICIES] [SEEDS]
set -euo pipefail
cd "$(dirname "$0")/.."
policies=${1:-random,dotprod,clustering,packing,bestfit,fgd}
seeds=${2:-10}
traces=${TESSERA_TRACES:-../shared/traces}/alibaba-openb-2023
out=out/openb-variants
mkdir -p "$out"
for f in "$traces"/openb_pod_list_*.csv; do
  v=$(basename "$f" .csv); v=${v#openb_pod_list_}
  echo "== $v" >&2
  "${TESSERA_BIN:-./build/tessera}" sim --experiment allocation --trace "$f" \
    --cluster "$traces/openb_node_list_gpu_node.csv" --policy "$policies" --seeds "$seeds" \
    --out "$out/$v" >/dev/null 2>"$out/$v.log"
done
python3 scripts/allocation_table.py "$out" "$policies"
python3 scripts/openb_vs_published.py "$out"
