"""Server-side SVG charts: small, accessible, no JavaScript and no CDN.

Each chart carries a text label for every mark (status words, numbers), so colour is never the
only signal, and a <title> for screen readers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

STATUS_COLOURS = {"pass": "#17703a", "review": "#8a5a00", "block": "#b3261e"}


@dataclass(frozen=True)
class ForestRow:
    metric: str
    slice: str
    mean: float
    low: float | None
    high: float | None
    margin: float
    status: str
    higher_is_better: bool = True
    n: int = 0


def _nice_limit(value: float) -> float:
    if value <= 0:
        return 0.01
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        limit = step * 10**exponent
        if limit >= value:
            return limit
    return 10 ** (exponent + 1)


def forest_plot_svg(rows: Sequence[ForestRow], *, width: int = 900, row_height: int = 22) -> str:
    """Return a forest plot: per metric, one row per slice, the interval as a bar and a dot at the mean.

    Each metric gets its own horizontal scale (metrics differ in range), drawn with a solid line at
    zero and a dashed line at minus the margin (plus the margin where lower is better).
    """
    groups: dict[str, list[ForestRow]] = {}
    for row in rows:
        groups.setdefault(row.metric, []).append(row)
    label_w, status_w, pad = 260, 150, 12
    plot_w = width - label_w - status_w - 2 * pad
    parts: list[str] = []
    y = 8
    for metric, items in groups.items():
        bounds = [abs(v) for r in items for v in (r.low, r.high, r.mean) if v is not None and math.isfinite(v)]
        bounds.append(items[0].margin * 1.5)
        limit = _nice_limit(max(bounds) * 1.1)

        def x(value: float, limit: float = limit) -> float:
            return label_w + pad + (value + limit) / (2 * limit) * plot_w

        top = y + 18
        bottom = top + row_height * len(items)
        parts.append(f'<text x="{pad}" y="{y + 12}" class="fp-metric">{escape(metric)}</text>')
        for tick in (-limit, -limit / 2, 0.0, limit / 2, limit):
            parts.append(f'<text x="{x(tick):.1f}" y="{y + 12}" class="fp-tick" text-anchor="middle">{tick:+.3g}</text>')
        parts.append(f'<line x1="{x(0):.1f}" y1="{top}" x2="{x(0):.1f}" y2="{bottom}" class="fp-zero"/>')
        margin = items[0].margin
        margin_x = x(-margin if items[0].higher_is_better else margin)
        parts.append(f'<line x1="{margin_x:.1f}" y1="{top}" x2="{margin_x:.1f}" y2="{bottom}" class="fp-margin"/>')
        for i, row in enumerate(items):
            cy = top + row_height * i + row_height / 2
            colour = STATUS_COLOURS.get(row.status, "#444")
            label = f"{row.slice}" + (f" (n={row.n})" if row.n else "")
            parts.append(f'<text x="{pad + 12}" y="{cy + 4:.1f}" class="fp-label">{escape(label)}</text>')
            if row.low is not None and row.high is not None:
                parts.append(
                    f'<line x1="{x(max(-limit, row.low)):.1f}" y1="{cy:.1f}" x2="{x(min(limit, row.high)):.1f}" y2="{cy:.1f}" '
                    f'stroke="{colour}" stroke-width="4" stroke-linecap="round"/>'
                )
            parts.append(f'<circle cx="{x(max(-limit, min(limit, row.mean))):.1f}" cy="{cy:.1f}" r="5" fill="{colour}"/>')
            interval = f"[{row.low:+.3f}, {row.high:+.3f}]" if row.low is not None and row.high is not None else "n too small"
            parts.append(
                f'<text x="{width - status_w}" y="{cy + 4:.1f}" class="fp-status" fill="{colour}">'
                f'{escape(row.status.upper())} {row.mean:+.3f}</text>'
                f'<title>{escape(metric)} · {escape(row.slice)}: {row.mean:+.3f} {interval}, {escape(row.status)}</title>'
            )
        y = bottom + 14
    height = y + 6
    style = (
        "<style>.fp-metric{font:600 13px system-ui,sans-serif;fill:#1d2330}.fp-tick{font:11px system-ui,sans-serif;fill:#5b6475}"
        ".fp-label{font:12px system-ui,sans-serif;fill:#1d2330}.fp-status{font:700 12px system-ui,sans-serif}"
        ".fp-zero{stroke:#1d2330;stroke-width:1.2}.fp-margin{stroke:#5b6475;stroke-width:1.2;stroke-dasharray:5 4}</style>"
    )
    title = "Forest plot: interval on candidate minus baseline per metric and slice; solid line at zero, dashed at the margin"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}" '
        f'width="100%" class="forest-plot"><title>{escape(title)}</title>{style}{"".join(parts)}</svg>'
    )
