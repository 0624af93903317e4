r"""Is any model ahead? One line per dataset, from a paired test on the test rows.

Every model of a ``compare`` run is scored on the same test rows, so two
models are compared on the rows where they disagree: the exact McNemar test
(McNemar 1947, Psychometrika 12:153; the exact, binomial form as recommended
by Fagerland, Lydersen & Laake 2013, BMC Med. Res. Methodol. 13:91). With
:math:`b` rows the best model gets right and the other wrong, and :math:`c`
the other way round, under "equally accurate" :math:`b \sim
\mathrm{Binomial}(b + c, 1/2)`, and the two-sided p-value is

.. math::

    p = \min\left(1,\; 2 \sum_{k \le \min(b, c)} \binom{b + c}{k} 2^{-(b + c)}\right).

This test is sharper than comparing the per-model Wilson intervals: those
treat the two accuracies as independent, while two models usually get the
same easy rows right, and non-overlapping intervals are a much stricter
condition than a 5% test (it needs a gap of about 1.4 times what a test
needs). The best model is "ahead of every other model" when every one of its
tests rejects at 5%; requiring *all* of them to reject is an
intersection-union test, whose level stays 5% with no multiplicity correction
(Berger 1982, Technometrics 24:295).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.stats import binomtest

#: Level of each paired test.
ALPHA = 0.05


def mcnemar_p_value(correct_a: np.ndarray, correct_b: np.ndarray) -> float:
    """Two-sided exact McNemar p-value of two models scored on the same rows.

    Parameters
    ----------
    correct_a, correct_b : ndarray of bool, shape (n_test,)
        Whether each model predicted each test row correctly.

    Returns
    -------
    float
        1.0 when the models never disagree.
    """
    correct_a = np.asarray(correct_a, dtype=bool)
    correct_b = np.asarray(correct_b, dtype=bool)
    if correct_a.shape != correct_b.shape:
        raise ValueError(
            f"the models were scored on different rows: {correct_a.shape} vs "
            f"{correct_b.shape}"
        )
    only_a = int(np.sum(correct_a & ~correct_b))
    only_b = int(np.sum(~correct_a & correct_b))
    n = only_a + only_b
    if n == 0:
        return 1.0
    return float(binomtest(only_a, n).pvalue)  # two-sided, p = 1/2


def add_verdict(
    rows: Sequence[dict[str, Any]], name: Callable[[str], str] = str
) -> str:
    """Fill ``p_value_vs_best`` of one dataset's rows; return the verdict line.

    Parameters
    ----------
    rows : sequence of dict
        Result rows of one dataset; those with ``status="ok"`` carry
        ``test_correct``, the boolean vector of correct test predictions.
    name : callable, default=str
        Model name as printed (e.g. shortened).

    Returns
    -------
    str
        ``"best here: ..."`` when the most accurate model is ahead of every
        other at the 5% level, ``"no clear winner: ..."`` otherwise (naming the
        models not significantly behind), or ``""`` when fewer than two models
        were scored.
    """
    scored = [row for row in rows if row.get("test_correct") is not None]
    for row in rows:
        row["p_value_vs_best"] = None
    if len(scored) < 2:
        return ""
    best = max(scored, key=lambda row: row["accuracy"])  # the first of a tie
    close = []
    for row in scored:
        if row is best:
            continue
        p = mcnemar_p_value(best["test_correct"], row["test_correct"])
        row["p_value_vs_best"] = p
        if not (p < ALPHA and row["accuracy"] < best["accuracy"]):
            close.append(row)
    test = f"exact McNemar test on the same {len(best['test_correct'])} test rows"
    accuracy = f"{100 * best['accuracy']:.2f}%"
    if not close:
        return (
            f"best here: {name(best['model'])} ({accuracy}), ahead of every other "
            f"model ({test}, p < {ALPHA:g} against each)"
        )
    tied = [best] + [row for row in close if row["accuracy"] == best["accuracy"]]
    behind = [row for row in close if row["accuracy"] < best["accuracy"]]
    if len(tied) > 1:
        leader = (
            f"{len(tied)} models tie at the best accuracy ({accuracy}: "
            f"{', '.join(name(row['model']) for row in tied)})"
        )
    else:
        leader = f"{name(best['model'])} has the best accuracy ({accuracy})"
    if not behind:
        return f"no clear winner: {leader}"
    return (
        f"no clear winner: {leader}, and {len(behind)} other(s) are not "
        f"significantly behind ({test}, p >= {ALPHA:g}): "
        f"{', '.join(name(row['model']) for row in behind)}"
    )
