"""Plots as inline SVG, generated on the server: no script, no external assets. Every text
node is escaped; styling comes from classes in the shared stylesheet."""

from __future__ import annotations

import math
from html import escape

__all__ = ["bars", "histogram", "histogram_bins", "histogram_svg"]

W, H, PAD_L, PAD_B, PAD_T = 480, 180, 40, 28, 10


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def histogram_bins(values: list[float], bins: int = 20) -> tuple[float, float, list[int]]:
    """``(lo, hi, counts)`` of ``values`` in ``bins`` equal bins over
    [min(0, lowest), max(1, highest)]; no counts when nothing is finite."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0, []
    lo, hi = min(0.0, min(finite)), max(1.0, max(finite))
    width = (hi - lo) / bins or 1.0
    counts = [0] * bins
    last = bins - 1
    for v in finite:
        b = int((v - lo) / width)
        counts[b if b < last else last] += 1
    return lo, hi, counts


def histogram(values: list[float], bins: int = 20, title: str = "reward distribution") -> str:
    """A histogram of ``values`` over [min(0, lo), max(1, hi)]."""
    return histogram_svg(*histogram_bins(values, bins), title=title)


def histogram_svg(
    lo: float, hi: float, counts: list[int], title: str = "reward distribution"
) -> str:
    """The SVG of counts from :func:`histogram_bins`."""
    if not counts or not any(counts):
        return f'<p class="muted">no {escape(title)}: nothing scored yet</p>'
    bins = len(counts)
    width = (hi - lo) / bins or 1.0
    top = max(counts)
    plot_w, plot_h = W - PAD_L - 8, H - PAD_B - PAD_T
    bw = plot_w / bins
    parts = [
        f'<svg class="plot" viewBox="0 0 {W} {H}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - 8}" y2="{H - PAD_B}"/>',
        f'<text class="tick" x="{PAD_L - 4}" y="{PAD_T + 8}" text-anchor="end">{top}</text>',
        f'<text class="tick" x="{PAD_L - 4}" y="{H - PAD_B}" text-anchor="end">0</text>',
    ]
    for i, c in enumerate(counts):
        h = plot_h * c / top if top else 0
        x = PAD_L + i * bw
        a, b = lo + i * width, lo + (i + 1) * width
        parts.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{H - PAD_B - h:.1f}" '
            f'width="{max(bw - 2, 1):.1f}" height="{h:.1f}">'
            f"<title>[{_fmt(a)}, {_fmt(b)}): {c}</title></rect>"
        )
    for frac in (0.0, 0.5, 1.0):
        x = PAD_L + plot_w * frac
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{H - PAD_B + 16}" text-anchor="middle">'
            f"{_fmt(lo + (hi - lo) * frac)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def bars(values: dict[str, float], title: str = "mean per metric") -> str:
    """Horizontal bars, one per named value (negative values drawn left of zero)."""
    items = [(k, v) for k, v in values.items() if math.isfinite(v)]
    if not items:
        return f'<p class="muted">no {escape(title)}</p>'
    row_h, label_w = 22, 170
    height = row_h * len(items) + 10
    lo, hi = min(0.0, *(v for _, v in items)), max(1.0, *(v for _, v in items))
    span = (hi - lo) or 1.0
    plot_w = W - label_w - 60
    zero = label_w + plot_w * (0 - lo) / span
    parts = [
        f'<svg class="plot" viewBox="0 0 {W} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for i, (name, v) in enumerate(items):
        y = 5 + i * row_h
        x0 = zero if v >= 0 else zero + plot_w * v / span
        w = abs(plot_w * v / span)
        label = name if len(name) <= 26 else name[:25] + "…"
        parts.append(
            f'<text class="label" x="{label_w - 6}" y="{y + 14}" text-anchor="end">'
            f"{escape(label)}</text>"
            f'<rect class="bar" x="{x0:.1f}" y="{y + 3}" width="{max(w, 0.5):.1f}" '
            f'height="{row_h - 6}"><title>{escape(name)}: {_fmt(v)}</title></rect>'
            f'<text class="tick" x="{label_w + plot_w + 6}" y="{y + 14}">{_fmt(v)}</text>'
        )
    parts.append(f'<line class="axis" x1="{zero:.1f}" y1="0" x2="{zero:.1f}" y2="{height}"/></svg>')
    return "".join(parts)
