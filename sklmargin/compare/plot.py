"""The plot of ``compare``: test accuracy against fit or tuning time, per dataset."""

from __future__ import annotations

import importlib.util
import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from .report import check_output_path, short_model_name
from .settings import CompareError


def check_plotting() -> None:
    """Raise a :class:`CompareError` telling how to install matplotlib if missing."""
    if importlib.util.find_spec("matplotlib") is None:
        raise CompareError(
            "--plot needs matplotlib: pip install matplotlib (or, in a "
            'sklmargin checkout, pip install ".[plot]").'
        )


def check_plot_path(path: str | os.PathLike) -> None:
    """Fail before the run if the plot could not be saved to ``path``.

    Raises
    ------
    CompareError
        If matplotlib is missing, the extension is not an image format
        matplotlib can write, or the folder does not exist.
    """
    check_plotting()
    from matplotlib.figure import Figure

    formats = sorted(Figure().canvas.get_supported_filetypes())
    check_output_path(path, [f".{fmt}" for fmt in formats], option="--plot")


def plot_results(
    path: str | os.PathLike, rows: Sequence[Mapping[str, Any]], tuned: bool = False
) -> None:
    """Save test accuracy (95% interval as error bars) against time, per dataset.

    The time axis (log scale) is the tuning time when ``tuned`` -- what a grid
    search costs -- else the fit time. Every point is labelled with its model,
    placed where it overlaps no other label or point (with a leader line when
    it had to move away); the legend sits below the panels in as many columns
    as fit, and the title is wrapped to the figure's width.

    Parameters
    ----------
    path : path-like
        Image file; its extension picks the format (png, pdf, svg, ...).
    rows : sequence of dict
        From :func:`run_comparison`; rows that did not run are left out.
    tuned : bool, default=False
        Plot the tuning time instead of the fit time.
    """
    check_plotting()
    # Figure without pyplot: no GUI backend, no global state, safe in scripts.
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, NullFormatter

    time_key = "tune_time" if tuned else "fit_time"
    ran = [row for row in rows if row["status"] == "ok" and row.get(time_key)]
    datasets = list(dict.fromkeys(row["dataset"] for row in rows))
    models = list(dict.fromkeys(row["model"] for row in ran))
    # One colour and marker per model across all panels.
    style = {
        model: {
            "color": f"C{i % 10}",
            "marker": "o" if model.startswith(("margin:", "kernel:")) else "s",
        }
        for i, model in enumerate(models)
    }
    n_cols = min(3, max(1, len(datasets)))
    n_rows = math.ceil(len(datasets) / n_cols)
    # One panel alone gets more room: its labels crowd more than in a grid.
    width = max(_MIN_WIDTH, _PANEL_WIDTH * n_cols)
    legend_cols = _legend_columns(models, width)
    legend_height = 0.25 * math.ceil(len(models) / legend_cols) + 0.3
    fig = Figure(
        figsize=(width, _PANEL_HEIGHT * n_rows + legend_height + 0.6),
        layout="constrained",
        dpi=_DPI,
    )
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    labels = []
    for ax, dataset in zip(axes[: len(datasets)], datasets, strict=True):
        points = []
        for row in (r for r in ran if r["dataset"] == dataset):
            accuracy = 100 * row["accuracy"]
            low = 100 * (row.get("accuracy_ci_low") or row["accuracy"])
            high = 100 * (row.get("accuracy_ci_high") or row["accuracy"])
            ax.errorbar(
                row[time_key],
                accuracy,
                # clipped: rounding can put the interval a hair inside the point
                yerr=[[max(0.0, accuracy - low)], [max(0.0, high - accuracy)]],
                linestyle="none",
                markersize=6,
                capsize=2,
                elinewidth=0.8,
                alpha=0.85,
                **style[row["model"]],
            )
            points.append(
                (row[time_key], accuracy, short_model_name(row["model"]), row["model"])
            )
        labels.append((ax, points))
        ax.set_xscale("log")
        ax.margins(x=0.2, y=0.08)  # room for labels beside the outermost points
        ax.xaxis.set_major_locator(_time_locator(ax, width / n_cols))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(dataset)
        ax.set_xlabel("tuning time [s]" if tuned else "fit time [s]")
        ax.set_ylabel("test accuracy [%] (95% interval)")
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes[len(datasets) :]:
        ax.set_visible(False)
    handles = [
        axes[0].errorbar([], [], linestyle="none", label=model, **style[model])
        for model in models
    ]
    if handles:
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncols=legend_cols,
            fontsize=_LEGEND_FONT,
            frameon=False,
        )
    what = "grid-search time" if tuned else "fit time"
    title = [
        f"test accuracy vs {what}",
        "squares: scikit-learn, circles: sklmargin; bars: Wilson 95% interval",
    ]
    characters = int(width * 72 / (_TITLE_FONT * 0.6))
    fig.suptitle(
        "\n".join(part for line in title for part in textwrap.wrap(line, characters)),
        fontsize=_TITLE_FONT,
    )
    _label_points(fig, labels, {model: style[model]["color"] for model in models})
    # The layout above keeps everything inside the figure; "tight" is a safety
    # net for fonts wider than estimated.
    fig.savefig(path, dpi=_DPI, bbox_inches="tight", pad_inches=0.1)


