"""What a CV search reports: ``cv_results_``, ``scores_`` and the choice.

The search fits ``(n_folds, n_points)`` scores, one column per grid point in
the order of ``cv_results_["params"]``; these helpers shape them for the
fitted attributes and pick the best point.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import check_scoring

from .._utils.array_api import (
    NUMPY,
    get_namespace,
    namespace_name,
    to_device,
    wide_dtype,
)


def cv_results(grid_points, scores, times, n_iter, scored):
    """``cv_results_``: one entry per grid point, as ``GridSearchCV``'s."""
    # As GridSearchCV's: a parameter a point does not have (the s of a
    # loss tuned along C) is masked.
    params, results = [searched(p) for p in grid_points], {}
    for key in grid_points[0]:
        values = np.array([p[key] for p in grid_points], dtype=object)
        missing = [key not in p for p in params]
        masked = np.ma.MaskedArray(values, mask=missing) if any(missing) else values
        results[f"param_{key}"] = masked
    results["params"] = params
    for fold, row in enumerate(scores):
        results[f"split{fold}_test_score"] = row
    mean = scores[scored].mean(axis=0)
    results["mean_test_score"] = mean
    results["std_test_score"] = scores[scored].std(axis=0)
    order = np.argsort(-mean, kind="stable")
    rank = np.empty(len(mean), dtype=np.int32)
    rank[order] = np.arange(1, len(mean) + 1)
    results["rank_test_score"] = rank
    results["mean_fit_time"] = times.mean(axis=0)
    results["mean_n_iter"] = n_iter.mean(axis=0)
    return results


def shaped(values, grid_points, heads, outer, namespace):
    """``scores_`` (or ``n_iter_``) of the ``(n_folds, n_points)`` values.

    One loss: an array of shape ``(n_folds, *outer, n_m, n_path)``; several:
    a dict keyed by loss of such arrays (each loss has its own ``m`` grid and
    path). ``outer`` is the outer axes' lengths that ``scores_`` shows (the
    kernel search leaves out a metric given as one value). In ``X``'s
    namespace and on its device after an array API fit, as scikit-learn
    keeps fitted arrays.
    """
    arrays = {}
    for head in heads:
        loss = head.inner_points[0].get("loss")
        columns = [
            j
            for j, p in enumerate(grid_points)
            if p.get("loss") == loss and p.get(head.path_name) is not None
        ]
        shape = (len(values), *outer, len(head.inner_points), len(head.path_values))
        arrays[loss] = on_device(values[:, columns].reshape(shape), namespace)
    return arrays[None] if None in arrays else arrays


def first_best(mean_scores):
    """Index of the first score within rounding of the best one.

    Ties go to the earliest grid point (smallest ``s`` or ``C``: the strongest
    regularisation, as in LogisticRegressionCV); the tolerance keeps the choice
    stable when equal scores are summed in different orders (sample weights
    against repeated rows).
    """
    mean_scores = np.asarray(mean_scores)
    best = np.max(mean_scores)
    return int(np.flatnonzero(mean_scores >= best - 1e-10 * max(1.0, abs(best)))[0])


def on_device(array, namespace):
    """Move a fitted NumPy array to ``X``'s namespace and device (if any)."""
    xp, device = namespace
    if xp is NUMPY:
        return array
    if array.dtype.kind == "f":
        return to_device(array, xp, device, dtype=wide_dtype(xp, device))
    return to_device(array.astype(np.int64), xp, device)


def searched(point):
    """Drop the other losses' path (``s`` or ``C`` of None) from a point."""
    return {
        key: value
        for key, value in point.items()
        if not (key in ("s", "C") and value is None)
    }


def search_scorer(scoring, estimator, name):
    """``score(estimator, rows, logits)`` of a fitted path point.

    ``scoring`` is the search's (None: accuracy), ``estimator`` its base
    estimator and ``name`` its class's name, for error messages.

    Accuracy (the default) comes from the held-out logits the path keeps
    anyway; a user's ``scoring`` calls the estimator on the raw held-out
    rows (which maps them again). Some of scikit-learn's metrics do not
    take array API inputs yet (in 1.9, ``"roc_auc_ovr"`` fails inside
    torch with a ``TypeError`` about ``diff``; ``GridSearchCV`` fails the
    same way): the error then says which scoring failed, on what, and what
    to do.
    """
    if scoring is None:

        def accuracy(estimator, rows, logits):
            hits = np.argmax(logits, axis=1) == rows.y_test_encoded
            return float(np.average(hits, weights=rows.sw_test))

        return accuracy
    scorer = check_scoring(estimator, scoring=scoring)

    def score(estimator, rows, logits):
        weight = {} if rows.sw_test is None else {"sample_weight": rows.sw_test}
        try:
            return scorer(estimator, rows.X_test, rows.y_test, **weight)
        except (TypeError, AttributeError, ValueError) as exc:
            if get_namespace(rows.X_test, user_input=True)[0] is NUMPY:
                raise
            raise ValueError(
                f"{name}: scoring={scoring!r} failed on the held-out rows "
                f"({namespace_name(rows.X_test)} input, array_api_dispatch "
                f"on; {type(exc).__name__}: {exc}). Not every scikit-learn "
                "metric supports array API inputs: use one that does (the "
                "default scoring=None, accuracy, or 'neg_log_loss'), or fit "
                "on NumPy arrays (X.cpu().numpy() for a torch tensor)."
            ) from exc

    return score
