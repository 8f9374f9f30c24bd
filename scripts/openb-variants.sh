#!/usr/bin/env bash
# fgd against fgd-strand on every openb pod list (docs/beyond-fgd.md): the allocation
# experiment at 100% arrived demand, SEEDS seeds, each seed run on its own so that the margin
# of every seed is known (both policies see the same arrival order for a given seed).
# Prints a Markdown table and writes OUT/table.md, OUT/results.csv and OUT/beyond-fgd.svg
# (a chart made here with the standard library only: no plotting package is needed).
# Usage: scripts/openb-variants.sh [SEEDS] [OUT]
#   TESSERA_BIN (default ./build/tessera), TESSERA_TRACES (default ../shared/traces),
#   POLICIES (default fgd,fgd-strand: the baseline first, the challenger second),
#   SEED0 (default 0: seeds SEED0 .. SEED0+SEEDS-1; 42 gives the FGD artefact's seeds 42-51),
#   LIMITS (a CSV from scripts/openb_share_bound.py: adds each list's share-packing limit and
#   whether the baseline + 1 point lies below it).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10}
seed0=${SEED0:-0}
out=${2:-out/beyond-fgd}
policies=${POLICIES:-fgd,fgd-strand}
traces=${TESSERA_TRACES:-../shared/traces}/alibaba-openb-2023
bin=${TESSERA_BIN:-./build/tessera}
mkdir -p "$out"
for f in "$traces"/openb_pod_list_*.csv; do
  v=$(basename "$f" .csv)
  v=${v#openb_pod_list_}
  echo "== $v" >&2
  mkdir -p "$out/$v"
  for ((s = 0; s < seeds; s++)); do
    "$bin" sim --experiment allocation --trace "$f" \
      --cluster "$traces/openb_node_list_gpu_node.csv" --policy "$policies" \
      --seeds 1 --seed $((seed0 + s)) --out "$out/$v/seed$s" >/dev/null 2>"$out/$v/seed$s.log"
  done
done

python3 - "$out" "$policies" "$seeds" "$seed0" "${LIMITS:-}" <<'EOF'
import csv, json, os, sys

out, policies, seeds = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
seed0, limits_file = int(sys.argv[4]), sys.argv[5]
limits = {r["list"]: float(r["share_limit_lp"]) for r in csv.DictReader(open(limits_file))} \
    if limits_file else {}
base, mine = policies[0], policies[1]
families = ["default", "cpu", "gpushare", "gpuspec", "multigpu"]
def sort_key(v):  # default, then cpuNNN, gpushareNN, gpuspecNN, multigpuNN by number
    fam = v.rstrip("0123456789")
    num = v[len(fam):]
    return (families.index(fam) if fam in families else len(families), int(num or 0), v)
variants = sorted((v for v in os.listdir(out) if os.path.isdir(os.path.join(out, v))),
                  key=sort_key)
rows = []
for v in variants:
    per = {base: [], mine: []}
    for s in range(seeds):
        r = json.load(open(os.path.join(out, v, f"seed{s}", "summary.json")))["results"]
        by = {x["policy"]: x for x in r}
        for p in per:
            per[p].append(100 * by[p]["allocation_at_100"])
    margins = [b - a for a, b in zip(per[base], per[mine])]
    mean = lambda xs: sum(xs) / len(xs)
    rows.append(dict(v=v, a=per[base], b=per[mine], m=margins, am=mean(per[base]),
                     bm=mean(per[mine]), mm=mean(margins), won=sum(m > 0 for m in margins)))

with open(os.path.join(out, "results.csv"), "w") as f:
    f.write("variant,seed,%s,%s\n" % (base, mine))
    for r in rows:
        for s, (a, b) in enumerate(zip(r["a"], r["b"])):
            f.write(f"{r['v']},{seed0 + s},{a:.4f},{b:.4f}\n")

extra = " share limit | baseline + 1 below it |" if limits else ""
lines = [f"| variant | {base} mean | {base} min–max | {mine} mean | {mine} min–max | margin | "
         f"margin min–max (per seed) | seeds won |" + extra,
         "|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---|" if limits else "")]
for r in rows:
    cells = ""
    if limits:
        lim = limits.get(r["v"])
        cells = (f" {lim:.2f} | {'yes' if r['am'] + 1 <= lim else 'no'} |" if lim is not None
                 else " – | – |")
    lines.append(f"| {r['v']} | {r['am']:.2f} | {min(r['a']):.2f}–{max(r['a']):.2f} | "
                 f"{r['bm']:.2f} | {min(r['b']):.2f}–{max(r['b']):.2f} | {r['mm']:+.2f} | "
                 f"{min(r['m']):+.2f} to {max(r['m']):+.2f} | {r['won']}/{seeds} |" + cells)
