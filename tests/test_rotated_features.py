"""The Nyström map's triangular factor changes the kernel models by round-off only.

``NystroemFeatures`` stores its factor rotated (``U_r Lambda_r^(-1/2) Q``, zero
above the diagonal: a triangular product maps rows at half the flops). Every
loss, the penalty and the learned metric see the features through inner
products, so only the solver's stop test, the largest gradient entry, could
tell the rotation apart; the fits read it in the eigenbasis. Here every loss is
fitted on the rotated map and on the eigenbasis map (the same code with the
rotation made the identity) in float64: the same iterations and, to the
solver's round-off, the same decision values.
"""

import numpy as np
import pytest
from sklearn.datasets import load_digits

import sklmargin.features._nystroem as nystroem_module
from sklmargin import KernelMarginSoftmaxClassifier


def _eigenbasis_factor(normalization):
    return np.ascontiguousarray(normalization), np.eye(normalization.shape[1])


def _data():
    X, y = load_digits(return_X_y=True)
    rng = np.random.RandomState(0)
    rows = rng.permutation(len(y))[:400]
    X = X[rows] / 16.0
    return X[:300], y[:300], X[300:]


@pytest.mark.parametrize(
    "params",
    [
        {"loss": "am-softmax"},
        {"loss": "am-softmax", "metric": None},
        {"loss": "normface"},
        {"loss": "arcface", "metric": None},
        {"loss": "softmax", "metric": None},
        {"loss": "l-softmax", "metric": None},
        {"loss": "am-softmax", "t": 1.2, "metric": None},
    ],
    ids=lambda params: "-".join(str(value) for value in params.values()),
)
def test_rotated_map_fits_the_eigenbasis_model(monkeypatch, params):
    X, y, X_test = _data()
    settings = dict(n_components=120, compute_dtype="float64", random_state=0)
    rotated = KernelMarginSoftmaxClassifier(**settings, **params).fit(X, y)
    assert not np.triu(rotated.feature_map_.normalization_[:120], k=1).any()
    monkeypatch.setattr(nystroem_module, "lower_trapezoidal_factor", _eigenbasis_factor)
    eigen = KernelMarginSoftmaxClassifier(**settings, **params).fit(X, y)
    assert np.triu(eigen.feature_map_.normalization_[:120], k=1).any()
    assert rotated.n_iter_ == eigen.n_iter_
    expected = eigen.decision_function(X_test)
    np.testing.assert_allclose(
        rotated.decision_function(X_test),
        expected,
        atol=1e-6 * np.abs(expected).max(),
    )
