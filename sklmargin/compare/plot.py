"""The plot of ``compare``: test accuracy against fit or tuning time, per dataset."""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .report import check_output_path, short_model_name
from .settings import CompareError


def check_plotting() -> None:
    """Raise a :class:`CompareError` telling how to install matplotlib if missing."""
    if importlib.util.find_spec("matplotlib") is None:
        raise CompareError(
            "--plot needs matplotlib: pip install sklmargin[plot] "
            "(or pip install matplotlib)."
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
    search costs -- else the fit time. Every point is labelled with its model;
    the legend sits below the panels, clear of titles and data.

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
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

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
    fig = Figure(figsize=(5.2 * n_cols, 4.2 * n_rows + 1.2), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    for ax, dataset in zip(axes[: len(datasets)], datasets, strict=True):
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
            ax.annotate(
                short_model_name(row["model"]),
                (row[time_key], accuracy),
                xytext=(4, 3),
                textcoords="offset points",
                fontsize=7,
                color=style[row["model"]]["color"],
            )
        ax.set_xscale("log")
        # Ticks at 1, 2, 5 x 10^k in plain numbers: runs often span < 1 decade.
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(dataset)
        ax.set_xlabel("tuning time [s]" if tuned else "fit time [s]")
        ax.set_ylabel("test accuracy [%] (95% interval)")
        ax.grid(True, which="major", alpha=0.3)
        ax.margins(x=0.15)  # room for the labels of the right-most points
    for ax in axes[len(datasets) :]:
        ax.set_visible(False)
    handles = [
        axes[0].errorbar([], [], linestyle="none", label=model, **style[model])
        for model in models
    ]
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=min(4, max(1, len(models))),
        fontsize="small",
        frameon=False,
    )
    what = "grid-search time" if tuned else "fit time"
    fig.suptitle(
        f"test accuracy vs {what} (squares: scikit-learn, circles: sklmargin; "
        "bars: Wilson 95% interval)"
    )
    fig.savefig(path, dpi=120)
