"""How long a ``compare`` run takes: an estimate before it starts, an ETA as it goes.

Before a tuned run (or one on large data, :func:`wants_estimate`),
:func:`probe_estimates` fits every model once, with its
default parameters, on at most :data:`PROBE_ROWS` training rows of every
dataset, and scales that time to the run: by the number of fits (grid points x
folds on ``(cv - 1) / cv`` of the rows, then the final fits) and by the number
of rows (linearly; as n^1.65 for SVC). Grid points far from the defaults
(large C, small tolerances) cost more than the default fit, so this is rough;
:class:`RunClock` corrects it as models finish, by the ratio of the measured to
the estimated time so far.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from threadpoolctl import threadpool_limits

from ..estimators._kernel import resolve_n_components
from .clock import format_duration
from .datasets import Dataset
from .models import ModelSpec, build_pipeline, grid_size
from .protocol import skip_reason
from .settings import CompareSettings, format_number

#: Rows of the probe fit of each model (fewer if the training split is smaller).
PROBE_ROWS = 500

#: Seconds per fit on top of the fit itself: cloning, predicting and scoring
#: the fold (measured: 3-6 ms per CV fit of GridSearchCV on small data).
FIT_OVERHEAD = 0.005


def wants_estimate(datasets: Sequence[Dataset], settings: CompareSettings) -> bool:
    """Whether a run is long enough for the probe fits to pay for themselves.

    A tuned run does 28 fits per model, and an untuned one on more than
    ``4 * PROBE_ROWS`` training rows costs several times the probe; a small
    untuned run ends in seconds, sooner than a probe would help.
    """
    return settings.tune or max(d.n_train for d in datasets) > 4 * PROBE_ROWS


def _fits(spec: ModelSpec, settings: CompareSettings) -> list[tuple[int, float]]:
    """Return ``(number of fits, fraction of the rows)`` of one model's turn."""
    final = (settings.repeats, 1.0)
    if not settings.tune:
        return [final]
    return [(grid_size(spec.grid) * settings.cv, 1 - 1 / settings.cv), final]


def probe_estimates(
    datasets: Sequence[Dataset],
    specs: Sequence[ModelSpec],
    settings: CompareSettings,
    rows: int = PROBE_ROWS,
) -> tuple[list[float | None], float]:
    """Estimate the seconds of every (dataset, model) from one small fit each.

    Parameters
    ----------
    datasets, specs : sequence
        The run, in its order (dataset by dataset, models in order).
    settings : CompareSettings
        Tuning, folds, repeats, thread limit.
    rows : int, default=PROBE_ROWS
        Training rows of each probe fit (a seeded random subset).

    Returns
    -------
    estimates : list of float or None
        Seconds per (dataset, model) in run order; 0 for a model the run skips,
        None where the probe fit failed.
    probe_time : float
        Seconds the probe took.
    """
    # protocol -> progress -> estimate: imported here, not at the top
    start = time.perf_counter()
    estimates: list[float | None] = []
    rng = np.random.default_rng(settings.random_state)
    with threadpool_limits(limits=settings.threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the run reports its own warnings
        for dataset in datasets:
            n_rows = min(rows, dataset.n_train)
            subset = rng.permutation(dataset.n_train)[:n_rows]
            X, y = dataset.X_train[subset], dataset.y_train[subset]
            # Every model at the width the run will use on the whole training
            # split (that of the timed final fit; for RBFSampler/Nystroem that
            # of every fit): "auto" resolved on the probe's few rows would be
            # the law's narrowest width, and the estimate low on large splits.
            # A Nyström map still keeps at most the probe's rows as centres.
            width = resolve_n_components(settings.n_components, dataset.n_train)
            probe_settings = replace(settings, n_components=width)
            for spec in specs:
                if skip_reason(spec, dataset, settings):
                    estimates.append(0.0)
                    continue
                try:
                    fit_start = time.perf_counter()
                    build_pipeline(spec, probe_settings).fit(X, y)
                    seconds = time.perf_counter() - fit_start
                except Exception:  # e.g. a class missing from the subset
                    estimates.append(None)
                    continue
                # SVC: n^1.65 measured on letter (500 -> 15,000 rows cost 275x)
                power = 1.65 if spec.superlinear else 1
                scaled = (
                    count
                    * (
                        FIT_OVERHEAD
                        + seconds * (fraction * dataset.n_train / n_rows) ** power
                    )
                    for count, fraction in _fits(spec, settings)
                )
                estimates.append(sum(scaled))
    return estimates, time.perf_counter() - start


def describe_estimate(seconds: float, probe_time: float) -> str:
    """Return the line printed before the run starts."""
    return (
        f"estimated run time: ~{format_duration(seconds)} (rough: one default fit "
        f"of each model on <= {PROBE_ROWS} training rows, {format_number(probe_time)}"
        " s, scaled to the run's fits and rows; corrected as models finish)"
    )
