#!/usr/bin/env bash
# `tessera bench live` at scale with a CPU profile of tesserad over its measuring window
# (issue 20's 12,500 emulated nodes): runs the benchmark, and once it says "measuring",
# records tesserad with `perf record -g` for PERF_SECONDS and writes the top of the profile
# (self time by symbol, and by the controller's own entry points) beside bench live's JSON,
# with the load average at the start and the end. The CPU and RSS of tesserad and of the one
# agent emulating the nodes are in the JSON (controller_cpu_cores, agent.cpu_cores).
#
#   bench/live_scale_profile.sh [--nodes 12500] [--pending 200000] [--seconds 30] \
#     [--perf-seconds 12] [--out out/live-12500]
#
# Writes OUT.json, OUT.out (the table), OUT.perf.txt (the profile) and OUT.perf.data. Needs
# perf (linux-perf) and a build (TESSERA_BIN_DIR, default build/). Takes 5-15 minutes at
# 12,500 nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=12500 pending=200000 seconds=30 perf_seconds=12 out=out/live-12500
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2 ;;
    --pending) pending=$2 ;;
    --seconds) seconds=$2 ;;
    --perf-seconds) perf_seconds=$2 ;;
    --out) out=$2 ;;
    *) echo "live_scale_profile.sh: unknown argument $1 (see the header)" >&2; exit 2 ;;
  esac
  shift 2
done
bin=$(cd "${TESSERA_BIN_DIR:-build}" && pwd)
[ -x "$bin/tessera" ] || { echo "live_scale_profile.sh: no $bin/tessera; build first" >&2; exit 2; }
work=$(mktemp -d /tmp/tessera-live-scale-XXXXXX)
mkdir -p "$(dirname "$out")"
echo "start: $(uptime)" >"$out.out"
"$bin/tessera" bench live --bin-dir "$bin" --nodes "$nodes" --pending "$pending" \
  --seconds "$seconds" --state "$work/live" --out "$out.json" >>"$out.out" 2>"$work/live.err" &
live=$!
trap 'wait $live 2>/dev/null || true; rm -rf "$work"' EXIT
until grep -q "measuring" "$work/live.err" 2>/dev/null; do
  if ! kill -0 $live 2>/dev/null; then
    cat "$work/live.err" >&2
    echo "live_scale_profile.sh: bench live ended before its window" >&2
    exit 1
  fi
  sleep 1
done
pid=$(pgrep -n -f "tesserad --state $work/live")
sleep 2  # into the window
perf record -g -o "$out.perf.data" -p "$pid" -- sleep "$perf_seconds" >/dev/null 2>&1
set +o pipefail  # `head` ends the reports early
{
  echo "tesserad pid $pid, $perf_seconds s of bench live's window; $(uptime)"
  echo "== self time by symbol"
  perf report -i "$out.perf.data" --no-children --sort symbol --stdio 2>/dev/null |
    grep -v '^#' | grep '%' | head -40
  echo "== with children, by symbol (the controller's entry points)"
  perf report -i "$out.perf.data" --children --sort symbol --stdio 2>/dev/null |
    grep -v '^#' | grep -E '^ +[0-9.]+%' |
    grep -E 'tessera::(AgentService|SchedulingCycle|ApiServer|UserService|Controller)' | head -30
} >"$out.perf.txt"
wait $live
echo "end: $(uptime)" >>"$out.out"
cat "$out.out"
