#!/usr/bin/env python3
"""Tables (OUT/tables.md) and SVG figures (FIGDIR/failures-*.svg) of the failures study from
the summaries scripts/failures_study.sh writes. Standard library only.
  scripts/failures_plots.py OUT FIGDIR"""
import json
import math
import os
import sys

out, figdir = sys.argv[1], sys.argv[2]
os.makedirs(figdir, exist_ok=True)
COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#b07aa1"]


def load(run):
    path = os.path.join(out, run, "summary.json")
    return json.load(open(path)) if os.path.isfile(path) else None


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Svg:
    """A plot area with linear or log axes, in a fixed-size SVG."""

    def __init__(self, title, xlabel, ylabel, xr, yr, xlog=False, w=720, h=420):
        self.w, self.h, self.xr, self.yr, self.xlog = w, h, xr, yr, xlog
        self.l, self.r, self.t, self.b = 70, 170, 40, 55
        self.parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'viewBox="0 0 {w} {h}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
            f'<rect width="{w}" height="{h}" fill="white"/>',
            f'<text x="{self.l}" y="22" font-size="15" font-weight="bold">{esc(title)}</text>',
            f'<text x="{self.l + (w - self.l - self.r) / 2}" y="{h - 12}" '
            f'text-anchor="middle">{esc(xlabel)}</text>',
            f'<text transform="translate(16,{self.t + (h - self.t - self.b) / 2}) rotate(-90)" '
            f'text-anchor="middle">{esc(ylabel)}</text>']
        self.legend = 0

    def x(self, v):
        a, b = self.xr
        if self.xlog:
            v, a, b = math.log10(v), math.log10(a), math.log10(b)
        return self.l + (v - a) / (b - a) * (self.w - self.l - self.r)

    def y(self, v):
        a, b = self.yr
        return self.h - self.b - (v - a) / (b - a) * (self.h - self.t - self.b)

    def axes(self, xticks, yticks, xfmt=str, yfmt=str):
        x0, x1, y0, y1 = self.l, self.w - self.r, self.h - self.b, self.t
        for v in yticks:
            yy = self.y(v)
            self.parts.append(f'<line x1="{x0}" x2="{x1}" y1="{yy:.1f}" y2="{yy:.1f}" '
                              f'stroke="#e5e7eb"/>')
            self.parts.append(f'<text x="{x0 - 6}" y="{yy + 4:.1f}" text-anchor="end">'
                              f'{esc(yfmt(v))}</text>')
        for v in xticks:
            xx = self.x(v)
            self.parts.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{y0}" y2="{y1}" '
                              f'stroke="#f0f1f3"/>')
            self.parts.append(f'<text x="{xx:.1f}" y="{y0 + 16}" text-anchor="middle">'
                              f'{esc(xfmt(v))}</text>')
        self.parts.append(f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" '
                          f'fill="none" stroke="#9ca3af"/>')

    def line(self, pts, color, label=None, dash=None, marker=True, width=2):
        d = " ".join(f"{'M' if i == 0 else 'L'}{self.x(a):.1f},{self.y(b):.1f}"
                     for i, (a, b) in enumerate(pts))
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{width}"'
                          f'{extra}/>')
        if marker:
            for a, b in pts:
                self.parts.append(f'<circle cx="{self.x(a):.1f}" cy="{self.y(b):.1f}" r="3" '
                                  f'fill="{color}"/>')
        if label:
            self.key(color, label, dash)

    def key(self, color, label, dash=None):
        yy = self.t + 10 + 20 * self.legend
        xx = self.w - self.r + 14
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{xx}" x2="{xx + 22}" y1="{yy}" y2="{yy}" stroke="{color}" '
                          f'stroke-width="3"{extra}/>')
        self.parts.append(f'<text x="{xx + 28}" y="{yy + 4}">{esc(label)}</text>')
        self.legend += 1

    def text(self, x, y, s, anchor="start", color="#374151"):
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" '
                          f'fill="{color}">{esc(s)}</text>')

    def save(self, name):
        with open(os.path.join(figdir, name), "w") as f:
            f.write("\n".join(self.parts + ["</svg>"]) + "\n")


def pct(v, digits=1):
    return f"{100 * v:.{digits}f} %"


tables = []
default, fast = load("default"), load("fast")

