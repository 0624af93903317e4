"""A fit's L-BFGS work is bounded by three shared budgets of ``max_iter``.

The final run has ``max_iter`` iterations, the runs that prepare it (the
softmax start and the lambda stages before ``lambda_min``) share another
``max_iter``, SV-Softmax's state rounds a third; a budget that runs out warns
and names the setting that spent it.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier


def _iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.mark.parametrize(
    "make",
    [
        MarginSoftmaxClassifier,
        lambda **p: KernelMarginSoftmaxClassifier(
            n_components=8,
            kernel_approximation="rff",
            gamma=100.0,
            random_state=0,
            metric=None,
            **p,
        ),  # fmt: skip
    ],
)
def test_state_rounds_share_one_budget(make):
    # A stopping rule below round-off: every round runs to its limit (10
    # rounds of max_iter each before, 5.5x max_iter on iris).
    X, y = _iris()
    clf = make(loss="softmax", t=2.0, s=64.0, tol=1e-12, max_iter=40)
    with pytest.warns(ConvergenceWarning, match=r"state rounds \(t=2\)"):
        clf.fit(X, y)
    assert clf.n_iter_ <= 2 * 40
    assert np.all(np.isfinite(clf.coef_))


def test_lambda_schedule_shares_one_budget():
    # Raw wine rows and C=1e8: the softmax start and each lambda stage ran to
    # max_iter (4 x max_iter before).
    X, y = load_wine(return_X_y=True)
    clf = MarginSoftmaxClassifier(
        loss="l-softmax", C=1e8, constant_feature=10, max_iter=30
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y)
    messages = [str(w.message) for w in caught if w.category is ConvergenceWarning]
    assert any("lambda schedule of loss='l-softmax'" in m for m in messages)
    assert clf.n_iter_ <= 2 * 30


def test_budgets_leave_ordinary_fits_alone():
    X, y = _iris()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        for loss in ("l-softmax", "a-softmax"):
            MarginSoftmaxClassifier(loss=loss).fit(X, y)
        MarginSoftmaxClassifier(loss="arcface", t=1.5).fit(X, y)


def test_each_budget_is_also_a_pool_of_evaluations(monkeypatch):
    # L-Softmax m=6 under SV-Softmax t=1.93 on one random feature and tol=1e-7
    # (a fuzz case): the lambda stages and the state rounds are many short
    # runs whose line searches keep failing. Each run had its own cap of
    # evaluations, so the fit spent 2,000 of them (2.5 CPU s on 45 rows);
    # one pool per budget bounds the fit by three runs' caps.
    from fuzz_cases import make_data

    from sklmargin.objective._linear import LinearMarginObjective
    from sklmargin.solver._lbfgs import evaluation_budget

    spec = {
        "dataset": None, "seed": 1754, "counts": [12, 3, 15, 3, 9],
        "n_features": 59, "dtype": "float64", "sparse": False,
        "magnitude": 0.001, "integer": True, "constant_columns": 0,
        "zero_rows": 1, "duplicates": 3, "string_labels": True,
        "outlier": False, "separation": 0.0, "weights": "positive",
    }  # fmt: skip
    X, y, weights = make_data(spec)[:3]
    evaluations = []
    original = LinearMarginObjective.loss_gradient

    def counted(self, *args, **kwargs):
        evaluations.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LinearMarginObjective, "loss_gradient", counted)
    clf = KernelMarginSoftmaxClassifier(
        loss="l-softmax", m=6.0, t=1.93, tol=1e-7, lambda_min=0.0,
        constant_feature=0.0, max_iter=200, random_state=2,
        kernel_approximation="orf", n_components=1, metric=None,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y, sample_weight=weights)
    assert len(evaluations) <= 3 * evaluation_budget(200)
    assert np.all(np.isfinite(clf.coef_))
