"""The kernel estimator's width and gamma defaults: ``n_components``, ``gamma="auto"``.

The law's constants are shrunk by ``monkeypatch`` where a test needs the width
to move on a few hundred rows (at the shipped constants it is 1000 below 8,273
rows); the NumPy, Dask and array API fits must resolve the same width and the
same ``gamma``.
"""

import math
import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

import sklmargin.features._kernel_features as kernel_module
from sklmargin import KernelMarginSoftmaxClassifier
from sklmargin.estimators._kernel import auto_n_components
from sklmargin.features._gamma import scale_gamma


def _data(n=300, d=6, seed=0):
    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=4, n_classes=3, random_state=seed
    )
    return X, y


def _fit(estimator, X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(X, y, **kwargs)


@pytest.fixture
def small_law(monkeypatch):
    """``round(2 sqrt(n))`` clipped to [10, 40]: 35 centres for 300 rows."""
    monkeypatch.setattr(kernel_module, "AUTO_WIDTH_PER_ROOT", 2.0)
    monkeypatch.setattr(kernel_module, "AUTO_WIDTH_RANGE", (10, 40))


def test_the_auto_width_law():
    assert auto_n_components(1) == 1000
    assert auto_n_components(8272) == 1000
    assert auto_n_components(8273) == 1001
    assert auto_n_components(15000) == round(11 * math.sqrt(15000)) == 1347
    assert auto_n_components(18582) == 1499
    assert auto_n_components(18583) == 1500
    assert auto_n_components(10**7) == 1500
    widths = [auto_n_components(n) for n in range(8000, 19000, 7)]
    assert np.all(np.diff(widths) >= 0)


def test_the_fit_takes_the_width_of_its_row_count(small_law):
    X, y = _data()
    clf = _fit(KernelMarginSoftmaxClassifier(random_state=0), X, y)
    assert clf.n_components_ == round(2 * math.sqrt(300)) == 35
    assert clf.feature_map_.n_components == 35
    assert clf.coef_.shape == (3, clf.feature_map_.n_components_)
    fewer = _fit(KernelMarginSoftmaxClassifier(random_state=0), X[:50], y[:50])
    assert fewer.n_components_ == 14
    fixed = _fit(KernelMarginSoftmaxClassifier(n_components=20, random_state=0), X, y)
    assert fixed.n_components_ == 20


def test_every_fitted_kernel_model_has_its_width(small_law):
    """``n_components_`` is set by every fit, a CV fold's path models included.

    Those are fitted on rows another estimator mapped (the fold's map): the
    width used to be set only where a map was made, so they had none, and
    ``refit=False`` at ``n_components="auto"`` failed in their copy (the
    old-pickle fill-in took ``int("auto")``).
    """
    from sklmargin import KernelMarginSoftmaxClassifierCV

    X, y = _data()
    search = KernelMarginSoftmaxClassifierCV(
        gammas=[1.0], ms=[0.05], ss=[30.0], metric=None, cv=2, refit=False,
        random_state=0,
    )  # fmt: skip
    search = _fit(search, X, y)
    widths = [model.n_components_ for model in search.estimators_]
    # 150 training rows per fold: round(2 sqrt(150)) = 24 under the small law
    assert widths == [model.feature_map_.n_components for model in search.estimators_]
    assert widths == [24, 24]
    mapper = KernelMarginSoftmaxClassifier(random_state=0)
    mapper._fold_features(X, None, X[:10])
    assert not hasattr(mapper, "n_components_")  # it made a map, fitted no model


def test_auto_gamma_is_scale_without_a_metric():
    """Without a metric "auto" is the model of earlier releases, bit for bit."""
    X, y = _data()
    params = {"n_components": 40, "metric": None, "random_state": 0}
    auto = _fit(KernelMarginSoftmaxClassifier(gamma="auto", **params), X, y)
    scale = _fit(KernelMarginSoftmaxClassifier(gamma="scale", **params), X, y)
    assert auto.feature_map_.gamma == "scale"
    assert auto.feature_map_.gamma_ == scale.feature_map_.gamma_
    assert_array_equal(auto.coef_, scale.coef_)


def test_auto_gamma_after_the_metric_is_a_fixed_width():
    """After a metric, "auto" is 2 x "scale" of the moved rows."""
    X, y = _data()
    auto = _fit(KernelMarginSoftmaxClassifier(n_components=40, random_state=0), X, y)
    moved = X * auto.input_transform_
    gamma = 2.0 * scale_gamma(moved)
    assert auto.feature_map_.gamma == pytest.approx(gamma, rel=1e-12)
    assert auto.feature_map_.gamma_ == auto.feature_map_.gamma
    # The pilot, without a metric, resolves "auto" as "scale": the metric is
    # the one gamma="scale" learns, only the final map is narrower.
    scale = _fit(
        KernelMarginSoftmaxClassifier(n_components=40, gamma="scale", random_state=0),
        X,
        y,
    )
    assert_array_equal(scale.input_transform_, auto.input_transform_)
    assert scale.feature_map_.gamma_ == pytest.approx(gamma / 2, rel=1e-12)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_components": "many"}, "n_components"),
        ({"n_components": 0}, "n_components"),
        ({"gamma": "median"}, "gamma"),
        ({"gamma": -1.0}, "gamma"),
    ],
)
def test_bad_values_are_named(params, match):
    X, y = _data(n=60)
    with pytest.raises(ValueError, match=match):
        KernelMarginSoftmaxClassifier(**params).fit(X, y)


