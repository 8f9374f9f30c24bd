#!/usr/bin/env python3
"""Tables (stdout, Markdown) and SVG bar charts (FIGDIR/policies-*.svg) of the policy
comparison that scripts/policies-results.sh writes under OUT. Standard library only.
  scripts/policies_plots.py OUT FIGDIR"""
import glob
import json
import os
import sys

out, figdir = sys.argv[1], sys.argv[2]
os.makedirs(figdir, exist_ok=True)
COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#b07aa1"]
CLASSES = ["pretrain (>= 256 GPUs)", "multi-node (9-255 GPUs)", "one node (<= 8 GPUs)", "all"]


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def load(pattern):
    """{variant: {"rows": [row per file], ...}} in the files' variant order."""
    runs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, pattern)))]
    order, by = [], {}
    for run in runs:
        for r in run["results"]:
            name = r["gang_placement"]
            if name not in by:
                order.append(name)
                by[name] = []
            by[name].append(r)
    return order, by, len(runs)


def cls(row, name):
    return next(c for c in row["classes"] if c["class"] == name)


def avg(rows, name, key, scale=1.0):
    return mean([cls(r, name)[key] * scale for r in rows])


def table(title, pattern):
    order, by, n = load(pattern)
    if not order:
        return None
    print(f"\n{title} (mean over {n} run{'s' if n > 1 else ''}; hours)\n")
    print("| variant | class | jobs | JCT mean | JCT p95 | queue mean | queue p95 | "
          "within preferred | spread slowdown | GPU speed |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for v in order:
        for c in CLASSES:
            rows = by[v]
            if cls(rows[0], c)["jobs"] == 0:
                continue
            pref = [cls(r, c)["within_preferred"] for r in rows if cls(r, c)["with_prefer"] > 0]
            within = f"{100 * mean(pref):.1f}%" if pref else "-"
            print(f"| {v} | {c} | {cls(rows[0], c)['jobs']} | "
                  f"{avg(rows, c, 'jct_mean_seconds', 1 / 3600):.2f} | "
                  f"{avg(rows, c, 'jct_p95_seconds', 1 / 3600):.2f} | "
                  f"{avg(rows, c, 'queue_mean_seconds', 1 / 3600):.2f} | "
                  f"{avg(rows, c, 'queue_p95_seconds', 1 / 3600):.2f} | {within} | "
                  f"{avg(rows, c, 'mean_slowdown'):.3f} | {avg(rows, c, 'mean_gpu_speed'):.3f} |")
    print("\n| variant | GPU allocation | makespan h | resizes | replay s |")
    print("|---|---:|---:|---:|---:|")
    for v in order:
        rows = by[v]
        print(f"| {v} | {100 * mean([r['gpu_allocation_ratio'] for r in rows]):.1f}% | "
              f"{mean([r['makespan_seconds'] for r in rows]) / 3600:.1f} | "
              f"{mean([r['resizes'] for r in rows]):.0f} | "
              f"{mean([r['wall_seconds'] for r in rows]):.1f} |")
    return order, by


def bars(path, title, groups, series, values, ylabel):
    """Grouped bars: values[s][g] for series s in group g."""
    w, h, l, r, t, b = 760, 400, 70, 190, 40, 60
    top = max(max(v) for v in values) * 1.15 or 1
    step = 10 ** len(str(int(top))) / 10
    if top / step < 4:
        step /= 4  # at least four grid lines
    ticks = [i * step for i in range(0, int(top / step) + 2) if i * step <= top]
    px = lambda g, s: l + (w - l - r) * (g + (s + 0.5) / (len(series) + 1)) / len(groups)
    py = lambda v: h - b - v / top * (h - t - b)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'viewBox="0 0 {w} {h}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{l}" y="22" font-size="15" font-weight="bold">{esc(title)}</text>',
             f'<text transform="translate(16,{t + (h - t - b) / 2}) rotate(-90)" '
             f'text-anchor="middle">{esc(ylabel)}</text>']
    for v in ticks:
        parts.append(f'<line x1="{l}" x2="{w - r}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
                     f'stroke="#e5e7eb"/>')
        parts.append(f'<text x="{l - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    bw = (w - l - r) / len(groups) / (len(series) + 1) * 0.9
    for s, name in enumerate(series):
        for g in range(len(groups)):
            v = values[s][g]
            parts.append(f'<rect x="{px(g, s) - bw / 2:.1f}" y="{py(v):.1f}" width="{bw:.1f}" '
                         f'height="{py(0) - py(v):.1f}" fill="{COLORS[s % len(COLORS)]}"/>')
            parts.append(f'<text x="{px(g, s):.1f}" y="{py(v) - 3:.1f}" text-anchor="middle" '
                         f'font-size="10">{v:.1f}</text>')
        parts.append(f'<rect x="{w - r + 15}" y="{t + 18 * s}" width="12" height="12" '
                     f'fill="{COLORS[s % len(COLORS)]}"/>')
        parts.append(f'<text x="{w - r + 32}" y="{t + 18 * s + 10}">{esc(name)}</text>')
    for g, name in enumerate(groups):
        xc = l + (w - l - r) * (g + 0.5) / len(groups)
        parts.append(f'<text x="{xc:.1f}" y="{h - b + 18}" text-anchor="middle">{esc(name)}</text>')
    parts.append(f'<line x1="{l}" x2="{w - r}" y1="{py(0)}" y2="{py(0)}" stroke="#111"/>')
    parts.append("</svg>")
    open(path, "w").write("\n".join(parts) + "\n")
    print(f"\nwrote {path}", file=sys.stderr)


llm = table("llm-10k, 6,000 jobs over 7 days", "llm10k-s*.json")
if llm:
    order, by = llm
    groups = ["pretrain JCT mean", "pretrain JCT p95", "pretrain queue p95", "all jobs JCT p95"]
    keys = [("pretrain (>= 256 GPUs)", "jct_mean_seconds"), ("pretrain (>= 256 GPUs)", "jct_p95_seconds"),
            ("pretrain (>= 256 GPUs)", "queue_p95_seconds"), ("all", "jct_p95_seconds")]
    values = [[avg(by[v], c, k, 1 / 3600) for c, k in keys] for v in order]
    bars(os.path.join(figdir, "policies-llm10k.svg"),
         "llm-10k: backfill reservations and elastic jobs (mean of 3 seeds)", groups, order,
         values, "hours")
itp = table("ITP cluster04 on itp-512", "itp04.json")
het = table("Heterogeneous 10k (H100/A100/V100)", "hetero-s*.json")
if het:
    order, by = het
    groups = ["pretrain", "multi-node", "one node", "all"]
    values = [[avg(by[v], c, "jct_mean_seconds", 1 / 3600) for c in CLASSES] for v in order]
    bars(os.path.join(figdir, "policies-hetero.svg"),
         "hetero-10k: JCT mean by class, model-blind vs fastest model first", groups, order,
         values, "hours")
