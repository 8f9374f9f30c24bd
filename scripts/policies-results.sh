#!/usr/bin/env bash
# The policy comparison of docs/results.md §8: backfill with a domain reservation, elastic
# resizing and fastest-model-first GPU choice against their baselines (strict FIFO, EASY
# counting GPUs cluster-wide, model-blind choice), each on the same trace in one binary.
#   llm-10k:   tessera gen --preset llm-10k --jobs 6000 --days 7, seeds 1-3
#   itp:       Microsoft ITP cluster04 on examples/config/clusters/itp-512.yaml
#   hetero:    the llm-10k traces on examples/config/clusters/hetero-10k.yaml
# Writes JSON under out/policies/; scripts/policies_plots.py turns it into tables and SVGs.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TESSERA_BIN:-./build/tessera}
traces=${TESSERA_TRACES:-../shared/traces}
out=out/policies
mkdir -p "$out"
variants=fifo,easy,domain,domain+elastic
for s in 1 2 3; do
  [ -f "$out/llm6000-s$s.csv" ] || "$bin" gen --preset llm-10k --jobs 6000 --days 7 --seed "$s" \
    --out "$out/llm6000-s$s.csv" 2>/dev/null
  "$bin" bench policies --trace "$out/llm6000-s$s.csv" --cluster examples/config/clusters/llm-10k.yaml \
    --variants "$variants" --elastic-min 0.5 --max-attempts 500 \
    --out "$out/llm10k-s$s.json" >"$out/llm10k-s$s.md" 2>"$out/llm10k-s$s.log"
done
"$bin" bench policies --trace "$traces/microsoft-itp-2021/cluster04.csv" \
  --cluster examples/config/clusters/itp-512.yaml --variants "$variants" --elastic-min 0.5 \
  --max-attempts 500 --out "$out/itp04.json" >"$out/itp04.md" 2>"$out/itp04.log"
for s in 1 2 3; do
  "$bin" bench policies --trace "$out/llm6000-s$s.csv" --cluster examples/config/clusters/hetero-10k.yaml \
    --variants domain+blind,domain --gpu-speeds H100=1,A100=0.5,V100=0.25 --max-attempts 500 \
    --out "$out/hetero-s$s.json" >"$out/hetero-s$s.md" 2>"$out/hetero-s$s.log"
done
