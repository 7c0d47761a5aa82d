"""The web view's pictures, drawn on the server as inline SVG: no script, no external resource,
and no style attribute (the pages' CSP admits inline style, but the look lives in style.py's
classes so every page draws alike). Every label is text from saved data or the audit trail, so
each goes through `e` like any other value (pages/layout.py): a name holding markup stays text.

`flow` draws the handoffs between clients (and people) as nodes on a circle joined by arrows,
each arrow labelled with how many handoffs it carries; `bars` draws a count per day."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from sessionvault.server.web.pages.layout import e

SIZE = 420  # the flow picture's side, in SVG units (it scales to the page's width)
RADIUS = 150  # where the nodes sit around the centre
NODE = 40  # a node's radius
LABEL = 12  # characters a node's label shows before an ellipsis (the full name is its <title>)


def _short(name: str) -> str:
    return name if len(name) <= LABEL else name[: LABEL - 1] + "…"


def flow(edges: Mapping[tuple[str, str], int], label: str) -> str:
    """Nodes (every client or person an edge names) and one arrow per (from, to) pair, marked
    with its count; a pair both ways gets two arrows bent apart. `label` names the picture for
    assistive technology."""
    names = sorted({n for pair in edges for n in pair})
    if not names:
        return ""
    centre = SIZE / 2
    spot: dict[str, tuple[float, float]] = {}
    for i, name in enumerate(names):
        angle = -math.pi / 2 + 2 * math.pi * i / len(names)
        spot[name] = (centre + RADIUS * math.cos(angle), centre + RADIUS * math.sin(angle))
    parts = [
        f'<svg class="flow" viewBox="0 0 {SIZE} {SIZE}" role="img" aria-labelledby="flow-title">'
        f'<title id="flow-title">{e(label)}</title>'
        '<defs><marker id="flow-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse">'
        '<path class="head" d="M0,0L10,5L0,10z"/></marker></defs>'
    ]
    for (src, dst), count in sorted(edges.items()):
        parts.append(_arrow(spot[src], spot[dst], count, f"{src} to {dst}", loop=src == dst))
    for name in names:
        x, y = spot[name]
        parts.append(
            f'<g class="node"><title>{e(name)}</title><circle cx="{x:.1f}" cy="{y:.1f}" r="{NODE}"/>'
            f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle">{e(_short(name))}</text></g>'
        )
    return "".join(parts) + "</svg>"


def _arrow(a: tuple[float, float], b: tuple[float, float], count: int, what: str, loop: bool) -> str:
    title = f"<title>{e(what)}: {count}</title>"
    if loop:  # a client that handed off to itself: a small loop above its node
        x, y = a
        low, high = y - NODE + 2, y - NODE - 50
        d = f"M{x - 12:.1f},{low:.1f}C{x - 40:.1f},{high:.1f} {x + 40:.1f},{high:.1f} {x + 12:.1f},{low:.1f}"
        tx, ty = x, y - NODE - 40
    else:
        (x1, y1), (x2, y2) = a, b
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        ux, uy = (x2 - x1) / length, (y2 - y1) / length
        # Start and end on the circles' edges; bend to the arrow's right so A->B and B->A part.
        sx, sy, ex, ey = x1 + ux * NODE, y1 + uy * NODE, x2 - ux * (NODE + 2), y2 - uy * (NODE + 2)
        cx, cy = (sx + ex) / 2 - uy * 28, (sy + ey) / 2 + ux * 28
        d = f"M{sx:.1f},{sy:.1f}Q{cx:.1f},{cy:.1f} {ex:.1f},{ey:.1f}"
        tx, ty = (sx + 2 * cx + ex) / 4, (sy + 2 * cy + ey) / 4
    return (
        f'<g class="edge">{title}<path d="{d}" marker-end="url(#flow-arrow)"/>'
        f'<text x="{tx:.1f}" y="{ty + 4:.1f}" text-anchor="middle">{count}</text></g>'
    )


BAR_W, BAR_GAP, BAR_H = 14, 4, 60  # a day's bar, the gap between bars, the tallest bar
BARS_MIN = 160  # the narrowest chart: room for a day's date under a single bar


def bars(days: Sequence[tuple[str, int]], label: str) -> str:
    """One bar a day (oldest first), its height its share of the busiest day, each with a
    <title> naming the day and its count; the first and last days are written under the axis."""
    if not days:
        return ""
    top = max(count for _, count in days) or 1
    width = max(len(days) * (BAR_W + BAR_GAP), BARS_MIN)
    # Drawn at its own size (width and height, one unit a CSS pixel), so a day or two of bars is
    # not stretched across the page; a wide month shrinks to fit a phone (max-width in style.py).
    parts = [
        f'<svg class="bars" width="{width}" height="{BAR_H + 20}" viewBox="0 0 {width} {BAR_H + 20}" '
        'role="img" aria-labelledby="bars-title">'
        f'<title id="bars-title">{e(label)}</title>'
    ]
    for i, (day, count) in enumerate(days):
        h = round(BAR_H * count / top) if count else 0
        x = i * (BAR_W + BAR_GAP)
        parts.append(
            f'<g class="bar"><title>{e(day)}: {count}</title>'
            f'<rect x="{x}" y="{BAR_H - h}" width="{BAR_W}" height="{max(h, 1)}"/></g>'
        )
    parts.append(f'<text x="0" y="{BAR_H + 15}">{e(days[0][0])}</text>')
    if len(days) > 1:
        parts.append(f'<text x="{width}" y="{BAR_H + 15}" text-anchor="end">{e(days[-1][0])}</text>')
    return "".join(parts) + "</svg>"
