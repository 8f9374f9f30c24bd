#!/usr/bin/env python3
"""SVG figures of docs/results.md section 7 from out/queues-results/*/summary.json, standard
library only:
  FIGDIR/queues-share-RUN-POLICY.svg  share of the cluster each leaf queue held over time,
                                      against its entitlement (dotted)
  FIGDIR/queues-gpu-hours-lost.svg    GPU-hours lost to preemption, drf vs drf-naive, per run
  scripts/queues_plots.py OUT FIGDIR RUN [RUN...]   (RUNs for the share figures)"""
import json
import os
import sys

out, figdir, share_runs = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(figdir, exist_ok=True)
COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#b07aa1", "#edc948", "#ff9da7"]


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def frame(title, w, h, l, t, pw, ph, xlabel, ylabel, xmax, ymax, xticks, yticks, xfmt, yfmt):
    p = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
         f'<rect width="{w}" height="{h}" fill="white"/>',
         f'<text x="{l}" y="22" font-size="14" font-weight="bold">{esc(title)}</text>']
    for i in range(yticks + 1):
        v = ymax * i / yticks
        y = t + ph - ph * i / yticks
        p.append(f'<line x1="{l}" x2="{l+pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        p.append(f'<text x="{l-6}" y="{y+4:.1f}" text-anchor="end">{yfmt(v)}</text>')
    for i in range(xticks + 1 if xticks > 0 else 0):
        v = xmax * i / xticks
        x = l + pw * i / xticks
        p.append(f'<text x="{x:.1f}" y="{t+ph+16}" text-anchor="middle">{xfmt(v)}</text>')
    p.append(f'<rect x="{l}" y="{t}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
    p.append(f'<text x="{l+pw/2}" y="{t+ph+36}" text-anchor="middle">{esc(xlabel)}</text>')
    p.append(f'<text transform="translate(16,{t+ph/2}) rotate(-90)" text-anchor="middle">{esc(ylabel)}</text>')
    return p


def share_figure(run, result, path):
    leaves = [(q, v) for q, v in sorted(result["queues"].items()) if v["leaf"] and "share_over_time" in v]
    if not leaves:
        return False
    w, h, l, t, pw, ph = 760, 400, 60, 40, 520, 300
    xmax = max(v["share_over_time"][-1][0] for _, v in leaves if v["share_over_time"]) / 86400 or 1
    ymax = max([v["entitlement"] for _, v in leaves] + [s for _, v in leaves for _, s in v["share_over_time"]])
    ymax = min(1.0, max(0.1, ymax * 1.1))
    p = frame(f"{run}: share held by each queue under {result['policy']}", w, h, l, t, pw, ph,
              "simulated time (days)", "share of cluster GPUs", xmax, ymax, 6, 5,
              lambda v: f"{v:.0f}", lambda v: f"{100*v:.0f}%")
    for i, (q, v) in enumerate(leaves):
        c = COLORS[i % len(COLORS)]
        pts, prev = [], None
        for x, y in v["share_over_time"]:
            X = l + pw * (x / 86400) / xmax
            Y = t + ph - ph * min(y, ymax) / ymax
            if prev is not None:
                pts.append(f"{X:.1f},{prev:.1f}")  # step
            pts.append(f"{X:.1f},{Y:.1f}")
            prev = Y
        p.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{c}" stroke-width="1.2"/>')
        ey = t + ph - ph * min(v["entitlement"], ymax) / ymax
        p.append(f'<line x1="{l}" x2="{l+pw}" y1="{ey:.1f}" y2="{ey:.1f}" stroke="{c}" stroke-dasharray="5,4" stroke-width="1.5"/>')
        ly = t + 14 + 18 * i
        p.append(f'<line x1="{l+pw+12}" x2="{l+pw+32}" y1="{ly-4}" y2="{ly-4}" stroke="{c}" stroke-width="2"/>')
        p.append(f'<text x="{l+pw+38}" y="{ly}">{esc(q)} ({100*v["entitlement"]:.0f}%)</text>')
    p.append(f'<text x="{l+pw+12}" y="{t+14+18*len(leaves)+6}" fill="#555">dotted: entitlement</text>')
    p.append("</svg>")
    open(path, "w").write("\n".join(p) + "\n")
    return True


def lost_figure(runs, path):
    bars = []
    for run, s in runs:
        by = {r["policy"]: r["gpu_hours_lost_to_preemption"] for r in s["results"]}
        if "drf" in by and "drf-naive" in by:
            bars.append((run, by["drf"], by["drf-naive"]))
    if not bars:
        return
    w, h, l, t = 760, 420, 70, 40
    pw, ph = 520, 280
    ymax = max(max(a, b) for _, a, b in bars) * 1.1 or 1
    p = frame("GPU-hours lost to preemption: checkpoint-aware (drf) vs naive (drf-naive)", w, h, l, t, pw, ph,
              "", "GPU-hours lost", 1, ymax, 0, 5, lambda v: "", lambda v: f"{v:,.0f}")
    slot = pw / len(bars)
    for i, (run, a, b) in enumerate(bars):
        for k, (v, c) in enumerate([(a, COLORS[0]), (b, COLORS[1])]):
            x = l + slot * i + slot * (0.15 + 0.35 * k)
            bh = ph * v / ymax
            p.append(f'<rect x="{x:.1f}" y="{t+ph-bh:.1f}" width="{slot*0.33:.1f}" height="{bh:.1f}" fill="{c}"/>')
        p.append(f'<text transform="translate({l+slot*(i+0.5):.1f},{t+ph+12}) rotate(30)" font-size="11">{esc(run)}</text>')
    for k, name in enumerate(["drf (checkpoint-aware)", "drf-naive (Kueue/Volcano order)"]):
        p.append(f'<rect x="{l+pw+12}" y="{t+8+20*k}" width="14" height="12" fill="{COLORS[k]}"/>')
        p.append(f'<text x="{l+pw+32}" y="{t+18+20*k}">{name}</text>')
    p.append("</svg>")
    open(path, "w").write("\n".join(p) + "\n")


runs = []
for run in sorted(os.listdir(out)):
    f = os.path.join(out, run, "summary.json")
    if os.path.isfile(f):
        runs.append((run, json.load(open(f))))
lost_figure(runs, os.path.join(figdir, "queues-gpu-hours-lost.svg"))
for run, s in runs:
    if run not in share_runs:
        continue
    for r in s["results"]:
        if r["policy"] in ("fifo", "drf"):
            share_figure(run, r, os.path.join(figdir, f"queues-share-{run}-{r['policy']}.svg"))