wins = sum(r["mm"] > 0 for r in rows)
lines.append("")
lines.append(f"GPU allocation (%) at 100% arrived demand, {seeds} seeds ({seed0}–{seed0 + seeds - 1}). "
             f"{mine} wins on {wins} of "
             f"{len(rows)} lists by mean and on {sum(r['won'] for r in rows)} of "
             f"{seeds * len(rows)} (list, seed) pairs; smallest mean margin "
             f"{min(r['mm'] for r in rows):+.2f} points ({min(rows, key=lambda r: r['mm'])['v']}).")
table = "\n".join(lines) + "\n"
open(os.path.join(out, "table.md"), "w").write(table)
print(table)

# The chart: top, both policies' means with the min–max range over seeds; bottom, the margin
# with the range of per-seed margins.
W, left, right = 1180, 60, 20
top_h, bot_h, gap, head, foot = 250, 170, 40, 40, 90
H = head + top_h + gap + bot_h + foot
n = len(rows)
gw = (W - left - right) / n
colors = {base: "#d62728", mine: "#1f77b4"}
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
       f'font-family="sans-serif" font-size="11">',
       '<rect width="100%" height="100%" fill="white"/>',
       f'<text x="{left}" y="18" font-size="14">GPU allocation at 100% arrived demand on every '
       f'openb list: {base} vs {mine} ({seeds} seeds, {seed0}–{seed0 + seeds - 1}; bars = mean, '
       f'whiskers = min–max over seeds)</text>']
lo, hi = 75.0, 100.0
y0 = head
def ya(x):
    x = max(lo, min(hi, x))
    return y0 + top_h * (1 - (x - lo) / (hi - lo))
for t in range(75, 101, 5):
    svg.append(f'<line x1="{left}" x2="{W-right}" y1="{ya(t):.1f}" y2="{ya(t):.1f}" stroke="#ddd"/>'
               f'<text x="{left-6}" y="{ya(t)+4:.1f}" text-anchor="end">{t}%</text>')
for i, r in enumerate(rows):
    for j, (p, vals, m) in enumerate(((base, r["a"], r["am"]), (mine, r["b"], r["bm"]))):
        x = left + i * gw + gw * (0.12 + 0.38 * j)
        bw = gw * 0.36
        svg.append(f'<rect x="{x:.1f}" y="{ya(m):.1f}" width="{bw:.1f}" '
                   f'height="{ya(lo)-ya(m):.1f}" fill="{colors[p]}"><title>{r["v"]} {p}: '
                   f'{m:.2f}% (min {min(vals):.2f}, max {max(vals):.2f})</title></rect>')
        cx = x + bw / 2
        svg.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{ya(max(vals)):.1f}" '
                   f'y2="{ya(min(vals)):.1f}" stroke="black"/>')
mlo = min(0.0, min(min(r["m"]) for r in rows))
mhi = max(max(r["m"]) for r in rows)
mhi = float(int(mhi) + 1)
y1 = head + top_h + gap
def ym(x):
    return y1 + bot_h * (1 - (x - mlo) / (mhi - mlo))
svg.append(f'<text x="{left}" y="{y1-8}" font-size="12">margin of {mine} over {base} '
           f'(percentage points of the cluster\'s GPUs)</text>')
step = 1 if mhi - mlo <= 8 else 2
t = 0
while t <= mhi:
    svg.append(f'<line x1="{left}" x2="{W-right}" y1="{ym(t):.1f}" y2="{ym(t):.1f}" '
               f'stroke="{"#888" if t == 0 else "#ddd"}"/>'
               f'<text x="{left-6}" y="{ym(t)+4:.1f}" text-anchor="end">{t:+d}</text>')
    t += step
for i, r in enumerate(rows):
    x = left + i * gw + gw * 0.25
    bw = gw * 0.5
    top_v, bot_v = max(r["mm"], 0), min(r["mm"], 0)
    svg.append(f'<rect x="{x:.1f}" y="{ym(top_v):.1f}" width="{bw:.1f}" '
               f'height="{ym(bot_v)-ym(top_v):.1f}" fill="{colors[mine]}"><title>{r["v"]}: '
               f'{r["mm"]:+.2f} (per seed {min(r["m"]):+.2f} to {max(r["m"]):+.2f})</title></rect>')
    cx = x + bw / 2
    svg.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{ym(max(r["m"])):.1f}" '
               f'y2="{ym(min(r["m"])):.1f}" stroke="black"/>')
    svg.append(f'<text x="{cx:.1f}" y="{ym(top_v)-4:.1f}" text-anchor="middle" '
               f'font-size="9">{r["mm"]:+.2f}</text>')
    svg.append(f'<text transform="translate({left + i*gw + gw*0.35:.1f},{y1+bot_h+12}) '
               f'rotate(50)">{r["v"]}</text>')
for j, p in enumerate((base, mine)):
    svg.append(f'<rect x="{W-right-230+j*120}" y="26" width="12" height="12" fill="{colors[p]}"/>'
               f'<text x="{W-right-214+j*120}" y="36">{p}</text>')
svg.append("</svg>")
open(os.path.join(out, "beyond-fgd.svg"), "w").write("\n".join(svg) + "\n")
EOF
