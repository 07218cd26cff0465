"""Server-side SVG charts: small, accessible, no JavaScript and no CDN.

Each chart carries a text label for every mark (status words, numbers), so colour is never the
only signal, and a <title> for screen readers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from evalcore.engine import STATUSES

STATUS_COLOURS = dict(zip(STATUSES, ("#17703a", "#8a5a00", "#b3261e")))


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


def responsive(wide: str, narrow: str) -> str:
    """Both drawings of a chart: the wide one for screens, the narrow one for phones (CSS shows one).

    A chart drawn for 900 px and shrunk to a phone's 360 px would have 5 px text: the narrow
    drawing lays the same marks out for about 330 px, so its text stays at about its size.
    """
    return f'<div class="chart-wide">{wide}</div><div class="chart-narrow">{narrow}</div>'


def _by_metric(rows: Sequence[ForestRow]) -> list[tuple[str, list[ForestRow], float]]:
    """The rows grouped by metric, each group with its scale's half-width (a round number past every mark)."""
    groups: dict[str, list[ForestRow]] = {}
    for row in rows:
        groups.setdefault(row.metric, []).append(row)
    out = []
    for metric, items in groups.items():
        bounds = [abs(v) for r in items for v in (r.low, r.high, r.mean) if v is not None and math.isfinite(v)]
        bounds.append(items[0].margin * 1.5)
        out.append((metric, items, _nice_limit(max(bounds) * 1.1)))
    return out


def forest_plot_svg(rows: Sequence[ForestRow], *, width: int = 900, row_height: int = 22, compact: bool = False) -> str:
    """Return a forest plot: per metric, one row per slice, the interval as a bar and a dot at the mean.

    Each metric gets its own horizontal scale (metrics differ in range), drawn with a solid line at
    zero and a dashed line at minus the margin (plus the margin where lower is better). ``compact``
    lays it out for a phone (330 units, so its text keeps about its size): each row's label and
    status above its bar.
    """
    if compact:
        return _forest_compact(rows, width=min(width, 330))
    label_w, status_w, pad = 260, 150, 12
    plot_w = width - label_w - status_w - 2 * pad
    parts: list[str] = []
    y = 8
    for metric, items, limit in _by_metric(rows):

        def x(value: float, limit: float = limit) -> float:
            return label_w + pad + (value + limit) / (2 * limit) * plot_w

        top = y + 18
        bottom = top + row_height * len(items)
        parts.append(f'<text x="{pad}" y="{y + 12}" class="fp-metric">{escape(metric)}</text>')
        for tick in (-limit, -limit / 2, 0.0, limit / 2, limit):
            parts.append(
                f'<text x="{x(tick):.1f}" y="{y + 12}" class="fp-tick" text-anchor="middle">{tick:+.3g}</text>'
            )
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
            parts.append(
                f'<circle cx="{x(max(-limit, min(limit, row.mean))):.1f}" cy="{cy:.1f}" r="5" fill="{colour}"/>'
            )
            interval = (
                f"[{row.low:+.3f}, {row.high:+.3f}]" if row.low is not None and row.high is not None else "n too small"
            )
            parts.append(
                f'<text x="{width - status_w}" y="{cy + 4:.1f}" class="fp-status" fill="{colour}">'
                f"{escape(row.status.upper())} {row.mean:+.3f}</text>"
                f"<title>{escape(metric)} · {escape(row.slice)}: {row.mean:+.3f} {interval}, {escape(row.status)}</title>"
            )
        y = bottom + 14
    return _forest_svg(parts, width=width, height=y + 6)


def _forest_svg(parts: list[str], *, width: int, height: float) -> str:
    title = "Forest plot: interval on candidate minus baseline per metric and slice; solid line at zero, dashed at the margin"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height:.0f}" '
        f'width="100%" class="forest-plot"><title>{escape(title)}</title>{"".join(parts)}</svg>'
    )


