#!/usr/bin/env bash
# Tessera's main job from a fresh clone: install, build, then
#  1. reproduce the FGD allocation experiment on Alibaba's openb trace in the simulator
#     (6 placement policies × 10 seeds), and
#  2. bring up an all-in-one live cluster on 127.0.0.1 (a controller and 2 agents with 4
#     simulated H100s each, state in .state/quickstart) and submit the example job specs of
#     examples/jobs/ (scripts/quickstart-live.sh, which CI runs as a test).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
traces=${TESSERA_TRACES:-../shared/traces}
./build/tessera sim --experiment allocation \
  --trace "$traces/alibaba-openb-2023/openb_pod_list_default.csv" \
  --cluster "$traces/alibaba-openb-2023/openb_node_list_gpu_node.csv" \
  --policy random,dotprod,clustering,packing,bestfit,fgd --seeds 10 --out out/openb
echo "Simulation report: out/openb/report.html (opens offline in a browser)."
echo
scripts/quickstart-live.sh --state .state/quickstart
