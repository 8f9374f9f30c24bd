#!/usr/bin/env bash
# The live part of the quickstart: bring up an all-in-one cluster on 127.0.0.1 (a controller
# and 2 agents with 4 simulated H100s each), submit every job spec in examples/jobs/, list the
# jobs and print what to try next. The cluster keeps running (`tessera down --state DIR`).
# CI runs exactly this script (tests/cli/quickstart_live_test.cpp), so an example that is not a
# valid job fails the build.
#
#   scripts/quickstart-live.sh [--state DIR] [--bin DIR]
#     --state DIR  the cluster's state directory, empty or absent (default .state/quickstart,
#                  cleared on every run)
#     --bin DIR    where tessera, tesserad and tessera-agent are (default ./build)
# Exits 1 when any job spec was refused, after listing the jobs and the hints.
set -euo pipefail
cd "$(dirname "$0")/.."
state=.state/quickstart
bin=./build
while [[ $# -gt 0 ]]; do
  case "$1" in
    --state) state=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--state DIR] [--bin DIR]" >&2; exit 2 ;;
  esac
done
tessera="$bin/tessera"
# A fresh cluster every run: `tessera up` on an old state directory would bring its jobs back,
# and the examples would be refused as duplicates. The default directory is the quickstart's
# own and is cleared; a directory given with --state must be empty.
if [[ $state == .state/quickstart ]]; then
  "$tessera" down --state "$state" >/dev/null 2>&1 || true
  rm -rf "$state"
elif [[ -n "$(ls -A "$state" 2>/dev/null)" ]]; then
  echo "error: --state $state is not empty; the quickstart starts a fresh cluster" >&2
  exit 2
fi
"$tessera" up --state "$state" --agents 2 --gpus 4xH100 --bin-dir "$bin"
echo
# The training job first, so that it starts at once and the hints below can show it; then
# every other job spec. pytorch-ddp.yaml runs in `workingDir: .`, which `tessera submit` takes
# as this directory.
refused=()
for f in examples/jobs/training-job.yaml $(ls examples/jobs/*.yaml | grep -vx examples/jobs/training-job.yaml); do
  "$tessera" submit --state "$state" -f "$f" || refused+=("$f")
done
sleep 2
echo
"$tessera" get jobs --state "$state"
cat <<MSG

The cluster keeps running. Try:
  export TESSERA_STATE=$state
  $tessera get jobs            $tessera get nodes            $tessera get queues
  $tessera describe job demo-train
  $tessera logs demo-train --rank 1
  $tessera logs ddp-tiny-lm --rank 0 -f   # real PyTorch DDP, after demo-train
  $tessera down                # stops the controller and agents
MSG
if [[ ${#refused[@]} -gt 0 ]]; then
  echo "error: ${#refused[@]} example job spec(s) refused: ${refused[*]}" >&2
  exit 1
fi