def _forest_compact(rows: Sequence[ForestRow], *, width: int) -> str:
    """The forest plot for a phone: the scale across the whole width, each row's words above its bar."""
    pad, row_height = 10, 38
    plot_w = width - 2 * pad
    parts: list[str] = []
    y = 8
    for metric, items, limit in _by_metric(rows):

        def x(value: float, limit: float = limit) -> float:
            return pad + (value + limit) / (2 * limit) * plot_w

        parts.append(f'<text x="{pad}" y="{y + 12}" class="fp-metric">{escape(metric)}</text>')
        for tick in (-limit, 0.0, limit):
            anchor = "start" if tick < 0 else "end" if tick > 0 else "middle"
            parts.append(
                f'<text x="{x(tick):.1f}" y="{y + 28}" class="fp-tick" text-anchor="{anchor}">{tick:+.3g}</text>'
            )
        top = y + 34
        bottom = top + row_height * len(items)
        parts.append(f'<line x1="{x(0):.1f}" y1="{top}" x2="{x(0):.1f}" y2="{bottom}" class="fp-zero"/>')
        margin = items[0].margin
        margin_x = x(-margin if items[0].higher_is_better else margin)
        parts.append(f'<line x1="{margin_x:.1f}" y1="{top}" x2="{margin_x:.1f}" y2="{bottom}" class="fp-margin"/>')
        for i, row in enumerate(items):
            words_y, bar_y = top + row_height * i + 13, top + row_height * i + 27
            colour = STATUS_COLOURS.get(row.status, "#444")
            label = f"{row.slice}" + (f" (n={row.n})" if row.n else "")
            parts.append(f'<text x="{pad}" y="{words_y}" class="fp-label">{escape(label)}</text>')
            parts.append(
                f'<text x="{width - pad}" y="{words_y}" class="fp-status" fill="{colour}" text-anchor="end">'
                f"{escape(row.status.upper())} {row.mean:+.3f}</text>"
            )
            if row.low is not None and row.high is not None:
                parts.append(
                    f'<line x1="{x(max(-limit, row.low)):.1f}" y1="{bar_y}" x2="{x(min(limit, row.high)):.1f}" y2="{bar_y}" '
                    f'stroke="{colour}" stroke-width="4" stroke-linecap="round"/>'
                )
            parts.append(
                f'<circle cx="{x(max(-limit, min(limit, row.mean))):.1f}" cy="{bar_y}" r="5" fill="{colour}"/>'
            )
        y = bottom + 12
    return _forest_svg(parts, width=width, height=y + 6)


def confusion_heatmap_svg(
    confusion: dict,
    *,
    reference: str = "people",
    predicted: str = "judge",
    classes: tuple[str, str] = ("supported", "unsupported"),
    width: int = 360,
) -> str:
    """A 2x2 heat map with the count and the share of the reference row in every cell; ``classes`` are the
    pass and failure classes' words (a relevance campaign's "relevant" / "not relevant")."""
    rows = [("supported", confusion["people_supported"]), ("unsupported", confusion["people_unsupported"])]
    cols = ["supported", "unsupported"]
    shown = dict(zip(cols, classes, strict=True))
    top, left, cell = 46, 118, (width - 128) // 2
    maximum = max(1, max(r[c] for _, r in rows for c in ("judge_supported", "judge_unsupported")))
    parts = [
        f'<text x="{left + cell}" y="14" text-anchor="middle" class="hm-axis">{escape(predicted)} says</text>',
        f'<text x="10" y="{top + cell}" class="hm-axis" transform="rotate(-90 10 {top + cell})" text-anchor="middle">{escape(reference)} say</text>',
    ]
    for j, name in enumerate(cols):
        parts.append(
            f'<text x="{left + cell * j + cell / 2}" y="{top - 8}" text-anchor="middle" class="hm-label">{escape(shown[name])}</text>'
        )
    for i, (name, row) in enumerate(rows):
        parts.append(
            f'<text x="{left - 8}" y="{top + cell * i + cell / 2 + 4}" text-anchor="end" class="hm-label">{escape(shown[name])}</text>'
        )
        total = row["judge_supported"] + row["judge_unsupported"]
        for j, col in enumerate(cols):
            count = row[f"judge_{col}"]
            intensity = count / maximum
            agree = name == col
            base = (23, 112, 58) if agree else (179, 38, 30)
            colour = f"rgba({base[0]},{base[1]},{base[2]},{0.12 + 0.75 * intensity:.2f})"
            text_fill = "#fff" if intensity > 0.55 else "#1d2330"
            share = f"{count / total:.0%} of row" if total else "—"
            x, y = left + cell * j, top + cell * i
            word = "agree" if agree else ("missed" if name == "unsupported" else "false fail")
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell - 4}" height="{cell - 4}" rx="6" fill="{colour}"/>'
                f'<text x="{x + cell / 2 - 2}" y="{y + cell / 2 - 6}" text-anchor="middle" class="hm-count" fill="{text_fill}">{count}</text>'
                f'<text x="{x + cell / 2 - 2}" y="{y + cell / 2 + 12}" text-anchor="middle" class="hm-share" fill="{text_fill}">{share} · {word}</text>'
            )
    height = top + 2 * cell + 6
    title = "Confusion table: people's final labels in rows, the judge's verdicts in columns"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" class="heatmap"><title>{escape(title)}</title>{"".join(parts)}</svg>'
    )


