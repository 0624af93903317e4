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