#: Figure geometry in inches, fonts in points, resolution of the saved image.
_PANEL_WIDTH, _PANEL_HEIGHT, _MIN_WIDTH = 5.2, 4.4, 8.0
_TITLE_FONT, _LABEL_FONT, _LEGEND_FONT = 11.0, 7.0, 8.0
_DPI = 120


#: Inches one time label takes on the axis, gap included ("0.005" at 10 pt).
_TICK_LABEL_INCHES = 0.6


def _time_locator(ax, panel_width: float):
    """Log-axis ticks whose labels do not overlap on a panel this wide.

    Labels at 1, 2 and 5 x 10^k read best when the times span a decade or
    two; over more decades those would collide (measured: 12 labels across a
    panel whose times span 4 decades), so the locator falls back to powers of
    ten, and beyond that to every n-th power.
    """
    from matplotlib.ticker import LogLocator

    low, high = ax.get_xlim()  # after the data and the margins
    decades = math.log10(high / low) if low > 0 and high > low else 1.0
    capacity = max(3, int(panel_width / _TICK_LABEL_INCHES))
    if 3 * decades + 1 <= capacity:
        return LogLocator(base=10, subs=(1.0, 2.0, 5.0))
    if decades + 1 <= capacity:
        return LogLocator(base=10, subs=(1.0,))
    return LogLocator(base=10, subs=(1.0,), numticks=capacity)


def _legend_columns(models: Sequence[str], width: float) -> int:
    """As many legend columns as fit ``width`` inches (names in the legend font)."""
    if not models:
        return 1
    # marker and spacing ~4 em, a character ~0.6 em
    entry = _LEGEND_FONT * (0.6 * max(map(len, models)) + 4.0)
    return max(1, min(len(models), int(0.95 * width * 72 // entry)))


def _label_points(fig, labels, colors) -> None:
    """Label every point where its label overlaps no other label or point.

    Candidates, in order: right of the point, then left, level with it or
    just above or below; then stacked further up and down, with a leader line
    to the point. The first candidate inside the axes that overlaps nothing
    wins; if none does, the one with the least overlap. Sizes come from the
    text as drawn, in points, after the layout has fixed the axes.
    """
    fig.draw_without_rendering()  # runs the layout: the axes have their final place
    scale = 72.0 / fig.dpi  # pixels to points
    for ax, points in labels:
        frame = ax.get_window_extent()
        frame = (frame.x0 * scale, frame.y0 * scale, frame.x1 * scale, frame.y1 * scale)
        placed: list[tuple[float, float, float, float]] = []
        centres = [
            tuple(ax.transData.transform((x, y)) * scale) for x, y, _, _ in points
        ]
        markers = [(cx - 4, cy - 4, cx + 4, cy + 4) for cx, cy in centres]
        for (x, y, text, model), (cx, cy) in zip(points, centres, strict=True):
            probe = ax.annotate(text, (x, y), fontsize=_LABEL_FONT)
            extent = probe.get_window_extent()
            probe.remove()
            w, h = extent.width * scale, extent.height * scale
            best, best_cost = None, math.inf
            for dx, dy in _candidates(w, h):
                box = (cx + dx, cy + dy, cx + dx + w, cy + dy + h)
                outside = not (
                    frame[0] <= box[0] and box[2] <= frame[2]
                    and frame[1] <= box[1] and box[3] <= frame[3]
                )  # fmt: skip
                cost = sum(_overlap(box, other) for other in placed + markers)
                cost += 1e6 if outside else 0.0
                if cost < best_cost:
                    best, best_cost = (dx, dy, box), cost
                if cost == 0:
                    break
            dx, dy, box = best
            pad = 1.5  # keeps neighbouring labels apart, not just disjoint
            placed.append((box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad))
            far = abs(dy + h / 2) > 1.5 * h or dx < -w - 8
            ax.annotate(
                text,
                (x, y),
                xytext=(dx, dy),
                textcoords="offset points",
                ha="left",
                va="bottom",
                fontsize=_LABEL_FONT,
                color=colors[model],
                annotation_clip=False,
                arrowprops=dict(arrowstyle="-", lw=0.5, color=colors[model], shrinkB=4)
                if far
                else None,
            ).set_in_layout(False)  # placed for this layout: must not change it


def _candidates(w: float, h: float):
    """Offsets (points) of a label's lower-left corner, nearest places first."""
    gap = 5.0
    for dx in (gap, -gap - w):
        for dy in (-h / 2, 2.0, -h - 2.0):
            yield dx, dy
    for step in range(1, 13):
        for dx in (gap, -gap - w):
            yield dx, 2.0 + step * 1.15 * h
            yield dx, -h - 2.0 - step * 1.15 * h


def _overlap(a, b) -> float:
    """Area shared by two boxes ``(x0, y0, x1, y1)``."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return width * height if width > 0 and height > 0 else 0.0