def slice_intervals_svg(
    slices: list[dict], *, width: int = 620, compact: bool = False, failure: str = "unsupported items"
) -> str:
    """Dot-and-whisker rows per slice: kappa (left panel) and miss rate (right panel), with intervals.

    ``compact`` lays it out for a phone (330 units): the miss-rate panel below the kappa panel. ``failure`` names
    the failure class in the campaign's words ("unsupported claims", "answers scored 1–2").
    """
    row_h, top, label_w = 26, 30, (112 if compact else 150)
    if compact:
        width = min(width, 330)
        panel_w = width - label_w - 40
        below = top + row_h * len(slices) + 44  # the miss-rate panel's rows start here
    else:
        panel_w = (width - label_w - 30) // 2
        below = 0
    miss_left = label_w if compact else label_w + panel_w + 20
    parts = [
        f'<text x="{label_w + panel_w / 2}" y="14" text-anchor="middle" class="si-head">kappa (higher is better)</text>',
        f'<text x="{miss_left + panel_w / 2}" y="{below - 16 if compact else 14}" text-anchor="middle" class="si-head">'
        "miss rate (lower is better)</text>",
    ]

    def kx(v: float) -> float:  # kappa axis from -0.2 to 1
        return label_w + (max(-0.2, min(1.0, v)) + 0.2) / 1.2 * panel_w

    def mx(v: float) -> float:  # miss rate axis from 0 to 1
        return miss_left + max(0.0, min(1.0, v)) * panel_w

    bottom = top + row_h * len(slices)
    miss_top = below if compact else top
    miss_bottom = miss_top + row_h * len(slices)
    for value, fn, first, last in (
        *((v, kx, top, bottom) for v in (0.0, 0.5, 1.0)),
        *((v, mx, miss_top, miss_bottom) for v in (0.0, 0.5, 1.0)),
    ):
        parts.append(
            f'<line x1="{fn(value):.1f}" y1="{first - 4}" x2="{fn(value):.1f}" y2="{last}" class="si-grid"/>'
            f'<text x="{fn(value):.1f}" y="{last + 14}" text-anchor="middle" class="si-tick">{value:g}</text>'
        )
    for i, s in enumerate(slices):
        cy = top + row_h * i + row_h / 2
        my = miss_top + row_h * i + row_h / 2
        name = f"{escape(str(s['slice']))} (n={s.get('n', 0)})"
        parts.append(f'<text x="{label_w - 8}" y="{cy + 4:.1f}" text-anchor="end" class="si-label">{name}</text>')
        if compact:
            parts.append(f'<text x="{label_w - 8}" y="{my + 4:.1f}" text-anchor="end" class="si-label">{name}</text>')
        if s.get("kappa") is not None:
            if s.get("kappa_low") is not None:
                parts.append(
                    f'<line x1="{kx(s["kappa_low"]):.1f}" y1="{cy:.1f}" x2="{kx(s["kappa_high"]):.1f}" y2="{cy:.1f}" class="si-bar"/>'
                )
            parts.append(
                f'<circle cx="{kx(s["kappa"]):.1f}" cy="{cy:.1f}" r="4.5" class="si-dot"/><title>kappa {s["kappa"]:.2f}</title>'
            )
        if s.get("miss_rate") is not None:
            if s.get("miss_low") is not None:
                parts.append(
                    f'<line x1="{mx(s["miss_low"]):.1f}" y1="{my:.1f}" x2="{mx(s["miss_high"]):.1f}" y2="{my:.1f}" class="si-bar miss"/>'
                )
            parts.append(
                f'<circle cx="{mx(s["miss_rate"]):.1f}" cy="{my:.1f}" r="4.5" class="si-dot miss"/>'
                f'<text x="{mx(s["miss_rate"]) + 8:.1f}" y="{my - 6:.1f}" class="si-tick">{s["missed"]}/{s["failures"]}</text>'
            )
    title = f"Per slice: kappa and the miss rate on {failure}, each with its 95 % interval"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {miss_bottom + 22}" '
        f'width="100%" class="slice-plot"><title>{escape(title)}</title>{"".join(parts)}</svg>'
    )
