"""The linear search's probe without a margin at its chosen point: its rule.

A margin helps where classes separate with room to spare and costs accuracy on
noisy labels (a linear probe of frozen embeddings with a noisy teacher), which
the path over ``s`` at one margin cannot tell. Crossing ``m = 0`` with the
whole path doubles the search; instead, a copy of each fold's model at the
chosen point (fitted to ``tol``) is fitted on at ``m = 0`` from its
coefficients for a few iterations and scored on the fold's held-out rows, and
``m = 0`` replaces the searched margin only when its gain is clear
(:func:`clearly_positive`). The search runs the probe in its folds' jobs
(``_BaseMarginSoftmaxCV._finish_search``).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: Iterations of the probe at ``m = 0``: where a margin costs accuracy the
#: margin-free model gains within a few iterations of the margin's solution
#: (on the 20,000 x 384 embedding set of the model-selection page, within
#: two); where it helps, a short probe does not catch up, and a full fit can
#: take hundreds.
MARGIN_PROBE_ITER = 10


def clearly_positive(gains, level=0.05):
    """Whether paired gains are positive by a one-sided t-test at ``level``.

    ``gains`` are the per-fold differences of two models' held-out scores.
    The mean gain must exceed ``t_{1 - level, k - 1}`` standard errors
    (2.13 for 5 folds): a single fold's luck on a small set does not
    replace a default. Constant positive gains pass; fewer than two do not.
    """
    gains = np.asarray(gains, dtype=float)
    if gains.size < 2 or gains.mean() <= 0:
        return False
    error = gains.std(ddof=1) / np.sqrt(gains.size)
    return bool(gains.mean() > stats.t.ppf(1 - level, gains.size - 1) * error)
