"""Test session settings and shared data."""

import os

# scikit-learn's array_api_dispatch refuses to run without scipy's array API
# mode, which scipy reads when it is first imported: set it before anything
# imports scipy (tests/test_array_api.py and the conformance suite's array API
# checks, which skip without it). NumPy inputs are unaffected.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

# tests/data holds fixtures and the script that made them (run by hand at an
# old commit; --doctest-modules would import it, and it needs skops).
collect_ignore_glob = ["data/*"]


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
    # The suite fits thousands of tiny models: BLAS threads only add
    # synchronisation there, and on a loaded 2-core machine they oversubscribe
    # (measured: the conformance suite took 10x longer with 2 threads).
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="session")
def digits():
    """Open-set split of digits: 0-5 known (train/test halves), 6-9 unknown.

    Returns ``X_train, y_train, X_known_test, X_unknown`` (standardised).
    """
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    known = y < 6
    X_known, y_known = X[known], y[known]
    return X_known[::2], y_known[::2], X_known[1::2], X[~known]
