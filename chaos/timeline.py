"""An HTML timeline of one run (inline SVG, no dependencies): fault windows per kind, acknowledged
writes per second and produce latency (p50/max per second, acks=all)."""

from __future__ import annotations

import html
from collections import defaultdict

from chaos.history import History

WIDTH, LANE, PLOT = 1100, 18, 140
COLOURS = {"kill-leader": "#d62728", "kill-controller": "#9467bd", "kill-coordinator": "#8c564b",
           "pause-isr": "#ff7f0e", "pause-session": "#e377c2", "restart-zookeeper": "#1f77b4"}


def per_second(h: History) -> tuple[dict[int, int], dict[int, list[float]]]:
    count: dict[int, int] = defaultdict(int)
    latency: dict[int, list[float]] = defaultdict(list)
    for p in h.produced:
        if p.ok and not p.txn:
            count[int(p.acked)] += 1
            if p.acked > p.sent:  # the Java tool reports no send time
                latency[int(p.acked)].append(p.acked - p.sent)
    return count, latency


def render(h: History, title: str) -> str:
    count, latency = per_second(h)
    end = max([*count, *(int(f.end) + 1 for f in h.faults), 1])
    x = lambda t: 60 + (WIDTH - 80) * t / end  # noqa: E731
    kinds = sorted({f.kind for f in h.faults})
    parts = []
    top = 30
    for i, kind in enumerate(kinds):
        y = top + i * LANE
        parts.append(f'<text x="2" y="{y + 12}" font-size="10">{html.escape(kind)}</text>')
        for f in h.faults:
            if f.kind == kind:
                parts.append(f'<rect x="{x(f.start):.1f}" y="{y}" width="{max(1.0, x(f.end) - x(f.start)):.1f}" '
                             f'height="{LANE - 4}" fill="{COLOURS.get(kind, "#777")}"><title>{html.escape(f.target)} '
                             f'{f.start:.1f}-{f.end:.1f}s {html.escape(f.note)}</title></rect>')
    y0 = top + len(kinds) * LANE + 20

    def line(values: dict[int, float], y_base: float, label: str, colour: str) -> None:
        peak = max(values.values(), default=1) or 1
        pts = " ".join(f"{x(t):.1f},{y_base + PLOT - PLOT * values.get(t, 0) / peak:.1f}" for t in range(end + 1))
        parts.append(f'<text x="2" y="{y_base + 10}" font-size="10">{label} (max {peak:.3g})</text>')
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1" points="{pts}"/>')
        parts.append(f'<line x1="60" x2="{WIDTH - 20}" y1="{y_base + PLOT}" y2="{y_base + PLOT}" stroke="#ccc"/>')

    line({t: float(c) for t, c in count.items()}, y0, "acks/s", "#2ca02c")
    lat_max = {t: max(v) for t, v in latency.items()}
    lat_p50 = {t: sorted(v)[len(v) // 2] for t, v in latency.items()}
    line(lat_max, y0 + PLOT + 20, "latency max s", "#d62728")
    line(lat_p50, y0 + 2 * PLOT + 40, "latency p50 s", "#1f77b4")
    height = y0 + 3 * PLOT + 80
    for t in range(0, end + 1, max(1, end // 20)):
        parts.append(f'<text x="{x(t):.1f}" y="{height - 10}" font-size="9">{t}s</text>')
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}">{"".join(parts)}</svg>'
    return f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>" \
           f"<body><h3>{html.escape(title)}</h3>{svg}</body></html>"