def test_a_model_saved_before_the_auto_defaults_keeps_its_width():
    """A pickle without ``n_components_`` gets the width it was fitted with."""
    X, y = _data(n=80)
    clf = _fit(
        KernelMarginSoftmaxClassifier(
            n_components=30, gamma="scale", metric=None, random_state=0
        ),
        X,
        y,
    )
    state = clf.__getstate__()
    del state["n_components_"]
    old = KernelMarginSoftmaxClassifier.__new__(KernelMarginSoftmaxClassifier)
    old.__setstate__(state)
    assert old.n_components_ == 30
    assert_array_equal(pickle.loads(pickle.dumps(old)).predict(X), clf.predict(X))
    assert clone(old).get_params()["gamma"] == "scale"


def test_dask_resolves_the_in_memory_width_and_gamma(small_law):
    pytest.importorskip("distributed")
    import dask
    import dask.array as da

    X, y = _data()
    expected = _fit(KernelMarginSoftmaxClassifier(random_state=0), X, y)
    with dask.config.set(scheduler="synchronous"):
        fitted = _fit(
            KernelMarginSoftmaxClassifier(random_state=0),
            da.from_array(X, chunks=90),
            da.from_array(y, chunks=90),
        )
        proba = fitted.predict_proba(da.from_array(X, chunks=90)).compute()
    assert fitted.n_components_ == expected.n_components_ == 35
    assert fitted.feature_map_.gamma_ == pytest.approx(
        expected.feature_map_.gamma_, rel=1e-12
    )
    assert fitted.feature_map_.get_params() == pytest.approx(
        expected.feature_map_.get_params()
    )
    assert_allclose(proba, expected.predict_proba(X), rtol=0, atol=1e-6)


def test_array_api_resolves_the_numpy_width_and_gamma(small_law):
    import sklearn

    xp = pytest.importorskip("array_api_strict")
    X, y = _data()
    expected = _fit(KernelMarginSoftmaxClassifier(random_state=0), X, y)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = _fit(
            KernelMarginSoftmaxClassifier(random_state=0), xp.asarray(X), xp.asarray(y)
        )
    assert fitted.n_components_ == expected.n_components_ == 35
    assert fitted.feature_map_.gamma_ == pytest.approx(
        expected.feature_map_.gamma_, rel=1e-10
    )
