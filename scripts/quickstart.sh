#!/usr/bin/env bash
# Tessera's main job from a fresh clone: install, build, then
#  1. reproduce the FGD allocation experiment on Alibaba's openb trace in the simulator
#     (6 placement policies × 10 seeds), and
#  2. bring up an all-in-one live cluster on 127.0.0.1 (a controller and 2 agents with 4
#     simulated H100s each, state in .state/quickstart) and submit the example jobs.
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
state=.state/quickstart
./build/tessera down --state "$state" >/dev/null 2>&1 || true
./build/tessera up --state "$state" --agents 2 --gpus 4xH100
# pytorch-ddp.yaml runs in `workingDir: .`, which `tessera submit` takes as this directory.
for f in examples/*.yaml; do
  ./build/tessera submit --state "$state" -f "$f"
done
sleep 2
./build/tessera get jobs --state "$state"
cat <<MSG

The cluster keeps running. Try:
  export TESSERA_STATE=$state
  ./build/tessera get jobs            ./build/tessera get nodes
  ./build/tessera describe job demo-train
  ./build/tessera logs demo-train --rank 1
  ./build/tessera logs ddp-tiny-lm --rank 0 -f   # real PyTorch DDP, after demo-train
  ./build/tessera down                # stops the controller and agents
MSG
