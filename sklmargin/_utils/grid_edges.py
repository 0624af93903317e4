"""The grid-edge rule shared by ``sklmargin compare --tune`` and the CV estimators.

A tuned value on the edge of its grid says the optimum may lie outside it: the
scores were still rising (or flat) toward that edge. :func:`grid_edges` finds
such values and proposes the grid shifted one step past the edge;
:class:`GridEdgeWarning` is what the CV estimators warn with, and only where
:func:`beats_neighbour` says that the edge beats its neighbour by more than the
folds' noise: an edge chosen by a tie or a fraction of a row per fold says
nothing about what lies beyond it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: One-sided level of :func:`beats_neighbour`'s test: an edge whose gain over
#: its neighbour is this likely under no real difference is not warned about.
EDGE_TEST_ALPHA = 0.05


class GridEdgeWarning(UserWarning):
    """A cross-validated choice sits on the edge of its grid or path.

    Raised by :class:`~sklmargin.MarginSoftmaxClassifierCV` and
    :class:`~sklmargin.KernelMarginSoftmaxClassifierCV` when the chosen ``s``
    (or ``C``, ``m``, ``gamma``) is the smallest or largest value searched,
    unless that value is the end of the parameter's domain (``m = 0``), and
    its fold scores beat those of its neighbour on the grid by more than the
    folds' noise (a paired test across the folds, corrected for their
    overlapping training sets): only then is a better value likely to lie
    beyond it. The message names the parameter to widen (``ss``, ``Cs``,
    ``ms``, ``gammas``) and a shifted grid to try. Silence it with
    ``warnings.filterwarnings("ignore", category=GridEdgeWarning)``.
    """


@dataclass(frozen=True)
class Edge:
    """One best value on the edge of its grid.

    ``widened`` is the grid moved one step past the edge (same length), or None
    when no step past it is safe (it would cross zero downwards);
    ``neighbour`` is the grid's value next to the edge.
    """

    key: str
    value: Any
    low: Any
    high: Any
    upward: bool
    widened: list | None
    neighbour: Any = None


def grid_edges(
    best: Mapping[str, Any],
    grid: Mapping[str, Sequence[Any]],
    valid: Mapping[str, Callable[[Any], bool]] | None = None,
) -> list[Edge]:
    """Return the best values that sit on the edge of their grid.

    A value is flagged when its grid has two or more values and it is the
    smallest or the largest of them, except at a hard bound of the parameter's
    domain, where nothing lies beyond: zero at the low end of a non-negative
    grid (no margin), or an edge just past which ``valid[key]`` rejects every
    value (e.g. ``m = 1`` of AM-Softmax, whose margin is at most 1).

    Parameters
    ----------
    best : mapping of str to value
        The chosen value of each grid axis.
    grid : mapping of str to sequence
        The values searched along each axis (any order).
    valid : mapping of str to callable, default=None
        ``valid[key](value)`` says whether ``value`` is in the domain of
        ``key``; axes without one are taken as unbounded past their edges.

    Returns
    -------
    list of Edge
        In the order of ``grid``.

    Examples
    --------
    >>> [(e.key, e.upward, e.widened) for e in grid_edges(
    ...     {"s": 40.0, "m": 0.0}, {"s": [10.0, 20.0, 40.0], "m": [0.0, 0.1]})]
    [('s', True, [20.0, 40.0, 80.0])]
    """
    edges = []
    for key, values in grid.items():
        ordered = sorted(values)
        value = best[key]
        if len(ordered) < 2 or value not in (ordered[0], ordered[-1]):
            continue
        if value == ordered[0] == 0:
            continue  # zero (no margin) is the end of the domain, not of the grid
        upward = value == ordered[-1]
        widened = shifted_grid(ordered, upward=upward)
        check = (valid or {}).get(key)
        if check is not None and not check(
            math.nextafter(float(value), math.inf if upward else -math.inf)
        ):
            continue  # a hard bound: nothing lies beyond it
        neighbour = ordered[-2] if upward else ordered[1]
        edges.append(
            Edge(key, value, ordered[0], ordered[-1], upward, widened, neighbour)
        )
    return edges


def shifted_grid(ordered: Sequence[Any], upward: bool) -> list | None:
    """Return the grid moved one step past its edge, or None if no step is safe.

    A grid of positive values moves by its ratio (0.25, 1, 4 -> 1, 4, 16);
    others by their difference, unless that crosses zero downwards (m=0 is
    usually the end of a margin's domain). Integer grids stay integers.

    Examples
    --------
    >>> shifted_grid([0.25, 1.0, 4.0], upward=True)
    [1.0, 4.0, 16.0]
    >>> shifted_grid([0.0, 0.1], upward=False) is None
    True
    """
    if upward:
        step_from, step_to = ordered[-2], ordered[-1]
    else:
        step_from, step_to = ordered[1], ordered[0]
    if all(v > 0 for v in ordered):
        new = step_to * step_to / step_from
    else:
        new = step_to + (step_to - step_from)
        if not upward and new < 0 <= ordered[0]:
            return None
    if all(isinstance(v, int) and not isinstance(v, bool) for v in ordered):
        new = int(round(new))
        if new in ordered:
            return None
    return [*ordered[1:], new] if upward else [new, *ordered[:-1]]


def beats_neighbour(edge_scores, neighbour_scores, alpha=EDGE_TEST_ALPHA):
    r"""Whether an edge's fold scores beat its neighbour's by more than fold noise.

    A one-sided paired :math:`t`-test across the folds, with Nadeau and
    Bengio's correction for cross-validation [1]_: the folds' training sets
    overlap, so their score differences are correlated and the plain test's
    variance of the mean, :math:`\sigma^2 / k`, is too small. With
    :math:`d_f` the edge's score minus the neighbour's on fold :math:`f` of
    the :math:`k` folds that scored both,

    .. math::

        t = \frac{\bar d}{\sqrt{(1/k + 1/(k - 1))\, s_d^2}}

    (:math:`1/(k-1)`: the test-to-training size ratio of :math:`k`-fold CV),
    compared with Student's :math:`t` quantile at ``1 - alpha`` with
    :math:`k - 1` degrees of freedom. Differences that are all equal count
    as significant when positive. With fewer than two folds there is no noise
    to measure: the edge then beats its neighbour when it scores higher.

    Parameters
    ----------
    edge_scores, neighbour_scores : array-like of shape (n_folds,)
        The two points' scores on the same folds (higher is better); NaN for
        a fold without a score (dropped from both).
    alpha : float, default=EDGE_TEST_ALPHA
        The test's one-sided level.

    Returns
    -------
    bool

    References
    ----------
    .. [1] C. Nadeau and Y. Bengio, "Inference for the Generalization Error",
       Machine Learning 52(3), 2003.

    Examples
    --------
    >>> beats_neighbour([0.80, 0.82, 0.81], [0.75, 0.76, 0.76])
    True
    >>> beats_neighbour([0.801, 0.82, 0.81], [0.80, 0.82, 0.812])
    False
    """
    from scipy.stats import t as student_t

    d = np.asarray(edge_scores, dtype=float) - np.asarray(neighbour_scores, float)
    d = d[~np.isnan(d)]
    k = d.size
    if k < 2:
        return bool(k == 1 and d[0] > 0)
    mean, var = float(d.mean()), float(d.var(ddof=1))
    if mean <= 0:
        return False
    if var <= 0:
        return True
    t = mean / math.sqrt((1.0 / k + 1.0 / (k - 1)) * var)
    return bool(t > student_t.ppf(1.0 - alpha, k - 1))
