"""skops round trip: every fitted estimator loads with our trusted names only."""

import importlib
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sklmargin
from sklmargin import (
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
    RandomFourierFeatures,
    skops_trusted_types,
)

sio = pytest.importorskip("skops.io")

X, Y = make_classification(
    n_samples=90, n_features=5, n_informative=3, n_classes=3, random_state=0
)

ESTIMATORS = {
    "linear-arcface": MarginSoftmaxClassifier(loss="arcface", max_iter=30),
    "linear-l-softmax": MarginSoftmaxClassifier(loss="l-softmax", max_iter=30),
    "linear-sv": MarginSoftmaxClassifier(loss="am-softmax", t=1.2, max_iter=30),
    "kernel-orf": KernelMarginSoftmaxClassifier(n_components=30, random_state=0),
    "kernel-nystroem": KernelMarginSoftmaxClassifier(
        kernel_approximation="nystroem", n_components=30, random_state=0
    ),
    "pipeline": make_pipeline(StandardScaler(), MarginSoftmaxClassifier()),
}


def _fit(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(X, Y)


def test_trusted_types_are_our_estimators_and_margins():
    names = skops_trusted_types()
    assert {
        "sklmargin.estimators._linear.MarginSoftmaxClassifier",
        "sklmargin.features._fourier.RandomFourierFeatures",
        "sklmargin.estimators._kernel.KernelMarginSoftmaxClassifier",
        "sklmargin.losses._additive.AMSoftmax",
        "sklmargin.losses._support_vectors.SupportVectorGuided",
    } <= set(names)
    for name in names:  # each resolves to a class of sklmargin's own
        module, cls = name.rsplit(".", 1)
        assert module.startswith("sklmargin.")
        obj = getattr(importlib.import_module(module), cls)
        assert obj is getattr(sklmargin, cls, obj) and isinstance(obj, type)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_round_trip_gives_identical_predictions(name):
    estimator = _fit(ESTIMATORS[name])
    data = sio.dumps(estimator)
    # Everything skops does not trust by default is ours.
    assert set(sio.get_untrusted_types(data=data)) <= set(skops_trusted_types())
    loaded = sio.loads(data, trusted=skops_trusted_types())
    assert type(loaded) is type(estimator)
    np.testing.assert_array_equal(loaded.predict(X), estimator.predict(X))
    np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))
    np.testing.assert_array_equal(
        loaded.decision_function(X), estimator.decision_function(X)
    )


def test_transformer_round_trip():
    rff = RandomFourierFeatures(n_components=11, random_state=0).fit(X)
    loaded = sio.loads(sio.dumps(rff), trusted=skops_trusted_types())
    np.testing.assert_array_equal(loaded.transform(X), rff.transform(X))


def test_loading_without_trust_fails():
    data = sio.dumps(_fit(MarginSoftmaxClassifier(max_iter=10)))
    with pytest.raises(Exception, match="[Uu]ntrusted"):
        sio.loads(data)
