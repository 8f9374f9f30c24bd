#!/usr/bin/env bash
# The dashboard at the size of issue 19's targets: first paint <= 1 s and an update <= 1 s after
# an event, in a real browser, on 1,250 emulated nodes (10,000 simulated GPUs) with 100,000
# pending jobs. The cluster is `tessera bench live`'s (docs/benchmarks.md: one tesserad, one
# agent emulating the nodes with simulated tasks, the pending jobs committed to the store
# before the start, so that jobs end and start all the time); once it is full and churning,
# web/test/dashboard_check.mjs opens /ui/ in Debian's Chromium (headless), loads it RELOADS
# times (first render each), then records for SECONDS how long after each event the page had
# drawn it. Writes one JSON (the page's figures, bench live's own, the load average) to OUT.
#
#   bench/dashboard_scale.sh [--nodes 1250] [--pending 100000] [--seconds 30] [--reloads 5] \
#     [--out out/dashboard-scale.json]
#
# Takes 3-6 minutes on 2 cores. Needs a build (TESSERA_BIN_DIR, default build/) and
# `npm ci --prefix web`. bench live stops its daemons itself when its window ends.
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=1250 pending=100000 seconds=30 reloads=5 out=out/dashboard-scale.json
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2 ;;
    --pending) pending=$2 ;;
    --seconds) seconds=$2 ;;
    --reloads) reloads=$2 ;;
    --out) out=$2 ;;
    *) echo "dashboard_scale.sh: unknown argument $1 (see the header)" >&2; exit 2 ;;
  esac
  shift 2
done
bin=$(cd "${TESSERA_BIN_DIR:-build}" && pwd)
[ -x "$bin/tessera" ] || { echo "dashboard_scale.sh: no $bin/tessera; build first" >&2; exit 2; }
work=$(mktemp -d /tmp/tessera-dashboard-scale-XXXXXX)
mkdir -p "$(dirname "$out")"
# bench live's window covers the reloads, the measurement and a margin.
window=$((seconds + 8 * reloads + 60))
"$bin/tessera" bench live --bin-dir "$bin" --nodes "$nodes" --pending "$pending" \
  --seconds "$window" --probes 0 --state "$work/live" --out "$work/live.json" \
  >"$work/live.out" 2>"$work/live.err" &
live=$!
trap 'wait $live 2>/dev/null || true' EXIT
until grep -q "measuring for" "$work/live.err" 2>/dev/null; do
  kill -0 $live 2>/dev/null || { echo "bench live ended early:" >&2; cat "$work/live.err" >&2; exit 1; }
  sleep 1
done
url=$(head -1 "$work/live/scale/endpoint")
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
node web/test/dashboard_check.mjs --url "$url" --out "$work/shots" \
  --measure-seconds "$seconds" --reloads "$reloads" --timeout-ms 60000 >"$work/page.out" \
  2>"$work/page.err" || true
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "dashboard_scale.sh: page measured; waiting for bench live's window to end" >&2
wait $live || true
trap - EXIT
node -e '
const fs = require("fs");
const [pageOut, liveFile, nodes, pending, before, after, out] = process.argv.slice(1);
const lines = fs.readFileSync(pageOut, "utf8").trim().split("\n");
const page = JSON.parse(lines[lines.length - 1]);
let live = null;
try { live = JSON.parse(fs.readFileSync(liveFile, "utf8")); } catch (_) { /* bench live failed */ }
const r = { nodes: Number(nodes), pending: Number(pending),
  gpus: "simulated H100 x 8 per node", loadAverageBefore: before, loadAverageAfter: after,
  page, live };
fs.writeFileSync(out, JSON.stringify(r, null, 2) + "\n");
console.log(JSON.stringify({ firstRender: page.firstRender, updateAfterEventMs: page.updateAfterEventMs,
  problems: page.problems }));
' "$work/page.out" "$work/live.json" "$nodes" "$pending" "$load_before" "$load_after" "$out"
echo "dashboard_scale.sh: $out (logs in $work)" >&2
