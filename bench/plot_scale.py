#!/usr/bin/env python3
"""Draws the growth curve of `collsched bandwidth` as an SVG (docs/performance.md, "Synthesis at scale").

    python3 bench/plot_scale.py SCALE.tsv OUT.svg      (SCALE.tsv written by bench/bandwidth_scale.sh)

Log-log axes: seconds against GPUs for the flow bound and for bound plus packed table, with the
reference curve c * N^2 log N through the bound's first point. No plotting library: plain SVG.
"""
import math
import sys


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l[0].isdigit()]
    bound = [(int(r[0]), max(float(r[2]), 0.005)) for r in rows]
    total = [(int(r[0]), max(float(r[5]), 0.005)) for r in rows if r[5] not in ("-", "")]
    W, H, L, B, T, R = 640, 400, 70, 50, 30, 20
    xs = [n for n, _ in bound]
    x0, x1 = math.log10(min(xs)), math.log10(max(xs))
    y0, y1 = math.log10(0.005), math.log10(100)
    X = lambda n: L + (math.log10(n) - x0) / (x1 - x0) * (W - L - R)
    Y = lambda s: H - B - (math.log10(s) - y0) / (y1 - y0) * (H - B - T)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>']
    for s in (0.01, 0.1, 1, 10, 100):
        out.append(f'<line x1="{L}" x2="{W - R}" y1="{Y(s):.1f}" y2="{Y(s):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{Y(s) + 4:.1f}" text-anchor="end">{s:g} s</text>')
    for n in xs:
        out.append(f'<line x1="{X(n):.1f}" x2="{X(n):.1f}" y1="{T}" y2="{H - B}" stroke="#eee"/>')
        out.append(f'<text x="{X(n):.1f}" y="{H - B + 16}" text-anchor="middle">{n}</text>')
    out.append(f'<text x="{(W + L) / 2}" y="{H - 10}" text-anchor="middle">GPUs (rail-optimized boxes of 8)</text>')

    def poly(pts, colour, label, dy):
        p = " ".join(f"{X(n):.1f},{Y(s):.1f}" for n, s in pts)
        out.append(f'<polyline points="{p}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for n, s in pts:
            out.append(f'<circle cx="{X(n):.1f}" cy="{Y(s):.1f}" r="3" fill="{colour}"/>')
        out.append(f'<text x="{L + 10}" y="{T + dy}" fill="{colour}">{label}</text>')

    n0, s0 = bound[0]
    ref = [(n, s0 * (n * n * math.log2(n)) / (n0 * n0 * math.log2(n0))) for n in xs]
    ref = [(n, s) for n, s in ref if s <= 100]
    p = " ".join(f"{X(n):.1f},{Y(s):.1f}" for n, s in ref)
    out.append(f'<polyline points="{p}" fill="none" stroke="#999" stroke-dasharray="4 4"/>')
    out.append(f'<text x="{L + 10}" y="{T + 48}" fill="#999">N^2 log N through the first bound point</text>')
    poly(bound, "#1f77b4", "flow bound with its cut (collsched bandwidth --no-packing)", 8)
    if total:
        poly(total, "#d62728", "bound + packed allgather table, verified", 28)
    out.append('</svg>')
    open(sys.argv[2], "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
