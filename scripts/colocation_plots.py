#!/usr/bin/env python3
"""Table (stdout, markdown) and SVG figure of a co-location run: GPU allocation ratio and
inference SLO attainment over the day, one line per setup. Several summaries of the same
workload (setups run apart) are joined in order. Standard library only.
  scripts/colocation_plots.py FIG.svg TITLE OUT/summary.json [OUT2/summary.json ...]"""
import json
import sys

fig, title = sys.argv[1], sys.argv[2]
runs = []
for path in sys.argv[3:]:
    runs += json.load(open(path))["results"]
colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1"]

print("| setup | SLO attainment | worst hour | GPU allocation | utilisation | oversold | "
      "offline GPU-h done | GPU-h lost | evictions (online / credit) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in runs:
    print(f"| {r['policy']} | {100 * r['slo_attainment']:.2f}% | "
          f"{100 * r['slo_attainment_worst_hour']:.2f}% | {100 * r['gpu_allocation_ratio']:.1f}% | "
          f"{100 * r['gpu_utilisation']:.1f}% | {100 * r['oversold_ratio']:.2f}% | "
          f"{r['offline_gpu_hours_done']:.0f} | {r['offline_gpu_hours_lost']:.0f} | "
          f"{r['evictions']} ({r['evictions_for_online']} / {r['evictions_for_credit']}) |")


def panel(y0, h, key, ylabel, lo, hi, w=760, left=60, right=170):
    out = []
    x_max = max((p[0] for r in runs for p in r["series"][key]), default=1) or 1
    px = lambda x: left + (w - left - right) * x / x_max
    py = lambda v: y0 + h - h * (v - lo) / (hi - lo)
    out.append(f'<rect x="{left}" y="{y0}" width="{w - left - right}" height="{h}" fill="none" stroke="#ccc"/>')
    steps = 5
    for i in range(steps + 1):
        v = lo + (hi - lo) * i / steps
        out.append(f'<text x="{left - 6}" y="{py(v) + 4:.1f}" text-anchor="end" font-size="11">{100 * v:.0f}%</text>')
        out.append(f'<line x1="{left}" x2="{w - right}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#eee"/>')
    for hr in range(0, int(x_max / 3600) + 1, 3):
        out.append(f'<text x="{px(hr * 3600):.1f}" y="{y0 + h + 14}" text-anchor="middle" font-size="11">{hr}h</text>')
    out.append(f'<text x="14" y="{y0 + h / 2}" font-size="12" transform="rotate(-90 14 {y0 + h / 2})" '
               f'text-anchor="middle">{ylabel}</text>')
    for i, r in enumerate(runs):
        pts = " ".join(f"{px(x):.1f},{py(min(hi, max(lo, v))):.1f}" for x, v in r["series"][key])
        c = colors[i % len(colors)]
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.6" points="{pts}"/>')
        out.append(f'<text x="{w - right + 8}" y="{y0 + 16 + 16 * i}" font-size="11" fill="{c}">{r["policy"]}</text>')
    return out


slo_lo = min(min((v for _, v in r["series"]["slo_attainment"]), default=1) for r in runs)
slo_lo = max(0.0, (int(slo_lo * 20) / 20))
parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="760" height="560" font-family="sans-serif">',
         '<rect width="100%" height="100%" fill="white"/>',
         f'<text x="380" y="20" text-anchor="middle" font-size="14">{title}: GPU allocation and '
         f'inference SLO attainment over the day</text>']
parts += panel(40, 210, "gpu_allocation_ratio", "GPU allocation", 0.0, 1.0)
parts += panel(300, 210, "slo_attainment", "SLO attainment (per minute)", slo_lo, 1.0)
parts.append('<text x="380" y="550" text-anchor="middle" font-size="11">simulated time (hours)</text>')
parts.append("</svg>")
open(fig, "w").write("\n".join(parts) + "\n")
