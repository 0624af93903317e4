"""``loss="softmax"`` is multinomial logistic regression: an oracle for it."""

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from sklmargin import MarginSoftmaxClassifier


# tol=1e-10 is below what float64 round-off lets L-BFGS reach (it stalls at a
# gradient of ~1e-8 and says so): asked for on purpose, to compare optima.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("loader", [load_iris, load_wine], ids=["iris", "wine"])
@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_softmax_equals_logistic_regression(loader, C):
    X, y = loader(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    weights = np.random.RandomState(0).randint(1, 4, size=len(y)).astype(float)
    ours = MarginSoftmaxClassifier(loss="softmax", C=C, tol=1e-10, max_iter=10000)
    ours.fit(X, y, sample_weight=weights)
    oracle = LogisticRegression(C=C, tol=1e-10, max_iter=10000)
    oracle.fit(X, y, sample_weight=weights)
    # Same objective (1/(2 C sum(w)) |W|^2 + weighted mean cross-entropy), same
    # convex optimum: probabilities agree to the solvers' tolerance.
    np.testing.assert_allclose(
        ours.predict_proba(X), oracle.predict_proba(X), atol=1e-6
    )
    np.testing.assert_array_equal(ours.predict(X), oracle.predict(X))
