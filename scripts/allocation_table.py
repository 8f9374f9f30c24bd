#!/usr/bin/env python3
"""Collects allocation_at_100 per policy and openb variant from OUT/*/summary.json into
OUT/allocation_at_100.csv, OUT/table.md and OUT/allocation_at_100.svg (no dependencies)."""
import json
import os
import sys

out, policies = sys.argv[1], sys.argv[2].split(",")
rows = []
for v in sorted(os.listdir(out)):
    path = os.path.join(out, v, "summary.json")
    if not os.path.isfile(path):
        continue
    s = json.load(open(path))
    by = {r["policy"]: r for r in s["results"]}
    rows.append((v, [by[p]["allocation_at_demand"][100] if p in by else None for p in policies],
                 [(by[p]["allocation_at_demand_min"][100], by[p]["allocation_at_demand_max"][100])
                  if p in by else (None, None) for p in policies]))


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}"


with open(os.path.join(out, "allocation_at_100.csv"), "w") as f:
    f.write("variant," + ",".join(policies) + "\n")
    for v, vals, _ in rows:
        f.write(v + "," + ",".join("" if x is None else f"{x:.5f}" for x in vals) + "\n")
with open(os.path.join(out, "table.md"), "w") as f:
    f.write("| variant | " + " | ".join(policies) + " |\n|---|" + "---:|" * len(policies) + "\n")
    for v, vals, spread in rows:
        best = max((x for x in vals if x is not None), default=None)
        cells = []
        for x, (lo, hi) in zip(vals, spread):
            c = pct(x)
            if x is not None and x == best:
                c = f"**{c}**"
            cells.append(c)
        f.write(f"| {v} | " + " | ".join(cells) + " |\n")

# A grouped bar chart: one group per variant, one bar per policy.
colors = ["#9e9e9e", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728", "#17becf", "#8c564b"]
W, H, left, top, bottom = 1200, 420, 50, 30, 110
lo_y, hi_y = 0.6, 1.0
n = len(rows)
gw = (W - left - 20) / max(n, 1)
bw = gw * 0.8 / max(len(policies), 1)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
       f'<text x="{left}" y="18" font-size="14">GPU allocation at 100% arrived demand, openb variants (10 seeds, simulated cluster)</text>']
def y(v):
    return top + (H - top - bottom) * (1 - (v - lo_y) / (hi_y - lo_y))
for t in [0.6, 0.7, 0.8, 0.9, 1.0]:
    svg.append(f'<line x1="{left}" x2="{W-20}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
               f'<text x="{left-5}" y="{y(t)+4:.1f}" text-anchor="end">{int(t*100)}%</text>')
for i, (v, vals, _) in enumerate(rows):
    x0 = left + i * gw + gw * 0.1
    for j, val in enumerate(vals):
        if val is None:
            continue
        h = max(0.0, y(lo_y) - y(max(val, lo_y)))
        svg.append(f'<rect x="{x0 + j*bw:.1f}" y="{y(max(val, lo_y)):.1f}" width="{bw*0.9:.1f}" height="{h:.1f}" fill="{colors[j % len(colors)]}"><title>{v} {policies[j]}: {100*val:.1f}%</title></rect>')
    svg.append(f'<text transform="translate({x0 + gw*0.4:.1f},{H-bottom+12}) rotate(45)">{v}</text>')
for j, p in enumerate(policies):
    svg.append(f'<rect x="{left + j*110}" y="{H-22}" width="12" height="12" fill="{colors[j % len(colors)]}"/>'
               f'<text x="{left + j*110 + 16}" y="{H-12}">{p}</text>')
svg.append("</svg>")
open(os.path.join(out, "allocation_at_100.svg"), "w").write("\n".join(svg))
print(open(os.path.join(out, "table.md")).read())
