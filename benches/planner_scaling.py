#!/usr/bin/env python3
"""Draws README's bench-planner chart (assets/screenshots/planner-scaling.svg)
from `mipstream bench-planner --json` files: re-plan p50 and p99 against
objects, with and without the certificate, worst of the runs given.

    python3 benches/planner_scaling.py OUT.svg FILE.json...

Each file is one run (`certify`, `objects`, `update_ms_p50`, `update_ms_p99`).
"""
import json
import math
import sys

out, files = sys.argv[1], sys.argv[2:]
runs = [json.load(open(f)) for f in files]
sizes = sorted({r["objects"] for r in runs})
worst = {}
for r in runs:
    for q in ("p50", "p99"):
        key = (r["certify"], q, r["objects"])
        worst[key] = max(worst.get(key, 0.0), r[f"update_ms_{q}"])

W, H, X0, X1, Y0, Y1 = 640, 360, 70, 470, 310, 30
top = max(4.0, math.ceil(max(worst.values())))
lo, hi = math.log10(sizes[0]), math.log10(sizes[-1])
x = lambda n: X0 + (X1 - X0) * (math.log10(n) - lo) / max(hi - lo, 1e-9)
y = lambda ms: Y0 - (Y0 - Y1) * ms / top
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       '<rect width="100%" height="100%" fill="white"/>']
for ms in range(int(top) + 1):
    svg.append(f'<line x1="{X0}" y1="{y(ms):.1f}" x2="{X1}" y2="{y(ms):.1f}" stroke="#ddd"/>')
    svg.append(f'<text x="{X0 - 6}" y="{y(ms) + 4:.1f}" text-anchor="end">{ms}</text>')
label = lambda n: f"{n // 1000000}M" if n >= 1000000 else f"{n // 1000}k"
for n in sizes:
    svg.append(f'<line x1="{x(n):.1f}" y1="{Y1}" x2="{x(n):.1f}" y2="{Y0}" stroke="#ddd"/>')
    svg.append(f'<text x="{x(n):.1f}" y="326" text-anchor="middle">{label(n)}</text>')
svg.append('<text x="270" y="348" text-anchor="middle">objects (10,000 textures; log scale)</text>')
svg.append('<text x="16" y="170" transform="rotate(-90 16 170)" text-anchor="middle">re-plan time (ms)</text>')
for ms, what in ((1.5, "target 100k: p99 1.5 ms"), (4.0, "target 1M: p99 4 ms")):
    svg.append(f'<line x1="{X0}" y1="{y(ms):.1f}" x2="{X1}" y2="{y(ms):.1f}" stroke="#c00" stroke-dasharray="4 3"/>')
    svg.append(f'<text x="{X1 + 6}" y="{y(ms) + 4:.1f}" fill="#c00">{what}</text>')
ly = 110
for certify, colour in ((True, "#1f77b4"), (False, "#2ca02c")):
    for q, dash in (("p99", "4 0"), ("p50", "2 3")):
        pts = [(x(n), y(worst[(certify, q, n)])) for n in sizes if (certify, q, n) in worst]
        if not pts:
            continue
        svg.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}" points="'
                   + " ".join(f"{a:.1f},{b:.1f}" for a, b in pts) + '"/>')
        svg += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{colour}"/>' for a, b in pts]
        svg.append(f'<line x1="{X1 + 6}" y1="{ly}" x2="{X1 + 30}" y2="{ly}" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>')
        svg.append(f'<text x="{X1 + 34}" y="{ly + 4}">{q}, {"certified" if certify else "no certificate"}</text>')
        ly += 18
svg.append(f'<text x="{X0}" y="18" font-size="13">bench-planner, one core, release, worst of {len(runs) // max(len(sizes) * 2, 1)} runs</text>')
svg.append("</svg>")
open(out, "w").write("\n".join(svg) + "\n")
