"""The CV estimators' warning when a choice sits on the edge of its grid.

The rule is :func:`sklmargin._utils.grid_edges.grid_edges`, the one
``sklmargin compare --tune`` uses for its grid-edge notes, kept where the
edge's fold scores beat its neighbour's by more than the folds' noise
(:func:`sklmargin._utils.grid_edges.beats_neighbour`).
"""

from __future__ import annotations

import re
import warnings

import numpy as np

from .._utils.grid_edges import GridEdgeWarning, beats_neighbour, grid_edges
from ._cv_grid import _accepts
from ._cv_results import searched

#: The constructor parameter that holds each grid axis.
_GRID_PARAMS = {"s": "ss", "C": "Cs", "m": "ms", "gamma": "gammas"}


def fold_scores_near(cv_results, best, values=None):
    """Return ``fold_scores(key, value)``: the folds' scores next to ``best``.

    ``fold_scores(key, value)`` is the array of ``split<i>_test_score`` of the
    grid point that differs from ``best`` only in ``key`` (the point in
    ``cv_results["params"]``), or None when no such point was searched.
    ``values[key]`` maps a value as the edge rule sees it to the value in
    ``params`` (the kernel search's multiples of "scale": ``2.0`` to
    ``"2*scale"``).
    """
    splits = sorted(
        (k for k in cv_results if re.fullmatch(r"split\d+_test_score", k)),
        key=lambda k: int(k[5:-11]),
    )
    scores = np.array([np.asarray(cv_results[k], dtype=float) for k in splits])
    params = cv_results["params"]
    base = searched(best)

    def fold_scores(key, value):
        value = (values or {}).get(key, {}).get(value, value)
        point = {**base, key: value}
        for column, searched_point in enumerate(params):
            if searched_point == point:
                return scores[:, column]
        return None

    return fold_scores


def warn_grid_edges(
    name, chosen, grids, margin, path_name, formats=None, fold_scores=None
):
    """Warn with :class:`GridEdgeWarning` for each chosen value on a grid's edge.

    Parameters
    ----------
    name : str
        The estimator's class name, for the message.
    chosen : dict
        The chosen point, one value per axis of ``grids``.
    grids : dict of str to tuple
        Every axis searched: the path (``s`` or ``C``) and the outer grid.
    margin : Margin
        The loss's registry entry: its ``check_m`` and ``check_s`` tell a hard
        bound of the domain (``m = 0``) from an edge of the searched values.
    path_name : str
        The axis fitted as a warm-started path (called a path, not a grid).
    formats : dict of str to callable, default=None
        How to write an axis's values in the message (the kernel search's
        multiples of "scale": ``"2*scale"``); others as numbers.
    fold_scores : callable, default=None
        ``fold_scores(key, value)``: the folds' scores of the chosen point with
        ``key`` set to ``value`` (:func:`fold_scores_near`). An edge is warned
        about only when its scores beat its neighbour's by more than the
        folds' noise; None warns about every edge.
    """
    formats = formats or {}
    valid = {"m": _accepts(margin.check_m), "s": _accepts(margin.check_s)}
    for edge in grid_edges(chosen, grids, valid):
        if fold_scores is not None:
            at_edge = fold_scores(edge.key, edge.value)
            beside = fold_scores(edge.key, edge.neighbour)
            known = at_edge is not None and beside is not None
            if known and not beats_neighbour(at_edge, beside):
                continue  # within the folds' noise: nothing says to look beyond
        param = _GRID_PARAMS.get(edge.key, f"{edge.key}s")
        kind = "path" if edge.key == path_name else "grid"
        side = "largest" if edge.upward else "smallest"
        direction = "upward" if edge.upward else "downward"
        write = formats.get(edge.key, lambda v: f"{v:.4g}")
        listed = formats.get(edge.key, lambda v: float(f"{v:.4g}"))
        widened = (
            f"{param}={[listed(v) for v in edge.widened]}"
            if edge.widened
            else f"{param}=[...]"
        )
        warnings.warn(
            f"{name} chose {edge.key}={write(edge.value)}, the {side} value of "
            f"its {edge.key} {kind} [{write(edge.low)}, {write(edge.high)}]: the "
            f"best "
            f"{edge.key} may lie beyond it. Widen the {kind} {direction}, e.g. "
            f"{widened}.",
            GridEdgeWarning,
            stacklevel=5,
        )