# Table 1 and figure 1: ETTR per policy, default and fast recovery stacks.
if default and fast:
    rows = ["| policy | stack | ETTR (mean, min–max over 10 draws) | GPU-h lost (redone + idle) "
            "| recovery mean / p50 / p99 (s) | interruptions | best interval (s) | Young/Daly (s) |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, s in (("default", default), ("fast", fast)):
        for r in s["results"]:
            rs = r["recovery_seconds"]
            rows.append(
                f"| {r['policy']} | {name} | **{r['ettr']:.3f}** ({r['ettr_min']:.3f}–"
                f"{r['ettr_max']:.3f}) | {r['gpu_hours_lost']:,.0f} | {rs['mean']:.0f} / "
                f"{rs['p50']:.0f} / {rs['p99']:.0f} | {r['interruptions']:.1f} | "
                f"{r['best_checkpoint_interval_seconds']:.0f} | "
                f"{r['young_daly_interval_seconds']:.0f} |")
    tables.append("## ETTR per policy\n\n" + "\n".join(rows))

    rows = ["| policy | stack | redone work | recovery idle | checkpoint stalls | shrunk "
            "| hot spares idle |", "|---|---|---:|---:|---:|---:|---:|"]
    for name, s in (("default", default), ("fast", fast)):
        for r in s["results"]:
            d = r["gpu_hours_lost_detail"]
            rows.append(f"| {r['policy']} | {name} | {d['redone_work']:,.0f} | "
                        f"{d['recovery_idle']:,.0f} | {d['checkpoint_stall']:,.0f} | "
                        f"{d['shrunk_capacity']:,.0f} | {d['spare_idle']:,.0f} |")
    tables.append("## GPU-hours by cause (per 30-day run)\n\n" + "\n".join(rows))

    policies = [r["policy"] for r in default["results"]]
    svg = Svg("ETTR of a 16,384-GPU job, 30 days, Llama 3 failure rates", "",
              "ETTR", (0, len(policies)), (0.85, 1.0), w=720, h=400)
    svg.axes([], [0.85, 0.88, 0.90, 0.92, 0.94, 0.96, 0.98, 1.0], yfmt=lambda v: f"{v:.2f}")
    bw = 0.36
    for i, p in enumerate(policies):
        for k, (name, s, color) in enumerate((("default stack", default, "#9aa0a6"),
                                              ("fast stack", fast, COLORS[i]))):
            r = next(x for x in s["results"] if x["policy"] == p)
            x0 = svg.x(i + 0.12 + k * bw)
            x1 = svg.x(i + 0.12 + (k + 1) * bw) - 2
            y0, y1 = svg.y(0.85), svg.y(r["ettr"])
            svg.parts.append(f'<rect x="{x0:.1f}" y="{y1:.1f}" width="{x1 - x0:.1f}" '
                             f'height="{y0 - y1:.1f}" fill="{color}"/>')
            lo, hi = svg.y(r["ettr_min"]), svg.y(r["ettr_max"])
            xm = (x0 + x1) / 2
            svg.parts.append(f'<line x1="{xm:.1f}" x2="{xm:.1f}" y1="{lo:.1f}" y2="{hi:.1f}" '
                             f'stroke="#111827"/>')
            svg.text(xm, y1 - 6, f"{r['ettr']:.3f}", "middle")
        svg.text(svg.x(i + 0.5), svg.h - svg.b + 18, p, "middle")
    svg.line([(0, 0.98), (len(policies), 0.98)], "#111827", "target 0.98", dash="5,4",
             marker=False, width=1.5)
    svg.key("#9aa0a6", "default stack")
    svg.key(COLORS[2], "fast stack")
    svg.text(svg.w - svg.r + 14, svg.t + 90, "fast: 0.5 s ckpt stall,")
    svg.text(svg.w - svg.r + 14, svg.t + 106, "15 s detect, 60 s restart")
    svg.save("failures-ettr-by-policy.svg")

# Figure 2: ETTR against the checkpoint interval, with Young/Daly.
for name, s in (("default", default), ("fast", fast)):
    if not s:
        continue
    pts = [(p["interval_seconds"], p["ettr"]) for r in s["results"] for p in r["checkpoint_sweep"]]
    xs = [a for a, _ in pts]
    ys = [b for _, b in pts]
    lo = math.floor(min(ys) * 100 - 0.5) / 100
    hi = min(1.0, math.ceil(max(ys) * 100 + 0.5) / 100)
    svg = Svg(f"ETTR vs checkpoint interval ({name} stack)", "checkpoint interval (s, log scale)",
              "ETTR", (min(xs) * 0.9, max(xs) * 1.1), (lo, hi), xlog=True)
    ticks = [t for t in (20, 30, 50, 100, 200, 300, 500, 1000, 2000, 5000)
             if min(xs) * 0.9 <= t <= max(xs) * 1.1]
    step = 0.01 if hi - lo <= 0.1 else 0.02
    svg.axes(ticks, [lo + i * step for i in range(int(round((hi - lo) / step)) + 1)],
             yfmt=lambda v: f"{v:.2f}")
    for i, r in enumerate(s["results"]):
        svg.line([(p["interval_seconds"], p["ettr"]) for p in r["checkpoint_sweep"]], COLORS[i],
                 r["policy"])
    yd = s["job"]["young_daly_interval_seconds"]
    svg.line([(yd, lo), (yd, hi)], "#6b7280", f"Young/Daly {yd:.0f} s", dash="4,4", marker=False,
             width=1.5)
    svg.save(f"failures-checkpoint-sweep-{name}.svg")

# Table 3 and figure 3: ETTR against the number of hot spares.
spares = {}
for stack in ("default", "fast"):
    for n in (0, 1, 2, 4, 8, 16, 32, 52):
        s = load(f"spares-{stack}-{n}")
        if s:
            spares.setdefault(stack, []).append((n, s["results"][0]))
if spares:
    rows = ["| hot spares | stack | ETTR | recovery mean / p99 (s) | cold replacements | "
            "spare GPU-h idle |", "|---:|---|---:|---:|---:|---:|"]
    for stack, lst in spares.items():
        for n, r in lst:
            a = r["actions"]
            rows.append(f"| {n} | {stack} | {r['ettr']:.4f} | {r['recovery_seconds']['mean']:.0f} / "
                        f"{r['recovery_seconds']['p99']:.0f} | "
                        f"{a['replacements'] - a['hot_spares_used']:.1f} | "
                        f"{r['gpu_hours_lost_detail']['spare_idle']:,.0f} |")
    tables.append("## Hot spares\n\n" + "\n".join(rows))
    ys = [r["ettr"] for lst in spares.values() for _, r in lst]
    lo = math.floor(min(ys) * 100 - 0.5) / 100
    hi = min(1.0, math.ceil(max(ys) * 100 + 0.5) / 100)
    svg = Svg("ETTR vs hot spares (spares policy)", "hot spare nodes (pool cap)", "ETTR",
              (0, 52), (lo, hi))
    svg.axes([0, 4, 8, 16, 32, 52], [lo + i * 0.01 for i in range(int(round((hi - lo) / 0.01)) + 1)],
             yfmt=lambda v: f"{v:.2f}")
    for i, (stack, lst) in enumerate(spares.items()):
        svg.line([(n, r["ettr"]) for n, r in lst], COLORS[i * 2], f"{stack} stack")
    if lo <= 0.98 <= hi:
        svg.line([(0, 0.98), (52, 0.98)], "#111827", "target 0.98", dash="5,4", marker=False,
                 width=1.5)
    svg.save("failures-spares.svg")

# Figure 4: training time lost over time (first draw), default stack.
if default:
    end = default["job"]["days"] * 86400
    svg = Svg("Training time lost over 30 days (first failure draw)", "days", "hours lost",
              (0, end / 86400), (0, 1), w=720, h=400)
    series = []
    for r in default["results"]:
        pts = [(t / 86400, max(0.0, t / 3600 - h)) for t, h in r["series"]["progress_hours"]]
        series.append((r["policy"], pts))
    top = max(b for _, pts in series for _, b in pts)
    top = math.ceil(top / 10) * 10
    svg.yr = (0, top)
    svg.axes([0, 5, 10, 15, 20, 25, 30], [top * i / 5 for i in range(6)],
             yfmt=lambda v: f"{v:.0f} h")
    for i, (p, pts) in enumerate(series):
        svg.line(pts, COLORS[i], p, marker=False, width=1.5)
    svg.save("failures-lost-over-time.svg")

# Table 5: what reaching 0.98 takes (spares policy).
grid = []
for cost in ("0.5", "1", "2", "5", "10", "30"):
    row = []
    for dr in ("60-180", "30-120", "15-60"):
        s = load(f"grid-{cost}-{dr}")
        row.append(s["results"][0]["ettr"] if s else None)
    grid.append((cost, row))
if any(v is not None for _, row in grid for v in row):
    rows = ["| checkpoint stall | detect 60 s, restart 180 s | detect 30 s, restart 120 s | "
            "detect 15 s, restart 60 s |", "|---:|---:|---:|---:|"]
    for cost, row in grid:
        rows.append(f"| {cost} s | " + " | ".join(
            "-" if v is None else (f"**{v:.3f}**" if v >= 0.98 else f"{v:.3f}") for v in row) + " |")
    tables.append("## ETTR of the spares policy by recovery stack (Young/Daly interval)\n\n" +
                  "\n".join(rows))

for run, title in (("full", "No headroom: 16,384 GPUs on 2,048 nodes"),
                   ("lemons", "Lemon nodes and the drain rule (llama3-lemons)")):
    s = load(run)
    if not s:
        continue
    rows = ["| policy | ETTR | interruptions | recoveries | waits | drained nodes |",
            "|---|---:|---:|---:|---:|---:|"]
    for r in s["results"]:
        a = r["actions"]
        rows.append(f"| {r['policy']} | {r['ettr']:.4f} | {r['interruptions']:.1f} | "
                    f"{r['recovery_seconds']['count'] / r['seeds']:.1f} | {a['waits']:.1f} | "
                    f"{a['drained_nodes']:.1f} |")
    tables.append(f"## {title}\n\n" + "\n".join(rows))

with open(os.path.join(out, "tables.md"), "w") as f:
    f.write("\n\n".join(tables) + "\n")
print(open(os.path.join(out, "tables.md")).read())
