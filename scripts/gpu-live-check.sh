#!/usr/bin/env bash
# Real-GPU check of the live cluster: tessera-agent with NVML (no --simulate-gpus), the example
# LM (examples/programs/ddp_train.py --device cuda, NCCL) on the GPU Tessera assigns, then priority
# preemption: SIGTERM checkpoint, requeue, resume. Run from the repository root on a machine
# with an NVIDIA GPU and a CUDA PyTorch as `python3`. Binaries: TESSERA_BIN_DIR (default
# build-full/), or a copied bundle with bin/ and lib/ in TESSERA_BUNDLE. Results: OUT (default
# out/gpu-check)/report.txt and the daemons' logs. With SIMGPU=1xH100 DEV=cpu
# PYTHON=/usr/bin/python3 it runs on a CPU machine with Debian's python3-torch.
set -u
B=${TESSERA_BUNDLE:-$PWD/.devbundle}  # bin/ and lib/ copied from a build (optional)
OUT=${OUT:-out/gpu-check}; mkdir -p "$OUT"
export PATH=${TESSERA_BIN_DIR:-$PWD/build-full}:$PATH
export PATH=$B/bin:$PATH LD_LIBRARY_PATH=$B/lib:/usr/local/nvidia/lib64:/usr/local/nvidia/lib:${LD_LIBRARY_PATH:-}
R=$OUT/report.txt; : >$R
say() { echo "### $*" | tee -a $R; }
run() { echo "\$ $*" >>$R; "$@" >>$R 2>&1; echo "(rc=$?)" >>$R; }
say "machine"; run nvidia-smi -L; run uname -r; run ${PYTHON:-python3} -c "import torch;print(torch.__version__, torch.cuda.is_available(), torch.cuda.get_device_name(0))"
S=/tmp/ts; rm -rf $S; mkdir -p $S
tesserad --state $S --port 7480 --priority-preemption --heartbeat-timeout 5 --insecure >$OUT/tesserad.log 2>&1 &
sleep 1
export TESSERA_SERVER=http://127.0.0.1:7480
tessera-agent --state $S/agent --node h200-0 ${SIMGPU:+--simulate-gpus $SIMGPU} >$OUT/agent.log 2>&1 &
AG=$!
for i in $(seq 20); do tessera get nodes 2>/dev/null | grep -q h200-0 && break; sleep 0.5; done
if ! tessera get nodes 2>/dev/null | grep -q h200-0; then
  say "agent did not register with cgroups; retrying with --no-cgroups"; kill $AG; sleep 1
  tessera-agent --state $S/agent2 --node h200-0 --no-cgroups >>$OUT/agent.log 2>&1 &
  sleep 4
fi
say "nodes"; run tessera get nodes -o yaml
WD=$PWD
cat >/tmp/gpu-lm.yaml <<Y
apiVersion: tessera/v1
kind: TrainingJob
metadata: {name: gpu-lm, queue: default}
spec:
  priority: 0
  workers: 1
  gpusPerWorker: 1
  gracePeriodSeconds: 30
  maxRestarts: 2
  checkpoint: {intervalSeconds: 60, dir: /tmp/ckpt/gpu-lm}
  workingDir: $WD
  command: [${PYTHON:-python3}, examples/programs/ddp_train.py, --device, ${DEV:-cuda}, --steps, "600", --checkpoint-every, "100", --min-step-seconds, "0.02", --d-model, "256", --layers, "4", --log-every, "25"]
Y
cat >/tmp/urgent.yaml <<Y
apiVersion: tessera/v1
kind: TrainingJob
metadata: {name: urgent, queue: default}
spec:
  priority: 100
  workers: 1
  gpusPerWorker: 1
  gracePeriodSeconds: 5
  command: [sh, -c, "echo CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES; nvidia-smi --query-gpu=name,memory.used --format=csv; sleep 3"]
Y
phase() { tessera get jobs -o json 2>/dev/null | python3 -c "import json,sys
d=json.load(sys.stdin); d=d.get('jobs',d) if isinstance(d,dict) else d
print(next((j['status'].get('phase','?') for j in d if j['metadata'].get('name')=='$1'),'absent'))"; }
say "submit gpu-lm"; run tessera submit -f /tmp/gpu-lm.yaml
for i in $(seq 120); do tessera logs gpu-lm 2>/dev/null | grep -q "step 150 " && break; sleep 0.5; done
say "gpu-lm phase before preemption: $(phase gpu-lm)"
say "submit urgent (priority 100)"; run tessera submit -f /tmp/urgent.yaml
for i in $(seq 120); do [ "$(phase urgent)" = Succeeded ] && break; sleep 0.5; done
say "urgent phase: $(phase urgent)"
for i in $(seq 240); do p=$(phase gpu-lm); [ "$p" = Succeeded -o "$p" = Failed ] && break; sleep 0.5; done
say "gpu-lm phase at end: $(phase gpu-lm)"
say "jobs"; run tessera get jobs
say "describe gpu-lm"; run tessera describe job gpu-lm
say "describe urgent"; run tessera describe job urgent
say "logs urgent"; run tessera logs urgent
say "logs gpu-lm attempt 1"; run tessera logs gpu-lm --attempt 1
say "logs gpu-lm latest"; run tessera logs gpu-lm
kill %1 %2 2>/dev/null; sleep 1
