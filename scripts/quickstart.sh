#!/usr/bin/env bash
# Tessera's main job from a fresh clone: install, build, and reproduce the FGD allocation
# experiment on Alibaba's openb trace (6 placement policies × 10 seeds) in the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
traces=${TESSERA_TRACES:-../shared/traces}
./build/tessera sim --experiment allocation \
  --trace "$traces/alibaba-openb-2023/openb_pod_list_default.csv" \
  --cluster "$traces/alibaba-openb-2023/openb_node_list_gpu_node.csv" \
  --policy random,dotprod,clustering,packing,bestfit,fgd --seeds 10 --out out/openb
echo "Open out/openb/report.html in a browser for the charts."
