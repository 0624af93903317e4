"""The CV estimators' warning when a choice sits on the edge of its grid.

The rule is :func:`sklmargin._utils.grid_edges.grid_edges`, the one
``sklmargin compare --tune`` uses for its grid-edge notes.
"""

from __future__ import annotations

import warnings

from .._utils.grid_edges import GridEdgeWarning, grid_edges

#: The constructor parameter that holds each grid axis.
_GRID_PARAMS = {"s": "ss", "C": "Cs", "m": "ms", "gamma": "gammas"}


def _accepts(check):
    def valid(value):
        try:
            check(value)
        except (TypeError, ValueError):
            return False
        return True

    return valid


def warn_grid_edges(name, chosen, grids, margin, path_name, formats=None):
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
    """
    formats = formats or {}
    valid = {"m": _accepts(margin.check_m), "s": _accepts(margin.check_s)}
    for edge in grid_edges(chosen, grids, valid):
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
