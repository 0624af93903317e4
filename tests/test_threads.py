"""The BLAS thread policy: fit and predict cap BLAS threads, and give them back."""

import numpy as np
import pytest
from joblib import Parallel, delayed
from sklearn.datasets import load_iris
from threadpoolctl import threadpool_info

import sklmargin
from sklmargin import MarginSoftmaxClassifier, MarginSoftmaxClassifierCV
from sklmargin.estimators import _linear


def _blas_threads():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


@pytest.fixture
def seen(monkeypatch):
    """The BLAS thread counts at each solve of the linear estimator."""
    counts = []
    solve = _linear.MarginSoftmaxClassifier._solve

    def spy(self, *args, **kwargs):
        counts.append(max(_blas_threads()))
        return solve(self, *args, **kwargs)

    monkeypatch.setattr(_linear.MarginSoftmaxClassifier, "_solve", spy)
    return counts


@pytest.fixture
def policy():
    previous = sklmargin.get_blas_threads()
    yield
    sklmargin.set_blas_threads(previous)


def test_fit_runs_on_one_blas_thread_and_restores_the_setting(seen, policy):
    X, y = load_iris(return_X_y=True)
    before = _blas_threads()
    assert sklmargin.get_blas_threads() == 1
    MarginSoftmaxClassifier().fit(X, y)
    # A CV fit nests fits (and predictions) inside its own: one cap for all.
    MarginSoftmaxClassifierCV(ss=[5.0, 20.0], cv=2).fit(X, y)
    assert seen and set(seen) == {1}
    assert _blas_threads() == before


def test_none_gives_blas_its_own_setting(seen, policy):
    X, y = load_iris(return_X_y=True)
    assert sklmargin.set_blas_threads(None) == 1
    MarginSoftmaxClassifier().fit(X, y)
    assert seen == [max(_blas_threads())]


def test_predict_is_capped(monkeypatch, policy):
    X, y = load_iris(return_X_y=True)
    clf = MarginSoftmaxClassifier().fit(X, y)
    counts = []
    model_logits = type(clf)._model_logits

    def spy(self, *args, **kwargs):
        counts.append(max(_blas_threads()))
        return model_logits(self, *args, **kwargs)

    monkeypatch.setattr(type(clf), "_model_logits", spy)
    clf.predict_proba(X)
    assert counts == [1]


def test_fits_in_threads_leave_the_setting_as_it_was(policy):
    # BLAS settings are global to the process: fits running in threads at
    # once must not restore each other's cap, and the last one out restores
    # the original.
    X, y = load_iris(return_X_y=True)
    before = _blas_threads()
    fitted = Parallel(n_jobs=4, backend="threading")(
        delayed(MarginSoftmaxClassifier(s=s).fit)(X, y) for s in (5.0, 10.0, 20.0, 40.0)
    )
    assert all(np.all(np.isfinite(m.coef_)) for m in fitted)
    assert _blas_threads() == before


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_set_blas_threads_refuses_what_is_not_a_count(bad, policy):
    with pytest.raises(ValueError, match="n_threads must be an integer >= 1 or None"):
        sklmargin.set_blas_threads(bad)
    assert sklmargin.set_blas_threads(3) == 1
    assert sklmargin.get_blas_threads() == 3
